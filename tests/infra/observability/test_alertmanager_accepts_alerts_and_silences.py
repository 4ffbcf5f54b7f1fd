"""Alertmanager accepts an alert, lists a silence created over API v2, and expires it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.support.observability import AlertmanagerServer

pytestmark = pytest.mark.prometheus


def _wait_for(predicate: object, timeout: float = 10.0) -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(0.1)


def test_alert_is_listed_after_post(alertmanager: AlertmanagerServer) -> None:
    alertmanager.post_alerts(
        [AlertmanagerServer.alert("TriageTestPosted", labels={"namespace": "shop"})]
    )

    def listed() -> bool:
        return any(a["labels"]["alertname"] == "TriageTestPosted" for a in alertmanager.alerts())

    _wait_for(listed)


def test_silence_is_listed_active_silences_the_alert_and_expires(
    alertmanager: AlertmanagerServer,
) -> None:
    alertmanager.post_alerts(
        [AlertmanagerServer.alert("TriageTestSilenced", labels={"service": "checkout-api"})]
    )
    now = datetime.now(UTC)
    response = httpx.post(
        f"{alertmanager.url}/api/v2/silences",
        json={
            "matchers": [
                {
                    "name": "alertname",
                    "value": "TriageTestSilenced",
                    "isRegex": False,
                    "isEqual": True,
                }
            ],
            "startsAt": now.isoformat(),
            "endsAt": (now + timedelta(hours=1)).isoformat(),
            "createdBy": "triage-tests",
            "comment": "op:test-123",
        },
        timeout=5,
    )
    response.raise_for_status()
    silence_id = response.json()["silenceID"]

    by_id = {s["id"]: s for s in alertmanager.silences()}
    assert by_id[silence_id]["status"]["state"] == "active"
    assert by_id[silence_id]["comment"] == "op:test-123"

    def silenced() -> bool:
        return any(
            a["labels"]["alertname"] == "TriageTestSilenced"
            and silence_id in a["status"]["silencedBy"]
            for a in alertmanager.alerts()
        )

    _wait_for(silenced)

    httpx.delete(f"{alertmanager.url}/api/v2/silence/{silence_id}", timeout=5).raise_for_status()

    by_id = {s["id"]: s for s in alertmanager.silences()}
    assert by_id[silence_id]["status"]["state"] == "expired"
