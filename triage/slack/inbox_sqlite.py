"""The inbox in one SQLite file (the embedded default), written by one thread with group commit.

Why one writer: SQLite takes one writer at a time anyway. Before, every statement took a
process-wide lock and paid its own `COMMIT` with `synchronous=FULL` (an fsync each), so fifty
mentions arriving at once queued behind fifty fsyncs. Now one thread owns the connection and
drains whatever has been asked of it since its last commit into one transaction: each job in a
savepoint of its own (one job's failure rolls back that job only), then one `COMMIT`. Fifty
concurrent acks cost a handful of fsyncs, and an ack still returns only after its row is on
disk (with `synchronous=FULL`, the default).

How durable is an ack (`state.sqlite_synchronous`):
- full: the commit is fsynced (WAL and its header) before the ack. Nothing acked is lost, even
  to a power cut of the node.
- normal: in WAL mode the commit is written to the OS before the ack but fsynced only at the
  next WAL checkpoint. A crash of the process (kill -9, OOM) loses nothing — the kernel holds
  the write; a crash of the node's kernel or power can lose the last acks before the
  checkpoint, and Slack does not resend an event it got a 200 for. Choose it only where the
  node's storage is battery-backed or the loss of a mention in a power cut is acceptable; with
  replicas, run Postgres (whose commit is durable) instead.

Several processes on one node may share the file (a busy timeout; `BEGIN IMMEDIATE` takes the
write lock up front, so a transaction never fails half-way on a lock it could not upgrade).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Literal

from triage.slack.inbox import Cursor, Inbox, InboxError, Job, T

BUSY_TIMEOUT_MS = 5000
MAX_BATCH = 256  # jobs in one transaction at most (a burst is split, never starved)

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
    PRIMARY KEY (channel, window_start)
);
CREATE TABLE IF NOT EXISTS alert_storm_names (
    channel      TEXT NOT NULL,
    window_start REAL NOT NULL,
    name         TEXT NOT NULL,
    times        INTEGER NOT NULL,
    PRIMARY KEY (channel, window_start, name)
);
"""


class _Db:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        return self.conn.execute(sql, tuple(args))


class SqliteInbox(Inbox):
    """The inbox in `path` (WAL), every statement on its one writer thread."""

    backend = "sqlite"

    def __init__(
        self,
        path: Path | str,
        clean: Any = None,
        *,
        synchronous: Literal["full", "normal"] = "full",
    ) -> None:
        super().__init__(clean)
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._jobs: queue.SimpleQueue[tuple[Job[Any], Future[Any]] | None] = queue.SimpleQueue()
        self._ready: Future[None] = Future()
        self._synchronous = synchronous.upper()
        self._thread = threading.Thread(target=self._writer, name="inbox-writer", daemon=True)
        self._thread.start()
        self._ready.result(timeout=BUSY_TIMEOUT_MS / 1000 * 2)

    def _open(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute(f"PRAGMA synchronous = {self._synchronous}")
        for statement in _SCHEMA.strip().split(";"):
            if statement.strip():
                db.execute(statement)
        return db

    def _writer(self) -> None:
        try:
            db = self._open()
        except sqlite3.Error as e:
            self._ready.set_exception(InboxError(f"inbox {self.path}: {e}"))
            return
        self._ready.set_result(None)
        try:
            while True:
                first = self._jobs.get()
                if first is None:
                    return
                batch = [first]
                while len(batch) < MAX_BATCH:
                    try:
                        more = self._jobs.get_nowait()
                    except queue.Empty:
                        break
                    if more is None:
                        self._jobs.put(None)  # stop after this batch
                        break
                    batch.append(more)
                self._commit(db, batch)
        finally:
            db.close()

    def _commit(self, db: sqlite3.Connection, batch: list[tuple[Job[Any], Future[Any]]]) -> None:
        """One transaction for the batch, a savepoint per job; results after the COMMIT."""
        done: list[tuple[Future[Any], Any, BaseException | None]] = []
        handle = _Db(db)
        try:
            db.execute("BEGIN IMMEDIATE")
            for job, future in batch:
                if not future.set_running_or_notify_cancel():
                    continue
                db.execute("SAVEPOINT job")
                try:
                    result = job(handle)
                except sqlite3.Error as e:
                    db.execute("ROLLBACK TO job")
                    done.append((future, None, InboxError(f"inbox {self.path}: {e}")))
                except Exception as e:  # noqa: BLE001 (a job's own bug fails that job only: handed to its caller, who re-raises it)
                    db.execute("ROLLBACK TO job")
                    done.append((future, None, e))
                else:
                    done.append((future, result, None))
                db.execute("RELEASE job")
            db.execute("COMMIT")
        except sqlite3.Error as e:
            if db.in_transaction:
                db.execute("ROLLBACK")
            failure = InboxError(f"inbox {self.path}: {e}")
            for _, future in batch:
                if future.running():
                    future.set_exception(failure)
            return
        for future, result, error in done:
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(result)

    def submit(self, job: Job[T]) -> Future[T]:
        future: Future[T] = Future()
        if not self._thread.is_alive():
            future.set_exception(InboxError(f"inbox {self.path} is closed"))
            return future
        self._jobs.put((job, future))
        return future

    def close(self) -> None:
        if self._thread.is_alive():
            self._jobs.put(None)
            self._thread.join(timeout=10)
        super().close()

    def size_bytes(self) -> int:
        if self.path == ":memory:":
            return 0
        return sum(
            p.stat().st_size for p in Path(self.path).parent.glob(Path(self.path).name + "*")
        )
