"""A Service whose pods are healthy, behind an ingress NetworkPolicy that does not admit the
neighbour calling it: only the caller's own log shows the failure (the callee never sees the
connection), so the caller's log is read and the policy's rules are evaluated as Kubernetes
evaluates them — a namespaceSelector and a podSelector in one `from` peer must both match,
as two peers either may."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass
from triage.core.models import RCADraft

NS = "scn-healthy"
CALLER = "storefront-5d9c7b8f4-x2kqp"
_AND = [[{"namespaces": {"team": "monitoring"}, "pods": {"app": "storefront"}}]]
_OR = [[{"namespaces": {"team": "monitoring"}}, {"pods": {"app": "storefront"}}]]
_TIMEOUT = (
    '{"level":"error","msg":"stock lookup failed","err":"dial tcp 10.96.12.7:8080: i/o '
    'timeout","url":"http://inventory-service:8080/v1/stock/sku-1"}'
)


def _ingress_policy(
    peers: list[list[dict[str, Any]]], ports: tuple[str, ...] = ("TCP/8080",)
) -> dict[str, Any]:
    """inventory-ingress: the ingress policy over inventory-service's pods."""
    return {
        "name": "inventory-ingress",
        "pod_selector": {"app": "inventory-service"},
        "types": ["Ingress"],
        "ingress": peers,
        "ingress_ports": [list(ports)],
        "egress": [],
        "egress_ports": [],
    }


def _answer(
    tmp_path: Path,
    peers: list[list[dict[str, Any]]],
    caller_log: list[str],
    ports: tuple[str, ...] = ("TCP/8080",),
) -> RCADraft:
    recorded = recorded_bundle("healthy.json")
    for c in recorded["calls"]:
        result = c["result"]
        if c["tool"] == "k8s.pods":
            caller = copy.deepcopy(result["data"][0])
            caller.update(name=CALLER, labels={"app": "storefront"})
            caller["owner"] = {"kind": "ReplicaSet", "name": "storefront-5d9c7b8f4"}
            result["data"].append(caller)
        elif c["tool"] == "k8s.network_policies":
            result["status"] = "ok"
            result["data"] = [_ingress_policy(peers, ports)]
    args = {"namespace": NS, "pod": CALLER, "container": "app"}
    log = next(c for c in recorded["calls"] if c["tool"] == "k8s.logs")
    result = {**copy.deepcopy(log["result"]), "args": args, "data": caller_log}
    recorded["calls"].append({"tool": "k8s.logs", "args": args, "result": result})
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join([draft.title, *(c.text for c in draft.root_cause)])


def test_one_peer_with_both_selectors_drops_the_caller_in_its_own_namespace(
    tmp_path: Path,
) -> None:
    draft = _answer(tmp_path, _AND, ["INFO storefront listening on :3000", _TIMEOUT])
    assert draft.root_cause_class is CauseClass.NETWORK_POLICY_BLOCKING
    said = _said(draft)
    for part in ("inventory-ingress", "storefront", "ANDs", "namespaceSelector"):
        assert part in said, (part, said)


def test_two_peers_admit_the_caller(tmp_path: Path) -> None:
    draft = _answer(tmp_path, _OR, ["INFO storefront listening on :3000", _TIMEOUT])
    assert draft.root_cause_class is not CauseClass.NETWORK_POLICY_BLOCKING, _said(draft)


def test_a_caller_that_is_not_failing_is_not_blamed_on_the_policy(tmp_path: Path) -> None:
    draft = _answer(tmp_path, _AND, ["INFO storefront listening on :3000"])
    assert draft.root_cause_class is not CauseClass.NETWORK_POLICY_BLOCKING, _said(draft)


# The Service maps port 80 to targetPort http, the container's port 8080; the caller's URL
# names no port, so it dials the Service's HTTP port.
_PORTLESS = (
    "ERROR GET http://inventory-service/v1/stock/sku-1 failed: AxiosError: timeout of 10000ms "
    "exceeded (code ECONNABORTED)"
)


def test_a_rule_on_the_service_port_drops_what_the_service_translates(tmp_path: Path) -> None:
    draft = _answer(tmp_path, _OR, [_PORTLESS], ports=("TCP/80",))
    assert draft.root_cause_class is CauseClass.NETWORK_POLICY_BLOCKING, _said(draft)
    said = _said(draft)
    for part in (
        "inventory-ingress",
        "only on TCP/80",
        "Service port 80",
        "port 8080 (named http)",
    ):
        assert part in said, (part, said)


@pytest.mark.parametrize("opened", ["TCP/8080", "TCP/http"])
def test_a_rule_on_the_pods_port_admits_the_caller(tmp_path: Path, opened: str) -> None:
    draft = _answer(tmp_path, _OR, [_PORTLESS], ports=(opened,))
    assert draft.root_cause_class is not CauseClass.NETWORK_POLICY_BLOCKING, _said(draft)


def _one_off(
    tmp_path: Path,
    owner: dict[str, str] | None,
    line: str = "curl: (28) Connection timed out after 10002 milliseconds",
) -> RCADraft:
    """A `kubectl run` curl pod (no controller) that timed out against the Service, which
    the policy (admitting app=storefront only) drops; with an owner, the same pod is a
    workload's caller."""
    recorded = recorded_bundle("healthy.json")
    for c in recorded["calls"]:
        result = c["result"]
        if c["tool"] == "k8s.pods":
            probe = copy.deepcopy(result["data"][0])
            probe.update(name="tmp-curl", labels={"run": "tmp-curl"}, owner=owner, ready=False)
            probe["phase"] = "Failed" if owner is None else "Running"
            probe["containers"][0]["spec"]["args"] = ["-m", "10", "http://inventory-service/"]
            result["data"].append(probe)
        elif c["tool"] == "k8s.network_policies":
            result["status"] = "ok"
            result["data"] = [_ingress_policy([[{"pods": {"app": "storefront"}}]])]
    args = {"namespace": NS, "pod": "tmp-curl", "container": "app"}
    log = next(c for c in recorded["calls"] if c["tool"] == "k8s.logs")
    data = [line]
    result = {**copy.deepcopy(log["result"]), "args": args, "data": data}
    recorded["calls"].append({"tool": "k8s.logs", "args": args, "result": result})
    return rules_draft(tmp_path, recorded)


def test_a_one_off_pod_the_policy_drops_is_the_policy_by_design(tmp_path: Path) -> None:
    draft = _one_off(tmp_path, None)
    assert draft.root_cause_class is CauseClass.NO_FAULT, _said(draft)
    said = _said(draft)
    for part in ("Pod tmp-curl", "one-off pod", "inventory-ingress", "by design"):
        assert part in said, (part, said)
    assert "tmp-curl is unhealthy" not in said, said


def test_a_workloads_pod_the_policy_drops_is_a_caller_it_fails(tmp_path: Path) -> None:
    owner = {"kind": "ReplicaSet", "name": "tmp-curl-5d9c7b8f4"}
    line = "curl: (28) Failed to connect to inventory-service port 80 after 10002 ms: Timed out"
    draft = _one_off(tmp_path, owner, line)
    assert draft.root_cause_class is CauseClass.NETWORK_POLICY_BLOCKING, _said(draft)
