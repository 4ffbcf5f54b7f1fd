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

Storage: three tables beside the inbox's, on the inbox's backend (the SQLite file, or the
Postgres database replicas share; each backend creates them with its own schema), every
decision one job of the inbox (`Inbox.do`: one transaction). So replicas agree: a group's
episode starts once across all of them, and a storm is counted once, not per replica. The
decisions are conditional statements that are safe when Postgres runs them concurrently
(SQLite runs them one at a time on its one writer):

- a duplicate is `UPDATE … WHERE state = 'open'` (it counts, or it does nothing);
- a storm slot is `UPDATE … SET started = started + 1 WHERE started < max`: a second replica
  waits for the first's row lock and re-reads the count, so a window never starts more than
  `max_investigations`;
- opening is one upsert `… ON CONFLICT DO UPDATE … WHERE state <> 'open'`: of two replicas
  opening the same group at once, one opens it; the other waits for its commit, finds it open,
  gives its slot back and counts a duplicate;
- suppressed names are counted by an upsert each (no read-modify-write of a shared value).

The receiver (triage/web/alerts.py) runs a decision and the inbox request it names in the same
job, so a group is never open without its request stored.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from enum import StrEnum

from triage.slack.inbox import Db, Inbox, Job


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
    window_start: float = 0.0  # the storm's window, as stored (the summary looks it up)
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


_OPEN = GroupState.OPEN.value


def _episode(db: Db, group_id: str) -> int:
    row = db.execute("SELECT episode FROM alert_groups WHERE group_id = ?", (group_id,)).fetchone()
    assert row is not None  # called only where the row exists in this transaction
    return int(row[0])


def _count_if_open(db: Db, group_id: str, now: float) -> bool:
    """One more notification of the open episode; False when none is open."""
    cur = db.execute(
        "UPDATE alert_groups SET notifications = notifications + 1, updated_at = ? "
        "WHERE group_id = ? AND state = ?",
        (now, group_id, _OPEN),
    )
    return cur.rowcount == 1


