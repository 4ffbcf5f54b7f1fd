"""A loopback proxy in front of the real apiserver that counts what the client really sends.

`tests/tools/mutate/wire.py` wraps the client's connection pool, which is *above* urllib3's own
retries; to see a retry the transport makes behind our back, the count must be taken below the
client: here, on a socket. The proxy listens on plain HTTP on 127.0.0.1, forwards every request
(headers and body as sent, the client's bearer token included) over TLS to the apiserver, and
logs each one as it arrives. Armed with a `Lose`, it forwards a matching request, lets the
apiserver act on it, and then drops the client's connection without an answer — or holds the
answer until well past the client's timeout (`silent_s`).
"""

from __future__ import annotations

import re
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import yaml

_HOP = {
    "host",
    "connection",
    "keep-alive",
    "transfer-encoding",
    "content-length",
    "proxy-connection",
}


@dataclass
class Lose:
    method: str
    path: str  # regex searched in the path
    times: int = 1
    silent_s: float = 0.0  # > 0: hold the answer this long, then drop the connection
    hits: int = 0


@dataclass
class Seen:
    method: str
    path: str
    status: int | None  # what the apiserver answered (None: never forwarded)
    lost: bool


@dataclass
class Proxy:
    upstream: str
    ca_cert: Path
    lose: list[Lose] = field(default_factory=list)
    seen: list[Seen] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    def count(self, method: str, path: str) -> int:
        rx = re.compile(path)
        with self.lock:
            return sum(1 for s in self.seen if s.method == method and rx.search(s.path))

    def _pick(self, method: str, path: str) -> Lose | None:
        with self.lock:
            for rule in self.lose:
                if rule.method == method and re.search(rule.path, path) and rule.hits < rule.times:
                    rule.hits += 1
                    return rule
        return None

    def start(self) -> Proxy:
        proxy = self
        tls = ssl.create_default_context(cafile=str(self.ca_cert))
        client = httpx.Client(base_url=self.upstream, verify=tls, timeout=30)

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                rule = proxy._pick(self.command, path)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
                answer = client.request(self.command, self.path, headers=headers, content=body)
                with proxy.lock:
                    proxy.seen.append(
                        Seen(self.command, path, answer.status_code, rule is not None)
                    )
                if rule is not None:
                    if rule.silent_s:
                        time.sleep(rule.silent_s)
                    self.close_connection = True  # the answer is lost: no status line at all
                    return
                self.send_response(answer.status_code)
                for k, v in answer.headers.items():
                    if k.lower() not in _HOP and k.lower() != "content-encoding":
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward  # noqa: N815

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self._client = client
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def kubeconfig(self, through: Path, out: Path) -> Path:
        """`through`'s credentials (a token kubeconfig), pointed at the proxy."""
        cfg = yaml.safe_load(through.read_text())
        token = cfg["users"][0]["user"]["token"]
        out.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "clusters": [
                        {"name": "proxy", "cluster": {"server": f"http://127.0.0.1:{self.port}"}}
                    ],
                    "users": [{"name": "u", "user": {"token": token}}],
                    "contexts": [{"name": "proxy", "context": {"cluster": "proxy", "user": "u"}}],
                    "current-context": "proxy",
                }
            )
        )
        return out
