"""The front door of `/slack/events`: bounded reads, the signature first, bounded parsing.

Why this exists: bolt reads the whole body, parses it and only then checks the signature, and
a body it cannot handle surfaces as a 500 with a traceback. Here, in this order, and for
signed and unsigned traffic alike:

1. **Size before reading.** A `Content-Length` over `max_body_bytes` is refused (413) without
   reading a byte; a body without one (chunked) is counted as it streams and cut off at the
   same limit. The default, 1 MiB, is what Slack's own payloads cannot reach: a message holds
   at most 40,000 characters (160 KB as UTF-8 at worst) and an interactivity payload with a
   full 50-block message stays in the low hundreds of KB.
2. **Time.** The whole body must arrive within `body_timeout_s` (408), so a client trickling
   bytes holds a connection for seconds, not forever; headers have their own deadline in the
   HTTP protocol below (`GuardedH11`), which uvicorn lacks (its keep-alive timeout only runs
   between requests).
3. **Signature before parsing.** Slack's v0 HMAC over the raw bytes, with the secret of
   slack_sdk's `SignatureVerifier` but computed here: its `is_valid` calls `int()` on the
   timestamp header before anything else (`abc` was a 500) and decodes the body as UTF-8
   (raw bytes were a 500). Unsigned, stale or forged: 401, nothing parsed.
4. **Bounded parsing.** Nesting is measured by a linear scan before `json.loads` sees the
   text (1,000 nested `[` used to raise RecursionError), a form has a bounded number of
   fields, and the payload must have the shape bolt and our listeners read (an object whose
   known fields have their known types): anything else is 400.

Every refusal is one log line (throttled: a flood of unsigned requests cannot flood the log),
never a traceback.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import re
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import httptools
from slack_sdk.signature import SignatureVerifier
from starlette.requests import ClientDisconnect, Request
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = logging.getLogger("triage.server")
SIGNATURE_WINDOW_S = 300
MAX_FORM_FIELDS = 20
_TIMESTAMP = re.compile(r"[0-9]{1,12}")
_SIGNATURE = re.compile(r"v0=[0-9a-f]{64}")
_SLACK_TS = re.compile(r"[0-9]{1,12}(?:\.[0-9]{1,9})?")


class Refused(Exception):
    """A request answered without going further: `status` and a short public reason."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int
    body_timeout_s: float
    max_json_depth: int


# -- 1 and 2: reading ----------------------------------------------------------------------------


async def read_body(request: Request, limits: Limits) -> bytes:
    """The body, or Refused: 413 over the size limit (before reading when the length is
    declared), 408 when it does not arrive in time, 400 when the client goes away."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise Refused(400, "invalid Content-Length")
        if int(declared) > limits.max_body_bytes:
            raise Refused(413, f"body over {limits.max_body_bytes} bytes")
    try:
        async with asyncio.timeout(limits.body_timeout_s):  # a timer, not a task (wait_for's)
            return await _read(request, limits.max_body_bytes)
    except TimeoutError as e:
        raise Refused(408, f"body not received within {limits.body_timeout_s:g} s") from e
    except ClientDisconnect as e:
        raise Refused(400, "client went away mid-body") from e


async def _read(request: Request, limit: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Refused(413, f"body over {limit} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


# -- 3: the signature ----------------------------------------------------------------------------


def signed(verifier: SignatureVerifier, request: Request, body: bytes, *, now: float) -> bool:
    """Slack's v0 signature over the raw bytes, within five minutes of `now`."""
    ts = request.headers.get("x-slack-request-timestamp", "")
    signature = request.headers.get("x-slack-signature", "")
    if not _TIMESTAMP.fullmatch(ts) or not _SIGNATURE.fullmatch(signature):
        return False
    if abs(now - int(ts)) > SIGNATURE_WINDOW_S:
        return False
    # slack_sdk's own v0 computation, over bytes: its verifier decodes the body as UTF-8
    # first, which raises on a body that is not.
    mac = hmac.new(verifier.signing_secret.encode(), b"v0:" + ts.encode() + b":" + body, "sha256")
    return hmac.compare_digest("v0=" + mac.hexdigest(), signature)


