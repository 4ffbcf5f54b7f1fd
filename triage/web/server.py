"""`triage serve`: the Slack bot over HTTP (bolt's Starlette adapter) or Socket Mode, plus
`/healthz`, `/metrics` and a read-only review page of RCA reports (`/reports`).

Requests that bolt cannot even parse (not UTF-8, not JSON) never reach bolt: they are answered
here, 401 when the signature does not match and 400 when it does, so a malformed body is never
a 500 and never has a side effect. Everything else goes through bolt's own verification.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tools.errors import ToolError
from triage.app import App
from triage.core.errors import ConfigError
from triage.core.settings import Settings
from triage.reports import views as reports_view
from triage.reports.views import ReportReader
from triage.slack import approvals
from triage.slack.app import Identity, build_app
from triage.slack.client import Slack, SlackError, web_client
from triage.slack.inbox import Inbox, State
from triage.slack.worker import Worker

log = logging.getLogger("triage.server")
EVENTS_PATH = "/slack/events"
SIGNATURE_WINDOW_S = 300


@dataclass
class Bot:
    """Everything `triage serve` runs, built from settings; tests build it the same way."""

    settings: Settings
    inbox: Inbox
    identity: Identity
    worker: Worker
    app: AsyncApp
    reports: ReportReader | None = None

    async def start(self) -> None:
        try:
            await self.identity.load()
        except SlackError as e:  # retried on the first request; /healthz says so meanwhile
            log.warning("auth.test failed (%s); will retry on the first request", e)
        self._task = asyncio.create_task(self.worker.run())

    async def stop(self) -> None:
        await self.worker.stop()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self.inbox.close()


def inbox_path(settings: Settings) -> Path:
    return Path(settings.state.dir) / "slack-inbox.sqlite"


def build_bot(settings: Settings, product: App) -> Bot:
    slack_settings = settings.slack
    if slack_settings.bot_token is None:
        msg = "no Slack bot token: set TRIAGE_SLACK__BOT_TOKEN (xoxb-…)"
        raise ConfigError(msg)
    if slack_settings.signing_secret is None and slack_settings.app_token is None:
        msg = (
            "no signing secret: set TRIAGE_SLACK__SIGNING_SECRET (HTTP events) or "
            "TRIAGE_SLACK__APP_TOKEN (Socket Mode)"
        )
        raise ConfigError(msg)
    secrets = [
        s.get_secret_value()
        for s in (slack_settings.bot_token, slack_settings.signing_secret, slack_settings.app_token)
        if s is not None
    ]
    redactor = product.redactor.with_literals(secrets)
    client = web_client(slack_settings)
    inbox = Inbox(inbox_path(settings))
    slack = Slack(client, redactor)
    worker = Worker(
        inbox,
        slack,
        product,
        slack_settings,
        decide=approvals.decide,
        ask=approvals.ask,
        offer=approvals.offer,
    )
    identity = Identity(client)
    app = build_app(slack_settings, inbox, identity, kick=worker.kick)
    return Bot(settings, inbox, identity, worker, app, product.reports())


def _parseable(body: bytes) -> bool:
    """True when bolt can take the body: a JSON object, or a form whose `payload` is one."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        pass
    if text.lstrip()[:1] in ("{", "["):
        return False  # meant as JSON, and broken
    form = parse_qs(text)
    if "payload" in form:
        try:
            return isinstance(json.loads(form["payload"][0]), dict)
        except ValueError:
            return False
    return True


def _signed(verifier: SignatureVerifier, secret: Any, body: bytes, request: Request) -> bool:
    """Slack's signature check for a body bolt cannot take (slack_sdk's verifier needs UTF-8,
    so raw bytes are checked here the same way: v0 HMAC-SHA256, five-minute window)."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        ts = request.headers.get("x-slack-request-timestamp", "")
        given = request.headers.get("x-slack-signature", "")
        if not ts.isdigit() or abs(time.time() - int(ts)) > SIGNATURE_WINDOW_S:
            return False
        mac = hmac.new(secret.get_secret_value().encode(), f"v0:{ts}:".encode() + body, "sha256")
        return hmac.compare_digest(f"v0={mac.hexdigest()}", given)
    return verifier.is_valid_request(body, dict(request.headers))


def starlette_app(bot: Bot) -> Starlette:
    reports = bot.reports
    handler = AsyncSlackRequestHandler(bot.app)
    secret = bot.settings.slack.signing_secret
    verifier = SignatureVerifier(secret.get_secret_value()) if secret else None

    async def events(request: Request) -> Response:
        body = await request.body()
        if not _parseable(body):
            valid = verifier is not None and _signed(verifier, secret, body, request)
            return PlainTextResponse("invalid request", status_code=400 if valid else 401)
        return await handler.handle(request)

    async def healthz(_: Request) -> Response:
        try:
            queued = await asyncio.to_thread(bot.inbox.count, State.QUEUED)
        except Exception as e:  # the inbox is what health means here: report, not raise
            log.exception("healthz: the inbox cannot be read")
            return JSONResponse({"ok": False, "error": type(e).__name__}, status_code=503)
        return JSONResponse(
            {"ok": True, "queued": queued, "slack_identity": bot.identity.data is not None}
        )

    async def metrics(_: Request) -> Response:
        return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)

    async def report_index(request: Request) -> Response:
        if reports is None:
            return PlainTextResponse("no report source configured", status_code=404)
        namespace = request.query_params.get("namespace") or None
        try:
            items = await asyncio.to_thread(reports.list, namespace)
        except ToolError as e:
            return PlainTextResponse(f"cannot read RCA reports: {e}", status_code=502)
        return HTMLResponse(reports_view.html_index(items, namespace))

    async def report_page(request: Request) -> Response:
        if reports is None:
            return PlainTextResponse("no report source configured", status_code=404)
        ns, name = request.path_params["namespace"], request.path_params["name"]
        try:
            obj = await asyncio.to_thread(reports.get, ns, name)
        except ToolError as e:
            return PlainTextResponse(f"cannot read the RCA report: {e}", status_code=502)
        if obj is None:
            return PlainTextResponse(f"no RCA report {ns}/{name}", status_code=404)
        return HTMLResponse(reports_view.html_report(obj))

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        await bot.start()
        handler = socket_mode(bot) if bot.settings.slack.app_token is not None else None
        if handler is not None:
            await handler.connect_async()  # type: ignore[no-untyped-call]
        try:
            yield
        finally:
            if handler is not None:
                await handler.close_async()  # type: ignore[no-untyped-call]
            await bot.stop()

    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/reports", report_index, methods=["GET"]),
        Route("/reports/{namespace}/{name}", report_page, methods=["GET"]),
    ]
    if verifier is not None:  # Socket Mode alone: no HTTP endpoint for events at all
        routes.append(Route(EVENTS_PATH, events, methods=["POST"]))
    return Starlette(routes=routes, lifespan=lifespan)


def socket_mode(bot: Bot) -> AsyncSocketModeHandler:
    """Socket Mode: Slack sends the same events over a websocket the bot opens (no public
    endpoint). Each envelope goes through the same bolt app, so it is stored before its ack
    and de-duplicated by event_id exactly as over HTTP."""
    token = bot.settings.slack.app_token
    assert token is not None
    return AsyncSocketModeHandler(bot.app, token.get_secret_value())


def serve(bot: Bot, host: str, port: int) -> None:
    import uvicorn  # noqa: PLC0415 (only the server needs it)

    config: Any = uvicorn.Config(
        starlette_app(bot), host=host, port=port, log_level="info", lifespan="on"
    )
    uvicorn.Server(config).run()
