"""A human changes the target between plan and apply: the operation is Superseded, nothing is
forced, and the human's change stands."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client

from tests.tools.mutate.cluster import policy_for, set_image
from tests.tools.mutate.rig import Rig
from tests.tools.mutate.wire import Fault, Wire
from tools.mutate.kube import RESTART_STAMP
from tools.mutate.ledger import Phase, utcnow

pytestmark = pytest.mark.cluster


@pytest.fixture
def rig(ledger_cluster, target_ns):
    r = Rig(ledger_cluster, target_ns)
    yield r
    r.close()


def _human_edit(rig: Rig, action: str) -> None:
    if action == "scale":
        client.AppsV1Api(rig.admin).patch_namespaced_deployment_scale(
            "web", rig.ns, {"spec": {"replicas": 3}}
        )
    else:
        set_image(rig.cp, rig.admin, rig.ns, "web", "shop/api:hotfix")


@pytest.mark.parametrize("action", ["rollout_restart", "scale", "rollback"])
def test_a_human_change_just_before_the_write_supersedes_it(rig, action):
    case = rig.case(action)
    wire = Wire()
    method, path = case.write
    wire.arm(Fault(method, path, "call_before", callback=lambda: _human_edit(rig, action)))
    outcome = rig.registry(wire).submit(case.request)

    assert outcome.phase is Phase.SUPERSEDED, outcome.result.excerpt
    assert wire.landed(method, path) == 0
    dep: Any = client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns)
    if action == "scale":
        assert dep.spec.replicas == 3
    else:
        assert dep.spec.template.spec.containers[0].image == "shop/api:hotfix"
        assert RESTART_STAMP not in (dep.spec.template.metadata.annotations or {})
    # asking again changes nothing: the record is final
    again = rig.registry(wire).submit(case.request)
    assert again.phase is Phase.SUPERSEDED
    assert wire.landed(method, path) == 0


def test_a_human_change_while_waiting_for_approval_supersedes_it(rig):
    rig.policy = policy_for(rig.ns, approval=("rollout_restart",))
    case = rig.case("rollout_restart")
    registry = rig.registry()
    planned = registry.submit(case.request)
    assert planned.phase is Phase.AWAITING_APPROVAL

    _human_edit(rig, "rollout_restart")
    rig.approve(planned.operation)
    wire = Wire()
    applied = rig.registry(wire).resume(planned.operation.id)

    assert applied.phase is Phase.SUPERSEDED, applied.result.excerpt
    assert wire.landed(*case.write) == 0
    assert applied.operation.approval.used_at is not None


def test_the_same_operation_id_with_other_arguments_is_refused(rig):
    case = rig.case("scale")
    wire = Wire()
    registry = rig.registry(wire)
    first = registry.submit(case.request)
    assert first.phase is Phase.SUCCEEDED
    other = case.request.model_copy(
        update={"args": {"replicas": 7}, "operation_id": first.operation.id}
    )
    refused = registry.submit(other)

    assert refused.result.status == "denied"
    assert "different arguments" in refused.result.excerpt
    assert wire.landed(*case.write) == 1
    assert client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns).spec.replicas == 5
    assert timedelta(0) <= utcnow() - first.operation.created_at
