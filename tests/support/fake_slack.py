"""A local Slack Web API server for tests (pytest plugin + server).

Why: Slack cannot be reached from tests, and faking our own Slack layer would test our guesses.
This server speaks the Web API at the wire, so the product's real slack_sdk `WebClient` /
`AsyncWebClient` (and slack-bolt) talk to it through `base_url="http://127.0.0.1:PORT/api/"`,
as bolt-python's scenario tests do. It keeps just enough state to assert on outcomes: messages
per channel (edited in place), reactions, threads, uploaded files; counts calls per method; and
injects the faults the product must survive (429 with Retry-After, 5xx, connection resets).

Methods: auth.test, chat.postMessage, chat.update, chat.getPermalink, chat.postEphemeral,
reactions.add, conversations.replies, conversations.history, files.getUploadURLExternal + the
upload URL + files.completeUploadExternal (slack_sdk's `files_upload_v2`), views.open. Anything
else answers
`{"ok": false, "error": "unknown_method"}` like Slack does.

Fixture: `slack_api` (function scope; one server per session, state reset for every test).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

__all__ = ["DEFAULT_TOKEN", "FakeSlack", "Fault", "SlackCall"]

DEFAULT_TOKEN = "xoxb-triage-test-token"
TEAM_ID = "T0TRIAGE"
BOT_USER_ID = "U0TRIAGEBOT"
BOT_ID = "B0TRIAGEBOT"
WORKSPACE_URL = "https://triage-test.slack.com/"
# Form fields slack_sdk sends JSON-encoded; decoded so tests can assert on structures.
_JSON_FIELDS = frozenset({"blocks", "attachments", "files", "view", "metadata"})


@dataclass
class SlackCall:
    """One request the server received, in arrival order.

    `outcome`: `ok`, the Slack error string (e.g. `invalid_auth`), or the injected fault
    (`http_429`, `http_503`, `reset`).
    """

    method: str
    params: dict[str, Any]
    token: str | None
    outcome: str = "ok"


@dataclass
class Fault:
    """A fault injected for the next `times` calls of `method` (`*` = any method)."""

    method: str
    status: int = 200
    retry_after: int | None = None
    error: str | None = None
    reset: bool = False
    applied: bool = False
    delay: float = 0.0
    times: int = 1


@dataclass
class _Reply:
    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)


class _ResetConnection(Exception):
    """Close the socket with an RST instead of answering."""


class FakeSlack:
    """The server and its state. Inspect `calls`, `log`, `messages`, `files`, `ephemeral`,
    `views` after the product ran; call `inject()` before to make it misbehave."""

    def __init__(self, token: str = DEFAULT_TOKEN) -> None:
        self.token = token
        self._lock = threading.RLock()
        # Set by reset()/stop(): cuts a delayed reply short so it cannot leak into the next test.
        self._wake = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="fake-slack", daemon=True
        )
        self.port: int = self._httpd.server_address[1]
        self.reset()

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What to pass as slack_sdk's `base_url`."""
        return f"{self.url}/api/"

    def start(self) -> FakeSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._wake.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def reset(self) -> None:
        """Forget every message, file, call and pending fault; drop delayed replies."""
        with self._lock:
            self._wake.set()
            self._wake = threading.Event()
            self.calls: Counter[str] = Counter()
            self.log: list[SlackCall] = []
            self.messages: dict[str, list[dict[str, Any]]] = {}
            self.files: dict[str, dict[str, Any]] = {}
            self.ephemeral: list[dict[str, Any]] = []
            self.views: list[dict[str, Any]] = []
            self.faults: list[Fault] = []
            self._ids = itertools.count(1)

    # -- faults --------------------------------------------------------------------------------

    def inject(
        self,
        method: str,
        *,
        status: int = 200,
        retry_after: int | None = None,
        error: str | None = None,
        reset: bool = False,
        applied: bool = False,
        delay: float = 0.0,
        times: int = 1,
    ) -> Fault:
        """Make the next `times` calls of `method` fail (`"*"`: any method; `"upload"`: the
        file upload URL, status faults only).

        - `status=429, retry_after=1`: rate limited (`Retry-After` header, `ratelimited` error);
        - `status=500` / `503`: server error with `{"ok": false, "error": "internal_error"}`;
        - `error="channel_not_found"`: HTTP 200 with `ok: false` and that error;
        - `reset=True`: the request is read (and logged) but the socket is closed with an RST,
          so the client cannot know whether the call took effect; with `applied=True` it did
          (the response was lost after the write), otherwise it did not;
        - `delay`: seconds to wait before answering (or before the fault), for client timeouts.

        Apart from `reset=True, applied=True`, a faulted call has no effect on the state; every
        call counts in `calls` and `log`.
        """
        fault = Fault(method, status, retry_after, error, reset, applied, delay, times)
        with self._lock:
            self.faults.append(fault)
        return fault

    def _take_fault(self, method: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.method in (method, "*") and fault.times > 0:
                    fault.times -= 1
                    if fault.times == 0:
                        self.faults.remove(fault)
                    return fault
        return None

    # -- queries for tests ---------------------------------------------------------------------

    def channel_messages(self, channel: str) -> list[dict[str, Any]]:
        """Every message posted to `channel` (threads included), oldest first."""
        with self._lock:
            return list(self.messages.get(channel, []))

    def message(self, channel: str, ts: str) -> dict[str, Any] | None:
        with self._lock:
            return next((m for m in self.messages.get(channel, []) if m["ts"] == ts), None)

    def thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """The parent message and its replies, oldest first."""
        with self._lock:
            return [
                m
                for m in self.messages.get(channel, [])
                if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts
            ]

    def calls_to(self, method: str) -> list[SlackCall]:
        with self._lock:
            return [c for c in self.log if c.method == method]

    # -- dispatch ------------------------------------------------------------------------------

    def _next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ids):06d}"

    def handle_api(self, method: str, params: dict[str, Any], token: str | None) -> _Reply:
        call = SlackCall(method, params, token)
        with self._lock:
            self.calls[method] += 1
            self.log.append(call)
        fault = self._take_fault(method)
        if fault is not None:
            if fault.delay:
                wake = self._wake
                if wake.wait(fault.delay):
                    raise _ResetConnection  # reset or stopped meanwhile: this reply is stale
            if fault.reset and fault.applied:
                self._apply(method, params, token, call)
            reply = self._fault_reply(fault, call)
            if reply is not None:
                return reply
        return self._apply(method, params, token, call)

    def _apply(
        self, method: str, params: dict[str, Any], token: str | None, call: SlackCall
    ) -> _Reply:
        if token is None:
            call.outcome = "not_authed"
            return _Reply(body={"ok": False, "error": "not_authed"})
        if token != self.token:
            call.outcome = "invalid_auth"
            return _Reply(body={"ok": False, "error": "invalid_auth"})
        handler = _METHODS.get(method)
        if handler is None:
            call.outcome = "unknown_method"
            return _Reply(body={"ok": False, "error": "unknown_method"})
        with self._lock:
            body = handler(self, params)
        if not body.get("ok"):
            call.outcome = str(body.get("error"))
        return _Reply(body=body)

    @staticmethod
    def _fault_reply(fault: Fault, call: SlackCall) -> _Reply | None:
        if fault.reset:
            call.outcome = "reset"
            raise _ResetConnection
        if fault.status == HTTPStatus.TOO_MANY_REQUESTS:
            call.outcome = "http_429"
            headers = {
                "Retry-After": str(fault.retry_after if fault.retry_after is not None else 1)
            }
            return _Reply(429, {"ok": False, "error": "ratelimited"}, headers)
        if fault.status >= 500:
            call.outcome = f"http_{fault.status}"
            return _Reply(fault.status, {"ok": False, "error": "internal_error"})
        if fault.error:
            call.outcome = fault.error
            return _Reply(body={"ok": False, "error": fault.error})
        return None  # only a delay

    def handle_upload(self, file_id: str, data: bytes) -> tuple[int, str]:
        with self._lock:
            self.calls["upload"] += 1
            self.log.append(SlackCall("upload", {"file_id": file_id, "bytes": len(data)}, None))
            fault = self._take_fault("upload")
            if fault is not None and fault.status != 200:
                return fault.status, "error"
            file = self.files.get(file_id)
            if file is None:
                return 404, "not found"
            file["content"] = data
            file["size"] = len(data)
            return 200, f"OK - {len(data)}"

    # -- methods -------------------------------------------------------------------------------

    def _auth_test(self, _: dict[str, Any]) -> dict[str, Any]:
        return {
            "ok": True,
            "url": WORKSPACE_URL,
            "team": "Triage Test",
            "user": "triage",
            "team_id": TEAM_ID,
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "is_enterprise_install": False,
        }

    def _post_message(self, params: dict[str, Any]) -> dict[str, Any]:
        channel = params.get("channel")
        if not channel:
            return {"ok": False, "error": "channel_not_found"}
        if not any(params.get(k) for k in ("text", "blocks", "attachments")):
            return {"ok": False, "error": "no_text"}
        message: dict[str, Any] = {
            "type": "message",
            "ts": self._next_ts(),
            "user": BOT_USER_ID,
            "bot_id": BOT_ID,
            "text": params.get("text", ""),
        }
        for key in ("blocks", "attachments", "metadata"):
            if key in params:
                message[key] = params[key]
        if params.get("thread_ts"):
            message["thread_ts"] = str(params["thread_ts"])
        self.messages.setdefault(channel, []).append(message)
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": dict(message)}

    def _update(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = params.get("channel", ""), str(params.get("ts", ""))
        message = self.message(channel, ts)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        for key in ("text", "blocks", "attachments", "metadata"):
            if key in params:
                message[key] = params[key]
        message["edited"] = {"user": BOT_USER_ID, "ts": self._next_ts()}
        return {
            "ok": True,
            "channel": channel,
            "ts": ts,
            "text": message.get("text", ""),
            "message": dict(message),
        }

    def _permalink(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = params.get("channel", ""), str(params.get("message_ts", ""))
        if self.message(channel, ts) is None:
            return {"ok": False, "error": "message_not_found"}
        link = f"{WORKSPACE_URL}archives/{channel}/p{ts.replace('.', '')}"
        return {"ok": True, "channel": channel, "permalink": link}

    def _post_ephemeral(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("channel") or not params.get("user"):
            return {"ok": False, "error": "channel_not_found"}
        ts = self._next_ts()
        self.ephemeral.append({**params, "ts": ts})
        return {"ok": True, "message_ts": ts}

    def _reactions_add(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = params.get("channel", ""), str(params.get("timestamp", ""))
        name = params.get("name")
        message = self.message(channel, ts)
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if not name:
            return {"ok": False, "error": "invalid_name"}
        reactions: list[dict[str, Any]] = message.setdefault("reactions", [])
        if any(r["name"] == name for r in reactions):
            return {"ok": False, "error": "already_reacted"}
        reactions.append({"name": name, "users": [BOT_USER_ID], "count": 1})
        return {"ok": True}

    def _replies(self, params: dict[str, Any]) -> dict[str, Any]:
        channel, ts = params.get("channel", ""), str(params.get("ts", ""))
        messages = self.thread(channel, ts)
        if not messages:
            return {"ok": False, "error": "thread_not_found"}
        return {
            "ok": True,
            "messages": [dict(m) for m in messages],
            "has_more": False,
            "response_metadata": {"next_cursor": ""},
        }

    def _history(self, params: dict[str, Any]) -> dict[str, Any]:
        """Top-level messages of a channel, newest first, from `oldest` (Slack's order)."""
        channel = params.get("channel", "")
        oldest = float(params.get("oldest") or 0)
        top = [
            dict(m)
            for m in self.messages.get(channel, [])
            if not m.get("thread_ts") or m.get("thread_ts") == m["ts"]
        ]
        top = [m for m in top if float(m["ts"]) >= oldest]
        return {
            "ok": True,
            "messages": list(reversed(top)),
            "has_more": False,
            "response_metadata": {"next_cursor": ""},
        }

    def _get_upload_url(self, params: dict[str, Any]) -> dict[str, Any]:
        if not params.get("filename") or not params.get("length"):
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F{next(self._ids):08d}"
        self.files[file_id] = {
            "id": file_id,
            "name": params["filename"],
            "title": params["filename"],
            "length": int(params["length"]),
            "content": None,
            "channels": [],
        }
        return {"ok": True, "upload_url": f"{self.url}/upload/{file_id}", "file_id": file_id}

    def _complete_upload(self, params: dict[str, Any]) -> dict[str, Any]:
        entries = params.get("files")
        if not isinstance(entries, list) or not entries:
            return {"ok": False, "error": "invalid_arguments"}
        shared: list[dict[str, Any]] = []
        for entry in entries:
            file = self.files.get(str(entry.get("id")))
            if file is None or file["content"] is None:
                return {"ok": False, "error": "file_not_found"}
            if entry.get("title"):
                file["title"] = entry["title"]
            shared.append(file)
        channels = [c for c in str(params.get("channels") or "").split(",") if c]
        if params.get("channel_id"):
            channels.append(str(params["channel_id"]))
        public = [
            {k: v for k, v in f.items() if k not in ("content", "length")} | {"size": f["size"]}
            for f in shared
        ]
        for channel in channels:
            for file in shared:
                file["channels"].append(channel)
            message: dict[str, Any] = {
                "type": "message",
                "ts": self._next_ts(),
                "user": BOT_USER_ID,
                "text": params.get("initial_comment", ""),
                "files": public,
                "upload": True,
            }
            if params.get("thread_ts"):
                message["thread_ts"] = str(params["thread_ts"])
            self.messages.setdefault(channel, []).append(message)
        return {"ok": True, "files": public}

    def _views_open(self, params: dict[str, Any]) -> dict[str, Any]:
        view = params.get("view")
        if not params.get("trigger_id") or not isinstance(view, dict):
            return {"ok": False, "error": "invalid_arguments"}
        opened = {"id": f"V{next(self._ids):08d}", **view}
        self.views.append(opened)
        return {"ok": True, "view": opened}


_METHODS = {
    "auth.test": FakeSlack._auth_test,
    "chat.postMessage": FakeSlack._post_message,
    "chat.update": FakeSlack._update,
    "chat.getPermalink": FakeSlack._permalink,
    "chat.postEphemeral": FakeSlack._post_ephemeral,
    "reactions.add": FakeSlack._reactions_add,
    "conversations.replies": FakeSlack._replies,
    "conversations.history": FakeSlack._history,
    "files.getUploadURLExternal": FakeSlack._get_upload_url,
    "files.completeUploadExternal": FakeSlack._complete_upload,
    "views.open": FakeSlack._views_open,
}


def _decode_params(raw: bytes, content_type: str, query: str) -> dict[str, Any]:
    params: dict[str, Any] = dict(parse_qsl(query, keep_blank_values=True))
    if raw:
        if content_type.startswith("application/json"):
            body = json.loads(raw)
            if isinstance(body, dict):
                params.update(body)
        elif content_type.startswith("application/x-www-form-urlencoded"):
            params.update(parse_qsl(raw.decode("utf-8"), keep_blank_values=True))
        else:
            params["_raw_body"] = raw
    for key in _JSON_FIELDS & params.keys():
        if isinstance(params[key], str):
            # On bad JSON keep what the client sent; the method decides whether that is valid.
            with contextlib.suppress(json.JSONDecodeError):
                params[key] = json.loads(params[key])
    return params


def _handler_for(server: FakeSlack) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: the call log is `server.log`."""

        def do_GET(self) -> None:
            self._dispatch()

        def do_POST(self) -> None:
            self._dispatch()

        def _dispatch(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            parts = urlsplit(self.path)
            if parts.path.startswith("/upload/"):
                status, text = server.handle_upload(parts.path.removeprefix("/upload/"), raw)
                self._send(status, text.encode(), "text/plain; charset=utf-8", {})
                return
            if not parts.path.startswith("/api/"):
                self._send(404, b"not found", "text/plain", {})
                return
            method = parts.path.removeprefix("/api/")
            try:
                params = _decode_params(raw, self.headers.get("Content-Type", ""), parts.query)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self._send(400, b'{"ok":false,"error":"invalid_json"}', "application/json", {})
                return
            auth = self.headers.get("Authorization", "")
            token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else None
            token = token or params.pop("token", None)
            params.pop("token", None)
            try:
                reply = server.handle_api(method, params, token)
            except _ResetConnection:
                self._reset()
                return
            body = json.dumps(reply.body).encode()
            self._send(reply.status, body, "application/json; charset=utf-8", reply.headers)

        def _send(
            self, status: int, body: bytes, content_type: str, headers: dict[str, str]
        ) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (timeout test)

        def _reset(self) -> None:
            # SO_LINGER 0 then close: the kernel answers with RST, no FIN, no response bytes.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True

    return Handler


@pytest.fixture(scope="session")
def _fake_slack_server() -> Iterator[FakeSlack]:
    server = FakeSlack().start()
    yield server
    server.stop()


@pytest.fixture
def slack_api(_fake_slack_server: FakeSlack) -> FakeSlack:
    """The local Slack Web API, with fresh state: point slack_sdk at `slack_api.base_url` with
    token `slack_api.token`."""
    _fake_slack_server.reset()
    return _fake_slack_server
