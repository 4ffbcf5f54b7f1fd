"""Several `triage serve` processes sharing one real PostgreSQL (inbox and checkpoints), as
replicas on different nodes do: an event delivered a thousand times, to any replica, is run
once; a replica killed with SIGKILL while it holds a request is replaced by another that
finishes it exactly once, from the checkpoint; a rolling restart under 50 mentions in flight
loses none and answers none twice."""

from __future__ import annotations

import os
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.slack.serve_process import Serve, wait_for
from tests.slack.support import mention, sign, user_message
from tests.support.fake_slack import FakeSlack
from triage.core.database import open_pool
from triage.core.settings import StateSettings
from triage.slack.inbox import State
from triage.slack.inbox_pg import PostgresInbox

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(600)]

WRITE_RCA = (
    "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, "
    "find out why and write the RCA"
)
SLOW_SERVE = [
    sys.executable,
    "-m",
    "tests.slack.crash_serve",
    "serve",
    "--demo",
    "crashloop-bad-env",
]
ROOT = str(Path(__file__).resolve().parents[2])


class Shared:
    """The test's own view of the shared database (a replica's inbox, read-only use)."""

    def __init__(self, dsn: str) -> None:
        self.pool = open_pool(StateSettings(checkpointer="postgres", postgres_dsn=dsn))
        self.inbox = PostgresInbox(self.pool)

    def row(self, event_id: str) -> dict[str, Any]:
        return self.inbox.get(event_id) or {}

    def threads(self, like: str) -> int:
        with self.pool.connection() as conn:
            row = conn.execute(
                "SELECT count(DISTINCT thread_id) AS n FROM checkpoints WHERE thread_id LIKE %s",
                (like,),
            ).fetchone()
        return int(row["n"])

    def close(self) -> None:
        self.inbox.close()
        self.pool.close()


@pytest.fixture
def shared(postgres_dsn):
    view = Shared(postgres_dsn)
    yield view
    view.close()


def _replicas(
    slack_api: FakeSlack, tmp: Path, dsn: str, n: int, slow_s: float = 0.0
) -> list[Serve]:
    env = {
        "TRIAGE_STATE__CHECKPOINTER": "postgres",
        "TRIAGE_STATE__POSTGRES_DSN": dsn,
        "PYTHONPATH": ROOT,
    }
    if slow_s:
        env["TRIAGE_TEST_SLOW_TOOLS"] = str(slow_s)
    out = []
    for i in range(n):
        state = tmp / f"replica{i}"
        state.mkdir()
        out.append(Serve(slack_api, state, env=env, command=SLOW_SERVE))
    return out


def _post(url: str, body: bytes, client: httpx.Client) -> int:
    return client.post(f"{url}/slack/events", content=body, headers=sign(body)).status_code


