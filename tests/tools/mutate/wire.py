"""Faults at the wire: a urllib3 pool and an httpx transport that drop or kill on cue.

Nothing of ours is mocked: the product code runs unchanged on a real client whose connection
pool (Kubernetes) or transport (Alertmanager) is wrapped. A `Fault` names a request by method
and path and says what happens to it:

- `drop_request`: the connection "resets" before the request is sent — nothing reaches the
  server, the caller sees a connection error;
- `drop_response`: the request is sent and the server acts on it, then the answer is lost —
  the caller sees a connection error and cannot know that the write landed;
- `kill_before` / `kill_after`: the whole process is SIGKILLed at that point (only used in
  worker subprocesses);
- `timeout_response`: the request is sent and acted on, and the client's read times out;
- `error_503_before` / `error_503_after`: the caller gets a 503 instead of the answer, either
  without the request reaching the server or after the server acted on it (a 5xx says nothing
  about whether a write landed);
- `crash_before` / `crash_after`: the agent stops dead at that point, in-process (see
  `AgentCrashed`): cheaper than a process kill, so the randomized trials can crash often;
- `call_before`: run `callback` (e.g. a human's change) just before the request is sent.

Every request is logged with its fate (the HTTP status, or "dropped"); a request whose answer
was dropped still carries the status the server gave it, since it landed. When `log_path` is
set, each entry is also appended to that file at once, so a killed process leaves its log.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import urllib3

What = Literal[
    "drop_request",
    "drop_response",
    "timeout_response",
    "error_503_before",
    "error_503_after",
    "kill_before",
    "kill_after",
    "crash_before",
    "crash_after",
    "call_before",
]


class AgentCrashed(BaseException):
    """The in-process stand-in for a dead agent: nothing after this point runs (the product
    catches its own errors, never BaseException), and another agent must pick the run up."""


@dataclass
class Fault:
    method: str
    path: str  # regex searched in the URL path
    what: What
    times: int = 1  # how many matching requests it hits
    skip: int = 0  # let this many matching requests through first
    callback: Callable[[], None] | None = None
    seen: int = 0
    hits: int = 0

    def matches(self, method: str, url: str) -> bool:
        path = urllib3.util.parse_url(url).path or ""
        if method.upper() != self.method.upper() or re.search(self.path, path) is None:
            return False
        self.seen += 1
        return self.seen > self.skip and self.hits < self.times


@dataclass(frozen=True)
class Entry:
    method: str
    path: str
    status: int | None  # None: never reached the server
    lost: bool = False  # the server answered, the caller never saw it


@dataclass
class Wire:
    """The faults armed on a client, and a log of every request that went through."""

    faults: list[Fault] = field(default_factory=list)
    log: list[Entry] = field(default_factory=list)
    log_path: str | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, *faults: Fault) -> None:
        with self.lock:
            self.faults.extend(faults)

    def disarm(self) -> None:
        with self.lock:
            self.faults.clear()

    def pick(self, method: str, url: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.matches(method, url):
                    f.hits += 1
                    return f
        return None

    def record(self, method: str, url: str, status: int | None, *, lost: bool = False) -> None:
        entry = Entry(method.upper(), urllib3.util.parse_url(url).path or "", status, lost)
        with self.lock:
            self.log.append(entry)
            if self.log_path:
                with open(self.log_path, "a") as f:
                    f.write(json.dumps(entry.__dict__) + "\n")
                    f.flush()
                    os.fsync(f.fileno())

    def landed(self, method: str, path: str) -> int:
        """How many matching requests the server accepted (2xx), seen by us or not."""
        rx = re.compile(path)
        return sum(
            1
            for e in self.log
            if e.method == method and rx.search(e.path) and e.status and e.status < 300
        )


def read_log(path: str) -> list[Entry]:
    try:
        with open(path) as f:
            return [Entry(**json.loads(line)) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def landed(entries: list[Entry], method: str, path: str) -> int:
    rx = re.compile(path)
    return sum(
        1
        for e in entries
        if e.method == method and rx.search(e.path) and e.status and e.status < 300
    )


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class FaultyPool:
    """Stands in for the kubernetes client's urllib3 PoolManager, delegating to the real one."""

    def __init__(self, inner: urllib3.PoolManager, wire: Wire) -> None:
        self._inner = inner
        self.wire = wire

    def request(self, method: str, url: str, **kw: Any) -> Any:
        fault = self.wire.pick(method, url)
        what = fault.what if fault is not None else None
        if what == "call_before" and fault is not None and fault.callback is not None:
            fault.callback()
        if what == "kill_before":
            _kill()
        if what == "crash_before":
            self.wire.record(method, url, None)
            raise AgentCrashed(f"{method} {url}")
        if what == "drop_request":
            self.wire.record(method, url, None)
            raise urllib3.exceptions.ProtocolError("injected: connection reset before sending")
        if what == "error_503_before":
            self.wire.record(method, url, None)
            return _unavailable()
        response = self._inner.request(method, url, **kw)
        if what == "timeout_response":
            self.wire.record(method, url, response.status, lost=True)
            _discard(response)
            raise urllib3.exceptions.ReadTimeoutError(None, url, "injected: read timed out")
        if what == "error_503_after":
            self.wire.record(method, url, response.status, lost=True)
            _discard(response)
            return _unavailable()
        if what == "kill_after":
            self.wire.record(method, url, response.status, lost=True)
            _kill()
        if what == "crash_after":
            self.wire.record(method, url, response.status, lost=True)
            _discard(response)
            raise AgentCrashed(f"{method} {url}")
        if what == "drop_response":
            self.wire.record(method, url, response.status, lost=True)
            _discard(response)
            raise urllib3.exceptions.ProtocolError("injected: connection reset, answer lost")
        self.wire.record(method, url, response.status)
        return response

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _discard(response: Any) -> None:
    """Read and drop an answer, leaving the pooled connection clean for the next request."""
    response.drain_conn()
    response.release_conn()


