"""The inbox in PostgreSQL: replicas on different nodes share it (`state.checkpointer: postgres`).

The statements are the SQLite backend's (triage/slack/inbox.py), run in a transaction of a
pooled connection (triage/core/database.py: one pool per process, shared with the
checkpointer). Postgres runs them concurrently, so two things differ from SQLite's single
writer: a claim selects its row `FOR UPDATE SKIP LOCKED` (two replicas claiming at once take
different rows, neither waits for the other) and re-checks the lease in its UPDATE; and
`INSERT … ON CONFLICT DO NOTHING` makes a second delivery of an event wait for the first's
commit and then do nothing, so an event is stored once however many replicas receive it.
A commit is durable before the ack (Postgres' default `synchronous_commit`); concurrent commits
share the WAL flush (Postgres' own group commit).

Jobs run on a small thread pool of the inbox's own, as many threads as the pool has
connections for it, so the ack path never waits behind investigations for a thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from triage.core.database import setup_lock
from triage.slack.inbox import Cursor, Inbox, InboxError, Job, T

_SCHEMA = [
    """
    CREATE TABLE IF NOT EXISTS slack_inbox (
        id          TEXT PRIMARY KEY,
        kind        TEXT NOT NULL,
        body        TEXT NOT NULL,
        received_at DOUBLE PRECISION NOT NULL,
        deliveries  INTEGER NOT NULL DEFAULT 1,
        state       TEXT NOT NULL DEFAULT 'queued',
        holder      TEXT,
        lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
        attempts    INTEGER NOT NULL DEFAULT 0,
        steps       TEXT NOT NULL DEFAULT '{}',
        updated_at  DOUBLE PRECISION NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS slack_inbox_due ON slack_inbox (state, lease_until)",
    # the Alertmanager receiver's (triage/slack/alert_groups.py); timestamps are unix seconds
    # as DOUBLE PRECISION (Postgres' REAL is 4 bytes: a second's resolution is lost)
    """
    CREATE TABLE IF NOT EXISTS alert_groups (
        group_id      TEXT PRIMARY KEY,
        group_key     TEXT NOT NULL,
        episode       INTEGER NOT NULL,
        state         TEXT NOT NULL,
        channel       TEXT NOT NULL,
        opened_at     DOUBLE PRECISION NOT NULL,
        resolved_at   DOUBLE PRECISION,
        notifications INTEGER NOT NULL DEFAULT 1,
        updated_at    DOUBLE PRECISION NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS alert_storms (
        channel      TEXT NOT NULL,
        window_start DOUBLE PRECISION NOT NULL,
        started      INTEGER NOT NULL DEFAULT 0,
        suppressed   INTEGER NOT NULL DEFAULT 0,
        PRIMARY KEY (channel, window_start)
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS alert_storm_names (
        channel      TEXT NOT NULL,
        window_start DOUBLE PRECISION NOT NULL,
        name         TEXT NOT NULL,
        times        INTEGER NOT NULL,
        PRIMARY KEY (channel, window_start, name)
    )
    """,
]


class _Db:
    def __init__(self, conn: Any) -> None:
        from psycopg.rows import tuple_row  # noqa: PLC0415

        self.conn = conn
        self.rows = tuple_row

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        cur = self.conn.cursor(row_factory=self.rows)
        cur.execute(sql.replace("?", "%s"), tuple(args))
        result: Cursor = cur
        return result


class PostgresInbox(Inbox):
    """The inbox as the `slack_inbox` table of the shared database."""

    backend = "postgres"
    claim_lock = " FOR UPDATE SKIP LOCKED"

    def __init__(self, pool: Any, clean: Any = None, *, threads: int = 4) -> None:
        import psycopg  # noqa: PLC0415 (only with Postgres configured)

        super().__init__(clean)
        self.pool = pool
        self._errors: tuple[type[BaseException], ...] = (psycopg.Error, _pool_timeout())
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="inbox-pg")
        try:
            with setup_lock(pool) as conn:
                for statement in _SCHEMA:
                    conn.execute(statement)
        except self._errors as e:
            raise InboxError(f"inbox (postgres): cannot create its table: {e}") from e

    def _run(self, job: Job[T]) -> T:
        try:
            with self.pool.connection() as conn, conn.transaction():
                return job(_Db(conn))
        except self._errors as e:
            raise InboxError(f"inbox (postgres): {type(e).__name__}: {e}") from e

    def submit(self, job: Job[T]) -> Future[T]:
        return self._threads.submit(self._run, job)

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        super().close()  # the pool belongs to whoever opened it (the composition root)

    def size_bytes(self) -> int:
        def job(db: Any) -> int:
            row = db.execute("SELECT pg_total_relation_size('slack_inbox')").fetchone()
            return int(row[0]) if row else 0

        return self._do(job)


def _pool_timeout() -> type[BaseException]:
    from psycopg_pool import PoolTimeout  # noqa: PLC0415

    return PoolTimeout