def _markers(slack_api: FakeSlack, event_id: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for call in slack_api.calls_to("chat.postMessage"):
        marker = ((call.params.get("metadata") or {}).get("event_payload") or {}).get("marker")
        if marker and marker.startswith(f"{event_id}:"):
            out[marker.split(":", 1)[1]] += 1
    return out


def _answered_once(slack_api: FakeSlack, shared: Shared, event_id: str) -> list[str]:
    row = shared.row(event_id)
    problems = []
    if row.get("state") != "done":
        problems.append(f"state {row.get('state')}")
    if row.get("steps", {}).get("ticket_final") != "verified":
        problems.append(f"outcome {row.get('steps', {}).get('ticket_final')}")
    markers = _markers(slack_api, event_id)
    for name in ("ticket", "progress", "answer0"):
        if markers[name] != 1:
            problems.append(f"{name} posted {markers[name]} times")
    return [f"{event_id}: {p}" for p in problems]


@pytest.mark.parametrize("replicas", [2, 3])
def test_a_thousand_deliveries_to_any_replica_are_one_run(
    replicas, slack_api, shared, postgres_dsn, tmp_path
) -> None:
    servers = [s.start() for s in _replicas(slack_api, tmp_path, postgres_dsn, replicas)]
    try:
        ts = user_message(slack_api, WRITE_RCA)
        body = mention("Ev0DUP", WRITE_RCA, ts=ts)

        def deliver(i: int) -> int:
            with httpx.Client(timeout=30) as client:
                return _post(servers[i % replicas].url, body, client)

        with ThreadPoolExecutor(24) as pool:
            codes = Counter(pool.map(deliver, range(1000)))
        wait_for(lambda: shared.row("Ev0DUP").get("state") == "done", 120, "the answer")
    finally:
        for s in servers:
            s.stop()

    assert codes == Counter({200: 1000})
    assert shared.row("Ev0DUP")["deliveries"] == 1000
    assert shared.threads(f"slack:%:{ts}%") == 1  # one run, checkpointed once
    assert _answered_once(slack_api, shared, "Ev0DUP") == []


def test_a_killed_holder_is_finished_by_another_replica_exactly_once(
    slack_api, shared, postgres_dsn, tmp_path
) -> None:
    servers = [s.start() for s in _replicas(slack_api, tmp_path, postgres_dsn, 2, slow_s=0.3)]
    try:
        ts = user_message(slack_api, WRITE_RCA)
        with httpx.Client(timeout=10) as client:
            assert _post(servers[0].url, mention("Ev0HELD", WRITE_RCA, ts=ts), client) == 200
        wait_for(lambda: bool(shared.row("Ev0HELD").get("holder")), 30, "a claim")
        wait_for(lambda: shared.threads(f"slack:%:{ts}%") == 1, 30, "a first checkpoint")
        holder = str(shared.row("Ev0HELD")["holder"])
        pid = int(holder.split(":")[1])  # the holder's worker process; its replica's session:
        victim = next(s for s in servers if s.proc is not None and os.getsid(pid) == s.proc.pid)
        victim.kill()  # SIGKILL, server and worker, as a node or container dies
        wait_for(lambda: shared.row("Ev0HELD").get("state") == "done", 120, "the answer")
        finisher = str(shared.row("Ev0HELD").get("holder") or "")
        row = shared.row("Ev0HELD")
    finally:
        for s in servers:
            s.stop()

    assert row["attempts"] == 2  # taken over once, after the dead holder's lease
    assert finisher == ""  # finished: nobody holds it
    assert _answered_once(slack_api, shared, "Ev0HELD") == []


def test_a_rolling_restart_under_50_mentions_loses_and_doubles_nothing(
    slack_api, shared, postgres_dsn, tmp_path
) -> None:
    servers = [s.start() for s in _replicas(slack_api, tmp_path, postgres_dsn, 2, slow_s=0.05)]
    ids = [f"Ev{i:03d}ROLL" for i in range(50)]
    try:
        stamps = [user_message(slack_api, WRITE_RCA) for _ in ids]
        slack_api.calls.clear()

        def deliver(i: int) -> int:
            with httpx.Client(timeout=30) as client:
                return _post(servers[i % 2].url, mention(ids[i], WRITE_RCA, ts=stamps[i]), client)

        with ThreadPoolExecutor(10) as pool:
            codes = Counter(pool.map(deliver, range(50)))
        assert codes == Counter({200: 50})
        for server in servers:  # one at a time, as a Deployment's rolling update does
            wait_for(lambda: shared.inbox.count(State.DONE) < 50, 1, "work in flight")
            server.stop()  # SIGTERM: its requests go back to the inbox
            server.start()
        try:
            wait_for(lambda: shared.inbox.count(State.DONE) == 50, 300, "every answer")
        except AssertionError as e:  # say where the others are: state, attempts, last step
            rows = [shared.row(i) for i in ids]
            late = [
                (r.get("state"), r.get("attempts"), sorted(r.get("steps") or {})[-3:])
                for r in rows
                if r.get("state") != "done"
            ]
            raise AssertionError(f"{e}; not done: {late[:6]} ({len(late)} in all)") from e
    finally:
        for s in servers:
            s.stop()

    problems = [p for event_id in ids for p in _answered_once(slack_api, shared, event_id)]
    assert problems == []
    assert shared.inbox.count(State.FAILED) == 0
