"""`triage serve` runs the review page on a listener of its own, never on the Slack port; it
refuses to serve the page without authentication anywhere but on loopback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from tests.slack.support import SECRET, free_port
from tests.support.fake_slack import FakeSlack

TRIAGE = str(Path(sys.executable).with_name("triage"))


def _env(slack_api: FakeSlack, state: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(state),
        "TRIAGE_STATE__DIR": str(state),
        "TRIAGE_SLACK__BOT_TOKEN": slack_api.token,
        "TRIAGE_SLACK__SIGNING_SECRET": SECRET,
        "TRIAGE_SLACK__API_BASE_URL": slack_api.base_url,
        "TRIAGE_SLACK__HOST": "127.0.0.1",
        **extra,
    }


@contextmanager
def _serving(env: dict[str, str], port: int) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [TRIAGE, "serve", "--demo", "crashloop-bad-env", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            proc.kill()
            raise AssertionError(proc.communicate()[0])
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        if proc.stdout is not None and not proc.stdout.closed:
            proc.communicate(timeout=20)


def test_the_page_has_its_own_port(slack_api: FakeSlack, tmp_path: Path) -> None:
    slack_port, review_port = free_port(), free_port()
    env = _env(
        slack_api,
        tmp_path,
        TRIAGE_REVIEW__AUTH="none",
        TRIAGE_REVIEW__HOST="127.0.0.1",
        TRIAGE_REVIEW__PORT=str(review_port),
    )
    with _serving(env, slack_port) as proc:
        page = httpx.get(f"http://127.0.0.1:{review_port}/reports", timeout=5)
        assert page.status_code == 200
        assert "RCA reports" in page.text
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        assert httpx.get(f"http://127.0.0.1:{slack_port}/reports", timeout=5).status_code == 404
        assert httpx.get(f"http://127.0.0.1:{review_port}/slack/events", timeout=5).status_code in (
            404,
            405,
        )
        metrics = httpx.get(f"http://127.0.0.1:{slack_port}/metrics", timeout=5).text
        assert 'triage_reviews_total{outcome="verified",review="disputed"}' in metrics
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=20)[0]
    # One signal stops both listeners, each shutting down cleanly (uvicorn then re-raises the
    # signal, as it does for a single server: the exit says SIGTERM).
    assert proc.returncode in (0, -signal.SIGTERM)
    assert out.count("Application shutdown complete.") == 2, out


def test_no_login_is_refused_off_loopback(slack_api: FakeSlack, tmp_path: Path) -> None:
    env = _env(slack_api, tmp_path, TRIAGE_REVIEW__AUTH="none", TRIAGE_REVIEW__HOST="0.0.0.0")
    proc = subprocess.run(
        [TRIAGE, "serve", "--demo", "crashloop-bad-env", "--port", str(free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert "TRIAGE_REVIEW__HOST=127.0.0.1" in proc.stderr


def test_without_a_cluster_to_ask_the_page_stays_off(slack_api: FakeSlack, tmp_path: Path) -> None:
    slack_port, review_port = free_port(), free_port()
    env = _env(slack_api, tmp_path, TRIAGE_REVIEW__PORT=str(review_port))
    with _serving(env, slack_port) as proc:
        try:
            httpx.get(f"http://127.0.0.1:{review_port}/reports", timeout=2)
            raise AssertionError("the page answered without a way to check users")
        except httpx.ConnectError:
            pass
        proc.send_signal(signal.SIGTERM)
        out = proc.communicate(timeout=20)[0]
    assert "review page off" in out
