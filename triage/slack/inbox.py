"""The inbox: every request from Slack is written here before Slack gets its ack.

Why: Slack retries an event it thinks was lost (up to three times, `X-Slack-Retry-Num` 1-3) and
a replica may die right after acking. Writing the request first and acking second means an
acked request is never lost; keying the row by Slack's `event_id` means a retry, or the same
event delivered to another replica, finds the row already there and does nothing. A replica
*claims* a row with a lease before working on it (renewed while it works); a row whose holder
died is taken over once the lease has run out, and its `steps` (what was already said in Slack:
the reaction, the reply's and the ticket's timestamps) let the new holder carry on without
saying anything twice.

Nothing secret is stored: `clean` (the product's Redactor, with the mention capped to Slack's
own message length) runs on the user's words before the row is written, on the inbox's own
thread, never on the event loop.

Two backends, one set of statements (this module): SQLite (triage/slack/inbox_sqlite.py, the
embedded default: one file, one replica or several processes on one node) and PostgreSQL
(triage/slack/inbox_pg.py: replicas on different nodes). Every claim and update is a single
conditional statement inside one transaction (`ON CONFLICT DO NOTHING`, compare-and-set on the
holder and the lease), so both behave alike; tests/slack/test_inbox_conformance.py runs the
same suite against both.

The ack path has the inbox to itself: every statement runs on the backend's own threads (never
the default executor the investigations might fill), and `accept_async` awaits the write
without a thread of the event loop's pool in between.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from triage.core.errors import StateUnavailable

T = TypeVar("T")
WAIT_S = 30.0  # most a caller waits for one inbox statement (each backend times out sooner)


class Kind(StrEnum):
    MENTION = "mention"  # an app_mention: a question or a request
    ACTION = "action"  # a button click (approve / refuse)
    ALERT = "alert"  # an Alertmanager group's notification (triage/web/alerts.py)


class State(StrEnum):
    QUEUED = "queued"  # waiting for, or in the hands of, a worker
    WAITING = "waiting"  # paused for a person's approval; due again at `lease_until` (expiry)
    DONE = "done"  # answered
    FAILED = "failed"  # given up after max attempts; the user was told


@dataclass(frozen=True)
class Inbound:
    """One request as Slack sent it, reduced to what the bot needs."""

    id: str  # the event_id, or for a click the action's own id
    kind: Kind
    team: str
    channel: str
    thread_ts: str  # the thread to answer in (the mention's own ts when it starts one)
    ts: str  # the message (or click) itself
    user: str
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def body(self) -> str:
        return json.dumps(
            {
                "team": self.team,
                "channel": self.channel,
                "thread_ts": self.thread_ts,
                "ts": self.ts,
                "user": self.user,
                "text": self.text,
                "data": self.data,
            }
        )

    @classmethod
    def from_row(cls, row_id: str, kind: str, body: str) -> Inbound:
        b = json.loads(body)
        return cls(
            id=row_id,
            kind=Kind(kind),
            team=b["team"],
            channel=b["channel"],
            thread_ts=b["thread_ts"],
            ts=b["ts"],
            user=b["user"],
            text=b.get("text", ""),
            data=b.get("data") or {},
        )

    @property
    def thread_id(self) -> str:
        """The run's thread id (checkpointer and RCAReport name derive from it)."""
        return f"slack:{self.team}:{self.channel}:{self.thread_ts}"


@dataclass
class Claimed:
    """A request this process holds until `lease_until`; `steps` is what was done so far."""

    inbound: Inbound
    holder: str
    attempts: int
    deliveries: int
    steps: dict[str, Any]


class InboxError(StateUnavailable):
    """The inbox could not be read or written (the disk, the database)."""


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Sequence[Any] | None: ...

    def fetchall(self) -> Sequence[Sequence[Any]]: ...


class Db(Protocol):
    """One open transaction of a backend; statements use `?` placeholders."""

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor: ...


Job = Callable[[Db], T]


