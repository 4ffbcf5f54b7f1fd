"""The evidence's payloads, kept beside the checkpoints rather than inside them.

Why: a run's evidence list only grows, and the checkpointer writes a channel's whole value
every time it changes, so with the payloads in the state every step rewrote every pod list
read so far (6.5 MB per run at 1,000 pods, for a few hundred KiB of new reads). Now the state
holds each outcome's record (tool, arguments, status, excerpt, digest) and this store holds
its `data`, written once, by the step that read it, keyed by (thread, evidence id).

Crash safety is the checkpointer's order of events: the `tools` step writes its payloads here
and commits before it returns, and its checkpoint (which names the ids) is written after it,
so a checkpoint never names a payload that is not stored. A step that is re-run after a crash
writes the same ids again (an upsert), and only the checkpoint written after it refers to them.

Where it lives follows `state.checkpointer`: a table in the same SQLite file as the checkpoints
(on the saver's own connection, under its lock), a table in the shared Postgres (every replica
can resume any run), or memory. Retention deletes a thread's payloads with its checkpoints.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable
from typing import Any, Protocol

TABLE = "triage_evidence"  # the name in every statement below
_SQLITE_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS triage_evidence (thread_id TEXT NOT NULL, id TEXT NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (thread_id, id))"
)
POSTGRES_SCHEMA = _SQLITE_SCHEMA  # JSON text in both: see `dumps`


def _plain(value: Any) -> Any:
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)


def dumps(payload: Any) -> str:
    """A payload as JSON text, whatever it holds: NaN and ±Inf (a Prometheus 0/0) as JSON's
    extension literals, a NUL or a lone surrogate in a log line escaped (ASCII out), a set as
    a list, anything else as its text. Postgres' JSONB refuses the first three, so both
    stores keep text, and `json.loads` gives back what was put."""
    return json.dumps(payload, default=_plain)


class EvidenceStore(Protocol):
    def put(self, thread: str, payloads: dict[str, Any]) -> None:
        """Store each evidence id's payload (JSON-plain), replacing what the id had."""
        ...

    def get(self, thread: str, ids: Iterable[str]) -> dict[str, Any]:
        """The payloads stored for these ids (an id never stored is absent)."""
        ...


class MemoryEvidence:
    """For the memory checkpointer: lives as long as the process."""

    def __init__(self) -> None:
        self._rows: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def put(self, thread: str, payloads: dict[str, Any]) -> None:
        with self._lock:
            self._rows.update(((thread, i), dumps(v)) for i, v in payloads.items())

    def get(self, thread: str, ids: Iterable[str]) -> dict[str, Any]:
        with self._lock:
            found = {i: self._rows.get((thread, i)) for i in ids}
        return {i: json.loads(v) for i, v in found.items() if v is not None}


class SqliteEvidence:
    """A table in the checkpoints' SQLite file, on the saver's connection and lock."""

    def __init__(self, conn: sqlite3.Connection, lock: Any) -> None:
        self._conn = conn
        self._lock = lock
        with self._lock, self._conn:
            self._conn.execute(_SQLITE_SCHEMA)

    def put(self, thread: str, payloads: dict[str, Any]) -> None:
        rows = [(thread, i, dumps(v)) for i, v in payloads.items()]
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT INTO triage_evidence (thread_id, id, data) VALUES (?, ?, ?) "
                "ON CONFLICT (thread_id, id) DO UPDATE SET data = excluded.data",
                rows,
            )

    def get(self, thread: str, ids: Iterable[str]) -> dict[str, Any]:
        wanted = list(ids)
        if not wanted:
            return {}
        marks = ",".join("?" * len(wanted))
        with self._lock:
            rows = self._conn.execute(
                f"SELECT id, data FROM triage_evidence WHERE thread_id = ? AND id IN ({marks})",  # noqa: S608 (placeholders only)
                (thread, *wanted),
            ).fetchall()
        return {str(i): json.loads(d) for i, d in rows}


def delete_sqlite(conn: sqlite3.Connection, threads: Iterable[str]) -> None:
    """Retention: the payloads of these threads (the table may not exist yet)."""
    conn.execute(_SQLITE_SCHEMA)
    conn.executemany("DELETE FROM triage_evidence WHERE thread_id = ?", [(t,) for t in threads])
    conn.commit()


class PostgresEvidence:
    """A table in the shared Postgres (created with the checkpointer's tables)."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    def put(self, thread: str, payloads: dict[str, Any]) -> None:
        rows = [(thread, i, dumps(v)) for i, v in payloads.items()]
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO triage_evidence (thread_id, id, data) VALUES (%s, %s, %s) "
                "ON CONFLICT (thread_id, id) DO UPDATE SET data = excluded.data",
                rows,
            )

    def get(self, thread: str, ids: Iterable[str]) -> dict[str, Any]:
        wanted = list(ids)
        if not wanted:
            return {}
        with self._pool.connection() as conn:
            rows = conn.execute(
                "SELECT id, data FROM triage_evidence WHERE thread_id = %s AND id = ANY(%s)",
                (thread, wanted),
            ).fetchall()
        return {str(r["id"]): json.loads(r["data"]) for r in rows}


def delete_postgres(pool: Any, threads: Iterable[str]) -> None:
    with pool.connection() as conn:
        conn.execute("DELETE FROM triage_evidence WHERE thread_id = ANY(%s)", (list(threads),))
