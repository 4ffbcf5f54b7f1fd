"""An approval is bound to the exact arguments, used once, expires, and is re-checked — with
the policy in force — before every write."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.tools.mutate.cluster import create_deployment, policy_for
from tests.tools.mutate.rig import Rig
from tests.tools.mutate.wire import AgentCrashed, Fault, Wire
from tools.errors import NotAnApprover
from tools.mutate.approvals import StaleApproval, record_decision
from tools.mutate.ledger import Decision, Phase, Target, utcnow
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


def _replicas(rig):
    return client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns).spec.replicas


def test_an_expired_approval_applies_nothing(rig):
    op = rig.registry().submit(_scale(rig, 4)).operation
    rig.approve(op)
    wire = Wire()
    later = rig.registry(wire, later_s=rig.policy.approval_ttl_s + 60)  # the approver was slow

    outcome = later.resume(op.id)
    assert outcome.result.status is ToolStatus.APPROVAL_REQUIRED
    assert "expired" in outcome.result.excerpt
    assert wire.landed("PATCH", r"/scale$") == 0
    assert later.ledger.get(op.id).phase is Phase.AWAITING_APPROVAL


def test_an_approval_for_other_arguments_is_refused_and_never_used(rig):
    wire = Wire()
    registry = rig.registry(wire)
    op = registry.submit(_scale(rig, 4)).operation
    other = registry.submit(_scale(rig, 9).model_copy(update={"step": "1"})).operation
    # the approver was shown the card of another operation (9 replicas): not recordable …
    with pytest.raises(StaleApproval, match=r"not .* arguments"):
        record_decision(
            rig.approver(),
            rig.policy,
            op.id,
            "alice",
            approve=True,
            digest=other.args_digest,
            via="test",
            now=utcnow(),
        )
    # … and one that got into the ledger anyway is ignored at execution
    forged = Decision(
        name=Decision.name_for(op.id, True, "alice"),
        operation=op.id,
        approve=True,
        args_digest=other.args_digest,
        approver="alice",
    )
    rig.approver("alice").decide(forged)  # alice with kubectl, past the client's check

    outcome = registry.resume(op.id)
    assert outcome.result.status is ToolStatus.APPROVAL_REQUIRED
    assert "different arguments" in outcome.result.excerpt
    assert wire.landed("PATCH", r"/scale$") == 0
    assert _replicas(rig) == 2


def test_only_policy_approvers_count(rig):
    registry = rig.registry()
    op = registry.submit(_scale(rig, 4)).operation
    with pytest.raises(NotAnApprover):
        rig.approve(op, "mallory")  # may create approvals (RBAC), is no approver (policy)
    assert registry.resume(op.id).phase is Phase.AWAITING_APPROVAL


def test_one_approval_two_agents_one_write(rig):
    wires = [Wire(), Wire()]
    registries = [rig.registry(w) for w in wires]
    op = registries[0].submit(_scale(rig, 4)).operation
    rig.approve(op)

    outcomes = [r.resume(op.id) for r in registries]  # a double click, two replicas

    assert [o.phase for o in outcomes] == [Phase.SUCCEEDED, Phase.SUCCEEDED]
    assert sum(w.landed("PATCH", r"/scale$") for w in wires) == 1
    assert _replicas(rig) == 4
    done = registries[0].ledger.get(op.id)
    assert done.approval is not None
    assert done.approval.approver == "alice"
    assert done.approval.used_at is not None


def test_a_refusal_wins_and_nothing_is_written(rig):
    wire = Wire()
    registry = rig.registry(wire)
    op = registry.submit(_scale(rig, 4)).operation
    rig.approve(op, approve=False)

    outcome = registry.resume(op.id)
    assert outcome.phase is Phase.REFUSED
    assert outcome.operation.refused_by == "alice"
    assert wire.landed("PATCH", r"/scale$") == 0
    assert _replicas(rig) == 2


def test_a_policy_changed_between_card_and_click_is_applied_at_execution(rig):
    """The card said 10 replicas under max_replicas 20; before the click, an operator lowers
    the bound to 5. The click's approval is genuine, the execution refuses it: no write."""
    registry = rig.registry()
    op = registry.submit(_scale(rig, 10)).operation
    assert op.phase is Phase.AWAITING_APPROVAL
    rig.approve(op)
    wire = Wire()
    stricter = rig.registry(
        wire, policy=rig.policy.model_copy(update={"max_replicas": 5})
    )  # the new policy file, read by the process that resumes the run

    outcome = stricter.resume(op.id)
    assert outcome.phase is Phase.REFUSED
    assert "above the policy's limit of 5" in outcome.operation.message
    assert outcome.operation.refused_by == "policy"
    assert wire.landed("PATCH", r"/scale$") == 0
    assert _replicas(rig) == 2


def test_a_takeover_after_a_crash_checks_the_policy_again(rig):
    """The agent dies just before the write; before another takes over, the namespace is
    dropped from the policy: the takeover writes nothing and the operation says why."""
    wire = Wire()
    wire.arm(Fault("PATCH", r"/scale$", "crash_before"))
    registry = rig.registry(wire)
    op = registry.submit(_scale(rig, 4)).operation
    rig.approve(op)
    with pytest.raises(AgentCrashed):
        registry.resume(op.id)
    assert registry.ledger.get(op.id).phase is Phase.PENDING

    later = rig.registry(
        wire, later_s=5, policy=rig.policy.model_copy(update={"namespaces": ("elsewhere",)})
    )
    outcome = later.resume(op.id)
    assert outcome.phase is Phase.REFUSED
    assert "outside the policy" in outcome.operation.message
    assert wire.landed("PATCH", r"/scale$") == 0
    assert _replicas(rig) == 2
