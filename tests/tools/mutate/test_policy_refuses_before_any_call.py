"""Out-of-policy requests are refused before any request leaves the process, with a message that
says what to do instead. The clients point at nothing: any request would show up at the wire."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.tools.mutate.cluster import policy_for
from tests.tools.mutate.wire import FaultyTransport, Wire, on_kube
from tools.mutate.alertmanager import AlertmanagerMutator
from tools.mutate.kube import KubeMutator
from tools.mutate.ledger import MemoryLedger, Target
from tools.mutate.registry import MutateRegistry, MutationRequest
from tools.results import ToolStatus

WHO = {"requested_by": "kube:test", "requested_via": "test"}

DEP = Target(kind="Deployment", namespace="shop", name="checkout-api")


@pytest.fixture
def wired():
    cfg = client.Configuration()
    cfg.host = "https://127.0.0.1:9"  # nothing listens there
    api = client.ApiClient(cfg)
    wire = on_kube(api, Wire())
    am = AlertmanagerMutator("http://127.0.0.1:9", timeout_s=1, transport=FaultyTransport(wire))
    ledger = MemoryLedger()
    registry = MutateRegistry(
        policy_for("shop", max_replicas=20, max_silence_s=3600),
        ledger,
        kube=KubeMutator(api, timeout_s=1),
        alertmanager=am,
    )
    yield registry, wire, ledger
    am.close()
    api.close()


def _silence(matchers, duration_s=600, namespace="shop"):
    return MutationRequest(
        **WHO,
        run="r",
        step="0",
        action="silence_create",
        target=Target(kind="Silence", namespace=namespace, name="HighLatency"),
        args={"matchers": matchers, "duration_s": duration_s},
    )


NS = {"name": "namespace", "value": "shop"}
CASES = {
    "replicas 100000": (
        MutationRequest(
            **WHO, run="r", step="0", action="scale", target=DEP, args={"replicas": 100000}
        ),
        "replicas 100000 is above the policy's limit of 20",
    ),
    "a wildcard silence": (
        _silence([{"name": "alertname", "value": ".*", "is_regex": True}, NS]),
        "would match (nearly) every alert",
    ),
    "a negative matcher": (
        _silence([{"name": "alertname", "value": "X", "is_equal": False}, NS]),
        "would match (nearly) every alert",
    ),
    "a silence longer than policy": (
        _silence([{"name": "alertname", "value": "HighLatency"}, NS], duration_s=86400),
        "longer than the policy's limit of 3600s",
    ),
    "a silence not scoped to its namespace": (
        _silence([{"name": "alertname", "value": "HighLatency"}]),
        "add the matcher namespace=shop",
    ),
    "a namespace outside policy": (
        MutationRequest(
            **WHO,
            run="r",
            step="0",
            action="rollout_restart",
            target=Target(kind="Deployment", namespace="kube-system", name="coredns"),
        ),
        "namespace 'kube-system' is outside the policy (allowed: shop)",
    ),
    "an unknown argument": (
        MutationRequest(**WHO, run="r", step="0", action="scale", target=DEP, args={"replica": 3}),
        "Extra inputs are not permitted",
    ),
    "a pod action on a Deployment": (
        MutationRequest(**WHO, run="r", step="0", action="delete_pod", target=DEP),
        "delete_pod acts on a Pod, not a Deployment",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_out_of_policy_request_is_refused_before_any_call(wired, name):
    registry, wire, ledger = wired
    request, says = CASES[name]
    outcome = registry.submit(request)

    assert outcome.result.status in (ToolStatus.DENIED, ToolStatus.ERROR)
    assert outcome.operation is None
    assert says in outcome.result.excerpt
    assert wire.log == []
    assert ledger.list() == []


def test_an_action_the_policy_does_not_list_is_refused(wired):
    registry, wire, _ = wired
    registry.policy = registry.policy.model_copy(update={"actions": {}})
    outcome = registry.submit(
        MutationRequest(**WHO, run="r", step="0", action="scale", target=DEP, args={"replicas": 2})
    )
    assert outcome.result.status is ToolStatus.DENIED
    assert "not allowed by the policy" in outcome.result.excerpt
    assert wire.log == []