def _unavailable() -> urllib3.HTTPResponse:
    body = b'{"kind":"Status","apiVersion":"v1","status":"Failure","code":503}'
    return urllib3.HTTPResponse(
        body=io.BytesIO(body),
        status=503,
        headers={"Content-Type": "application/json"},
        preload_content=False,
    )


def on_kube(api_client: Any, wire: Wire) -> Wire:
    """Put `wire` between a kubernetes ApiClient and the network."""
    rest = api_client.rest_client
    rest.pool_manager = FaultyPool(rest.pool_manager, wire)
    return wire


class FaultyTransport(httpx.BaseTransport):
    """The same for httpx (Alertmanager)."""

    def __init__(self, wire: Wire) -> None:
        self._inner = httpx.HTTPTransport()
        self.wire = wire

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        method, url = request.method, str(request.url)
        fault = self.wire.pick(method, url)
        what = fault.what if fault is not None else None
        if what == "call_before" and fault is not None and fault.callback is not None:
            fault.callback()
        if what == "kill_before":
            _kill()
        if what == "crash_before":
            self.wire.record(method, url, None)
            raise AgentCrashed(f"{method} {url}")
        if what == "drop_request":
            self.wire.record(method, url, None)
            raise httpx.ConnectError("injected: connection reset before sending", request=request)
        if what == "error_503_before":
            self.wire.record(method, url, None)
            return httpx.Response(503, text="injected: unavailable", request=request)
        response = self._inner.handle_request(request)
        if what == "timeout_response":
            self.wire.record(method, url, response.status_code, lost=True)
            response.read()
            response.close()
            raise httpx.ReadTimeout("injected: read timed out", request=request)
        if what == "error_503_after":
            self.wire.record(method, url, response.status_code, lost=True)
            response.read()
            response.close()
            return httpx.Response(503, text="injected: unavailable", request=request)
        if what == "kill_after":
            self.wire.record(method, url, response.status_code, lost=True)
            _kill()
        if what == "crash_after":
            self.wire.record(method, url, response.status_code, lost=True)
            response.read()
            response.close()
            raise AgentCrashed(f"{method} {url}")
        if what == "drop_response":
            self.wire.record(method, url, response.status_code, lost=True)
            response.read()
            response.close()
            raise httpx.ReadError("injected: connection reset, answer lost", request=request)
        self.wire.record(method, url, response.status_code)
        return response

    def close(self) -> None:
        self._inner.close()
