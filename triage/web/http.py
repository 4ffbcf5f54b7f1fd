"""The review page's HTTP plumbing: security headers on every answer, server-side sessions for
pasted tokens, bounded form bodies, and redirects that never leave the site.

Kept apart from the routes (triage/web/review.py) because each of these is a rule that must
hold for every route, whatever it does.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from urllib.parse import parse_qs

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_FORM_BYTES = 16 * 1024
MAX_SESSIONS = 10_000
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}


class SecurityHeaders:
    """Adds HEADERS to every response (ours and the router's 404s)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                raw = list(message.get("headers") or [])
                present = {k.lower() for k, _ in raw}
                for k, v in HEADERS.items():
                    if k.lower().encode() not in present:
                        raw.append((k.lower().encode(), v.encode()))
                message["headers"] = raw
            await send(message)

        await self.app(scope, receive, with_headers)


class Sessions:
    """Pasted tokens, server-side, by a random id; bounded, each for `ttl_s`."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._items: OrderedDict[str, tuple[float, str]] = OrderedDict()
        self._lock = threading.Lock()

    def create(self, token: str) -> str:
        sid = secrets.token_urlsafe(32)
        with self._lock:
            self._items[sid] = (time.monotonic() + self.ttl_s, token)
            while len(self._items) > MAX_SESSIONS:
                self._items.popitem(last=False)
        return sid

    def token(self, sid: str | None) -> str | None:
        if not sid:
            return None
        with self._lock:
            hit = self._items.get(sid)
            if hit is None or hit[0] < time.monotonic():
                self._items.pop(sid, None)
                return None
            return hit[1]

    def drop(self, sid: str | None) -> None:
        with self._lock:
            self._items.pop(sid or "", None)


def bearer(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


class TooLarge(Exception):
    pass


async def form_fields(request: Request) -> dict[str, str]:
    """A urlencoded form, read up to MAX_FORM_BYTES (the page's forms are small)."""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise TooLarge
    parsed = parse_qs(body.decode("utf-8", "replace"), max_num_fields=10)
    return {k: v[0] for k, v in parsed.items() if v}


def safe_next(value: str) -> str:
    """Only a path on this site (no scheme, no //host): a login never redirects elsewhere."""
    return (
        value
        if value.startswith("/") and not value.startswith("//") and "\\" not in value
        else "/reports"
    )
