"""Two replicas sharing one inbox file: a request is stored once, held by one replica at a
time, taken over only after the holder's lease runs out, and the old holder is fenced off."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from triage.slack.inbox import Inbound, Inbox, Kind, State


def _inbound(request_id: str = "Ev0001") -> Inbound:
    return Inbound(
        id=request_id,
        kind=Kind.MENTION,
        team="T1",
        channel="C1",
        thread_ts="1.000001",
        ts="1.000001",
        user="U1",
        text="why is checkout-api down in shop",
    )


@pytest.fixture
def replicas(tmp_path):
    a, b = Inbox(tmp_path / "inbox.sqlite"), Inbox(tmp_path / "inbox.sqlite")
    yield a, b
    a.close()
    b.close()


def test_the_same_event_from_many_deliveries_is_stored_once(replicas):
    a, b = replicas

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda i: (a, b)[i % 2].accept(_inbound()), range(8)))

    assert results.count(True) == 1
    row = a.get("Ev0001")
    assert row is not None
    assert row["deliveries"] == 8


def test_one_replica_holds_it_until_its_lease_runs_out(replicas):
    a, b = replicas
    a.accept(_inbound(), now=100.0)

    first = a.claim("replica-a", lease_s=30, now=100.0)
    assert first is not None
    assert b.claim("replica-b", lease_s=30, now=110.0) is None  # a's lease still runs
    assert a.renew(first, lease_s=30, now=125.0)  # a renews while it works

    assert b.claim("replica-b", lease_s=30, now=150.0) is None
    taken = b.claim("replica-b", lease_s=30, now=156.0)  # a died: its lease ran out
    assert taken is not None
    assert taken.attempts == 2

    first.steps["ticket_ts"] = "9.9"
    assert not a.save(first)  # the old holder can no longer write
    assert not a.finish(first, State.DONE)
    assert b.finish(taken, State.DONE)
    row = b.get("Ev0001")
    assert row is not None
    assert row["state"] == "done"
    assert "ticket_ts" not in row["steps"]


def test_steps_survive_a_restart(tmp_path):
    inbox = Inbox(tmp_path / "inbox.sqlite")
    inbox.accept(_inbound())
    claimed = inbox.claim("old", lease_s=0.01)
    assert claimed is not None
    claimed.steps["ticket_ts"] = "1.000002"
    assert inbox.save(claimed)
    inbox.close()

    reopened = Inbox(tmp_path / "inbox.sqlite")
    again = reopened.claim("new", lease_s=30, now=claimed.attempts + 10**10)
    reopened.close()

    assert again is not None
    assert again.steps == {"ticket_ts": "1.000002"}
    assert again.inbound == _inbound()
