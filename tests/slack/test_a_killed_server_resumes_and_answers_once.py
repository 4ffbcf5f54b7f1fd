"""`triage serve` killed after the ack, mid-answer: the next process picks the request up from
the inbox, resumes the run and answers exactly once (real subprocesses, SIGKILL)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.slack.support import CHANNEL, SECRET, free_port, mention, sign, user_message
from tests.support.fake_slack import FakeSlack
from triage.slack.inbox_sqlite import SqliteInbox as Inbox

WRITE_RCA = (
    "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, "
    "find out why and write the RCA"
)


def _start(slack_api: FakeSlack, state: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(state),
        "TRIAGE_STATE__DIR": str(state),
        "TRIAGE_SLACK__BOT_TOKEN": slack_api.token,
        "TRIAGE_SLACK__SIGNING_SECRET": SECRET,
        "TRIAGE_SLACK__API_BASE_URL": slack_api.base_url,
        "TRIAGE_SLACK__API_TIMEOUT_S": "120",
        "TRIAGE_SLACK__LEASE_S": "2",
        "TRIAGE_SLACK__PROGRESS_INTERVAL_S": "0.1",
    }
    cmd = [str(Path(sys.executable).with_name("triage")), "serve", "--demo", "crashloop-bad-env"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    with log.open("ab") as out:
        # its own session: the kill below takes its worker process too, as a container's does
        proc = subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return proc
        except httpx.TransportError:
            pass
        assert proc.poll() is None, log.read_text()
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"triage serve did not start:\n{log.read_text()}")


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_killed_after_the_ack_the_next_process_answers_once(slack_api, tmp_path):
    port, log = free_port(), tmp_path / "serve.log"
    ts = user_message(slack_api, WRITE_RCA)
    # The first edit hangs (and is then dropped unanswered): the process is mid-answer.
    slack_api.inject("chat.update", delay=60, reset=True)
    first = _start(slack_api, tmp_path, port, log)
    try:
        body = mention("Ev0CRASH", WRITE_RCA, ts=ts)
        ack = httpx.post(
            f"http://127.0.0.1:{port}/slack/events", content=body, headers=sign(body), timeout=5
        )
        assert ack.status_code == 200
        _wait(lambda: slack_api.calls["chat.update"] >= 1, 60, "the first process to edit")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(10)
    posts_before = slack_api.calls["chat.postMessage"]
    assert posts_before >= 2  # the progress message and the ticket were already out

    second = _start(slack_api, tmp_path, port, log)
    try:
        inbox = Inbox(tmp_path / "slack-inbox.sqlite")
        _wait(
            lambda: (inbox.get("Ev0CRASH") or {}).get("state") == "done",
            60,
            f"the second process to answer:\n{log.read_text()}",
        )
        row = inbox.get("Ev0CRASH")
        inbox.close()
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(20)

    assert row is not None
    assert row["attempts"] == 2
    steps = row["steps"]
    markers = [
        ((c.params.get("metadata") or {}).get("event_payload") or {}).get("marker")
        for c in slack_api.calls_to("chat.postMessage")
    ]
    assert markers.count("Ev0CRASH:ticket") == 1
    assert markers.count("Ev0CRASH:progress") == 1
    assert markers.count("Ev0CRASH:answer0") == 1
    assert slack_api.calls["reactions.add"] == 1
    ticket = slack_api.message(CHANNEL, steps["ticket_ts"])
    assert ticket is not None
    assert "verified" in ticket["text"]
    assert steps["ticket_final"] == "verified"