class Inbox:
    """Requests keyed by Slack's id, claimed with a lease. Thread-safe; shareable by processes
    (SQLite, one node) or replicas (Postgres). Subclasses run jobs in transactions."""

    backend = "base"
    #: appended to the claim's SELECT (Postgres: skip rows another replica is claiming)
    claim_lock = ""

    def __init__(self, clean: Callable[[str], str] | None = None) -> None:
        self.clean = clean
        self._callers = ThreadPoolExecutor(max_workers=4, thread_name_prefix="inbox-call")

    # -- what a backend provides -------------------------------------------------------------

    def submit(self, job: Job[T]) -> Future[T]:
        """Run `job` in one transaction of the backend, on its own threads."""
        raise NotImplementedError

    def close(self) -> None:
        self._callers.shutdown(wait=False, cancel_futures=True)

    def size_bytes(self) -> int:
        """Bytes the inbox takes on disk (the state-size metric)."""
        return 0

    # -- calling ---------------------------------------------------------------------------------

    def _do(self, job: Job[T]) -> T:
        try:
            return self.submit(job).result(timeout=WAIT_S)
        except TimeoutError as e:
            raise InboxError(f"inbox ({self.backend}): no answer within {WAIT_S:g} s") from e

    def do(self, job: Job[T]) -> T:
        """Run `job` in one transaction and wait for its result (InboxError when the store
        fails or does not answer in time). For tables that live beside the inbox on its
        backend (the Alertmanager receiver's groups: triage/slack/alert_groups.py)."""
        return self._do(job)

    async def do_async(self, job: Job[T]) -> T:
        """`do` for the event loop: awaits the backend's own threads directly."""
        future = self.submit(job)
        try:
            async with asyncio.timeout(WAIT_S):  # a timer on this task: no task of its own
                return await asyncio.wrap_future(future)
        except TimeoutError as e:
            raise InboxError(f"inbox ({self.backend}): no answer within {WAIT_S:g} s") from e

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`fn(*args, **kwargs)` (an Inbox method) off the event loop, on the inbox's own
        threads: never queued behind investigations in the loop's default executor."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._callers, lambda: fn(*args, **kwargs))

    # -- intake (before the ack) -----------------------------------------------------------------

    def _accept_job(self, inbound: Inbound, now: float | None) -> Job[bool]:
        def job(db: Db) -> bool:
            at = time.time() if now is None else now
            row = inbound
            if self.clean is not None and row.text:
                row = replace(row, text=self.clean(row.text))
            cur = db.execute(
                "INSERT INTO slack_inbox (id, kind, body, received_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (row.id, row.kind.value, row.body(), at, at),
            )
            if cur.rowcount == 1:
                return True
            db.execute("UPDATE slack_inbox SET deliveries = deliveries + 1 WHERE id = ?", (row.id,))
            return False

        return job

    def accept_job(self, inbound: Inbound, now: float | None = None) -> Job[bool]:
        """`accept` as a job, for a caller that stores the request in a transaction of its
        own (the receiver: a group's decision and its request together)."""
        return self._accept_job(inbound, now)

    def accept(self, inbound: Inbound, *, now: float | None = None) -> bool:
        """Store the request; False when its id is already there (a retry, another replica)."""
        return self._do(self._accept_job(inbound, now))

    async def accept_async(self, inbound: Inbound, *, now: float | None = None) -> bool:
        """`accept` for the ack path: awaits the backend's own writer directly."""
        future = self.submit(self._accept_job(inbound, now))
        try:
            async with asyncio.timeout(WAIT_S):  # a timer on this task: no task of its own
                return await asyncio.wrap_future(future)
        except TimeoutError as e:
            raise InboxError(f"inbox ({self.backend}): no answer within {WAIT_S:g} s") from e

    # -- work ------------------------------------------------------------------------------------

    def claim(
        self,
        holder: str,
        *,
        lease_s: float,
        request_id: str | None = None,
        now: float | None = None,
    ) -> Claimed | None:
        """Take the oldest request nobody holds (or `request_id` only), for `lease_s`."""

        def job(db: Db) -> Claimed | None:
            at = time.time() if now is None else now
            # a paused request whose approval expired is due too: its run ends, refused
            where = "state IN (?, ?) AND lease_until < ?"
            args: list[Any] = [State.QUEUED.value, State.WAITING.value, at]
            if request_id is not None:
                where += " AND id = ?"
                args.append(request_id)
            row = db.execute(
                f"SELECT id, kind, body, attempts, deliveries, steps FROM slack_inbox "  # noqa: S608
                f"WHERE {where} ORDER BY received_at LIMIT 1{self.claim_lock}",
                args,
            ).fetchone()
            if row is None:
                return None
            cur = db.execute(
                "UPDATE slack_inbox SET state = ?, holder = ?, lease_until = ?, "  # noqa: S608
                f"attempts = attempts + 1, updated_at = ? WHERE id = ? AND {where}",
                (State.QUEUED.value, holder, at + lease_s, at, row[0], *args),
            )
            if cur.rowcount != 1:
                return None  # someone else took it between the two statements
            return Claimed(
                inbound=Inbound.from_row(str(row[0]), str(row[1]), str(row[2])),
                holder=holder,
                attempts=int(row[3]) + 1,
                deliveries=int(row[4]),
                steps=json.loads(row[5]),
            )

        return self._do(job)

    def _update(self, sql: str, args: Sequence[Any]) -> bool:
        return self._do(lambda db: db.execute(sql, args).rowcount == 1)

    def renew(self, claimed: Claimed, *, lease_s: float, now: float | None = None) -> bool:
        """Extend our lease; False when someone else holds the request now (stop working)."""
        now = time.time() if now is None else now
        return self._update(
            "UPDATE slack_inbox SET lease_until = ?, updated_at = ? "
            "WHERE id = ? AND holder = ? AND state = ?",
            (now + lease_s, now, claimed.inbound.id, claimed.holder, State.QUEUED.value),
        )

    def save(
        self, claimed: Claimed, *, lease_s: float | None = None, now: float | None = None
    ) -> bool:
        """Record `claimed.steps` (what was said in Slack so far), if we still hold it; with
        `lease_s`, the lease is set to run that long from now in the same write."""
        now = time.time() if now is None else now
        where = "WHERE id = ? AND holder = ? AND state = ?"
        keys = (claimed.inbound.id, claimed.holder, State.QUEUED.value)
        if lease_s is None:
            return self._update(
                f"UPDATE slack_inbox SET steps = ?, updated_at = ? {where}",  # noqa: S608
                (json.dumps(claimed.steps), now, *keys),
            )
        return self._update(
            f"UPDATE slack_inbox SET steps = ?, updated_at = ?, lease_until = ? {where}",  # noqa: S608
            (json.dumps(claimed.steps), now, now + lease_s, *keys),
        )

    def finish(self, claimed: Claimed, state: State) -> bool:
        return self._update(
            "UPDATE slack_inbox SET state = ?, holder = NULL, lease_until = 0, steps = ?, "
            "updated_at = ? WHERE id = ? AND holder = ?",
            (
                state.value,
                json.dumps(claimed.steps),
                time.time(),
                claimed.inbound.id,
                claimed.holder,
            ),
        )

    def wait(self, claimed: Claimed, *, until: float) -> bool:
        """Park the request while a person decides (approval); it is due again at `until`
        (the approval's expiry) unless `resume` wakes it first. Attempts start over then:
        waiting is not failing."""
        return self._update(
            "UPDATE slack_inbox SET state = ?, holder = NULL, lease_until = ?, attempts = 0, "
            "steps = ?, updated_at = ? WHERE id = ? AND holder = ?",
            (
                State.WAITING.value,
                until,
                json.dumps(claimed.steps),
                time.time(),
                claimed.inbound.id,
                claimed.holder,
            ),
        )

    def resume(self, request_id: str) -> bool:
        """Make a parked request due now (a person decided); False when it is not parked."""
        return self._update(
            "UPDATE slack_inbox SET state = ?, lease_until = 0, updated_at = ? "
            "WHERE id = ? AND state = ?",
            (State.QUEUED.value, time.time(), request_id, State.WAITING.value),
        )

    def release(
        self,
        claimed: Claimed,
        *,
        retry_in_s: float,
        counted: bool = True,
        now: float | None = None,
    ) -> None:
        """Give the request back; it becomes due again in `retry_in_s`. After a failure the
        attempt counts. A request handed back because this process is shutting down
        (`counted=False`: SIGTERM in a rolling update, a node drain) was not tried and failed,
        so its attempt is taken back: restarts alone never use up a request's attempts. A
        holder that dies without handing back (kill -9, OOM) is not heard from, so that
        attempt still counts, which is what bounds a request that kills every process."""
        now = time.time() if now is None else now
        attempts = "attempts" if counted else "CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END"
        self._update(
            f"UPDATE slack_inbox SET holder = NULL, lease_until = ?, steps = ?, updated_at = ?, "  # noqa: S608
            f"attempts = {attempts} WHERE id = ? AND holder = ?",
            (now + retry_in_s, json.dumps(claimed.steps), now, claimed.inbound.id, claimed.holder),
        )

    def prune(self, cutoff: float) -> int:
        """Delete finished requests last touched before `cutoff` (unix seconds); queued and
        waiting ones are kept whatever their age. Returns how many were deleted."""
        return self._do(
            lambda db: (
                db.execute(
                    "DELETE FROM slack_inbox WHERE state IN (?, ?) AND updated_at < ?",
                    (State.DONE.value, State.FAILED.value, cutoff),
                ).rowcount
            )
        )

    # -- reading -----------------------------------------------------------------------------------

    def get(self, request_id: str) -> dict[str, Any] | None:
        row = self._do(
            lambda db: db.execute(
                "SELECT id, kind, state, deliveries, attempts, holder, steps FROM slack_inbox "
                "WHERE id = ?",
                (request_id,),
            ).fetchone()
        )
        if row is None:
            return None
        keys = ("id", "kind", "state", "deliveries", "attempts", "holder", "steps")
        out = dict(zip(keys, row, strict=True))
        out["steps"] = json.loads(out["steps"])
        return out

    def ids(self, kind: Kind) -> list[str]:
        """Every request id of `kind`, oldest first."""
        rows = self._do(
            lambda db: db.execute(
                "SELECT id FROM slack_inbox WHERE kind = ? ORDER BY received_at", (kind.value,)
            ).fetchall()
        )
        return [str(r[0]) for r in rows]

    def count(self, state: State) -> int:
        row = self._do(
            lambda db: db.execute(
                "SELECT COUNT(*) FROM slack_inbox WHERE state = ?", (state.value,)
            ).fetchone()
        )
        return int(row[0]) if row else 0

    def next_due(self, *, now: float | None = None) -> float | None:
        """When the next queued request becomes claimable (None: nothing queued)."""
        row = self._do(
            lambda db: db.execute(
                "SELECT MIN(lease_until) FROM slack_inbox WHERE state = ?", (State.QUEUED.value,)
            ).fetchone()
        )
        return None if row is None or row[0] is None else float(row[0])
