"""The two state backends as the conformance suites get them: the same settings `triage serve`
reads (`state.checkpointer`), over a temporary directory or a fresh database of the real
PostgreSQL server (tests/support/postgres.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from triage.core.database import open_pool
from triage.core.settings import StateSettings
from triage.slack.inbox import Inbox
from triage.slack.inbox_pg import PostgresInbox
from triage.slack.inbox_sqlite import SqliteInbox

BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def state_settings(request: pytest.FixtureRequest, backend: str, state_dir: Path) -> StateSettings:
    """StateSettings for `backend`; postgres gets a database of its own for this test."""
    if backend == "postgres":
        dsn = request.getfixturevalue("postgres_dsn")
        return StateSettings(dir=state_dir, checkpointer="postgres", postgres_dsn=dsn)
    return StateSettings(dir=state_dir, checkpointer="sqlite")


class Inboxes:
    """Opens inboxes over one shared store, as several replicas (or restarts) would."""

    def __init__(self, state: StateSettings) -> None:
        self.state = state
        self.pools: list[Any] = []
        self.opened: list[Inbox] = []

    def open(self) -> Inbox:
        if self.state.checkpointer == "postgres":
            pool = open_pool(self.state)  # a pool per "replica", as separate processes have
            self.pools.append(pool)
            inbox: Inbox = PostgresInbox(pool)
        else:
            inbox = SqliteInbox(Path(self.state.dir) / "slack-inbox.sqlite")
        self.opened.append(inbox)
        return inbox

    def close(self) -> None:
        for inbox in self.opened:
            inbox.close()
        for pool in self.pools:
            pool.close()
