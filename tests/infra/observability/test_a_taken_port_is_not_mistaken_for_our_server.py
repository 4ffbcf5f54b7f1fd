"""When another server grabs the port we picked, we start on another port, not trust theirs."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import observability
from tests.support.observability import PrometheusServer, start_alertmanager, start_prometheus

pytestmark = pytest.mark.prometheus


def _real_free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _first_then_free(taken: int) -> Iterator[int]:
    yield taken
    while True:
        yield _real_free_port()


def test_prometheus_moves_off_a_port_another_prometheus_answers_on(
    prometheus: PrometheusServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ports = _first_then_free(prometheus.port)
    monkeypatch.setattr(observability, "_free_port", lambda: next(ports))

    server = start_prometheus("# EOF\n", workdir=tmp_path / "p")
    try:
        assert server.port != prometheus.port
        assert server.running
    finally:
        server.stop()


def test_alertmanager_moves_off_a_port_another_alertmanager_answers_on(
    alertmanager: observability.AlertmanagerServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ports = _first_then_free(alertmanager.port)
    monkeypatch.setattr(observability, "_free_port", lambda: next(ports))

    server = start_alertmanager(tmp_path / "a")
    try:
        assert server.port != alertmanager.port
        assert server.running
    finally:
        server.stop()
