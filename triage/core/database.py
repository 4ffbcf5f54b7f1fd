"""The shared database of several replicas: one psycopg 3 connection pool per process.

Why one pool: the LangGraph checkpointer (langgraph-checkpoint-postgres) and the Slack inbox
(triage/slack/inbox_pg.py) live in the same PostgreSQL database when replicas share state
(`state.checkpointer: postgres`), and a replica should open a bounded number of connections
whatever it does, not one per run. The pool hands out autocommit connections with dict rows
and no server-side prepared statements (what the checkpointer requires; the inbox opens its own
transactions and reads tuples), each with a statement timeout, so a slow database fails a
call within `postgres_timeout_s` instead of holding an ack or a worker.

Schema changes from several replicas starting at once are serialised by a Postgres advisory
lock (`setup_lock`): `CREATE TABLE IF NOT EXISTS` alone is not safe under concurrency.

SQLite stays the embedded default; nothing here is imported unless Postgres is configured.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from triage.core.errors import ConfigError, StateUnavailable
from triage.core.settings import StateSettings

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

SETUP_LOCK = 0x7472_6961_6765  # "triage": the advisory lock that serialises schema setup


def open_pool(settings: StateSettings) -> ConnectionPool[Any]:
    """A pool over `settings.postgres_dsn`, opened and checked (ConfigError when it cannot)."""
    import psycopg  # noqa: PLC0415 (only with Postgres configured)
    from psycopg.rows import dict_row  # noqa: PLC0415
    from psycopg_pool import ConnectionPool, PoolTimeout  # noqa: PLC0415

    if settings.postgres_dsn is None:
        raise ConfigError("no Postgres DSN: set TRIAGE_STATE__POSTGRES_DSN")
    timeout_ms = round(settings.postgres_timeout_s * 1000)
    pool: ConnectionPool[Any] = ConnectionPool(
        settings.postgres_dsn.get_secret_value(),
        min_size=1,
        max_size=settings.postgres_pool_size,
        timeout=settings.postgres_timeout_s,
        open=False,
        kwargs={
            "autocommit": True,
            "prepare_threshold": None,
            "row_factory": dict_row,
            "connect_timeout": max(1, round(settings.postgres_timeout_s)),
            "options": f"-c statement_timeout={timeout_ms} -c lock_timeout={timeout_ms}",
            "application_name": "triage",
        },
        name="triage",
    )
    try:
        pool.open(wait=True, timeout=settings.postgres_timeout_s)
    except (PoolTimeout, psycopg.Error) as e:
        pool.close()
        raise ConfigError(
            f"cannot connect to the Postgres database in TRIAGE_STATE__POSTGRES_DSN ({e}); "
            "check the host, the credentials and that the database exists"
        ) from e
    return pool


@contextmanager
def setup_lock(pool: ConnectionPool[Any]) -> Iterator[Connection[Any]]:
    """A connection holding the schema advisory lock for the duration of the block."""
    with pool.connection() as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (SETUP_LOCK,))
        try:
            yield conn
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))


def ping(pool: ConnectionPool[Any]) -> None:
    """One round trip (readiness); StateUnavailable when the database does not answer."""
    import psycopg  # noqa: PLC0415
    from psycopg_pool import PoolTimeout  # noqa: PLC0415

    try:
        with pool.connection() as conn:
            conn.execute("SELECT 1")
    except (PoolTimeout, psycopg.Error) as e:
        raise StateUnavailable(f"the shared database does not answer: {e}") from e
