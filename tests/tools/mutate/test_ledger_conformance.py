"""One conformance suite for every ledger backend: the Kubernetes CRD and the in-memory one.

What the engine relies on: creating a record is a claim only one caller wins; a record comes back
exactly as stored; every update is a compare-and-swap on the version.
"""

from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

import pytest

from tests.tools.mutate.cluster import LEDGER_NS, as_user, forget_operations, make_agent
from tools.errors import Conflict, NotFound
from tools.mutate.ledger import (
    Approval,
    Decision,
    Holder,
    Inverse,
    KubeLedger,
    MemoryLedger,
    Operation,
    Phase,
    Target,
    args_digest,
    operation_id,
)

UNTIL = datetime(2030, 1, 1, tzinfo=UTC)
TARGET_NS = "conformance"  # records only: nothing is changed there


@pytest.fixture(params=["memory", pytest.param("kube", marks=pytest.mark.cluster)])
def ledger(request):
    if request.param == "memory":
        yield MemoryLedger()
        return
    cp = request.getfixturevalue("ledger_cluster")
    agent = make_agent(cp)
    yield KubeLedger(agent.mutator, namespace=LEDGER_NS, timeout_s=5)
    agent.close()
    forget_operations(cp, TARGET_NS)


def _op(**kw) -> Operation:
    target = Target(kind="Deployment", namespace=TARGET_NS, name="checkout-api")
    args = {"replicas": 4}
    run = f"conformance:{uuid.uuid4().hex}"
    base = {
        "id": operation_id(run, "0", "scale", target, args),
        "run": run,
        "step": "0",
        "action": "scale",
        "target": target,
        "args": args,
        "args_digest": args_digest("scale", target, args),
        "plan": {"replicas": 2},
        "requested_by": "kube:conformance",
        "requested_via": "test",
        "phase": Phase.PENDING,
        "holder": Holder(id="agent-a", until=UNTIL),
    }
    return Operation(**{**base, **kw})


def test_the_first_claim_wins_and_the_second_gets_the_record(ledger):
    op = _op()
    stored, won = ledger.claim(op)
    assert won
    assert stored.version
    rival = op.model_copy(update={"holder": Holder(id="agent-b", until=UNTIL)})
    existing, won_again = ledger.claim(rival)
    assert not won_again
    assert existing.holder.id == "agent-a"
    assert ledger.get(op.id).holder.id == "agent-a"


def test_eight_concurrent_claims_have_one_winner(ledger):
    op = _op()
    with ThreadPoolExecutor(8) as pool:
        results = list(
            pool.map(
                lambda i: ledger.claim(
                    op.model_copy(update={"holder": Holder(id=f"agent-{i}", until=UNTIL)})
                ),
                range(8),
            )
        )
    winners = [stored for stored, won in results if won]
    assert len(winners) == 1
    assert {stored.holder.id for stored, _ in results} == {winners[0].holder.id}


def test_a_record_comes_back_as_stored(ledger):
    now = datetime(2026, 11, 29, 21, 0, 0, tzinfo=UTC)
    op = _op(
        phase=Phase.SUCCEEDED,
        message="applied",
        attempts=2,
        approval=Approval(
            name="scale-x-a-0123456789",
            approver="alice",
            approved_at=now,
            args_digest="sha256:abc",
            expires_at=now + timedelta(minutes=15),
            used_at=now + timedelta(minutes=1),
        ),
        before={"replicas": 2, "images": ["a:1"]},
        after={"replicas": 4, "images": ["a:1"]},
        inverse=Inverse(action="scale", target=_op().target, args={"replicas": 2}),
        requested_by="slack:T1/U123",
        requested_via="slack:T1/C1/1.2",
        undoes="scale-0000000000000000",
    )
    stored, _ = ledger.claim(op)
    got = ledger.get(op.id)
    fields = set(Operation.model_fields) - {"version", "created_at", "updated_at"}
    assert got.model_dump(include=fields) == op.model_dump(include=fields)
    assert got.version == stored.version


def test_updates_are_compare_and_swap(ledger):
    stored, _ = ledger.claim(_op())
    moved = ledger.update(stored.moved(phase=Phase.UNKNOWN, message="answer lost"))
    assert moved.version != stored.version
    assert ledger.get(stored.id).phase is Phase.UNKNOWN
    with pytest.raises(Conflict):
        ledger.update(stored.moved(phase=Phase.SUCCEEDED))  # stale version
    assert ledger.get(stored.id).phase is Phase.UNKNOWN


def test_missing_records_are_none_and_cannot_be_updated(ledger):
    ghost = _op()
    assert ledger.get(ghost.id) is None
    with pytest.raises(NotFound):
        ledger.update(ghost.model_copy(update={"version": "1"}))


def test_list_has_every_record_oldest_first(ledger):
    first, _ = ledger.claim(_op(created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    second, _ = ledger.claim(_op(created_at=datetime(2026, 1, 2, tzinfo=UTC)))
    ids = [o.id for o in ledger.list()]
    assert first.id in ids
    assert second.id in ids
    assert ids.index(first.id) < ids.index(second.id)


def _decision(op: Operation, approver: str, *, approve: bool = True) -> Decision:
    return Decision(
        name=Decision.name_for(op.id, approve, approver),
        operation=op.id,
        approve=approve,
        args_digest=op.args_digest,
        approver=approver,
        via="test",
        created_at=datetime(2000, 1, 1, tzinfo=UTC),  # the writer's claim: never stored
    )


@pytest.fixture
def decisions(request):
    """The ledger as someone who may record decisions (an approver, in the cluster)."""
    if request.param == "memory":
        ledger = MemoryLedger()
        yield ledger, ledger
        return
    cp = request.getfixturevalue("ledger_cluster")
    agent = make_agent(cp)
    alice = as_user(cp, "alice")
    yield (
        KubeLedger(agent.mutator, namespace=LEDGER_NS, timeout_s=5),
        KubeLedger(alice, namespace=LEDGER_NS, timeout_s=5),
    )
    alice.close()
    agent.close()
    forget_operations(cp, TARGET_NS)


BACKENDS = ["memory", pytest.param("kube", marks=pytest.mark.cluster)]


@pytest.mark.parametrize("decisions", BACKENDS, indirect=True)
def test_a_decision_is_recorded_once_with_the_backends_time(decisions):
    ledger, approver = decisions
    op, _ = ledger.claim(_op(phase=Phase.AWAITING_APPROVAL, holder=None))
    first, created = approver.decide(_decision(op, "alice"))
    assert created
    assert first.created_at.year > 2000  # the time is the backend's, not the writer's
    again, created_again = approver.decide(_decision(op, "alice"))
    assert not created_again
    assert again == first
    assert approver.decision(first.name) == first
    assert approver.decision("no-such-decision") is None


@pytest.mark.parametrize("decisions", BACKENDS, indirect=True)
def test_decisions_are_listed_per_operation(decisions):
    ledger, approver = decisions
    op, _ = ledger.claim(_op(phase=Phase.AWAITING_APPROVAL, holder=None))
    other, _ = ledger.claim(_op(phase=Phase.AWAITING_APPROVAL, holder=None))
    approver.decide(_decision(op, "alice"))
    approver.decide(_decision(op, "alice", approve=False))
    approver.decide(_decision(other, "alice"))
    found = ledger.decisions(op.id)  # the mutator reads them
    assert [(d.operation, d.approve) for d in found] == [(op.id, True), (op.id, False)]
    assert ledger.decisions("no-such-operation") == []
