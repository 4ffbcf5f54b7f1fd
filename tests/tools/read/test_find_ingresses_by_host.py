"""Who serves a host the user names: Ingresses of every namespace, matched by their rules'
hosts as the Ingress API matches them (exact, or a wildcard for one label in front)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.controlplane import ControlPlane
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from tools.results import ToolStatus

pytestmark = pytest.mark.cluster


def _ingress(name: str, host: str, service: str) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {"name": name},
        "spec": {
            "rules": [
                {
                    "host": host,
                    "http": {
                        "paths": [
                            {
                                "path": "/",
                                "pathType": "Prefix",
                                "backend": {"service": {"name": service, "port": {"number": 80}}},
                            }
                        ]
                    },
                }
            ]
        },
    }


@pytest.fixture
def other_namespace(control_plane: ControlPlane) -> Iterator[str]:
    name = f"t-find-ingresses-{uuid.uuid4().hex[:6]}"
    control_plane.create_namespace(name)
    yield name
    control_plane.delete_namespace(name)


def test_an_ingress_for_the_host_is_found_in_whatever_namespace_holds_it(
    control_plane: ControlPlane, namespace: str, other_namespace: str
) -> None:
    tag = uuid.uuid4().hex[:6]
    control_plane.apply(namespace, [_ingress("portal", f"portal-{tag}.example.com", "portal")])
    control_plane.apply(
        other_namespace,
        [
            _ingress("timesheets", f"timesheets-{tag}.example.com", "timesheets"),
            _ingress("catch-all", f"*.apps-{tag}.example.com", "apps"),
        ],
    )
    tools = ReadRegistry(KubeReader(control_plane.api_client(control_plane.reader_kubeconfig)))

    exact = tools.call("k8s.find_ingresses", {"host": f"timesheets-{tag}.example.com"})
    wild = tools.call("k8s.find_ingresses", {"host": f"billing.apps-{tag}.example.com"})
    deeper = tools.call("k8s.find_ingresses", {"host": f"a.b.apps-{tag}.example.com"})
    nobody = tools.call("k8s.find_ingresses", {"host": f"nobody-{tag}.example.com"})

    assert exact.status is ToolStatus.OK
    assert [(x["namespace"], x["name"]) for x in exact.data] == [(other_namespace, "timesheets")]
    assert exact.data[0]["backends"][0]["service"] == "timesheets"
    assert f"{other_namespace}/timesheets" in exact.excerpt
    assert [x["name"] for x in wild.data] == ["catch-all"]
    assert deeper.status is ToolStatus.NO_DATA  # a wildcard covers one label, not two
    assert nobody.status is ToolStatus.NO_DATA


@pytest.mark.parametrize(
    "host", ["https://timesheets.example.com", "Timesheets.Example.com", "a b", "", "x" * 300]
)
def test_a_host_that_is_not_a_dns_name_is_refused_before_any_read(
    control_plane: ControlPlane, host: str
) -> None:
    reader = KubeReader(control_plane.api_client(control_plane.reader_kubeconfig))
    result = ReadRegistry(reader).call("k8s.find_ingresses", {"host": host})
    assert result.status is ToolStatus.ERROR
    assert "invalid arguments for k8s.find_ingresses" in result.excerpt
    assert reader.stats.requests == 0
