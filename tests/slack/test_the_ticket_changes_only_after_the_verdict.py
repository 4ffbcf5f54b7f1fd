"""The ticket shows an outcome only once the judge has decided; a 429 on its edit is waited
out (Retry-After) and the final state still lands; nothing secret reaches Slack."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from tests.slack.support import (
    CHANNEL,
    BotServer,
    demo_app,
    mention,
    settings_for,
    user_message,
)
from tests.support.fake_slack import FakeSlack

WRITE_RCA = (
    "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, "
    "find out why and write the RCA"
)


class RecordingTools:
    """The read tools, noting how many Slack calls had been made when the judge read the
    deliverable back (only the judge reads `k8s.rcareport`): its verdict comes after that."""

    def __init__(self, inner: Any, slack_api: FakeSlack) -> None:
        self.inner = inner
        self.slack_api = slack_api
        self.verdicts_at: list[int] = []

    def call(self, name: str, args: dict[str, Any]) -> Any:
        result = self.inner.call(name, args)
        if name == "k8s.rcareport":
            self.verdicts_at.append(len(self.slack_api.log))
        return result


def _serve(slack_api: FakeSlack, tmp_path, **slack: Any):
    settings = settings_for(slack_api, tmp_path, **slack)
    product = demo_app(settings)
    recorder = RecordingTools(product.tools, slack_api)
    product.tools = recorder
    return BotServer(settings, product), recorder, product


def test_the_ticket_is_edited_only_after_the_verdict(slack_api, tmp_path):
    server, recorder, backend = _serve(slack_api, tmp_path)
    with server:
        ts = user_message(slack_api, WRITE_RCA)
        server.deliver(mention("Ev0ORDER", WRITE_RCA, ts=ts))
        row = server.wait_done("Ev0ORDER")

    ticket = row["steps"]["ticket_ts"]
    edits = [
        i
        for i, c in enumerate(slack_api.log)
        if c.method == "chat.update" and c.params.get("ts") == ticket
    ]
    assert recorder.verdicts_at, "the judge ran"
    assert edits, "the ticket was edited"
    assert min(edits) >= recorder.verdicts_at[-1]
    final = slack_api.message(CHANNEL, ticket)
    assert final is not None
    text = json.dumps(final["blocks"]) + final["text"]
    assert "verified" in text
    report = backend.store.reports  # type: ignore[union-attr]
    ((namespace, name),) = report.keys()
    assert f"kubectl get rcareport {name} -n {namespace}" in text
    assert row["steps"]["ticket_final"] == "verified"
    # While the run went on the ticket said "Investigating" and had no outcome.
    posted = next(
        c for c in slack_api.log if c.params.get("metadata") and "ticket" in str(c.params)
    )
    assert "Investigating" in posted.params["text"]
    assert "Verified" not in posted.params["text"]


def test_a_rate_limited_ticket_edit_waits_and_lands(slack_api, tmp_path):
    server, _, _ = _serve(slack_api, tmp_path, progress_interval_s=60)
    with server:
        ts = user_message(slack_api, WRITE_RCA)
        slack_api.inject("chat.update", status=429, retry_after=1, times=1)
        server.deliver(mention("Ev0RATE", WRITE_RCA, ts=ts))
        row = server.wait_done("Ev0RATE")

    ticket = row["steps"]["ticket_ts"]
    updates = [c for c in slack_api.log if c.method == "chat.update"]
    limited = [i for i, c in enumerate(updates) if c.outcome == "http_429"]
    assert limited == [0]
    assert updates[1].params["ts"] == updates[0].params["ts"] == ticket
    assert updates[1].outcome == "ok"
    final = slack_api.message(CHANNEL, ticket)
    assert final is not None
    assert "verified" in final["text"]


def test_secrets_in_the_request_never_reach_slack(slack_api, tmp_path):
    secret = "xoxb-1234567890-abcdefghijklmnop"
    words = f"{WRITE_RCA}; my token is {secret} and the db is postgres://app:hunter2pass@db"
    server, _, _ = _serve(slack_api, tmp_path)
    with server:
        ts = user_message(slack_api, "redacted")
        server.deliver(mention("Ev0SECRET", words, ts=ts))
        server.wait_done("Ev0SECRET")

    sent = json.dumps([c.params for c in slack_api.log], default=str)
    assert secret not in sent
    assert "hunter2pass" not in sent
    assert slack_api.calls["chat.update"] >= 1


@pytest.mark.parametrize("seconds", [1])
def test_retry_after_is_honoured(slack_api, tmp_path, seconds):
    server, _, _ = _serve(slack_api, tmp_path, progress_interval_s=60)
    with server:
        ts = user_message(slack_api, WRITE_RCA)
        slack_api.inject("chat.update", status=429, retry_after=seconds, times=1)
        started = time.monotonic()
        server.deliver(mention("Ev0WAIT", WRITE_RCA, ts=ts))
        server.wait_done("Ev0WAIT")
        elapsed = time.monotonic() - started

    assert elapsed >= seconds
