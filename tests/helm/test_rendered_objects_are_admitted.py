"""Every ci values file renders objects the real apiserver admits: each rendered object is
sent to the test control plane's apiserver as a server-side apply with `dryRun=All` (schema
validation, defaulting, the admission chain — nothing stored). And the NetworkPolicy is
really created and read back: the apiserver keeps it as rendered (enforcing it needs a CNI the
test control plane does not have).
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import ResourceNotFoundError

from tests.helm.support import CHART, CI_VALUES, Helm

pytestmark = pytest.mark.cluster

NAMESPACE = "triage-dryrun"
# Kinds from APIs the test control plane does not serve (the Prometheus Operator's).
NOT_SERVED = {"ServiceMonitor"}


def _namespaces(api: client.ApiClient, names: set[str]) -> None:
    core = client.CoreV1Api(api)
    existing = {n.metadata.name for n in core.list_namespace().items}
    for name in names - existing:
        with contextlib.suppress(client.ApiException):
            core.create_namespace({"metadata": {"name": name}})


@pytest.fixture(scope="module")
def dynamic(control_plane) -> DynamicClient:
    return DynamicClient(control_plane.api_client())


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda v: v.name)
def test_every_rendered_object_is_admitted_by_a_server_side_dry_run(
    helm: Helm, control_plane, dynamic: DynamicClient, values: Path
) -> None:
    docs = helm.template(values, namespace=NAMESPACE)
    namespaces = {NAMESPACE} | {d["metadata"].get("namespace") or NAMESPACE for d in docs}
    _namespaces(control_plane.api_client(), namespaces)
    skipped: set[str] = set()
    admitted: list[str] = []
    for doc in docs:
        try:
            resource = dynamic.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        except ResourceNotFoundError:
            skipped.add(doc["kind"])
            continue
        namespace = doc["metadata"].get("namespace") if resource.namespaced else None
        resource.server_side_apply(
            body=doc,
            name=doc["metadata"]["name"],
            namespace=namespace,
            field_manager="triage-dry-run",
            force_conflicts=True,
            dry_run="All",
        )
        admitted.append(f"{doc['kind']}/{doc['metadata']['name']}")
    assert skipped <= NOT_SERVED, skipped
    assert "Deployment/triage" in admitted
    if values.name in ("full-values.yaml", "isolated-values.yaml"):
        assert "NetworkPolicy/triage" in admitted
        assert "Ingress/triage" in admitted


def test_the_network_policy_is_stored_as_rendered(
    helm: Helm, control_plane, dynamic: DynamicClient
) -> None:
    (policy,) = [
        d
        for d in helm.template(CHART / "ci" / "full-values.yaml", namespace=NAMESPACE)
        if d["kind"] == "NetworkPolicy"
    ]
    _namespaces(control_plane.api_client(), {NAMESPACE})
    api = client.NetworkingV1Api(control_plane.api_client())
    with contextlib.suppress(client.ApiException):
        api.delete_namespaced_network_policy(policy["metadata"]["name"], NAMESPACE)
    api.create_namespaced_network_policy(NAMESPACE, policy)
    try:
        stored: Any = control_plane.api_client().sanitize_for_serialization(
            api.read_namespaced_network_policy(policy["metadata"]["name"], NAMESPACE)
        )
        assert stored["spec"]["podSelector"] == policy["spec"]["podSelector"]
        assert stored["spec"]["policyTypes"] == ["Ingress", "Egress"]
        assert len(stored["spec"]["egress"]) == len(policy["spec"]["egress"])
        assert len(stored["spec"]["ingress"]) == len(policy["spec"]["ingress"])
        ports = sorted(p["port"] for r in stored["spec"]["egress"] for p in r["ports"])
        assert ports == sorted(p["port"] for r in policy["spec"]["egress"] for p in r["ports"])
    finally:
        api.delete_namespaced_network_policy(policy["metadata"]["name"], NAMESPACE)
