"""`triage serve`: the Slack bot over HTTP (bolt's Starlette adapter) or Socket Mode, plus
`/healthz` and `/metrics`; the review page of RCA reports runs beside it on a listener of its
own (triage/web/review.py, settings.review.port), never on the Slack port.

Nothing reaches bolt before triage/web/limits.py has read the body within its size and time
limits, checked Slack's signature on the raw bytes and parsed the payload within its depth
and shape limits: unsigned, stale or forged requests are 401, oversized 413, slow 408,
malformed 400, each one log line and no side effect. A payload bolt or our listeners still
cannot take is 400 with one log line (bolt's error handler is ours, so no traceback); only a
store that cannot be written is a 5xx, which Slack retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn
import uvloop
from kubernetes import client as k8s
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import to_async_bolt_request, to_starlette_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.response import BoltResponse
from slack_sdk.signature import SignatureVerifier
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tools.errors import ToolError
from tools.kube_call import call_raw
from tools.redact import cap
from triage.app import App
from triage.core import retention
from triage.core.errors import ConfigError, StateUnavailable
from triage.core.settings import Settings
from triage.slack import approvals, reviews
from triage.slack import metrics as slack_metrics
from triage.slack.alert_groups import AlertGroups
from triage.slack.alert_tickets import AlertTickets
from triage.slack.app import Identity, Mentions, build_app, direct_mention
from triage.slack.client import Slack, SlackError, open_session, web_client
from triage.slack.inbox import Inbox, InboxError, State
from triage.slack.inbox_sqlite import SqliteInbox
from triage.slack.worker import Worker
from triage.web import limits
from triage.web.alerts import Receiver
from triage.web.limits import Limits, RefusalLog, Refused
from triage.web.review import server_config
from triage.web.workers import WorkerProcess, run_worker, worker_argv

log = logging.getLogger("triage.server")
EVENTS_PATH = "/slack/events"
Endpoint = Callable[[Request], Awaitable[Response]]
ERROR_KEY = "triage_error"  # where bolt's error handler leaves what a listener raised


@dataclass
class Bot:
    """Everything `triage serve` runs, built from settings; tests build it the same way."""

    settings: Settings
    inbox: Inbox
    identity: Identity
    worker: Worker
    app: AsyncApp
    kick: Kick
    mentions: Mentions
    product: App | None = None
    groups: AlertGroups | None = None  # the Alertmanager receiver's, when it is on
    receiver: Receiver | None = None
    work: bool = True  # run the worker here; False: another process does (workers.py)

    async def start(self) -> None:
        self._session = open_session(self.settings.slack)
        self.worker.slack.client.session = self._session  # one session for every call
        self.identity.client.session = self._session
        try:
            await self.identity.load()
        except SlackError as e:  # retried on the first request; /healthz says so meanwhile
            log.warning("auth.test failed (%s); will retry on the first request", e)
        self._tasks = []
        if self.work:
            self._tasks = [
                asyncio.create_task(self.worker.run()),
                asyncio.create_task(self._prune_forever()),
            ]

    async def _prune_forever(self) -> None:
        state = self.settings.state
        while True:
            try:
                pruned = await self.inbox.call(
                    retention.prune, state, inbox=self.inbox, pool=self.worker.product.state_pool()
                )
            except (OSError, sqlite3.Error, StateUnavailable) as e:  # said, tried again later
                log.warning("could not prune the state (%s): %s", state.checkpointer, e)
            else:
                if pruned.threads or pruned.requests:
                    log.info(
                        "pruned %d runs and %d requests older than %g days",
                        pruned.threads,
                        pruned.requests,
                        state.retention_days,
                    )
            await asyncio.sleep(state.prune_every_s)

    async def stop(self) -> None:
        await self.worker.stop()
        for task in self._tasks:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.inbox.close()  # the alert groups' store too
        await self._session.close()


class Kick:
    """Where "a request arrived" goes: the worker in this process, or the worker process."""

    def __init__(self, target: Callable[[], None]) -> None:
        self.target = target

    def __call__(self) -> None:
        self.target()


def inbox_path(settings: Settings) -> Path:
    return Path(settings.state.dir) / "slack-inbox.sqlite"


def open_inbox(settings: Settings, product: App, clean: Callable[[str], str]) -> Inbox:
    """The inbox the settings choose: the shared Postgres (with its checkpointer), else the
    SQLite file in the state directory."""
    pool = product.state_pool()
    if pool is not None:
        from triage.slack.inbox_pg import PostgresInbox  # noqa: PLC0415 (Postgres only)

        return PostgresInbox(pool, clean)
    return SqliteInbox(inbox_path(settings), clean, synchronous=settings.state.sqlite_synchronous)


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
    limit = slack_settings.max_mention_chars
    inbox = open_inbox(settings, product, lambda text: redactor.text(cap(text, limit)))
    slack = Slack(client, redactor)
    alerts = settings.alerts
    groups = (
        AlertGroups(  # on the inbox's backend: replicas on Postgres share the groups
            inbox,
            max_investigations=alerts.max_investigations,
            window_s=alerts.window_s,
        )
        if alerts.enabled
        else None
    )
    worker = Worker(
        inbox,
        slack,
        product,
        slack_settings,
        decide=approvals.decide,
        ask=approvals.ask,
        review=reviews.decide,
        offer=approvals.offer,
        alert=AlertTickets(groups) if groups is not None else None,
    )
    identity = Identity(client)
    kick = Kick(worker.kick)
    mentions = Mentions(slack_settings, inbox, identity, kick)
    app = build_app(slack_settings, mentions)
    receiver = Receiver(alerts, inbox, groups, redactor, kick) if groups is not None else None
    return Bot(
        settings,
        inbox,
        identity,
        worker,
        app,
        kick,
        mentions,
        product=product,
        groups=groups,
        receiver=receiver,
    )


def starlette_app(bot: Bot) -> Starlette:
    secret = bot.settings.slack.signing_secret
    verifier = SignatureVerifier(secret.get_secret_value()) if secret else None

    events = events_endpoint(bot, verifier) if verifier is not None else None

    async def healthz(_: Request) -> Response:
        try:
            queued = await bot.inbox.call(bot.inbox.count, State.QUEUED)
        except Exception as e:  # the inbox is what health means here: report, not raise
            log.exception("healthz: the inbox cannot be read")
            return JSONResponse({"ok": False, "error": type(e).__name__}, status_code=503)
        return JSONResponse(
            {"ok": True, "queued": queued, "slack_identity": bot.identity.data is not None}
        )

    async def livez(_: Request) -> Response:
        return PlainTextResponse("ok")  # the event loop answers: alive

    readiness = Readiness(bot)

    async def readyz(_: Request) -> Response:
        problems = await readiness.problems()
        backend = bot.inbox.backend
        if problems:
            return JSONResponse(
                {"ready": False, "backend": backend, "problems": problems}, status_code=503
            )
        return JSONResponse({"ready": True, "backend": backend})

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
        Route("/livez", livez, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
    ]
    if events is not None:  # Socket Mode alone: no HTTP endpoint for events at all
        routes.append(Route(EVENTS_PATH, events, methods=["POST"]))
    if bot.receiver is not None:
        routes.append(Route(bot.settings.alerts.path, bot.receiver.endpoint, methods=["POST"]))
    return AckTimer(Starlette(routes=routes, lifespan=lifespan))  # type: ignore[return-value]


class AckTimer:
    """ASGI middleware: the ack time of /slack/events from the moment the server hands the
    request to the app (its ASGI entry) to the last byte of the answer, so the metric
    includes any wait for the inbox and for the event loop, as Slack sees it."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("path") != EVENTS_PATH:
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Any) -> None:
            await send(message)
            if message.get("type") == "http.response.body" and not message.get("more_body"):
                slack_metrics.ACK_SECONDS.observe(time.perf_counter() - started)

        await self.app(scope, receive, timed)


