"""An apiserver answer the tools cannot parse is failed evidence, never a crashed run."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kubernetes import client as k8s

from tests.support.product import app_over
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from tools.results import ToolStatus
from triage.app import Request


class _Garbage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html>proxy error page, not JSON</html>"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def garbage_apiserver() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Garbage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_non_json_answer_is_recorded_as_an_error(garbage_apiserver: str, tmp_path: Path) -> None:
    cfg = k8s.Configuration(host=garbage_apiserver)
    with k8s.ApiClient(cfg) as api:
        tools = ReadRegistry(KubeReader(api, timeout_s=5))
        run = app_over(tools, tmp_path, checkpointer="memory").checked_run(
            Request(words="checkout-api in shop is down, why?")
        )
        result = run.best
    first = result.evidence[0]
    assert first.tool == "k8s.namespace"
    assert first.status is ToolStatus.ERROR
    assert "JSONDecodeError" in first.excerpt
    assert result.draft is not None
    assert result.draft.inconclusive
