"""The bolt app: verify, persist, ack; the work happens in triage/slack/worker.py.

`process_before_response=True` on purpose: bolt then runs our listener *before* it answers
Slack, so the listener can write the request to the inbox and only then ack. (With the default,
bolt acks events first and runs listeners afterwards: a crash in between would lose an acked
request.) The listener does nothing slow: one insert into the inbox (SQLite or Postgres) on
the inbox's own writer, then the ack; the investigation is picked up from the inbox by the
worker. Signature and timestamp checks are bolt's own request verification middleware; bolt
also drops the bot's own events.

An Events API `app_mention` over HTTP does not go through bolt: triage/web/limits.py has
verified its signature and timestamp and parsed it, and `Mentions.direct` stores it (dropping
the bot's own by its bot and user ids, as bolt does) before the endpoint answers. Bolt's
middleware chain cost more than the rest of the ack together; everything else (buttons,
modals, Socket Mode) still goes through bolt, and both paths share `Mentions.take`.

Only people command changes. A message written by a bot or an app (`bot_id`, `app_id`,
`bot_profile`, `subtype: bot_message`) is dropped, unless the operator lists that bot or app in
`allowed_bots` — then it is investigated, and still never commands or offers a change (the
worker marks its requester as not a person).

Authorization uses the bot identity learnt once from `auth.test` (cached), so no Web API call
sits between a request and its ack.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncBoltContext
from slack_bolt.authorization import AuthorizeResult
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.web.async_client import AsyncWebClient

from triage.core.settings import SlackSettings
from triage.slack import metrics, reviews
from triage.slack.blocks import ACTION_APPROVE, ACTION_PLAN, ACTION_REFUSE
from triage.slack.client import SlackError, rate_limit_handlers
from triage.slack.inbox import Inbound, Inbox, Kind

log = logging.getLogger("triage.slack")
AUTH_WAIT_S = 1.0  # the bot's ids are cached after the first success; Slack allows 3 s in all


class Identity:
    """The bot's own ids (auth.test), learnt once and cached."""

    def __init__(self, client: AsyncWebClient) -> None:
        self.client = client
        self.data: dict[str, Any] | None = None
        self._lock = asyncio.Lock()

    async def load(self) -> dict[str, Any]:
        async with self._lock:
            if self.data is None:
                try:
                    response = await self.client.auth_test()
                except Exception as e:
                    raise SlackError("auth.test", type(e).__name__) from e
                self.data = dict(response.data) if isinstance(response.data, dict) else {}
            return self.data


class Mentions:
    """What an `app_mention` becomes: one Inbound, durably stored, then the ack. Shared by
    bolt's listener (Socket Mode, and any envelope the direct path does not take) and by the
    HTTP endpoint's direct path (triage/web/server.py), which takes a verified Events API
    mention without bolt's per-request middleware chain: the ack's cost is then the
    signature, the parse and the insert, as the floor's is."""

    def __init__(self, settings: SlackSettings, inbox: Inbox, identity: Identity, kick: Any):
        self.inbox = inbox
        self.identity = identity
        self.kick = kick
        self.allowed = set(settings.channels)
        self.allowed_bots = set(settings.allowed_bots)

    async def ids(self) -> dict[str, Any]:
        """The bot's ids from the cached auth.test; empty when Slack cannot say within
        AUTH_WAIT_S (never hold an ack hostage to auth.test: our own events are still dropped
        by their bot_id once it is known)."""
        if self.identity.data is not None:  # learnt: no task, no lock
            return self.identity.data
        try:
            return await asyncio.wait_for(self.identity.load(), AUTH_WAIT_S)
        except (TimeoutError, SlackError) as e:
            log.warning("auth.test unavailable (%s); acking without the bot's ids", e)
            return {}

    async def accept(self, inbound: Inbound) -> None:
        # the inbox's own writer (never the default executor that investigations could fill);
        # the ack time is measured from the request's ASGI entry (triage/web/server.py)
        new = await self.inbox.accept_async(inbound)
        counter = metrics.REQUESTS_ACCEPTED if new else metrics.REQUESTS_DUPLICATE
        counter.labels(kind=inbound.kind.value).inc()
        if new:
            self.kick()

    async def take(
        self,
        body: dict[str, Any],
        *,
        retry_num: str,
        bot_id: str | None,
        bot_user_id: str | None,
        team_id: str | None,
    ) -> None:
        """Store the mention in `body` (an event_callback envelope), or drop it: the bot's
        own, a channel not served, a bot or app not allowed, an envelope without an id."""
        event = body.get("event") or {}
        channel = str(event.get("channel") or "")
        own = (bot_id is not None and event.get("bot_id") == bot_id) or (
            bot_user_id is not None and event.get("user") == bot_user_id
        )
        if own or (self.allowed and channel not in self.allowed) or not body.get("event_id"):
            return
        writer = written_by_app(event)
        if writer is not None and writer not in self.allowed_bots:
            metrics.REQUESTS_IGNORED.labels(reason="bot").inc()
            return
        ts = str(event.get("ts") or "")
        await self.accept(  # durably stored before Slack hears "ok"
            Inbound(
                id=str(body["event_id"]),
                kind=Kind.MENTION,
                team=str(
                    body.get("team_id") or event.get("team") or _auth_team(body) or team_id or ""
                ),
                channel=channel,
                thread_ts=str(event.get("thread_ts") or ts),
                ts=ts,
                user=str(event.get("user") or ""),
                text=str(event.get("text") or ""),
                data={
                    "retry_num": retry_num,
                    # who wrote it: an allowed bot or app may ask questions, never command
                    "bot_id": str(event.get("bot_id") or ""),
                    "app_id": str(event.get("app_id") or ""),
                    "subtype": str(event.get("subtype") or ""),
                    "bot_user_id": str(bot_user_id or ""),
                },
            )
        )

    async def direct(self, body: dict[str, Any], retry_num: str) -> None:
        """The HTTP path: `body` is a verified, parsed Events API envelope."""
        ids = await self.ids()
        await self.take(
            body,
            retry_num=retry_num,
            bot_id=ids.get("bot_id"),
            bot_user_id=ids.get("user_id"),
            team_id=ids.get("team_id"),
        )


