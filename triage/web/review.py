"""The review page of `triage serve`: RCA reports for people, on a listener of its own.

Its own port (settings.review.port, 8081) because it answers people, not Slack: it can be
port-forwarded, put behind a Service, an Ingress or an authenticating proxy without exposing
the Slack endpoint, and the Slack endpoint stays out of reach of browsers. Every page needs a
user the apiserver vouches for and shows only what the apiserver lets that user get
(triage/web/auth.py); the page reads and writes as its own identity, like any controller.

What it serves: `/reports` (filter, sort, paginate), `/reports/{ns}/{name}` (the report with
its evidence, the judge's lists, changes, attempts, spend, timings, reviews), a POST to
`.../review` (Confirm cause / Dispute with a note), `/operations/{id}` (a ledger entry), and
`/login` for a pasted token (kept server-side; the browser holds only a random session id in
an HttpOnly, SameSite=Strict cookie). Pages carry no script; a strict Content-Security-Policy
says so. Forms carry a CSRF token bound to the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import re
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp

from tools.errors import ToolError
from tools.redact import Redactor
from tools.results import ErrorKind
from triage.app import App
from triage.core.errors import ConfigError, ReportError
from triage.core.settings import ReviewSettings, Settings
from triage.reports import query as q
from triage.reports.review import TALLY, Review, Verdict, Via, record
from triage.reports.store import ReportStore
from triage.reports.views import ReportReader, Summary, summary
from triage.web import pages
from triage.web.auth import (
    Access,
    AuthError,
    KubeAccess,
    LocalAccess,
    User,
    ledger_entry,
    loopback,
    review_in,
    see,
)
from triage.web.http import (
    SecurityHeaders,
    Sessions,
    TooLarge,
    bearer,
    form_fields,
    safe_next,
)

log = logging.getLogger("triage.review")
COOKIE = "triage_session"
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")


class ReportIndex:
    """The reports as rows, read at most every `ttl_s` (one list call serves every page view
    in that window); each read also counts reviews written elsewhere (ReviewTally)."""

    def __init__(self, reports: ReportReader, ttl_s: float) -> None:
        self.reports = reports
        self.ttl_s = ttl_s
        self._rows: list[Summary] = []
        self._at = -1e18
        self._lock = asyncio.Lock()
        self.reads = 0

    def _read(self) -> list[Summary]:
        items = self.reports.list(None)
        TALLY.observe(items)
        self.reads += 1
        return [summary(i) for i in items]

    async def refresh(self) -> list[Summary]:
        self._rows = await asyncio.to_thread(self._read)
        self._at = time.monotonic()
        return self._rows

    async def rows(self) -> list[Summary]:
        async with self._lock:
            if time.monotonic() - self._at >= self.ttl_s:
                await self.refresh()
            return self._rows

    def invalidate(self) -> None:
        self._at = -1e18


@dataclass
class ReviewParts:
    """What the review page runs on; `build_review` wires it from the composition root."""

    settings: ReviewSettings
    reports: ReportReader
    store: ReportStore | None  # None: read-only (no reviews)
    access: Access
    redactor: Redactor
    ledger: Callable[[str], dict[str, Any] | None] | None = None
    ledger_namespace: str = "triage-system"
    secret: bytes = b""


def build_review(settings: Settings, product: App) -> ReviewParts | None:
    """The review page's parts, or None when it has nothing to serve or no way to check
    users (the offline demo with the default `auth: kubernetes`)."""
    r = settings.review
    reports = product.reports()
    if not r.enabled or reports is None:
        return None
    if r.auth == "none":
        if not loopback(r.host):
            raise ConfigError(
                "TRIAGE_REVIEW__AUTH=none shows every report to anyone who reaches the page; "
                "it is only allowed with TRIAGE_REVIEW__HOST=127.0.0.1 (use auth=kubernetes "
                "to serve it to others)"
            )
        access: Access = LocalAccess()
    elif product.api_client is None:
        log.warning(
            "review page off: it checks users with the apiserver and there is none here; "
            "set TRIAGE_REVIEW__AUTH=none and TRIAGE_REVIEW__HOST=127.0.0.1 to try it locally"
        )
        return None
    else:
        access = KubeAccess(
            product.api_client,
            timeout_s=settings.kube.timeout_s,
            token_cache_s=r.token_cache_s,
            access_cache_s=r.access_cache_s,
            proxy_user_header=r.trusted_proxy_user_header,
            proxy_groups_header=r.trusted_proxy_groups_header,
            proxy_cidrs=r.trusted_proxy_cidrs,
        )
    return ReviewParts(
        settings=r,
        reports=reports,
        store=product.store,
        access=access,
        redactor=product.redactor,
        ledger=product.ledger_entry,
        ledger_namespace=settings.mutations.ledger_namespace,
    )


def review_app(parts: ReviewParts) -> Starlette:  # noqa: PLR0915 (one closure per route)
    settings = parts.settings
    access = parts.access
    index = ReportIndex(parts.reports, settings.list_cache_s)
    sessions = Sessions(settings.session_s)
    secret = parts.secret or secrets.token_bytes(32)
    css = files("triage.web").joinpath("static/review.css").read_bytes()
    secure_cookie = bool(settings.external_url and settings.external_url.startswith("https://"))

    def csrf_for(request: Request, user: User) -> str:
        bound = request.cookies.get(COOKIE) or f"user:{user.name}"
        return hmac.new(secret, bound.encode(), hashlib.sha256).hexdigest()

    async def authenticate(request: Request) -> User:
        token = bearer(request) or sessions.token(request.cookies.get(COOKIE))
        peer = request.client.host if request.client else None
        return await asyncio.to_thread(access.authenticate, token, dict(request.headers), peer)

    def denied(request: Request, e: AuthError) -> Response:
        if e.status == 401:
            page = pages.render_login(error=str(e), next_url=safe_next(request.url.path))
            headers = {"WWW-Authenticate": 'Bearer realm="triage"'}
            return HTMLResponse(page, status_code=401, headers=headers)
        return HTMLResponse(pages.render_message("Cannot check who you are", str(e)), e.status)

    def message(title: str, text: str, status: int, user: User | None = None) -> Response:
        name = user.name if user else ""
        page = pages.render_message(title, text, user=name)
        return HTMLResponse(page, status_code=status)

    def has_session(request: Request) -> bool:
        return sessions.token(request.cookies.get(COOKIE)) is not None

    def signed_in(
        handler: Callable[[Request, User], Awaitable[Response]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                user = await authenticate(request)
            except AuthError as e:
                return denied(request, e)
            try:
                return await handler(request, user)
            except AuthError as e:  # a SubjectAccessReview the apiserver could not answer
                return denied(request, e)

        return endpoint

    async def may(user: User, *what: Any) -> list[bool]:
        return await asyncio.to_thread(lambda: [access.allowed(user, w) for w in what])

    async def report_list(request: Request, user: User) -> Response:
        try:
            rows = await index.rows()
        except (ToolError, ValueError) as e:
            return message(
                "Cannot read RCA reports", f"The apiserver did not answer: {e}", 502, user
            )
        namespaces = sorted({r.namespace for r in rows})
        verdicts = await may(user, *(see(ns) for ns in namespaces))
        allowed = {ns for ns, ok in zip(namespaces, verdicts, strict=True) if ok}
        visible = [r for r in rows if r.namespace in allowed]
        query = q.Query.parse(request.query_params)
        html = pages.render_list(
            visible,
            query,
            user=user.name,
            page_size=settings.page_size,
            session=has_session(request),
        )
        return HTMLResponse(html)

    def names(request: Request) -> tuple[str, str] | None:
        ns, name = request.path_params["namespace"], request.path_params["name"]
        return (ns, name) if _NAME.match(ns) and _NAME.match(name) else None

    async def report_page(request: Request, user: User) -> Response:
        where = names(request)
        if where is None:
            return message("No such report", "That is not a report's name.", 404, user)
        ns, name = where
        can_see, can_review = await may(user, see(ns), review_in(ns))
        if not can_see:
            return message(
                "Not allowed",
                f"{user.name} may not read RCA reports in namespace {ns}: ask for get on "
                "rcareports.triage.dev there.",
                403,
                user,
            )
        try:
            obj = await asyncio.to_thread(parts.reports.get, ns, name)
        except ToolError as e:
            return message("Cannot read the RCA report", str(e), 502, user)
        if obj is None:
            return message("No such report", f"There is no RCA report {ns}/{name}.", 404, user)
        note = "Your review was recorded." if request.query_params.get("reviewed") else ""
        html = pages.render_report(
            obj,
            user=user.name,
            can_review=can_review and parts.store is not None,
            csrf=csrf_for(request, user),
            message=note,
            session=has_session(request),
        )
        return HTMLResponse(html)

    async def review_post(request: Request, user: User) -> Response:
        where = names(request)
        if where is None or parts.store is None:
            return message("No such report", "Reviews cannot be recorded here.", 404, user)
        ns, name = where
        try:
            form = await form_fields(request)
        except (TooLarge, ValueError):
            return message("Too long", "The review is too long; keep the note short.", 413, user)
        given = str(form.get("csrf") or "")
        if not hmac.compare_digest(given, csrf_for(request, user)):
            return message("Expired form", "Reload the report and review again.", 403, user)
        try:
            verdict = Verdict(str(form.get("verdict") or ""))
        except ValueError:
            return message("No verdict", "Choose Confirm cause or Dispute.", 400, user)
        (allowed,) = await may(user, review_in(ns))
        if not allowed:
            return message(
                "Not allowed",
                f"{user.name} may not review RCA reports in namespace {ns}: reviewing needs "
                "patch on rcareports/status there.",
                403,
                user,
            )
        note = str(form.get("note") or "")
        review = Review.new(verdict, user.identity, Via.PAGE, note, parts.redactor)
        try:
            await asyncio.to_thread(record, parts.store, ns, name, review)
        except ReportError as e:
            if e.kind is ErrorKind.NOT_FOUND:
                return message("No such report", f"There is no RCA report {ns}/{name}.", 404, user)
            return message("The review was not recorded", str(e), 502, user)
        index.invalidate()
        return RedirectResponse(f"/reports/{ns}/{name}?reviewed=1", status_code=303)

    async def operation_page(request: Request, user: User) -> Response:
        op_id = request.path_params["op_id"]
        if not _NAME.match(op_id) or parts.ledger is None:
            return message("No such operation", "There is no ledger here.", 404, user)
        (allowed,) = await may(user, ledger_entry(parts.ledger_namespace))
        if not allowed:
            return message(
                "Not allowed",
                f"{user.name} may not read the ledger (get operations.triage.dev in "
                f"{parts.ledger_namespace}).",
                403,
                user,
            )
        try:
            op = await asyncio.to_thread(parts.ledger, op_id)
        except ToolError as e:
            return message("Cannot read the ledger", str(e), 502, user)
        if op is None:
            return message("No such operation", f"There is no operation {op_id}.", 404, user)
        return HTMLResponse(
            pages.render_operation(op, user=user.name, session=has_session(request))
        )

    async def login_form(request: Request) -> Response:
        next_url = safe_next(request.query_params.get("next") or "/reports")
        return HTMLResponse(pages.render_login(next_url=next_url))

    async def login(request: Request) -> Response:
        try:
            form = await form_fields(request)
        except (TooLarge, ValueError):
            return HTMLResponse(pages.render_login(error="That is too long for a token."), 413)
        token = "".join(str(form.get("token") or "").split())
        next_url = safe_next(str(form.get("next") or "/reports"))
        try:
            await asyncio.to_thread(access.authenticate, token or None, {}, None)
        except AuthError as e:
            page = pages.render_login(error=str(e), next_url=next_url)
            return HTMLResponse(page, status_code=e.status)
        response = RedirectResponse(next_url, status_code=303)
        response.set_cookie(
            COOKIE,
            sessions.create(token),
            max_age=int(settings.session_s),
            httponly=True,
            samesite="strict",
            secure=secure_cookie,
        )
        return response

    async def logout(request: Request) -> Response:
        sessions.drop(request.cookies.get(COOKIE))
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, httponly=True, samesite="strict", secure=secure_cookie)
        return response

    async def stylesheet(_: Request) -> Response:
        return Response(css, media_type="text/css", headers={"Cache-Control": "max-age=3600"})

    async def healthz(_: Request) -> Response:
        return JSONResponse({"ok": True})

    async def home(_: Request) -> Response:
        return RedirectResponse("/reports", status_code=307)

    async def refresher() -> None:
        """Re-read the reports now and then, so reviews made elsewhere are counted."""
        while True:
            try:
                await index.refresh()
            except (ToolError, ValueError) as e:
                log.warning("could not read the reports to count reviews: %s", e)
            await asyncio.sleep(settings.refresh_s)

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        task = asyncio.create_task(refresher())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    app = Starlette(
        routes=[
            Route("/", home, methods=["GET"]),
            Route("/healthz", healthz, methods=["GET"]),
            Route("/static/review.css", stylesheet, methods=["GET"]),
            Route("/login", login_form, methods=["GET"]),
            Route("/login", login, methods=["POST"]),
            Route("/logout", logout, methods=["POST"]),
            Route("/reports", signed_in(report_list), methods=["GET"]),
            Route("/reports/{namespace}/{name}", signed_in(report_page), methods=["GET"]),
            Route("/reports/{namespace}/{name}/review", signed_in(review_post), methods=["POST"]),
            Route("/operations/{op_id}", signed_in(operation_page), methods=["GET"]),
        ],
        lifespan=lifespan,
    )
    app.state.index = index
    app.state.access = access
    app.state.sessions = sessions
    return app


def asgi(parts: ReviewParts) -> ASGIApp:
    """The review page with its security headers: what uvicorn serves."""
    return SecurityHeaders(review_app(parts))


def server_config(app: ASGIApp, host: str, port: int, **kwargs: Any) -> uvicorn.Config:
    """How the page is served. `proxy_headers=False`: the peer address stays the TCP peer's,
    so an X-Forwarded-For header (which a proxy in front adds, and anyone can forge) can never
    move a request into or out of `trusted_proxy_cidrs`."""
    return uvicorn.Config(app, host=host, port=port, lifespan="on", proxy_headers=False, **kwargs)
