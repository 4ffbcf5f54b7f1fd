"""Which Alertmanager groups are open, and how many investigations a storm may start.

Alertmanager notifies about a group again and again while it fires (every `group_interval`
when it changes, every `repeat_interval` otherwise), and retries a notification it thinks was
lost. One investigation per *episode* of a group: the first firing notification opens it
(episode 1, 2, … for a group that resolves and fires again) and names its inbox request; every
later notification of the open episode is counted, not started again; the resolved one closes
it and names the request that updates the ticket.

A storm is many groups at once: per channel, at most `max_investigations` episodes start in
one fixed window of `window_s`; past that a group is counted as suppressed (not opened, so a
notification after the storm can still start it) and one summary request per channel and
window lists them.

Storage: two tables in the inbox's SQLite file (triage/slack/inbox.py: WAL, a busy timeout),
every decision one `BEGIN IMMEDIATE` transaction, so replicas sharing the file agree.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from triage.slack.inbox import InboxError
from triage.slack.inbox_sqlite import BUSY_TIMEOUT_MS

_SCHEMA = """
CREATE TABLE IF NOT EXISTS alert_groups (
    group_id      TEXT PRIMARY KEY,
    group_key     TEXT NOT NULL,
    episode       INTEGER NOT NULL,
    state         TEXT NOT NULL,
    channel       TEXT NOT NULL,
    opened_at     REAL NOT NULL,
    resolved_at   REAL,
    notifications INTEGER NOT NULL DEFAULT 1,
    updated_at    REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS alert_storms (
    channel      TEXT NOT NULL,
    window_start REAL NOT NULL,
    started      INTEGER NOT NULL DEFAULT 0,
    suppressed   INTEGER NOT NULL DEFAULT 0,
    names        TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (channel, window_start)
);
"""


class GroupState(StrEnum):
    OPEN = "open"
    RESOLVED = "resolved"


class Decision(StrEnum):
    """What a notification did."""

    STARTED = "started"  # a new episode: investigate
    DUPLICATE = "duplicate"  # the episode is open already: counted only
    SUPPRESSED = "suppressed"  # a storm: counted in the summary, not investigated
    RESOLVED = "resolved"  # the open episode ended: update its ticket
    IGNORED = "ignored"  # resolved without an open episode (never started, or again)


@dataclass(frozen=True)
class Admission:
    decision: Decision
    request_id: str | None = None  # the inbox request to create (or that exists)
    storm_id: str | None = None  # the storm summary request, when suppressed
    window_end: float = 0.0


@dataclass(frozen=True)
class Group:
    group_id: str
    group_key: str
    episode: int
    state: GroupState
    channel: str
    opened_at: float
    resolved_at: float | None
    notifications: int


@dataclass(frozen=True)
class Storm:
    channel: str
    window_start: float
    window_end: float
    started: int
    suppressed: int
    names: dict[str, int]


def investigation_id(group_id: str, episode: int) -> str:
    return f"alert:{group_id}:{episode}"


def storm_id(channel: str, window_start: float) -> str:
    return f"alert-storm:{channel}:{window_start:.0f}"


class AlertGroups:
    """Open alert groups and storm counts, beside the inbox. Thread-safe."""

    def __init__(self, path: Path | str, *, max_investigations: int, window_s: float) -> None:
        self.path = str(path)
        self.max_investigations = max_investigations
        self.window_s = window_s
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
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
                raise InboxError(f"alert groups {self.path}: {e}") from e

    def _window(self, now: float) -> tuple[float, float]:
        start = math.floor(now / self.window_s) * self.window_s
        return start, start + self.window_s

    def firing(
        self, group_id: str, group_key: str, channel: str, name: str, *, now: float | None = None
    ) -> Admission:
        """A firing notification: start a new episode, count a duplicate, or count it in a
        storm — decided in one transaction."""
        now = time.time() if now is None else now
        start, end = self._window(now)
        with self._tx() as db:
            row = db.execute(
                "SELECT episode, state FROM alert_groups WHERE group_id = ?", (group_id,)
            ).fetchone()
            if row is not None and row[1] == GroupState.OPEN.value:
                db.execute(
                    "UPDATE alert_groups SET notifications = notifications + 1, updated_at = ? "
                    "WHERE group_id = ?",
                    (now, group_id),
                )
                return Admission(Decision.DUPLICATE, investigation_id(group_id, int(row[0])))
            db.execute(
                "INSERT INTO alert_storms (channel, window_start) VALUES (?, ?) "
                "ON CONFLICT (channel, window_start) DO NOTHING",
                (channel, start),
            )
            started, suppressed, names = db.execute(
                "SELECT started, suppressed, names FROM alert_storms "
                "WHERE channel = ? AND window_start = ?",
                (channel, start),
            ).fetchone()
            if int(started) >= self.max_investigations:
                counted = json.loads(names)
                counted[name] = int(counted.get(name, 0)) + 1
                db.execute(
                    "UPDATE alert_storms SET suppressed = suppressed + 1, names = ? "
                    "WHERE channel = ? AND window_start = ?",
                    (json.dumps(counted), channel, start),
                )
                del suppressed
                return Admission(
                    Decision.SUPPRESSED, storm_id=storm_id(channel, start), window_end=end
                )
            db.execute(
                "UPDATE alert_storms SET started = started + 1 "
                "WHERE channel = ? AND window_start = ?",
                (channel, start),
            )
            episode = 1 if row is None else int(row[0]) + 1
            db.execute(
                "INSERT INTO alert_groups (group_id, group_key, episode, state, channel, "
                "opened_at, resolved_at, notifications, updated_at) "
                "VALUES (?, ?, ?, ?, ?, ?, NULL, 1, ?) ON CONFLICT (group_id) DO UPDATE SET "
                "episode = excluded.episode, state = excluded.state, channel = "
                "excluded.channel, opened_at = excluded.opened_at, resolved_at = NULL, "
                "notifications = 1, updated_at = excluded.updated_at",
                (group_id, group_key[:2000], episode, GroupState.OPEN.value, channel, now, now),
            )
            return Admission(Decision.STARTED, investigation_id(group_id, episode))

    def resolved(self, group_id: str, *, now: float | None = None) -> Admission:
        """A resolved notification: close the open episode (its ticket is then updated)."""
        now = time.time() if now is None else now
        with self._tx() as db:
            row = db.execute(
                "SELECT episode, state FROM alert_groups WHERE group_id = ?", (group_id,)
            ).fetchone()
            if row is None or row[1] != GroupState.OPEN.value:
                return Admission(Decision.IGNORED)
            db.execute(
                "UPDATE alert_groups SET state = ?, resolved_at = ?, updated_at = ?, "
                "notifications = notifications + 1 WHERE group_id = ?",
                (GroupState.RESOLVED.value, now, now, group_id),
            )
            return Admission(Decision.RESOLVED, investigation_id(group_id, int(row[0])))

    def get(self, group_id: str) -> Group | None:
        with self._lock:
            row = self._db.execute(
                "SELECT group_id, group_key, episode, state, channel, opened_at, resolved_at, "
                "notifications FROM alert_groups WHERE group_id = ?",
                (group_id,),
            ).fetchone()
        if row is None:
            return None
        return Group(
            group_id=row[0],
            group_key=row[1],
            episode=int(row[2]),
            state=GroupState(row[3]),
            channel=row[4],
            opened_at=float(row[5]),
            resolved_at=None if row[6] is None else float(row[6]),
            notifications=int(row[7]),
        )

    def storm(self, channel: str, window_start: float) -> Storm | None:
        with self._lock:
            row = self._db.execute(
                "SELECT started, suppressed, names FROM alert_storms "
                "WHERE channel = ? AND window_start = ?",
                (channel, window_start),
            ).fetchone()
        if row is None:
            return None
        return Storm(
            channel=channel,
            window_start=window_start,
            window_end=window_start + self.window_s,
            started=int(row[0]),
            suppressed=int(row[1]),
            names=json.loads(row[2]),
        )

    def counts(self) -> dict[str, int]:
        """Groups by state, and storm totals (for tests, the bench and the closing note)."""
        with self._lock:
            rows = self._db.execute(
                "SELECT state, COUNT(*), SUM(notifications) FROM alert_groups GROUP BY state"
            ).fetchall()
            storms = self._db.execute(
                "SELECT COALESCE(SUM(started), 0), COALESCE(SUM(suppressed), 0) FROM alert_storms"
            ).fetchone()
        out = {str(r[0]): int(r[1]) for r in rows}
        out["notifications"] = sum(int(r[2] or 0) for r in rows)
        out["started"], out["suppressed"] = int(storms[0]), int(storms[1])
        return out
