"""State is kept for `state.retention_days`, then pruned; its size is a metric.

What accumulates: the checkpoints of every run and their evidence's payloads
(`checkpoints.sqlite` in the state directory, or the checkpointer's tables and
`triage_evidence` in the shared Postgres) and the Slack inbox's rows. Neither is the
system of record (the RCAReport in the cluster is), so a finished request and a run nobody
touched for the retention period are deleted; a request still queued or waiting for an
approval is kept whatever its age. Everything stored is redacted already; pruning bounds how
long even that is kept and how large the disk grows. Several replicas may prune the same
database at once: every delete is idempotent.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from langgraph.checkpoint.sqlite import SqliteSaver
from prometheus_client import Gauge

from triage.core.evidence_store import TABLE, delete_postgres, delete_sqlite
from triage.core.settings import StateSettings

STATE_BYTES = Gauge(
    "triage_state_bytes", "Bytes of the state (checkpoints and inbox; files or Postgres tables)."
)
CHECKPOINTS = "checkpoints.sqlite"
INBOX = "slack-inbox.sqlite"
_PG_TABLES = (
    "checkpoints",
    "checkpoint_blobs",
    "checkpoint_writes",
    "checkpoint_migrations",
    TABLE,
)


class Prunable(Protocol):
    """The inbox as retention sees it (triage/slack/inbox.py)."""

    def prune(self, cutoff: float) -> int: ...

    def size_bytes(self) -> int: ...


@dataclass(frozen=True)
class Pruned:
    threads: int
    requests: int
    bytes_after: int


def state_bytes(state_dir: Path) -> int:
    return sum(p.stat().st_size for p in state_dir.glob("*.sqlite*") if p.is_file())


def prune(
    state: StateSettings,
    *,
    inbox: Prunable | None = None,
    pool: Any = None,
    now: float | None = None,
) -> Pruned:
    """Delete runs and finished requests older than `state.retention_days`; set the size
    metric. `pool` is the shared database's (state.checkpointer postgres)."""
    cutoff = (time.time() if now is None else now) - state.retention_days * 86400
    requests = inbox.prune(cutoff) if inbox is not None else 0
    if state.checkpointer == "postgres" and pool is not None:
        threads = _prune_postgres(pool, cutoff)
        size = _postgres_bytes(pool) + (inbox.size_bytes() if inbox is not None else 0)
    else:
        state_dir = Path(state.dir)
        threads = _prune_checkpoints(state_dir / CHECKPOINTS, cutoff)
        if requests:
            _vacuum(state_dir / INBOX)
        size = state_bytes(state_dir) if state_dir.exists() else 0
    STATE_BYTES.set(size)
    return Pruned(threads, requests, size)


def _prune_checkpoints(path: Path, cutoff: float) -> int:
    if not path.exists():
        return 0
    conn = sqlite3.connect(path, check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        saver.setup()
        threads = [r[0] for r in conn.execute("SELECT DISTINCT thread_id FROM checkpoints")]
        old = []
        for thread in threads:
            latest = saver.get_tuple({"configurable": {"thread_id": thread}})
            if latest is None:
                continue
            stamp = datetime.fromisoformat(str(latest.checkpoint["ts"])).timestamp()
            if stamp < cutoff:
                old.append(thread)
        delete_sqlite(conn, old)  # first: a crash after it leaves the thread to find again
        for thread in old:
            saver.delete_thread(thread)
        if old:
            conn.execute("VACUUM")
        return len(old)
    finally:
        conn.close()


def _vacuum(path: Path) -> None:
    """Give the inbox file's freed pages back (another process may hold it: then later)."""
    conn = sqlite3.connect(path, timeout=5, isolation_level=None)
    try:
        conn.execute("VACUUM")
    except sqlite3.OperationalError:
        return  # busy: the next pruning vacuums
    finally:
        conn.close()


def _prune_postgres(pool: Any, cutoff: float) -> int:
    """Threads whose latest checkpoint is older than `cutoff`, deleted with the saver's own
    `delete_thread` (checkpoints, blobs and writes together)."""
    from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415

    stamp = datetime.fromtimestamp(cutoff, UTC).isoformat()
    with pool.connection() as conn:
        rows = conn.execute(
            "SELECT thread_id FROM checkpoints GROUP BY thread_id "
            "HAVING max(checkpoint->>'ts') < %s",
            (stamp,),
        ).fetchall()
    delete_postgres(pool, [row["thread_id"] for row in rows])  # first, as above
    saver = PostgresSaver(pool)
    for row in rows:
        saver.delete_thread(row["thread_id"])
    return len(rows)


def _postgres_bytes(pool: Any) -> int:
    with pool.connection() as conn:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS n FROM pg_class c "
            "WHERE c.relname = ANY(%s) AND c.relkind = 'r'",
            (list(_PG_TABLES),),
        ).fetchone()
    return int(row["n"]) if row else 0
