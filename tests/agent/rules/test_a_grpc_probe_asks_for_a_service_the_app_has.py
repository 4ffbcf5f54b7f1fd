"""A gRPC probe names the health service it asks about (grpc.service); a server that has no
status for that name answers NotFound "unknown service" however healthy it is. The probe's
service is read from the pod spec, the kubelet's NotFound is told from other probe failures,
and the names the app's own log says it set a status for are found in its structured lines."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tools.read.shapes import container_spec
from triage.agent.planners.rules.analyzers.containers import _UNKNOWN_SERVICE, _health_services

services = st.from_regex(r"[a-z]{1,8}(\.v[0-9])?(\.[A-Z][a-z]{1,8})?", fullmatch=True)


@given(service=services)
def test_the_probe_names_its_service(service: str) -> None:
    grpc = {"port": 9090, "service": service}
    spec = container_spec({"name": "a", "image": "x", "livenessProbe": {"grpc": grpc}})
    assert spec["liveness"] is not None
    assert spec["liveness"]["service"] == service


def test_a_probe_without_a_service_names_none() -> None:
    grpc = {"port": 9090}
    spec = container_spec({"name": "a", "image": "x", "livenessProbe": {"grpc": grpc}})
    assert spec["liveness"] is not None
    assert "service" not in spec["liveness"]


def test_not_found_is_told_from_other_failures() -> None:
    said = (
        "Liveness probe failed: error: health rpc probe failed: rpc error: code = NotFound "
        "desc = unknown service"
    )
    assert _UNKNOWN_SERVICE.search(said)
    for other in (
        'Liveness probe failed: timeout: failed to connect service ":9090" within 1s',
        'Liveness probe failed: service unhealthy (responded with "NOT_SERVING")',
    ):
        assert not _UNKNOWN_SERVICE.search(other), other


@given(names=st.lists(services | st.just(""), min_size=1, max_size=4, unique=True))
def test_the_names_the_app_set_a_status_for(names: list[str]) -> None:
    log = ['{"msg":"starting"}'] + [
        json.dumps({"msg": "health: serving status set", "service": n, "status": "SERVING"})
        for n in names
    ]
    assert _health_services(log) == names
