"""Pod deletion goes through eviction by default: a PodDisruptionBudget's 429 is a refusal (the
operation fails, nothing is retried), not overload; and only the pod UID that was seen is ever
deleted."""

from __future__ import annotations

import re
from typing import Any

import pytest
from kubernetes import client

from tests.tools.mutate.cluster import wait_until
from tests.tools.mutate.rig import Rig
from tests.tools.mutate.wire import Wire
from tools.mutate.ledger import Phase
from tools.results import ErrorKind

pytestmark = pytest.mark.cluster


@pytest.fixture
def rig(ledger_cluster, target_ns):
    r = Rig(ledger_cluster, target_ns)
    yield r
    r.close()


def test_an_eviction_a_budget_forbids_fails_without_retry(rig):
    case = rig.case("delete_pod")
    policy: Any = client.V1PodDisruptionBudget(
        metadata=client.V1ObjectMeta(name="web"),
        spec=client.V1PodDisruptionBudgetSpec(
            min_available=1, selector=client.V1LabelSelector(match_labels={"app": "web"})
        ),
    )
    policy_api = client.PolicyV1Api(rig.admin)
    policy_api.create_namespaced_pod_disruption_budget(rig.ns, policy)

    def computed() -> bool:
        pdb: Any = policy_api.read_namespaced_pod_disruption_budget("web", rig.ns)
        return pdb.status is not None and pdb.status.observed_generation == 1

    wait_until(computed, 30, "the disruption controller to compute the budget")
    wire = Wire()
    outcome = rig.registry(wire).submit(case.request)

    assert outcome.phase is Phase.FAILED, outcome.result.excerpt
    assert "PodDisruptionBudget" in outcome.result.excerpt
    assert outcome.result.error_kind is ErrorKind.BACKEND
    assert outcome.operation.attempts == 1
    method, path = case.write
    evictions = [e.status for e in wire.log if e.method == method and re.search(path, e.path)]
    assert evictions == [429]
    core = client.CoreV1Api(rig.admin)
    pod: Any = core.read_namespaced_pod(case.request.target.name, rig.ns)
    assert pod.metadata.deletion_timestamp is None


def test_a_pod_replaced_since_the_request_is_not_deleted(rig):
    case = rig.case("delete_pod")
    stale = case.request.model_copy(
        update={"args": {"uid": "00000000-dead-beef-0000-000000000000"}}
    )
    wire = Wire()
    outcome = rig.registry(wire).submit(stale)

    assert outcome.operation is None
    assert "the pod asked about is gone" in outcome.result.excerpt
    assert [e for e in wire.log if e.method != "GET"] == []