class AlertGroups:
    """Open alert groups and storm counts, in the inbox's database. Thread-safe (each call is
    one job of the inbox); several objects over one database (replicas) agree."""

    def __init__(self, inbox: Inbox, *, max_investigations: int, window_s: float) -> None:
        self.inbox = inbox
        self.max_investigations = max_investigations
        self.window_s = window_s

    def _window(self, now: float) -> tuple[float, float]:
        start = math.floor(now / self.window_s) * self.window_s
        return start, start + self.window_s

    # -- deciding (jobs, so a caller can add its own statements to the same transaction) ------

    def firing_job(
        self, group_id: str, group_key: str, channel: str, name: str, now: float
    ) -> Job[Admission]:
        """A firing notification: start a new episode, count a duplicate, or count it in a
        storm."""
        start, end = self._window(now)
        storm = (channel, start)

        def job(db: Db) -> Admission:
            if _count_if_open(db, group_id, now):
                return Admission(
                    Decision.DUPLICATE, investigation_id(group_id, _episode(db, group_id))
                )
            db.execute(
                "INSERT INTO alert_storms (channel, window_start, started, suppressed) "
                "VALUES (?, ?, 0, 0) ON CONFLICT (channel, window_start) DO NOTHING",
                storm,
            )
            slot = db.execute(
                "UPDATE alert_storms SET started = started + 1 "
                "WHERE channel = ? AND window_start = ? AND started < ?",
                (*storm, self.max_investigations),
            )
            if slot.rowcount != 1:
                # the last slot may have gone to this very group on another replica, which
                # has committed by now (its slot's row lock is what this waited for)
                if _count_if_open(db, group_id, now):
                    episode = _episode(db, group_id)
                    return Admission(Decision.DUPLICATE, investigation_id(group_id, episode))
                db.execute(
                    "UPDATE alert_storms SET suppressed = suppressed + 1 "
                    "WHERE channel = ? AND window_start = ?",
                    storm,
                )
                db.execute(
                    "INSERT INTO alert_storm_names (channel, window_start, name, times) "
                    "VALUES (?, ?, ?, 1) ON CONFLICT (channel, window_start, name) "
                    "DO UPDATE SET times = alert_storm_names.times + 1",
                    (*storm, name[:200]),
                )
                return Admission(
                    Decision.SUPPRESSED,
                    storm_id=storm_id(channel, start),
                    window_start=start,
                    window_end=end,
                )
            opened = db.execute(
                "INSERT INTO alert_groups (group_id, group_key, episode, state, channel, "
                "opened_at, resolved_at, notifications, updated_at) "
                "VALUES (?, ?, 1, ?, ?, ?, NULL, 1, ?) ON CONFLICT (group_id) DO UPDATE SET "
                "episode = alert_groups.episode + 1, state = excluded.state, "
                "group_key = excluded.group_key, channel = excluded.channel, "
                "opened_at = excluded.opened_at, resolved_at = NULL, notifications = 1, "
                "updated_at = excluded.updated_at WHERE alert_groups.state <> ?",
                (group_id, group_key[:2000], _OPEN, channel, now, now, _OPEN),
            )
            if opened.rowcount != 1:  # another replica opened it first: give the slot back
                db.execute(
                    "UPDATE alert_storms SET started = started - 1 "
                    "WHERE channel = ? AND window_start = ?",
                    storm,
                )
                _count_if_open(db, group_id, now)
                return Admission(
                    Decision.DUPLICATE, investigation_id(group_id, _episode(db, group_id))
                )
            return Admission(Decision.STARTED, investigation_id(group_id, _episode(db, group_id)))

        return job

    def resolved_job(self, group_id: str, now: float) -> Job[Admission]:
        """A resolved notification: close the open episode (its ticket is then updated)."""

        def job(db: Db) -> Admission:
            closed = db.execute(
                "UPDATE alert_groups SET state = ?, resolved_at = ?, updated_at = ?, "
                "notifications = notifications + 1 WHERE group_id = ? AND state = ?",
                (GroupState.RESOLVED.value, now, now, group_id, _OPEN),
            )
            if closed.rowcount != 1:
                return Admission(Decision.IGNORED)
            return Admission(Decision.RESOLVED, investigation_id(group_id, _episode(db, group_id)))

        return job

    def firing(
        self, group_id: str, group_key: str, channel: str, name: str, *, now: float | None = None
    ) -> Admission:
        now = time.time() if now is None else now
        return self.inbox.do(self.firing_job(group_id, group_key, channel, name, now))

    def resolved(self, group_id: str, *, now: float | None = None) -> Admission:
        now = time.time() if now is None else now
        return self.inbox.do(self.resolved_job(group_id, now))

    # -- reading ---------------------------------------------------------------------------------

    def get(self, group_id: str) -> Group | None:
        row = self.inbox.do(
            lambda db: db.execute(
                "SELECT group_id, group_key, episode, state, channel, opened_at, resolved_at, "
                "notifications FROM alert_groups WHERE group_id = ?",
                (group_id,),
            ).fetchone()
        )
        if row is None:
            return None
        return Group(
            group_id=str(row[0]),
            group_key=str(row[1]),
            episode=int(row[2]),
            state=GroupState(row[3]),
            channel=str(row[4]),
            opened_at=float(row[5]),
            resolved_at=None if row[6] is None else float(row[6]),
            notifications=int(row[7]),
        )

    def storm(self, channel: str, window_start: float) -> Storm | None:
        def job(db: Db) -> tuple[int, int, dict[str, int]] | None:
            row = db.execute(
                "SELECT started, suppressed FROM alert_storms "
                "WHERE channel = ? AND window_start = ?",
                (channel, window_start),
            ).fetchone()
            if row is None:
                return None
            names = db.execute(
                "SELECT name, times FROM alert_storm_names WHERE channel = ? AND window_start = ?",
                (channel, window_start),
            ).fetchall()
            return int(row[0]), int(row[1]), {str(n): int(t) for n, t in names}

        found = self.inbox.do(job)
        if found is None:
            return None
        started, suppressed, names = found
        return Storm(
            channel=channel,
            window_start=window_start,
            window_end=window_start + self.window_s,
            started=started,
            suppressed=suppressed,
            names=names,
        )

    def counts(self) -> dict[str, int]:
        """Groups by state, and storm totals (for tests, the bench and the closing note)."""

        def job(db: Db) -> dict[str, int]:
            rows = db.execute(
                "SELECT state, COUNT(*), SUM(notifications) FROM alert_groups GROUP BY state"
            ).fetchall()
            storms = db.execute(
                "SELECT COALESCE(SUM(started), 0), COALESCE(SUM(suppressed), 0) FROM alert_storms"
            ).fetchone()
            out = {str(r[0]): int(r[1]) for r in rows}
            out["notifications"] = sum(int(r[2] or 0) for r in rows)
            assert storms is not None
            out["started"], out["suppressed"] = int(storms[0]), int(storms[1])
            return out

        return self.inbox.do(job)
