"""Injected Slack faults look real to slack_sdk: 429 with Retry-After, 5xx, connection resets."""

from __future__ import annotations

import asyncio
import time
import urllib.error

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.builtin_handlers import (
    RateLimitErrorRetryHandler,
    ServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from tests.support.fake_slack import FakeSlack


def _client(slack_api: FakeSlack) -> WebClient:
    client = WebClient(token=slack_api.token, base_url=slack_api.base_url, timeout=5)
    client.retry_handlers.clear()
    return client


def test_rate_limit_handler_waits_retry_after_and_the_update_lands(slack_api: FakeSlack) -> None:
    client = _client(slack_api)
    client.retry_handlers.append(RateLimitErrorRetryHandler(max_retry_count=2))
    posted = client.chat_postMessage(channel="C1", text="Investigating")
    slack_api.inject("chat.update", status=429, retry_after=1, times=1)

    began = time.monotonic()
    client.chat_update(channel="C1", ts=posted["ts"], text="Verified")
    elapsed = time.monotonic() - began

    assert elapsed >= 1.0
    assert slack_api.calls["chat.update"] == 2
    assert [c.outcome for c in slack_api.calls_to("chat.update")] == ["http_429", "ok"]
    assert slack_api.message("C1", posted["ts"])["text"] == "Verified"  # type: ignore[index]


def test_without_a_handler_429_surfaces_with_retry_after(slack_api: FakeSlack) -> None:
    slack_api.inject("chat.postMessage", status=429, retry_after=7)

    with pytest.raises(SlackApiError) as err:
        _client(slack_api).chat_postMessage(channel="C1", text="hi")

    assert err.value.response.status_code == 429
    assert err.value.response.headers["retry-after"] in ("7", ["7"])
    assert slack_api.channel_messages("C1") == []


def test_server_error_is_retried_by_the_server_error_handler(slack_api: FakeSlack) -> None:
    client = _client(slack_api)
    client.retry_handlers.append(ServerErrorRetryHandler(max_retry_count=1))
    slack_api.inject("chat.postMessage", status=503)

    client.chat_postMessage(channel="C1", text="hi")

    assert [c.outcome for c in slack_api.log] == ["http_503", "ok"]
    assert len(slack_api.channel_messages("C1")) == 1


def test_connection_reset_reaches_the_client_as_a_connection_error(slack_api: FakeSlack) -> None:
    slack_api.inject("chat.postMessage", reset=True)

    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _client(slack_api).chat_postMessage(channel="C1", text="hi")

    assert slack_api.calls["chat.postMessage"] == 1
    assert slack_api.channel_messages("C1") == []


def test_a_lost_response_after_the_write_duplicates_on_blind_retry(slack_api: FakeSlack) -> None:
    # slack_sdk's default ConnectionErrorRetryHandler retries once: the first post landed.
    client = WebClient(token=slack_api.token, base_url=slack_api.base_url, timeout=5)
    slack_api.inject("chat.postMessage", reset=True, applied=True)

    client.chat_postMessage(channel="C1", text="hi")

    assert [c.outcome for c in slack_api.log] == ["reset", "ok"]
    assert [m["text"] for m in slack_api.channel_messages("C1")] == ["hi", "hi"]


def test_error_injection_returns_ok_false(slack_api: FakeSlack) -> None:
    slack_api.inject("*", error="channel_not_found", times=2)
    client = _client(slack_api)

    for _ in range(2):
        with pytest.raises(SlackApiError):
            client.chat_postMessage(channel="C1", text="hi")
    client.chat_postMessage(channel="C1", text="hi")

    assert slack_api.calls["chat.postMessage"] == 3
    assert len(slack_api.channel_messages("C1")) == 1


def test_reset_forgets_state_between_tests(slack_api: FakeSlack) -> None:
    _client(slack_api).chat_postMessage(channel="C1", text="hi")
    slack_api.inject("chat.update", status=500, times=5)

    slack_api.reset()

    assert slack_api.calls == {}
    assert slack_api.messages == {}
    assert slack_api.faults == []


def test_async_client_retries_after_retry_after_and_survives_a_reset(slack_api: FakeSlack) -> None:
    async def run() -> str:
        client = AsyncWebClient(token=slack_api.token, base_url=slack_api.base_url, timeout=5)
        client.retry_handlers.append(AsyncRateLimitErrorRetryHandler(max_retry_count=1))
        posted = await client.chat_postMessage(channel="C1", text="Investigating")
        slack_api.inject("chat.update", status=429, retry_after=1)
        await client.chat_update(channel="C1", ts=posted["ts"], text="Verified")
        return str(posted["ts"])

    ts = asyncio.run(run())

    assert [c.outcome for c in slack_api.log] == ["ok", "http_429", "ok"]
    assert slack_api.message("C1", ts)["text"] == "Verified"  # type: ignore[index]


def test_a_slow_reply_trips_the_client_timeout(slack_api: FakeSlack) -> None:
    client = WebClient(token=slack_api.token, base_url=slack_api.base_url, timeout=1)
    client.retry_handlers.clear()
    slack_api.inject("chat.postMessage", delay=2)

    with pytest.raises(TimeoutError):
        client.chat_postMessage(channel="C1", text="hi")

    # The abandoned request must not land in the next test's state.
    slack_api.reset()
    time.sleep(1.5)
    assert slack_api.messages == {}
    assert slack_api.log == []
