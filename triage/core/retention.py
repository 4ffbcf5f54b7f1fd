"""State is kept for `state.retention_days`, then pruned; its size is a metric.

What accumulates in the state directory: the checkpoints of every run (`checkpoints.sqlite`,
~100 KB per investigation) and the Slack inbox's rows (`slack-inbox.sqlite`). Neither is the
system of record (the RCAReport in the cluster is), so a finished request and a run nobody
touched for the retention period are deleted; a request still queued or waiting for an
approval is kept whatever its age. Everything stored is redacted already; pruning bounds how
long even that is kept and how large the disk grows.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from langgraph.checkpoint.sqlite import SqliteSaver
from prometheus_client import Gauge

STATE_BYTES = Gauge("triage_state_bytes", "Bytes of the state directory (checkpoints, inbox).")
CHECKPOINTS = "checkpoints.sqlite"
INBOX = "slack-inbox.sqlite"


@dataclass(frozen=True)
class Pruned:
    threads: int
    requests: int
    bytes_after: int


def state_bytes(state_dir: Path) -> int:
    return sum(p.stat().st_size for p in state_dir.glob("*.sqlite*") if p.is_file())


def prune(state_dir: Path, *, retention_days: float, now: float | None = None) -> Pruned:
    """Delete runs and finished requests older than `retention_days`; set the size metric."""
    cutoff = (time.time() if now is None else now) - retention_days * 86400
    threads = _prune_checkpoints(state_dir / CHECKPOINTS, cutoff)
    requests = _prune_inbox(state_dir / INBOX, cutoff)
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
        for thread in old:
            saver.delete_thread(thread)
        if old:
            conn.execute("VACUUM")
        return len(old)
    finally:
        conn.close()


def _prune_inbox(path: Path, cutoff: float) -> int:
    if not path.exists():
        return 0
    conn = sqlite3.connect(path, timeout=5, isolation_level=None)
    try:
        cur = conn.execute(
            "DELETE FROM slack_inbox WHERE state IN ('done', 'failed') AND updated_at < ?",
            (cutoff,),
        )
        if cur.rowcount:
            conn.execute("VACUUM")
        return int(cur.rowcount)
    except sqlite3.OperationalError as e:
        if "no such table" in str(e):
            return 0
        raise
    finally:
        conn.close()