def _auth_team(body: dict[str, Any]) -> str | None:
    """The team of the envelope's first authorization (an Enterprise Grid delivery may carry
    no top-level team_id), as bolt reads it."""
    auths = body.get("authorizations")
    first = auths[0] if isinstance(auths, list) and auths else None
    return str(first.get("team_id") or "") or None if isinstance(first, dict) else None


def direct_mention(body: dict[str, Any]) -> bool:
    """An Events API envelope the direct path takes: an app_mention event callback."""
    event = body.get("event")
    return (
        body.get("type") == "event_callback"
        and isinstance(event, dict)
        and event.get("type") == "app_mention"
    )


def build_app(
    settings: SlackSettings,
    mentions: Mentions,
    *,
    base_url: str | None = None,
) -> AsyncApp:
    """The bolt AsyncApp with the mention and button listeners."""
    secret = settings.signing_secret.get_secret_value() if settings.signing_secret else None
    token = settings.bot_token.get_secret_value() if settings.bot_token else ""

    async def authorize(team_id: str | None = None, **_: Any) -> AuthorizeResult:
        data = await mentions.ids()
        if not data:
            return AuthorizeResult(enterprise_id=None, team_id=team_id, bot_token=token)
        return AuthorizeResult(
            enterprise_id=data.get("enterprise_id"),
            team_id=data.get("team_id"),
            bot_token=token,
            bot_id=data.get("bot_id"),
            bot_user_id=data.get("user_id"),
        )

    app = AsyncApp(
        signing_secret=secret,
        # bolt's own client (Socket Mode's apps.connections.open); tokens come per request
        client=AsyncWebClient(
            base_url=base_url or settings.api_base_url,
            timeout=max(1, round(settings.api_timeout_s)),
            retry_handlers=rate_limit_handlers(settings),
        ),
        authorize=authorize,
        process_before_response=True,
        request_verification_enabled=True,
        ignoring_self_events_enabled=True,
        logger=log,
    )
    accept = mentions.accept

    @app.event("app_mention")
    async def on_mention(
        body: dict[str, Any], ack: Any, context: AsyncBoltContext, request: AsyncBoltRequest
    ) -> None:
        await mentions.take(
            body,
            retry_num=request.headers.get("x-slack-retry-num", ["0"])[0],
            bot_id=context.bot_id,
            bot_user_id=context.bot_user_id,
            team_id=context.team_id,
        )
        await ack()

    async def on_click(body: dict[str, Any], action: dict[str, Any], ack: Any) -> None:
        message = body.get("message") or {}
        container = body.get("container") or {}
        message_ts = str(container.get("message_ts") or message.get("ts") or "")
        user = str((body.get("user") or {}).get("id") or "")
        inbound = Inbound(
            id=f"action:{message_ts}:{user}:{action.get('action_ts', '')}",
            kind=Kind.ACTION,
            team=str((body.get("team") or {}).get("id") or ""),
            channel=str((body.get("channel") or {}).get("id") or container.get("channel_id") or ""),
            thread_ts=str(message.get("thread_ts") or message_ts),
            ts=message_ts,
            user=user,
            data={"action_id": action.get("action_id"), "value": action.get("value") or ""},
        )
        await accept(inbound)
        await ack()

    app.action(ACTION_APPROVE)(on_click)
    app.action(ACTION_REFUSE)(on_click)
    reviews.listen(app, on_click, accept)  # Confirm cause / Dispute / Open report
    app.action(ACTION_PLAN)(on_click)
    return app


def written_by_app(event: dict[str, Any]) -> str | None:
    """The bot or app that wrote `event` (its bot_id or app_id), or None when a person did."""
    profile = event.get("bot_profile") or {}
    writer = (
        event.get("bot_id") or event.get("app_id") or profile.get("id") or profile.get("app_id")
    )
    if writer:
        return str(writer)
    return "bot_message" if event.get("subtype") == "bot_message" else None
