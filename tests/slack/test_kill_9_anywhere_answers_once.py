"""The kill -9 matrix: `triage serve` SIGKILLed at every graph step (before each checkpoint
write of a run) and at every inbox transition (before the request is stored, and right after
each committed transition), then started again. Every mention is answered exactly once, with
the outcome it has without a crash (`verified` for this incident); none is left unanswered,
none answered without its RCA. A mention whose every try is killed ends after the attempt
limit with a plain message.

The points are counted from a run without a crash (tests/slack/crash_serve.py records them),
so a new step or transition joins the matrix by itself. Approval pauses (`Inbox.wait`) are
covered by tests/slack/test_approval_buttons_apply_a_change_once.py on the real cluster.
"""

from __future__ import annotations

import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from tests.slack.serve_process import Serve, wait_for
from tests.slack.support import mention, sign, user_message
from tests.support.fake_slack import FakeSlack
from triage.slack import messages as m
from triage.slack.inbox_sqlite import SqliteInbox as Inbox

WRITE_RCA = (
    "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, "
    "find out why and write the RCA"
)
CRASHING = [sys.executable, "-m", "tests.slack.crash_serve", "serve", "--demo", "crashloop-bad-env"]
ROOT = str(Path(__file__).resolve().parents[2])
PARALLEL = 3


def _serve(slack_api: FakeSlack, state: Path, **env: str) -> Serve:
    return Serve(slack_api, state, command=CRASHING, env={"PYTHONPATH": ROOT, **env})


def _deliver(serve: Serve, body: bytes, retry: int = 0) -> bool:
    headers = sign(body)
    if retry:
        headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
    try:
        return (
            httpx.post(
                f"{serve.url}/slack/events", content=body, headers=headers, timeout=10
            ).status_code
            == 200
        )
    except httpx.TransportError:
        return False  # killed before the ack: Slack retries


def _row(state: Path, event_id: str) -> dict[str, Any] | None:
    inbox = Inbox(state / "slack-inbox.sqlite")
    try:
        return inbox.get(event_id)
    finally:
        inbox.close()


def _markers(slack_api: FakeSlack, event_id: str) -> Counter[str]:
    out: Counter[str] = Counter()
    for call in slack_api.calls_to("chat.postMessage"):
        marker = ((call.params.get("metadata") or {}).get("event_payload") or {}).get("marker")
        if marker and marker.startswith(f"{event_id}:"):
            out[marker.split(":", 1)[1]] += 1
    return out


def _points(slack_api: FakeSlack, tmp: Path) -> list[str]:
    """Every crash point of one mention's run, from a run without a crash."""
    state = tmp / "count"
    state.mkdir()
    serve = _serve(slack_api, state, TRIAGE_TEST_COUNT=str(state / "points")).start()
    try:
        ts = user_message(slack_api, WRITE_RCA)
        assert _deliver(serve, mention("Ev0COUNT", WRITE_RCA, ts=ts))
        wait_for(lambda: (_row(state, "Ev0COUNT") or {}).get("state") == "done", 60, "a run")
    finally:
        serve.stop()
    seen: Counter[str] = Counter()
    points = ["before:accept:1"]
    for line in (state / "points").read_text().split():
        seen[line] += 1
        points.append(f"{line}:{seen[line]}")
    return points


def _trial(slack_api: FakeSlack, tmp: Path, index: int, point: str, ts: str) -> str | None:
    """Kill at `point`, start again; None when the mention was answered once, as it should."""
    state = tmp / f"t{index}"
    state.mkdir()
    event_id = f"Ev{index:03d}KILL"
    body = mention(event_id, WRITE_RCA, ts=ts)
    first = _serve(slack_api, state, TRIAGE_TEST_CRASH=point.replace("checkpoint:", "checkpoint:"))
    first.start()
    acked = _deliver(first, body)
    try:
        first.wait_exit(30)
    except Exception:  # the point was never reached: the run finished; stop it plainly
        first.stop()
    second = _serve(slack_api, state).start()
    try:
        if not acked:
            assert _deliver(second, body, retry=1)
        wait_for(
            lambda: (_row(state, event_id) or {}).get("state") in ("done", "failed"),
            60,
            f"{point}: an answer",
        )
    finally:
        second.stop()
    row = _row(state, event_id) or {}
    markers = _markers(slack_api, event_id)
    problems = []
    if row.get("state") != "done":
        problems.append(f"state {row.get('state')}")
    if row.get("steps", {}).get("ticket_final") != "verified":
        problems.append(f"outcome {row.get('steps', {}).get('ticket_final')}")
    for name in ("ticket", "progress", "answer0"):
        if markers[name] != 1:
            problems.append(f"{name} posted {markers[name]} times")
    if markers["gave_up"]:
        problems.append("gave up")
    return f"{point}: {', '.join(problems)}" if problems else None


def test_a_kill_at_any_step_or_transition_still_answers_once(slack_api, tmp_path) -> None:
    points = _points(slack_api, tmp_path)
    assert sum(p.startswith("checkpoint") for p in points) >= 8
    assert sum(p.startswith("inbox") for p in points) >= 8
    stamps = [user_message(slack_api, WRITE_RCA) for _ in points]
    slack_api.calls.clear()
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(
            pool.map(
                lambda a: _trial(slack_api, tmp_path, *a),
                [(i, p, stamps[i]) for i, p in enumerate(points)],
            )
        )
    print(f"{len(points)} kill points:", ", ".join(points))
    assert [r for r in results if r] == []


def test_a_mention_killed_at_every_try_ends_with_a_message(slack_api, tmp_path) -> None:
    """A poison request: every process that picks it up dies (here at its first checkpoint,
    as a liveness probe would kill a wedged one). After max_attempts (3) it is not run again:
    the user is told, and the request is closed as failed."""
    ts = user_message(slack_api, WRITE_RCA)
    body = mention("Ev0POISON", WRITE_RCA, ts=ts)
    serve = _serve(slack_api, tmp_path, TRIAGE_TEST_CRASH="checkpoint:1")
    starts = 0
    acked = False
    while (_row(tmp_path, "Ev0POISON") or {}).get("state") not in ("failed", "done"):
        assert starts < 6, (
            f"still not given up after {starts} starts: {_row(tmp_path, 'Ev0POISON')}"
        )
        starts += 1
        try:
            serve.start()
        except AssertionError:  # it picked the request up and died before /healthz answered
            continue
        acked = acked or _deliver(serve, body, retry=int(starts > 1))
        try:
            serve.wait_exit(15)
        except Exception:
            serve.stop()
    row = _row(tmp_path, "Ev0POISON")
    assert row is not None
    assert row["state"] == "failed"
    assert row["attempts"] == 4  # three tries, then the pick-up that says so
    said = [c.params.get("text", "") for c in slack_api.calls_to("chat.postMessage")]
    assert sum(m.CRASHED in text for text in said) == 1
    assert _markers(slack_api, "Ev0POISON")["gave_up"] == 1
