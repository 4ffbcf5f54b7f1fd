"""Forged, stale, unsigned or malformed requests get 401/400 — never a 500, never an effect."""

from __future__ import annotations

import time

import pytest

from tests.slack.support import BotServer, demo_app, mention, settings_for, sign
from tests.support.fake_slack import FakeSlack
from triage.slack.inbox import State

BODY = mention("Ev0BAD", "checkout-api in scn-crashloop-bad-env returns 503", ts="1.000001")


@pytest.fixture
def served(slack_api: FakeSlack, tmp_path):
    settings = settings_for(slack_api, tmp_path)
    with BotServer(settings, demo_app(settings)) as server:
        yield server


def _forged() -> dict[str, str]:
    return sign(BODY, secret="not-the-signing-secret")


def _stale() -> dict[str, str]:
    return sign(BODY, ts=int(time.time()) - 6 * 60)


def _unsigned() -> dict[str, str]:
    return {"Content-Type": "application/json"}


def _bad_signature_format() -> dict[str, str]:
    return sign(BODY) | {"X-Slack-Signature": "garbage"}


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        pytest.param(_forged, BODY, 401, id="forged signature"),
        pytest.param(_stale, BODY, 401, id="timestamp older than 5 minutes"),
        pytest.param(_unsigned, BODY, 401, id="missing headers"),
        pytest.param(_bad_signature_format, BODY, 401, id="malformed signature"),
        pytest.param(lambda: sign(b"{not json"), b"{not json", 400, id="signed malformed JSON"),
        pytest.param(_unsigned, b"{not json", 401, id="unsigned malformed JSON"),
        pytest.param(lambda: sign(b"\xff\xfe"), b"\xff\xfe", 400, id="signed non-UTF-8 body"),
        pytest.param(lambda: sign(b"[1, 2]"), b"[1, 2]", 400, id="signed JSON that is no object"),
    ],
)
def test_refused_without_side_effects(served, slack_api, headers, body, status):
    slack_api.calls.clear()
    slack_api.log.clear()

    response = served.post(body, headers())
    time.sleep(0.3)  # give a wrongly started worker the chance to show itself

    assert response.status_code == status
    assert served.bot.inbox.get("Ev0BAD") is None
    assert sum(served.bot.inbox.count(state) for state in State) == 0
    assert slack_api.log == []
