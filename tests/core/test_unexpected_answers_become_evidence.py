"""An apiserver answer the tools cannot parse is failed evidence, never a crashed run."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from kubernetes import client as k8s

from tools.k8s_read import KubeReader
from tools.read import ReadRegistry
from tools.results import ToolStatus
from triage.graph import run_investigation
from triage.planner_rules import RulesPlanner
from triage.settings import GraphSettings, StateSettings


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
        result = run_investigation(
            "checkout-api in shop is down, why?",
            planner=RulesPlanner(),
            tools=tools,
            graph_settings=GraphSettings(),
            state_settings=StateSettings(dir=tmp_path, checkpointer="memory"),
        )
    first = result.evidence[0]
    assert first.tool == "k8s.namespace"
    assert first.status is ToolStatus.ERROR
    assert "JSONDecodeError" in first.excerpt
    assert result.draft is not None
    assert result.draft.inconclusive
