"""A scripted OpenAI-compatible chat-completions server for tests (pytest plugin + server).

Why: the LLM planner and the judge talk to a model through an OpenAI-compatible HTTP API; tests
need that wire without a model. Each POST /v1/chat/completions takes the next scripted reply
from a queue (plain text, or tool calls with JSON arguments, each with `usage` token figures),
so a test decides exactly what "the model" says, and every request body is kept so a test can
assert what reached the model (no secret ever does). Faults: HTTP errors (500, 429, ...), slow
replies (client timeouts) and garbage bodies. GET /v1/models lists the models.

`stream: true` is answered as server-sent events (one content/tool-call delta, a finish chunk,
the usage chunk when `stream_options.include_usage` is set, then `[DONE]`).

An empty queue answers 500 with "fake_openai: no scripted reply left" and counts it in
`unexpected`, so an unplanned model call fails the test instead of hanging it.

Fixture: `openai_server` (function scope; one server per session, queue and records reset for
every test).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import urlsplit

import pytest

__all__ = ["DEFAULT_API_KEY", "DEFAULT_MODEL", "FakeOpenAI", "ToolCall"]

DEFAULT_API_KEY = "sk-triage-test"
DEFAULT_MODEL = "triage-test-model"


@dataclass(frozen=True)
class ToolCall:
    """A tool call the scripted model makes. `arguments` is a dict (sent as JSON) or a raw
    string (sent as-is, e.g. to test invalid JSON arguments). `id` defaults to `call_<n>`."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None