async def admit(
    request: Request, verifier: SignatureVerifier, limits: Limits, *, now: float
) -> tuple[bytes, dict[str, Any]]:
    """Steps 1-4 for one request: its body and what it parses to, or Refused with the status
    to answer."""
    body = await read_body(request, limits)
    if not signed(verifier, request, body, now=now):
        raise Refused(401, "no valid Slack signature")
    return body, payload(body, request.headers.get("content-type", ""), limits)


# -- 4: parsing ----------------------------------------------------------------------------------


_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.S)  # a JSON string, or its unclosed rest
_BRACKET = re.compile(r"[\[\]{}]")


def depth(text: str, limit: int) -> int:
    """How deeply `text` nests arrays and objects (strings skipped), counting up to `limit`
    + 1 at most: linear (the string pattern is an unrolled loop, no backtracking), and no
    recursion for a parser to overflow."""
    level = deepest = 0
    for m in _BRACKET.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            level += 1
            if level > deepest:
                deepest = level
                if deepest > limit:
                    return deepest
        else:
            level -= 1
    return deepest


def parse_json(text: str, limits: Limits) -> Any:
    limit = limits.max_json_depth
    # no deeper than its count of openers: most bodies are under the limit by that alone
    if text.count("{") + text.count("[") > limit and depth(text, limit) > limit:
        raise Refused(400, f"JSON nested deeper than {limits.max_json_depth}")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise Refused(400, "malformed JSON") from e


