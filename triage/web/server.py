"""`triage serve`: the Slack bot over HTTP (bolt's Starlette adapter) or Socket Mode, plus
`/healthz` and `/metrics`; the review page of RCA reports runs beside it on a listener of its
own (triage/web/review.py, settings.review.port), never on the Slack port.

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
import signal
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from triage.app import App
from triage.core.errors import ConfigError
from triage.core.settings import Settings
from triage.slack import approvals, reviews
from triage.slack.app import Identity, build_app
from triage.slack.client import Slack, SlackError, web_client
from triage.slack.inbox import Inbox, State
from triage.slack.worker import Worker
from triage.web.review import server_config

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
        review=reviews.decide,
    )
    identity = Identity(client)
    app = build_app(slack_settings, inbox, identity, kick=worker.kick)
    return Bot(settings, inbox, identity, worker, app)


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


class _Quiet(uvicorn.Server):
    """A server that leaves the signals to `serve` (two servers share one loop and stop
    together; uvicorn's own handling would let the first one end the process)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def serve(bot: Bot, host: str, port: int, review: Any = None) -> None:
    """Serve the bot on host:port and, when given, the review page (an ASGI app from
    triage.web.review.asgi) on settings.review.host:port, in one event loop. SIGTERM or
    SIGINT stops both gracefully (a second one forces it)."""
    servers = [
        _Quiet(
            uvicorn.Config(
                starlette_app(bot), host=host, port=port, log_level="info", lifespan="on"
            )
        )
    ]
    if review is not None:
        r = bot.settings.review
        servers.append(_Quiet(server_config(review, r.host, r.port, log_level="info")))

    def stop() -> None:
        for s in servers:
            if s.should_exit:
                s.force_exit = True
            s.should_exit = True

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop)
        tasks = [asyncio.create_task(s.serve()) for s in servers]
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        stop()  # one ended (a signal, or it could not bind): end the other too
        await asyncio.gather(*tasks)
        for task in done:
            task.result()

    asyncio.run(run())
    if any(not s.started for s in servers):
        raise SystemExit(1)  # a listener never came up (port in use): uvicorn said why
