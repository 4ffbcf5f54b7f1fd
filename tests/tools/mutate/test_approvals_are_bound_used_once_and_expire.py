"""An approval is bound to the exact arguments, used once, and expires."""

from __future__ import annotations

from datetime import timedelta

import pytest
from kubernetes import client

from tests.tools.mutate.cluster import create_deployment, policy_for
from tests.tools.mutate.rig import Rig
from tests.tools.mutate.wire import Wire
from tools.mutate.ledger import Phase, Target, record_approval, utcnow
from tools.results import ToolStatus

pytestmark = pytest.mark.cluster


@pytest.fixture
def rig(ledger_cluster, target_ns):
    r = Rig(ledger_cluster, target_ns)
    r.policy = policy_for(target_ns, approval=("scale",))
    create_deployment(ledger_cluster, r.admin, target_ns, "web", replicas=2)
    yield r
    r.close()


def _scale(rig, replicas):
    return rig.request(
        "scale", Target(kind="Deployment", namespace=rig.ns, name="web"), {"replicas": replicas}
    )


def test_an_expired_approval_applies_nothing(rig):
    wire = Wire()
    registry = rig.registry(wire)
    op = registry.submit(_scale(rig, 4)).operation
    long_ago = utcnow() - timedelta(seconds=rig.policy.approval_ttl_s + 60)
    record_approval(registry.ledger, rig.policy, op.id, "alice", now=long_ago)

    outcome = registry.resume(op.id)
    assert outcome.result.status is ToolStatus.APPROVAL_REQUIRED
    assert "expired" in outcome.result.excerpt
    assert wire.landed("PATCH", r"/scale$") == 0
    assert registry.ledger.get(op.id).phase is Phase.AWAITING_APPROVAL


def test_an_approval_for_other_arguments_is_not_used(rig):
    wire = Wire()
    registry = rig.registry(wire)
    op = registry.submit(_scale(rig, 4)).operation
    approved = record_approval(registry.ledger, rig.policy, op.id, "alice", now=utcnow())
    assert approved.approval is not None
    # someone rewrites the approval's digest (as if it were given for other arguments)
    tampered = approved.moved(
        approval=approved.approval.model_copy(update={"args_digest": "sha256:other"})
    )
    registry.ledger.update(tampered)

    outcome = registry.resume(op.id)
    assert outcome.result.status is ToolStatus.APPROVAL_REQUIRED
    assert "different arguments" in outcome.result.excerpt
    assert wire.landed("PATCH", r"/scale$") == 0


def test_one_approval_two_agents_one_write(rig):
    wires = [Wire(), Wire()]
    registries = [rig.registry(w) for w in wires]
    op = registries[0].submit(_scale(rig, 4)).operation
    record_approval(registries[0].ledger, rig.policy, op.id, "alice", now=utcnow())

    outcomes = [r.resume(op.id) for r in registries]  # a double click, two replicas

    assert [o.phase for o in outcomes] == [Phase.SUCCEEDED, Phase.SUCCEEDED]
    assert sum(w.landed("PATCH", r"/scale$") for w in wires) == 1
    assert client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns).spec.replicas == 4
