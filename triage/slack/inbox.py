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
own message length) runs on the user's words before the row is written, in the worker thread
that writes it, never on the event loop.

Storage: one SQLite file (WAL, `synchronous=FULL`, a busy timeout) that several processes may
share; every claim and update is a single conditional statement inside `BEGIN IMMEDIATE`, and
the SQL is plain enough (`ON CONFLICT DO NOTHING`, compare-and-set on the holder) to move to a
shared Postgres unchanged when replicas run on different nodes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

BUSY_TIMEOUT_MS = 5000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS slack_inbox (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    body        TEXT NOT NULL,
    received_at REAL NOT NULL,
    deliveries  INTEGER NOT NULL DEFAULT 1,
    state       TEXT NOT NULL DEFAULT 'queued',
    holder      TEXT,
    lease_until REAL NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 0,
    steps       TEXT NOT NULL DEFAULT '{}',
    updated_at  REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS slack_inbox_due ON slack_inbox (state, lease_until);
"""


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


class InboxError(Exception):
    """The inbox could not be read or written (the disk, the database)."""


class Inbox:
    """Requests keyed by Slack's id, claimed with a lease. Thread-safe; process-shareable."""

    def __init__(self, path: Path | str, clean: Callable[[str], str] | None = None) -> None:
        self.path = str(path)
        self.clean = clean
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path,
            timeout=BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = FULL")
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                self._db.execute(statement)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as e:
                raise InboxError(f"inbox {self.path}: {e}") from e

    # -- intake (before the ack) -----------------------------------------------------------------

    def accept(self, inbound: Inbound, *, now: float | None = None) -> bool:
        """Store the request; False when its id is already there (a retry, another replica)."""
        now = time.time() if now is None else now
        if self.clean is not None and inbound.text:
            inbound = replace(inbound, text=self.clean(inbound.text))
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO slack_inbox (id, kind, body, received_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING",
                (inbound.id, inbound.kind.value, inbound.body(), now, now),
            )
            if cur.rowcount == 1:
                return True
            db.execute(
                "UPDATE slack_inbox SET deliveries = deliveries + 1 WHERE id = ?", (inbound.id,)
            )
            return False

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
        now = time.time() if now is None else now
        # a paused request whose approval expired is due too: its run ends, refused
        where = "state IN (?, ?) AND lease_until < ?"
        args: list[Any] = [State.QUEUED.value, State.WAITING.value, now]
        if request_id is not None:
            where += " AND id = ?"
            args.append(request_id)
        with self._tx() as db:
            row = db.execute(
                f"SELECT id, kind, body, attempts, deliveries, steps FROM slack_inbox "  # noqa: S608
                f"WHERE {where} ORDER BY received_at LIMIT 1",
                args,
            ).fetchone()
            if row is None:
                return None
            db.execute(
                "UPDATE slack_inbox SET state = ?, holder = ?, lease_until = ?, "
                "attempts = attempts + 1, updated_at = ? WHERE id = ?",
                (State.QUEUED.value, holder, now + lease_s, now, row[0]),
            )
        return Claimed(
            inbound=Inbound.from_row(row[0], row[1], row[2]),
            holder=holder,
            attempts=int(row[3]) + 1,
            deliveries=int(row[4]),
            steps=json.loads(row[5]),
        )

    def renew(self, claimed: Claimed, *, lease_s: float, now: float | None = None) -> bool:
        """Extend our lease; False when someone else holds the request now (stop working)."""
        now = time.time() if now is None else now
        with self._tx() as db:
            cur = db.execute(
                "UPDATE slack_inbox SET lease_until = ?, updated_at = ? "
                "WHERE id = ? AND holder = ? AND state = ?",
                (now + lease_s, now, claimed.inbound.id, claimed.holder, State.QUEUED.value),
            )
            return cur.rowcount == 1

    def save(self, claimed: Claimed) -> bool:
        """Record `claimed.steps` (what was said in Slack so far), if we still hold it."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE slack_inbox SET steps = ?, updated_at = ? "
                "WHERE id = ? AND holder = ? AND state = ?",
                (
                    json.dumps(claimed.steps),
                    time.time(),
                    claimed.inbound.id,
                    claimed.holder,
                    State.QUEUED.value,
                ),
            )
            return cur.rowcount == 1

    def finish(self, claimed: Claimed, state: State) -> bool:
        with self._tx() as db:
            cur = db.execute(
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
            return cur.rowcount == 1

    def wait(self, claimed: Claimed, *, until: float) -> bool:
        """Park the request while a person decides (approval); it is due again at `until`
        (the approval's expiry) unless `resume` wakes it first. Attempts start over then:
        waiting is not failing."""
        with self._tx() as db:
            cur = db.execute(
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
            return cur.rowcount == 1

    def resume(self, request_id: str) -> bool:
        """Make a parked request due now (a person decided); False when it is not parked."""
        now = time.time()
        with self._tx() as db:
            cur = db.execute(
                "UPDATE slack_inbox SET state = ?, lease_until = 0, updated_at = ? "
                "WHERE id = ? AND state = ?",
                (State.QUEUED.value, now, request_id, State.WAITING.value),
            )
            return cur.rowcount == 1

    def release(self, claimed: Claimed, *, retry_in_s: float, now: float | None = None) -> None:
        """Give the request back after a failure; it becomes due again in `retry_in_s`."""
        now = time.time() if now is None else now
        with self._tx() as db:
            db.execute(
                "UPDATE slack_inbox SET holder = NULL, lease_until = ?, steps = ?, updated_at = ? "
                "WHERE id = ? AND holder = ?",
                (
                    now + retry_in_s,
                    json.dumps(claimed.steps),
                    now,
                    claimed.inbound.id,
                    claimed.holder,
                ),
            )

    # -- reading -----------------------------------------------------------------------------------

    def get(self, request_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._db.execute(
                "SELECT id, kind, state, deliveries, attempts, holder, steps FROM slack_inbox "
                "WHERE id = ?",
                (request_id,),
            ).fetchone()
        if row is None:
            return None
        keys = ("id", "kind", "state", "deliveries", "attempts", "holder", "steps")
        out = dict(zip(keys, row, strict=True))
        out["steps"] = json.loads(out["steps"])
        return out

    def ids(self, kind: Kind) -> list[str]:
        """Every request id of `kind`, oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id FROM slack_inbox WHERE kind = ? ORDER BY received_at", (kind.value,)
            ).fetchall()
        return [str(r[0]) for r in rows]

    def count(self, state: State) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM slack_inbox WHERE state = ?", (state.value,)
            ).fetchone()
        return int(row[0])

    def next_due(self, *, now: float | None = None) -> float | None:
        """When the next queued request becomes claimable (None: nothing queued)."""
        with self._lock:
            row = self._db.execute(
                "SELECT MIN(lease_until) FROM slack_inbox WHERE state = ?", (State.QUEUED.value,)
            ).fetchone()
        return None if row is None or row[0] is None else float(row[0])
