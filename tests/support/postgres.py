"""A real PostgreSQL server for the test suite (pytest plugin + helpers).

Why: replicas share their state through Postgres (the checkpointer and the Slack inbox), and
what matters there — `ON CONFLICT`, `FOR UPDATE SKIP LOCKED`, advisory locks, commits that
several processes see — is the server's behaviour, so the tests run Debian's own server
(`postgresql`, installed by tests/support/install_debs.sh) rather than anything of ours.

Like Prometheus (tests/support/observability.py): a fresh cluster (`initdb`) in a temporary
directory, `postgres` listening on a free 127.0.0.1 port only (no Unix socket outside that
directory), trust authentication on loopback, stopped at the end of the session. Postgres
refuses to run as root, so under root (CI) it runs as Debian's `postgres` user. Each test gets
a database of its own (`postgres_dsn`), so tests never see each other's rows.

Fixtures: `postgres` (session: the server), `postgres_dsn` (a fresh database per test).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

USER = "triage"
_READY_TIMEOUT_S = 30.0


class PostgresError(RuntimeError):
    """The test server could not be prepared or started (the message carries its log)."""


def binaries() -> Path:
    """The newest installed server's bin directory (/usr/lib/postgresql/<major>/bin)."""
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/postgres"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not found:
        raise PostgresError(
            "no PostgreSQL server installed: run `bash tests/support/install_debs.sh`"
        )
    return found[-1].parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One server on 127.0.0.1:`port` over its own data directory."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.data = workdir / "data"
        self.log = workdir / "postgres.log"
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._as: list[str] = []
        if os.geteuid() == 0:  # Postgres will not run as root
            self._as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(workdir, "postgres", "postgres")

    def _run(self, *cmd: str) -> None:
        done = subprocess.run([*self._as, *cmd], capture_output=True, timeout=120, check=False)
        if done.returncode != 0:
            raise PostgresError(f"{' '.join(cmd)}: {done.stderr.decode(errors='replace')}")

    def start(self) -> PostgresServer:
        bindir = binaries()
        self._run(
            str(bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--no-instructions",
        )
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    *self._as,
                    str(bindir / "postgres"),
                    "-D",
                    str(self.data),
                    "-p",
                    str(self.port),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"unix_socket_directories={self.workdir}",
                    "-c",
                    "max_connections=200",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        import psycopg  # noqa: PLC0415

        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise PostgresError(f"postgres exited:\n{self.log_text()}")
            try:
                with psycopg.connect(self.dsn("postgres"), connect_timeout=2):
                    return
            except psycopg.OperationalError:
                time.sleep(0.1)
        raise PostgresError(f"postgres did not become ready:\n{self.log_text()}")

    def dsn(self, database: str) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str | None = None) -> str:
        """A fresh, empty database; its DSN."""
        import psycopg  # noqa: PLC0415

        name = name or f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.dsn(name)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)  # "fast" shutdown
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""


def start_postgres(workdir: Path | None = None) -> PostgresServer:
    workdir = workdir or Path(tempfile.mkdtemp(prefix="triage-pg-"))
    workdir.mkdir(parents=True, exist_ok=True)
    server = PostgresServer(workdir).start()
    atexit.register(server.stop)
    return server


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    # under /tmp itself: pytest's own temporary directories are private to root, and the
    # server runs as the postgres user there
    server = start_postgres()
    yield server
    server.stop()
    shutil.rmtree(server.workdir, ignore_errors=True)


@pytest.fixture
def postgres_dsn(postgres: PostgresServer) -> str:
    return postgres.create_database()
