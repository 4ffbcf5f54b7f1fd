"""Every Web API call of the bot waits out a 429's Retry-After, a bounded number of times, and
gives up at once on a Retry-After longer than the configured ceiling."""

from __future__ import annotations

import asyncio
import time

import pytest

from tools.redact import Redactor
from triage.core.settings import SlackSettings
from triage.slack.client import Slack, SlackError, web_client


def _slack(slack_api, **kw) -> Slack:
    settings = SlackSettings(
        bot_token=slack_api.token, api_base_url=slack_api.base_url, api_timeout_s=5, **kw
    )
    return Slack(web_client(settings), Redactor())


def test_waits_retry_after_then_lands(slack_api):
    slack = _slack(slack_api, max_rate_limit_retries=2)
    slack_api.inject("chat.postMessage", status=429, retry_after=1, times=2)

    started = time.monotonic()
    ts = asyncio.run(slack.post("C1", "hello"))

    assert time.monotonic() - started >= 2
    assert slack_api.calls["chat.postMessage"] == 3
    assert slack_api.message("C1", ts) is not None


def test_gives_up_after_the_bounded_retries(slack_api):
    slack = _slack(slack_api, max_rate_limit_retries=1)
    slack_api.inject("reactions.add", status=429, retry_after=1, times=5)

    with pytest.raises(SlackError) as err:
        asyncio.run(slack.react("C1", "1.000001", "eyes"))

    assert err.value.error == "ratelimited"
    assert slack_api.calls["reactions.add"] == 2


def test_a_retry_after_past_the_ceiling_is_not_waited(slack_api):
    slack = _slack(slack_api, max_rate_limit_retries=3, max_retry_after_s=5)
    slack_api.inject("chat.update", status=429, retry_after=120, times=1)

    started = time.monotonic()
    with pytest.raises(SlackError):
        asyncio.run(slack.update("C1", "1.000001", "x"))

    assert time.monotonic() - started < 5
    assert slack_api.calls["chat.update"] == 1