def payload(body: bytes, content_type: str, limits: Limits) -> dict[str, Any]:
    """The request as bolt will read it (an Events API envelope, or the `payload` of an
    interactivity form), refused with 400 unless it has the shape our listeners expect."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refused(400, "body is not UTF-8") from e
    if content_type.startswith("application/x-www-form-urlencoded") or (
        not content_type.startswith("application/json") and not text.lstrip().startswith("{")
    ):
        try:
            form = parse_qs(text, max_num_fields=MAX_FORM_FIELDS, strict_parsing=True)
        except ValueError as e:
            raise Refused(400, "malformed form") from e
        raw = form.get("payload")
        if not raw or len(raw) != 1:
            raise Refused(400, "a form without one payload field")
        data = parse_json(raw[0], limits)
        if not isinstance(data, dict):
            raise Refused(400, "payload is not a JSON object")
        check_interactivity(data)
        return data
    data = parse_json(text, limits)
    if not isinstance(data, dict):
        raise Refused(400, "body is not a JSON object")
    check_envelope(data)
    return data


_ENVELOPES = {"url_verification", "event_callback", "app_rate_limited"}


def _typed(data: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> None:
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise Refused(400, f"{where}{key} has the wrong type")


def check_envelope(data: dict[str, Any]) -> None:
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in _ENVELOPES:
        raise Refused(400, "not an Events API envelope")
    for key in ("token", "team_id", "api_app_id", "event_id", "enterprise_id", "challenge"):
        _typed(data, key, str, "")
    _typed(data, "is_ext_shared_channel", bool, "")
    _typed(data, "event_time", int, "")
    auths = data.get("authorizations")
    if auths is not None and not (
        isinstance(auths, list) and all(isinstance(a, dict) for a in auths)
    ):
        raise Refused(400, "authorizations is not a list of objects")
    for auth in auths or []:
        for key in ("team_id", "user_id", "enterprise_id"):
            _typed(auth, key, str, "authorizations.")
        _typed(auth, "is_bot", bool, "authorizations.")
        _typed(auth, "is_enterprise_install", bool, "authorizations.")
    if kind != "event_callback":
        return
    event = data.get("event")
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        raise Refused(400, "an event_callback without an event")
    if not isinstance(data.get("event_id"), str):
        raise Refused(400, "an event_callback without an event_id")
    for key in ("text", "user", "channel", "ts", "thread_ts", "event_ts", "bot_id", "subtype"):
        _typed(event, key, str, "event.")
    for key in ("ts", "thread_ts"):
        if isinstance(event.get(key), str) and not _SLACK_TS.fullmatch(event[key]):
            raise Refused(400, f"event.{key} is not a Slack timestamp")
    for key in ("blocks", "files", "attachments"):
        _typed(event, key, list, "event.")
    if event["type"] == "app_mention" and not (event.get("ts") and event.get("channel")):
        raise Refused(400, "a mention without its ts or channel")


def check_interactivity(data: dict[str, Any]) -> None:
    if not isinstance(data.get("type"), str):
        raise Refused(400, "an interactivity payload without a type")
    for key in ("user", "team", "channel", "container", "message", "enterprise", "view"):
        _typed(data, key, dict, "")
    for key in ("trigger_id", "api_app_id", "token", "response_url"):
        _typed(data, key, str, "")
    _typed(data, "is_enterprise_install", bool, "")
    actions = data.get("actions")
    if actions is not None and not (
        isinstance(actions, list) and all(isinstance(a, dict) for a in actions)
    ):
        raise Refused(400, "actions is not a list of objects")
    for action in actions or []:
        for key in ("action_id", "block_id", "value", "action_ts", "type"):
            _typed(action, key, str, "actions.")
    for key in ("user", "team", "channel", "enterprise"):
        sub = data.get(key) or {}
        _typed(sub, "id", str, f"{key}.")
    container = data.get("container") or {}
    for key in ("message_ts", "channel_id", "thread_ts"):
        _typed(container, key, str, "container.")
    message = data.get("message") or {}
    for key in ("ts", "thread_ts", "text"):
        _typed(message, key, str, "message.")


# -- the log ---------------------------------------------------------------------------------------


class RefusalLog:
    """One line per refused request, at most `burst` lines per `window_s`; past that, one
    line saying how many more were refused, so unsigned traffic cannot flood the log."""

    def __init__(self, burst: int = 20, window_s: float = 10.0) -> None:
        self.burst = burst
        self.window_s = window_s
        self._window_start = 0.0
        self._count = 0
        self._suppressed = 0

    def note(self, refused: Refused, request: Request) -> None:
        now = time.monotonic()
        if now - self._window_start > self.window_s:
            if self._suppressed:
                log.warning(
                    "%d more requests refused in the last %.0f s", self._suppressed, self.window_s
                )
            self._window_start, self._count, self._suppressed = now, 0, 0
        self._count += 1
        if self._count > self.burst:
            self._suppressed += 1
            return
        client = request.client.host if request.client else "?"
        log.warning(
            "refused %s %s from %s: %d %s",
            request.method,
            request.url.path,
            client,
            refused.status,
            refused.reason,
        )


# -- headers ---------------------------------------------------------------------------------------


class _HeaderDeadline:
    """A deadline for a request's headers, for either of uvicorn's HTTP protocols.

    uvicorn bounds the headers' size but not their time: a client that sends a few header
    bytes and then nothing holds the connection forever (slowloris). Here every connection,
    and every idle keep-alive connection that starts a new request, must have a request under
    way within `header_timeout_s`, else it is closed.
    """

    header_timeout_s = 10.0
    loop: asyncio.AbstractEventLoop
    transport: Any
    cycle: Any

    def _busy(self) -> bool:
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete

    def _arm(self) -> None:
        self._header_timer: asyncio.TimerHandle | None = self.loop.call_later(
            self.header_timeout_s, self._deadline
        )

    def _rearm(self) -> None:
        if getattr(self, "_header_timer", None) is None and not self._busy():
            self._arm()

    def _disarm(self) -> None:
        timer = getattr(self, "_header_timer", None)
        if timer is not None:
            timer.cancel()
            self._header_timer = None

    def _deadline(self) -> None:
        self._header_timer = None
        if self._busy():
            return  # a request is being served: its body has the app's own deadline
        if not self.transport.is_closing():
            self.transport.close()


class GuardedH11(_HeaderDeadline, H11Protocol):
    """uvicorn's h11 protocol (h11 bounds headers to 16 KiB) with the header deadline."""

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        self._rearm()
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)


class GuardedHttpTools(_HeaderDeadline, HttpToolsProtocol):
    """uvicorn's httptools protocol (llhttp, uvicorn[standard]: the fast parser `triage serve`
    runs) with the header deadline and the same 16 KiB bound on a request's headers as h11's:
    a request whose headers grow past it is answered 400 and its connection closed."""

    max_header_bytes = 16 * 1024

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        self._rearm()
        super().data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        self._header_bytes = 0
        super().on_message_begin()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def _count(self, n: int) -> None:
        self._header_bytes = getattr(self, "_header_bytes", 0) + n
        if self._header_bytes > self.max_header_bytes:
            # raised inside the parser's callback: uvicorn answers 400 and closes
            raise httptools.HttpParserError("request headers too large")