@dataclass
class _Scripted:
    kind: Literal["message", "error", "garbage"]
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    status: int = 200
    body: bytes = b""
    delay: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class FakeOpenAI:
    """The server, its queue of scripted replies and its record of requests."""

    def __init__(self, api_key: str = DEFAULT_API_KEY, models: Sequence[str] = (DEFAULT_MODEL,)):
        self.api_key = api_key
        self.models = list(models)
        self._lock = threading.Lock()
        # Set by reset()/stop(): cuts a slow reply short so it cannot leak into the next test.
        self._wake = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="fake-openai", daemon=True
        )
        self.port: int = self._httpd.server_address[1]
        self.reset()

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What to pass as the OpenAI client's / ChatOpenAI's `base_url`."""
        return f"{self.url}/v1"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._wake.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def reset(self) -> None:
        """Drop queued replies and recorded requests; cut slow replies short."""
        with self._lock:
            self._wake.set()
            self._wake = threading.Event()
            self._queue: deque[_Scripted] = deque()
            self.requests: list[dict[str, Any]] = []
            self.raw_requests: list[bytes] = []
            self.unexpected = 0
            self._ids = itertools.count(1)

    # -- scripting -----------------------------------------------------------------------------

    def reply(
        self,
        content: str | None = None,
        *,
        tool_calls: Sequence[ToolCall] = (),
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        delay: float = 0.0,
    ) -> FakeOpenAI:
        """Queue an assistant message: text, tool calls, or both. Token figures default to
        about a quarter of the request / reply size in bytes. `delay` (seconds) makes it slow."""
        if content is None and not tool_calls:
            msg = "a reply needs content or tool calls"
            raise ValueError(msg)
        self._push(
            _Scripted(
                "message",
                content=content,
                tool_calls=tuple(tool_calls),
                delay=delay,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        )
        return self

    def reply_tool_call(
        self, name: str, arguments: dict[str, Any] | str, *, call_id: str | None = None
    ) -> FakeOpenAI:
        """Queue a reply with exactly one tool call."""
        return self.reply(tool_calls=[ToolCall(name, arguments, call_id)])

    def fail(
        self, status: int = 500, *, message: str = "scripted failure", times: int = 1
    ) -> FakeOpenAI:
        """Queue `times` HTTP errors with OpenAI's error body."""
        body = json.dumps(
            {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
        ).encode()
        for _ in range(times):
            self._push(_Scripted("error", status=status, body=body))
        return self

    def garbage(self, body: bytes = b'{"choices": [ nope', *, status: int = 200) -> FakeOpenAI:
        """Queue a reply whose body is not valid JSON (or not the expected shape)."""
        self._push(_Scripted("garbage", status=status, body=body))
        return self

    def _push(self, item: _Scripted) -> None:
        with self._lock:
            self._queue.append(item)

    @property
    def remaining(self) -> int:
        """Scripted replies not consumed yet."""
        with self._lock:
            return len(self._queue)

    # -- records -------------------------------------------------------------------------------

    def request_text(self) -> str:
        """Every request body received, as one string: `assert secret not in ...`."""
        with self._lock:
            return "\n".join(raw.decode("utf-8", errors="replace") for raw in self.raw_requests)

    @property
    def last_request(self) -> dict[str, Any]:
        with self._lock:
            return self.requests[-1]

    # -- serving -------------------------------------------------------------------------------

    def _next_item(self, raw: bytes) -> tuple[dict[str, Any] | None, _Scripted | None]:
        with self._lock:
            self.raw_requests.append(raw)
            try:
                body = json.loads(raw)
            except json.JSONDecodeError:
                body = None
            self.requests.append(body if isinstance(body, dict) else {"_unparsed": raw})
            item = self._queue.popleft() if self._queue else None
            if item is None:
                self.unexpected += 1
            return (body if isinstance(body, dict) else None), item

    def _sleep(self, seconds: float) -> bool:
        """Wait `seconds`; False if reset or stopped meanwhile (the reply is stale)."""
        return not self._wake.wait(seconds)

    def completion(self, request: dict[str, Any], item: _Scripted, raw_size: int) -> dict[str, Any]:
        """The chat.completion object for a scripted message."""
        number = next(self._ids)
        message: dict[str, Any] = {"role": "assistant", "content": item.content, "refusal": None}
        if item.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or f"call_{number}_{index}",
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.arguments
                        if isinstance(call.arguments, str)
                        else json.dumps(call.arguments),
                    },
                }
                for index, call in enumerate(item.tool_calls)
            ]
        reply_size = len(json.dumps(message))
        prompt = item.prompt_tokens if item.prompt_tokens is not None else max(1, raw_size // 4)
        completion = (
            item.completion_tokens
            if item.completion_tokens is not None
            else max(1, reply_size // 4)
        )
        return {
            "id": f"chatcmpl-fake-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(request.get("model") or self.models[0]),
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": "tool_calls" if item.tool_calls else "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }


def _stream_events(completion: dict[str, Any], include_usage: bool) -> Iterator[dict[str, Any]]:
    """The chat.completion.chunk objects for one completion."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    base["object"] = "chat.completion.chunk"
    delta: dict[str, Any] = {"role": "assistant", "content": message["content"]}
    if "tool_calls" in message:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    yield {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
    yield {
        **base,
        "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}],
    }
    if include_usage:
        yield {**base, "choices": [], "usage": completion["usage"]}


def _error_body(message: str, code: str | None = None) -> bytes:
    return json.dumps(
        {
            "error": {
                "message": message,
                "type": "invalid_request_error",
                "param": None,
                "code": code,
            }
        }
    ).encode()


def _handler_for(server: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet: requests are recorded on the server."""

        def _authorized(self) -> bool:
            if self.headers.get("Authorization") == f"Bearer {server.api_key}":
                return True
            self._send(401, _error_body("Incorrect API key provided", "invalid_api_key"))
            return False

        def do_GET(self) -> None:
            if urlsplit(self.path).path.rstrip("/") != "/v1/models":
                self._send(404, _error_body("not found"))
                return
            if not self._authorized():
                return
            data = [
                {"id": m, "object": "model", "created": 0, "owned_by": "triage-tests"}
                for m in server.models
            ]
            self._send(200, json.dumps({"object": "list", "data": data}).encode())

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if urlsplit(self.path).path.rstrip("/") != "/v1/chat/completions":
                self._send(404, _error_body("not found"))
                return
            if not self._authorized():
                return
            request, item = server._next_item(raw)
            if request is None or not isinstance(request.get("messages"), list):
                self._send(400, _error_body("request body must be JSON with a messages list"))
                return
            if item is None:
                self._send(500, _error_body("fake_openai: no scripted reply left"))
                return
            if item.delay and not server._sleep(item.delay):
                self.close_connection = True
                return
            if item.kind != "message":
                self._send(item.status, item.body)
                return
            completion = server.completion(request, item, len(raw))
            if request.get("stream"):
                options = request.get("stream_options") or {}
                self._stream(_stream_events(completion, bool(options.get("include_usage"))))
            else:
                self._send(200, json.dumps(completion).encode())

        def _send(self, status: int, body: bytes) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True  # the client gave up (timeout test)

        def _stream(self, events: Iterator[dict[str, Any]]) -> None:
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in events:
                    self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up
            self.close_connection = True

    return Handler


@pytest.fixture(scope="session")
def _fake_openai_server() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI().start()
    yield server
    server.stop()


@pytest.fixture
def openai_server(_fake_openai_server: FakeOpenAI) -> FakeOpenAI:
    """The scripted OpenAI-compatible server with an empty queue: script replies with
    `openai_server.reply(...)`, point clients at `.base_url` with key `.api_key`."""
    _fake_openai_server.reset()
    return _fake_openai_server
