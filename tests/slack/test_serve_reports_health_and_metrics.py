"""`triage serve` answers /healthz with the inbox's state and /metrics in Prometheus format."""

from __future__ import annotations

import httpx

from tests.slack.support import BotServer, demo_app, mention, settings_for, user_message

QUESTION = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"


def test_health_and_metrics(slack_api, tmp_path):
    settings = settings_for(slack_api, tmp_path)
    with BotServer(settings, demo_app(settings)) as server:
        body = mention("Ev0METRICS", QUESTION, ts=user_message(slack_api, QUESTION))
        server.deliver(body)
        server.deliver(body, retry=1)
        server.wait_done("Ev0METRICS")
        health = httpx.get(f"{server.url}/healthz", timeout=5)
        metrics = httpx.get(f"{server.url}/metrics", timeout=5).text

    assert health.status_code == 200
    assert health.json()["ok"] is True
    assert health.json()["queued"] == 0
    assert 'triage_slack_requests_accepted_total{kind="mention"}' in metrics
    assert 'triage_slack_requests_duplicate_total{kind="mention"}' in metrics
    assert "triage_slack_ack_seconds_bucket" in metrics
