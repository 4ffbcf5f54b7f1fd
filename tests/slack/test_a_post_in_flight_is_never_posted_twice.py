"""A post that takes longer than the holder's lease (a slow Slack, a stalled event loop) is
never made twice: the intent is written with a lease that outlives the post, so no replica can
take the request over while the post may still land, and the one that takes it over after the
holder died mid-post finds the message by its marker instead of posting it again.

On both inbox backends, with the real Slack client against the local Slack Web API."""

from __future__ import annotations

import asyncio
import time

import pytest

from tests.support.fake_slack import FakeSlack
from tests.support.state import BACKENDS, Inboxes, state_settings
from tools.redact import Redactor
from triage.core.settings import SlackSettings
from triage.slack.client import Slack, web_client
from triage.slack.inbox import Claimed, Inbound, Inbox, Kind
from triage.slack.ticket import Messages
from triage.slack.worker import LostLease

LEASE_S = 0.5
POST_WINDOW_S = 2.5  # SlackSettings.post_window_s: a try's timeout and the margin
SLOW_POST_S = 1.5  # three leases: an ordinary lease would run out mid-post


@pytest.fixture(params=BACKENDS)
def inboxes(request, tmp_path):
    opened = Inboxes(state_settings(request, request.param, tmp_path))
    yield opened
    opened.close()


def _slack(slack_api: FakeSlack) -> Slack:
    settings = SlackSettings(
        bot_token=slack_api.token, api_base_url=slack_api.base_url, api_timeout_s=10
    )
    return Slack(web_client(settings), Redactor())


def _messages(slack: Slack, inbox: Inbox, claimed: Claimed) -> Messages:
    """Messages wired to the inbox as the worker wires them (Worker._save)."""

    async def save(hold_s: float | None) -> None:
        lease_s = None if hold_s is None else max(hold_s, LEASE_S)
        if not inbox.save(claimed, lease_s=lease_s):
            raise LostLease(claimed.inbound.id)

    return Messages(slack, claimed, save, POST_WINDOW_S)


def _accepted(inbox: Inbox, thread_ts: str) -> None:
    inbox.accept(
        Inbound(
            id="Ev0SLOW",
            kind=Kind.MENTION,
            team="T1",
            channel="C1",
            thread_ts=thread_ts,
            ts=thread_ts,
            user="U1",
            text="why is checkout-api down",
        )
    )


def _posts(slack_api: FakeSlack) -> int:
    return len(slack_api.calls_to("chat.postMessage"))


def test_no_replica_takes_over_while_a_slow_post_may_still_land(slack_api, inboxes) -> None:
    a, b = inboxes.open(), inboxes.open()
    _accepted(a, "1.000001")
    held = a.claim("replica-a", lease_s=LEASE_S)
    assert held is not None
    slack_api.inject("chat.postMessage", delay=SLOW_POST_S, times=1)

    async def race() -> tuple[str, list[Claimed | None]]:
        post = asyncio.create_task(_messages(_slack(slack_api), a, held).once("answer0", "RCA"))
        seen = []
        for _ in range(5):  # over two ordinary leases while the post is in flight
            await asyncio.sleep(0.25)
            seen.append(b.claim("replica-b", lease_s=LEASE_S))
        return await post, seen

    ts, takeovers = asyncio.run(race())

    assert takeovers == [None] * 5
    assert _posts(slack_api) == 1
    row = a.get("Ev0SLOW")
    assert row is not None
    assert row["steps"]["answer0_ts"] == ts
    time.sleep(LEASE_S + 0.2)  # the ts is recorded: an ordinary lease again, then free
    assert b.claim("replica-b", lease_s=LEASE_S) is not None


def test_a_post_slower_than_its_window_keeps_its_hold(slack_api, inboxes) -> None:
    a, b = inboxes.open(), inboxes.open()
    _accepted(a, "1.000003")
    held = a.claim("replica-a", lease_s=LEASE_S)
    assert held is not None
    # slower than a try's window (Slack answering late, or a Retry-After wait): the live
    # holder renews its hold while it waits
    slack_api.inject("chat.postMessage", delay=2 * POST_WINDOW_S, times=1)

    async def race() -> list[Claimed | None]:
        post = asyncio.create_task(_messages(_slack(slack_api), a, held).once("answer0", "RCA"))
        seen = []
        while not post.done():
            await asyncio.sleep(0.25)
            seen.append(b.claim("replica-b", lease_s=LEASE_S))
        await post
        return seen

    takeovers = asyncio.run(race())

    assert len(takeovers) > 4 * POST_WINDOW_S  # it was tried throughout the post
    assert set(takeovers) == {None}
    assert _posts(slack_api) == 1


def test_a_holder_that_dies_mid_post_is_not_posted_for_twice(slack_api, inboxes) -> None:
    a, b = inboxes.open(), inboxes.open()
    _accepted(a, "1.000002")
    held = a.claim("replica-a", lease_s=LEASE_S)
    assert held is not None
    slack_api.inject("chat.postMessage", delay=SLOW_POST_S, times=1)

    async def die_mid_post() -> None:
        post = asyncio.create_task(_messages(_slack(slack_api), a, held).once("answer0", "RCA"))
        await asyncio.sleep(0.5)  # the request has reached Slack; nothing more of ours runs
        post.cancel()

    asyncio.run(die_mid_post())
    time.sleep(LEASE_S + 0.2)
    assert b.claim("replica-b", lease_s=LEASE_S) is None  # the post may still be on its way
    deadline = time.time() + POST_WINDOW_S + 2
    taken = None
    while taken is None and time.time() < deadline:
        time.sleep(0.1)
        taken = b.claim("replica-b", lease_s=30)
    assert taken is not None
    assert taken.steps.get("answer0_posting")
    assert "answer0_ts" not in taken.steps  # the holder never learned its ts

    ts = asyncio.run(_messages(_slack(slack_api), b, taken).once("answer0", "RCA"))

    assert _posts(slack_api) == 1  # found by its marker, not posted again
    assert slack_api.message("C1", ts) is not None