class Readiness:
    """Ready means able to take a request: the inbox can be written to and the apiserver
    answers (a replay-only bot has no apiserver). Checked at most every `CACHE_S`, each check
    bounded by the kube timeout, so a probe storm costs nothing."""

    CACHE_S = 5.0

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self._at = 0.0
        self._last: list[str] = []
        self._lock = asyncio.Lock()

    def _check(self) -> list[str]:
        problems = []
        try:
            self.bot.inbox.count(State.QUEUED)
        except (StateUnavailable, sqlite3.Error) as e:
            problems.append(f"inbox ({self.bot.inbox.backend}): {str(e)[:160] or type(e).__name__}")
        product = self.bot.product
        api = product.api_client if product is not None else None
        if api is not None:
            timeout = min(self.bot.settings.kube.timeout_s, 5.0)
            try:
                call_raw(k8s.VersionApi(api).get_code, timeout_s=timeout)
            except ToolError as e:
                problems.append(f"apiserver: {e.kind.value}")
        return problems

    async def problems(self) -> list[str]:
        async with self._lock:
            if time.monotonic() - self._at >= self.CACHE_S:
                self._last = await asyncio.to_thread(self._check)
                self._at = time.monotonic()
            return self._last


def events_endpoint(bot: Bot, verifier: SignatureVerifier) -> Endpoint:
    """/slack/events: admitted by triage/web/limits.py, then dispatched into bolt."""
    slack = bot.settings.slack
    bounds = Limits(slack.max_body_bytes, slack.body_timeout_s, slack.max_json_depth)
    refusals = RefusalLog()

    @bot.app.error
    async def on_error(error: Exception, request: Any) -> None:
        request.context[ERROR_KEY] = error  # read below: one line, no traceback

    async def events(request: Request) -> Response:
        try:
            return await admitted(request)
        except Refused as r:
            refusals.note(r, request)
            return PlainTextResponse(r.reason, status_code=r.status)
        except Exception as e:  # noqa: BLE001 (a shape nothing above foresaw: recorded as one line, answered 400; a 500 would make Slack retry it)
            refusals.note(Refused(400, f"unexpected {type(e).__name__}: {e}"[:200]), request)
            return PlainTextResponse("invalid request", status_code=400)

    async def admitted(request: Request) -> Response:
        body, data = await limits.admit(request, verifier, bounds, now=time.time())
        error: Exception | None = None
        if direct_mention(data):  # verified and parsed: stored, then acked, without bolt
            try:
                await bot.mentions.direct(data, request.headers.get("x-slack-retry-num", "0"))
            except InboxError as e:
                error = e
            answer = BoltResponse(status=200, body="")
        else:
            bolt_request = to_async_bolt_request(request, body)
            answer = await bot.app.async_dispatch(bolt_request)
            error = bolt_request.context.get(ERROR_KEY)
        if error is not None or answer.status >= 500:
            if isinstance(error, InboxError):  # the store, not the request: Slack retries
                log.error("could not store a request: %s", error)
                return PlainTextResponse("try again", status_code=503)
            raise Refused(400, f"not a request we can take ({type(error).__name__})")
        return to_starlette_response(answer)

    return events


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
    SIGINT stops both gracefully (a second one forces it). With `slack.worker_process` the
    investigations run in a process of their own (triage/web/workers.py), started here."""
    worker = WorkerProcess(worker_argv()) if bot.settings.slack.worker_process else None
    if worker is not None:
        bot.work = False
        bot.kick.target = worker.kick
    servers = [_Quiet(bot_config(bot, host, port))]
    if review is not None:
        r = bot.settings.review
        servers.append(_Quiet(server_config(review, r.host, r.port, log_level="info")))

    def stop() -> None:  # a signal: the first asks both to stop, a second forces it
        for s in servers:
            if s.should_exit:
                s.force_exit = True
            s.should_exit = True

    def wind_down() -> None:  # one listener ended: the other stops gracefully, never forced
        for s in servers:
            s.should_exit = True

    async def run() -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop)
        if worker is not None:
            await worker.start()
        try:
            tasks = [asyncio.create_task(s.serve()) for s in servers]
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            wind_down()  # one ended (a signal, or it could not bind): end the other too
            await asyncio.gather(*tasks)
        finally:
            if worker is not None:
                await worker.stop()
        for task in done:
            task.result()

    # What was built to get here (the product, its imports: most of the heap) lives as long
    # as the process: out of the collector's reach, so a full collection never stops the
    # loop for the time it takes to walk it (~200 ms: one burst of acks waited that long).
    gc.collect()
    gc.freeze()
    uvloop.run(run())  # the loop uvicorn[standard] brings; what bot_config names
    if any(not s.started for s in servers):
        raise SystemExit(1)  # a listener never came up (port in use): uvicorn said why


def work(bot: Bot) -> None:
    """`triage serve --role worker`: the investigations' process (triage/web/workers.py). It
    answers what the inbox holds and serves no HTTP; the server's kicks arrive on stdin."""
    uvloop.run(run_worker(bot.start, bot.stop, bot.worker.kick))


def bot_config(bot: Bot, host: str, port: int, log_level: str = "info") -> Any:
    """uvicorn as `triage serve` runs it: uvloop and httptools (uvicorn[standard]; the ack
    path's parser and loop cost a third of h11's and asyncio's), a header deadline and a
    16 KiB bound on headers (limits.GuardedHttpTools), a short keep-alive."""
    import uvicorn  # noqa: PLC0415

    class Protocol(limits.GuardedHttpTools):
        header_timeout_s = bot.settings.slack.header_timeout_s

    return uvicorn.Config(
        starlette_app(bot),
        host=host,
        port=port,
        log_level=log_level,
        lifespan="on",
        http=Protocol,
        loop="uvloop",
        timeout_keep_alive=5,
    )
