"""One suite, both inbox backends (SQLite, the embedded default; the real PostgreSQL that
replicas share): a request is stored once however often and wherever it is delivered, held by
one replica at a time, taken over only after the holder's lease ran out, with the old holder
fenced off; steps survive a restart; a parked request wakes on `resume` or at its expiry; and
pruning deletes finished requests only."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.state import BACKENDS, Inboxes, state_settings
from triage.slack.inbox import Inbound, Kind, State


def _inbound(request_id: str = "Ev0001", ts: str = "1.000001") -> Inbound:
    return Inbound(
        id=request_id,
        kind=Kind.MENTION,
        team="T1",
        channel="C1",
        thread_ts=ts,
        ts=ts,
        user="U1",
        text="why is checkout-api down in shop",
    )


@pytest.fixture(params=BACKENDS)
def inboxes(request, tmp_path):
    opened = Inboxes(state_settings(request, request.param, tmp_path))
    yield opened
    opened.close()


def test_the_same_event_from_many_deliveries_is_stored_once(inboxes):
    replicas = [inboxes.open(), inboxes.open(), inboxes.open()]

    with ThreadPoolExecutor(16) as pool:
        results = list(pool.map(lambda i: replicas[i % 3].accept(_inbound()), range(60)))

    assert results.count(True) == 1
    row = replicas[0].get("Ev0001")
    assert row is not None
    assert row["deliveries"] == 60
    assert replicas[1].ids(Kind.MENTION) == ["Ev0001"]


def test_the_ack_path_stores_before_it_answers(inboxes):
    inbox = inboxes.open()

    async def burst():
        return await asyncio.gather(
            *(inbox.accept_async(_inbound(f"Ev{i:03d}", f"1.{i:06d}")) for i in range(50))
        )

    results = asyncio.run(burst())

    assert results == [True] * 50
    assert len(inboxes.open().ids(Kind.MENTION)) == 50  # visible to another replica at once


def test_one_replica_holds_it_until_its_lease_runs_out(inboxes):
    a, b = inboxes.open(), inboxes.open()
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
    assert not a.renew(first, lease_s=30, now=157.0)
    assert not a.finish(first, State.DONE)
    assert b.finish(taken, State.DONE)
    row = b.get("Ev0001")
    assert row is not None
    assert row["state"] == "done"
    assert row["holder"] is None
    assert "ticket_ts" not in row["steps"]


def test_concurrent_claims_never_hand_one_request_to_two_replicas(inboxes):
    replicas = [inboxes.open(), inboxes.open()]
    for i in range(40):
        replicas[0].accept(_inbound(f"Ev{i:03d}", f"1.{i:06d}"))
    claimed: list[str] = []
    lock = threading.Lock()

    def drain(n: int) -> None:
        inbox = replicas[n % 2]
        while True:
            got = inbox.claim(f"replica-{n}", lease_s=60)
            if got is None:
                return
            with lock:
                claimed.append(got.inbound.id)
            inbox.finish(got, State.DONE)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(drain, range(8)))

    assert sorted(claimed) == [f"Ev{i:03d}" for i in range(40)]  # each once, none twice
    assert replicas[1].count(State.DONE) == 40


def test_steps_survive_a_restart(inboxes):
    inbox = inboxes.open()
    inbox.accept(_inbound())
    claimed = inbox.claim("old", lease_s=0.01)
    assert claimed is not None
    claimed.steps["ticket_ts"] = "1.000002"
    assert inbox.save(claimed)
    inbox.close()

    reopened = inboxes.open()
    again = reopened.claim("new", lease_s=30, now=time.time() + 10)

    assert again is not None
    assert again.steps == {"ticket_ts": "1.000002"}
    assert again.inbound == _inbound()
    assert again.attempts == 2


def test_a_parked_request_wakes_on_resume_or_at_its_expiry(inboxes):
    inbox = inboxes.open()
    inbox.accept(_inbound("EvA", "1.1"))
    inbox.accept(_inbound("EvB", "1.2"))
    a = inbox.claim("r", lease_s=30, request_id="EvA")
    b = inbox.claim("r", lease_s=30, request_id="EvB")
    assert a is not None
    assert b is not None
    now = time.time()
    assert inbox.wait(a, until=now + 3600)
    assert inbox.wait(b, until=now + 5)

    assert inbox.claim("r", lease_s=30, now=now + 1) is None  # both parked
    assert inbox.resume("EvA")
    assert not inbox.resume("EvA")  # not parked any more
    woken = inbox.claim("r", lease_s=30, now=now + 1)
    assert woken is not None
    assert woken.inbound.id == "EvA"
    assert woken.attempts == 1  # waiting is not failing
    expired = inbox.claim("r", lease_s=30, now=now + 6)
    assert expired is not None
    assert expired.inbound.id == "EvB"


def test_a_released_request_is_due_again_after_its_backoff(inboxes):
    inbox = inboxes.open()
    inbox.accept(_inbound())
    got = inbox.claim("r", lease_s=30, now=100.0)
    assert got is not None
    inbox.release(got, retry_in_s=10, now=100.0)

    assert inbox.claim("r", lease_s=30, now=105.0) is None
    again = inbox.claim("r", lease_s=30, now=111.0)
    assert again is not None
    assert again.attempts == 2


def test_a_request_handed_back_at_shutdown_keeps_its_attempts(inboxes):
    """A rolling update stops every replica in turn: each SIGTERM hands the request back, and
    none of those hand-backs is a failed attempt (only failures and silent deaths count)."""
    inbox = inboxes.open()
    inbox.accept(_inbound())
    for restart in range(5):
        got = inbox.claim(f"replica{restart}", lease_s=30, now=100.0 + restart)
        assert got is not None
        assert got.attempts == 1
        inbox.release(got, retry_in_s=0, counted=False, now=100.0 + restart)

    failed = inbox.claim("replica9", lease_s=30, now=200.0)
    assert failed is not None
    inbox.release(failed, retry_in_s=0, now=200.0)  # a failure counts
    died = inbox.claim("replica10", lease_s=1, now=201.0)
    assert died is not None
    assert died.attempts == 2
    taken_over = inbox.claim("replica11", lease_s=30, now=203.0)  # died without a word
    assert taken_over is not None
    assert taken_over.attempts == 3


def test_pruning_deletes_finished_requests_only(inboxes):
    inbox = inboxes.open()
    old = time.time() - 30 * 86400
    for n in range(3):
        inbox.accept(_inbound(f"Ev{n}", f"1.{n}"), now=old)
    done = inbox.claim("me", lease_s=60, request_id="Ev0")
    assert done is not None
    inbox.finish(done, State.DONE)

    assert inbox.prune(time.time() - 86400) == 0  # finished just now: kept
    assert inbox.prune(time.time() + 86400) == 1  # the finished one; queued ones are kept

    assert inbox.get("Ev0") is None
    assert inbox.get("Ev1") is not None
    assert inbox.count(State.QUEUED) == 2
