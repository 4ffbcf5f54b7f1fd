"""The Alertmanager webhook receiver of `triage serve` (settings.alerts.path, /alertmanager).

Alertmanager posts one notification per alert group (its `webhook_configs`); this endpoint
answers it in milliseconds and does no investigating itself:

1. **Authenticated** by what Alertmanager's `http_config` can send: `Authorization: Bearer`
   (its `authorization.credentials`, or `bearer_token_file`) or HTTP basic auth, compared in
   constant time. Anything else is 401 and one log line. The receiver is off (404) unless one
   of them is configured.
2. **Bounded** like /slack/events (triage/web/limits.py): the body's size and time, the JSON's
   nesting; then the notification's own shape (triage/core/alertmanager.py). 413, 408, 400.
3. **Routed** to a Slack channel by the operator's label matches (settings.alerts.routes,
   first match wins, else settings.alerts.channel); unrouted groups are counted and dropped.
4. **Decided** (triage/slack/alert_groups.py) on the inbox's backend, the SQLite file or the
   Postgres database replicas share, so every replica sees the same groups: a new episode of
   the group starts one investigation; a notification of the open episode is a duplicate;
   past `max_investigations` per channel and window it is a storm, counted for one summary;
   a resolved notification closes the episode and updates its ticket.
5. **Queued** in the inbox (as the Slack events are) for the worker, in the same transaction
   as the decision: answered 200 only once both are stored; a crash before the commit stores
   neither, and Alertmanager's retry decides again.

Alerts never command changes: the request is queued as an alert's, whose words intake reads
as commanding nothing, with the annotations as data only.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response

from tools.redact import Redactor
from triage.core.alertmanager import Notification, question
from triage.core.errors import ConfigError
from triage.core.settings import AlertSettings
from triage.slack import metrics
from triage.slack.alert_groups import AlertGroups, Decision
from triage.slack.inbox import Db, Inbound, Inbox, InboxError, Job, Kind
from triage.web.limits import Limits, RefusalLog, Refused, parse_json, read_body

log = logging.getLogger("triage.alerts")
MAX_JSON_DEPTH = 16  # a notification nests four levels deep


def bearer_token(settings: AlertSettings) -> str | None:
    """The configured bearer token (the setting, else the mounted file); ConfigError when the
    file cannot be read."""
    if settings.bearer_token is not None:
        return settings.bearer_token.get_secret_value()
    if settings.bearer_token_file is not None:
        try:
            token = Path(settings.bearer_token_file).read_text().strip()
        except OSError as e:
            msg = f"cannot read TRIAGE_ALERTS__BEARER_TOKEN_FILE {settings.bearer_token_file}"
            raise ConfigError(f"{msg}: {e.strerror}") from e
        if not token:
            msg = f"TRIAGE_ALERTS__BEARER_TOKEN_FILE {settings.bearer_token_file} is empty"
            raise ConfigError(msg)
        return token
    return None


class Receiver:
    """The endpoint, with what it needs: the inbox, the group store, the routes."""

    def __init__(
        self,
        settings: AlertSettings,
        inbox: Inbox,
        groups: AlertGroups,
        redactor: Redactor,
        kick: Any,
    ) -> None:
        self.settings = settings
        self.inbox = inbox
        self.groups = groups
        self.redactor = redactor
        self.kick = kick
        self.token = bearer_token(settings)
        self.limits = Limits(settings.max_body_bytes, 10.0, MAX_JSON_DEPTH)
        self.refusals = RefusalLog()

    # -- 1: who may post ---------------------------------------------------------------------

    def authorized(self, request: Request) -> bool:
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        value = value.strip()
        if self.token is not None and scheme.lower() == "bearer":
            return hmac.compare_digest(value.encode(), self.token.encode())
        s = self.settings
        if s.basic_username is not None and s.basic_password is not None:
            if scheme.lower() != "basic":
                return False
            try:
                user, _, password = base64.b64decode(value, validate=True).decode().partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return False
            ok_user = hmac.compare_digest(user.encode(), s.basic_username.encode())
            secret = s.basic_password.get_secret_value().encode()
            return ok_user & hmac.compare_digest(password.encode(), secret)
        return False

    # -- 3: where it goes --------------------------------------------------------------------

    def channel_for(self, notification: Notification) -> str | None:
        labels = {**notification.labels(), "receiver": notification.receiver}
        for route in self.settings.routes:
            if all(labels.get(k) == v for k, v in route.match.items()):
                return route.channel
        return self.settings.channel

    # -- the endpoint ------------------------------------------------------------------------

    async def admit(self, request: Request) -> Notification:
        """Steps 1 and 2: the notification, or Refused with the status to answer."""
        if not self.authorized(request):
            raise Refused(401, "no valid Alertmanager credentials")
        body = await read_body(request, self.limits)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as e:
            raise Refused(400, "body is not UTF-8") from e
        try:
            return Notification.model_validate(parse_json(text, self.limits))
        except ValidationError as e:
            where = ", ".join(".".join(str(p) for p in err["loc"]) for err in e.errors()[:3])
            raise Refused(400, f"not an Alertmanager notification ({where})") from e

    async def endpoint(self, request: Request) -> Response:
        try:
            notification = await self.admit(request)
        except Refused as r:
            self.refusals.note(r, request)
            metrics.ALERTS.labels(result="refused").inc()
            headers = {"WWW-Authenticate": "Bearer"} if r.status == 401 else None
            return PlainTextResponse(r.reason, status_code=r.status, headers=headers)
        try:
            # on the inbox's own threads: the investigations may fill the default executor
            decided = await self.inbox.call(self.take, notification, time.time())
        except InboxError as e:  # the store, not the notification: Alertmanager retries
            log.error("could not store an alert notification: %s", e)  # noqa: TRY400 (one line)
            return PlainTextResponse("try again", status_code=503)
        metrics.ALERTS.labels(result=decided["result"]).inc()
        if decided["result"] in ("started", "resolved", "suppressed"):
            self.kick()
        return JSONResponse(decided)

    # -- 4 and 5: decide, queue --------------------------------------------------------------

    def take_job(self, n: Notification, now: float) -> Job[dict[str, Any]]:
        """The decision and the inbox request it names, as one job of the inbox (one
        transaction: a group is never open without its request stored); the job returns what
        was decided."""
        channel = self.channel_for(n)
        alert = n.alert(self.redactor)  # redacted here, off the store's own thread
        common: dict[str, Any] = {
            "group_id": n.key,
            "group_key": n.group_key[:2000],
            "receiver": n.receiver[:200],
            "name": alert.name,
            "alert": alert.model_dump(mode="json"),
            "alerts": len(n.firing) or len(n.alerts),
        }
        words = question(alert, count=len(n.firing) or 1)

        def job(db: Db) -> dict[str, Any]:
            if channel is None:
                return {"result": "unrouted", "group": n.key}
            if n.status == "resolved":
                admitted = self.groups.resolved_job(n.key, now)(db)
                if admitted.decision is Decision.IGNORED:
                    return {"result": "ignored", "group": n.key}
                assert admitted.request_id is not None
                data = {**common, "event": "resolved", "investigation": admitted.request_id}
                queued = self._queue(db, f"{admitted.request_id}:resolved", channel, now, "", data)
                return {
                    "result": "resolved",
                    "group": n.key,
                    "request": admitted.request_id,
                    "queued": queued,
                }
            admitted = self.groups.firing_job(n.key, n.group_key, channel, alert.name, now)(db)
            if admitted.decision is Decision.SUPPRESSED:
                assert admitted.storm_id is not None
                data = {
                    "event": "storm",
                    "window_start": admitted.window_start,
                    "window_end": admitted.window_end,
                }
                queued = self._queue(db, admitted.storm_id, channel, now, "", data)
                return {
                    "result": "suppressed",
                    "group": n.key,
                    "summary": admitted.storm_id,
                    "queued": queued,
                }
            assert admitted.request_id is not None
            if admitted.decision is Decision.DUPLICATE:
                return {"result": "duplicate", "group": n.key, "request": admitted.request_id}
            data = {**common, "event": "firing", "run_id": admitted.request_id, "received_at": now}
            queued = self._queue(db, admitted.request_id, channel, now, words, data)
            return {
                "result": "started",
                "group": n.key,
                "request": admitted.request_id,
                "queued": queued,
            }

        return job

    def take(self, n: Notification, now: float) -> dict[str, Any]:
        """Decide what the notification does and queue its work; what was decided."""
        decided = self.inbox.do(self.take_job(n, now))
        self._counted(decided)
        return decided

    def _counted(self, decided: dict[str, Any]) -> None:
        if decided["result"] == "unrouted":
            log.info(
                "alert group %s matches no route and there is no default channel",
                decided["group"],
            )
        queued = decided.pop("queued", None)
        if queued is True:
            metrics.REQUESTS_ACCEPTED.labels(kind=Kind.ALERT.value).inc()
        elif queued is False:
            metrics.REQUESTS_DUPLICATE.labels(kind=Kind.ALERT.value).inc()

    def _queue(
        self, db: Db, request_id: str, channel: str, now: float, words: str, data: dict[str, Any]
    ) -> bool:
        inbound = Inbound(
            id=request_id,
            kind=Kind.ALERT,
            team="",
            channel=channel,
            thread_ts="",
            ts=f"{now:.6f}",
            user="",
            text=words,
            data=data,
        )
        return self.inbox.accept_job(inbound, now)(db)
