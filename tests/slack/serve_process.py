"""The real `triage serve --demo …` as a subprocess: what the fuzz, the kill -9 matrix and the
secret suite run against (a process of its own, so SIGKILL, RSS and its log are real)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.slack.support import SECRET, free_port
from tests.support.fake_slack import FakeSlack

TRIAGE = str(Path(sys.executable).with_name("triage"))


class Serve:
    """One `triage serve` process over a state directory; `start` again after a kill."""

    def __init__(
        self,
        slack_api: FakeSlack,
        state: Path,
        *,
        env: dict[str, str] | None = None,
        bundle: str = "crashloop-bad-env",
        command: list[str] | None = None,
    ) -> None:
        self.slack_api = slack_api
        self.state = state
        self.port = free_port()
        self.log = state / "serve.log"
        self.bundle = bundle
        self.command = command
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(state),
            "TRIAGE_STATE__DIR": str(state),
            "TRIAGE_SLACK__BOT_TOKEN": slack_api.token,
            "TRIAGE_SLACK__SIGNING_SECRET": SECRET,
            "TRIAGE_SLACK__API_BASE_URL": slack_api.base_url,
            "TRIAGE_SLACK__API_TIMEOUT_S": "10",
            "TRIAGE_SLACK__LEASE_S": "2",
            "TRIAGE_SLACK__PROGRESS_INTERVAL_S": "0.1",
        } | (env or {})
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, extra_env: dict[str, str] | None = None) -> Serve:
        cmd = self.command or [TRIAGE, "serve", "--demo", self.bundle]
        cmd = [*cmd, "--host", "127.0.0.1", "--port", str(self.port)]
        with self.log.open("ab") as out:
            # a session of its own: a kill reaches its worker process too (crash_serve.py)
            self.proc = subprocess.Popen(
                cmd,
                env=self.env | (extra_env or {}),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None:
                raise AssertionError(f"triage serve exited:\n{self.log_text()}")
            time.sleep(0.1)
        self.proc.kill()
        raise AssertionError(f"triage serve did not start:\n{self.log_text()}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self) -> None:
        """SIGKILL the server and its worker process (its session), as a container dies."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)

    def wait_exit(self, timeout: float) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout)

    def rss_mb(self) -> float:
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
