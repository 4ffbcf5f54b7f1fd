"""A mention gets 👀, one reply, one ticket and one answer — however often Slack delivers it."""

from __future__ import annotations

import asyncio

import pytest

from tests.slack.support import (
    CHANNEL,
    BotServer,
    bot_message,
    deliver_concurrently,
    demo_app,
    mention,
    settings_for,
    sign,
    user_message,
)
from tests.support.fake_slack import FakeSlack, SlackCall
from triage.slack import messages as m

QUESTION = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"


@pytest.fixture
def served(slack_api: FakeSlack, tmp_path):
    settings = settings_for(slack_api, tmp_path)
    with BotServer(settings, demo_app(settings)) as server:
        yield server


def _posts(slack_api: FakeSlack, marker_suffix: str) -> list[SlackCall]:
    return [
        c
        for c in slack_api.calls_to("chat.postMessage")
        if str(
            ((c.params.get("metadata") or {}).get("event_payload") or {}).get("marker", "")
        ).endswith(marker_suffix)
    ]


def test_four_deliveries_two_at_once_give_one_run_and_one_ticket(served, slack_api):
    ts = user_message(slack_api, QUESTION)
    body = mention("Ev0DUP", QUESTION, ts=ts)

    first_two = asyncio.run(
        deliver_concurrently(served.url, [(body, sign(body)), (body, sign(body))])
    )
    later = [served.deliver(body, retry=n).status_code for n in (2, 3)]
    row = served.wait_done("Ev0DUP")

    assert first_two == [200, 200]
    assert later == [200, 200]
    assert row["deliveries"] == 4
    assert row["state"] == "done"
    assert len(_posts(slack_api, ":ticket")) == 1
    assert len(_posts(slack_api, ":progress")) == 1
    assert slack_api.calls["reactions.add"] == 1
    replies = [m for m in slack_api.channel_messages(CHANNEL) if m.get("thread_ts")]
    assert {m["thread_ts"] for m in replies} == {ts}
    assert slack_api.message(CHANNEL, ts)["reactions"][0]["name"] == "eyes"


def test_only_the_retry_arrives_and_is_answered(served, slack_api):
    body = mention("Ev0RETRY", QUESTION, ts=user_message(slack_api, QUESTION))

    assert served.deliver(body, retry=1).status_code == 200
    row = served.wait_done("Ev0RETRY")

    assert row["state"] == "done"
    assert len(_posts(slack_api, ":ticket")) == 1
    assert row["steps"]["ticket_final"] == "verified"


def test_thanks_is_answered_without_a_run(served, slack_api):
    body = mention("Ev0THANKS", "thanks!", ts=user_message(slack_api, "thanks!"))

    served.deliver(body)
    row = served.wait_done("Ev0THANKS")

    assert row["steps"]["reply_ts"]
    assert _posts(slack_api, ":ticket") == []
    assert slack_api.calls["chat.postMessage"] == 1
    assert slack_api.calls["chat.update"] == 0


def test_the_bots_own_message_is_ignored(served, slack_api):
    before = dict(slack_api.calls)

    response = served.deliver(bot_message("Ev0SELF", "1795987469.000400"))

    assert response.status_code == 200
    assert served.bot.inbox.get("Ev0SELF") is None
    assert dict(slack_api.calls) == before


def test_a_question_is_answered_in_the_thread_and_progress_is_edited_not_reposted(
    served, slack_api
):
    ts = user_message(slack_api, QUESTION)

    served.deliver(mention("Ev0ASK", QUESTION, ts=ts))
    row = served.wait_done("Ev0ASK")

    steps = row["steps"]
    progress = slack_api.message(CHANNEL, steps["progress_ts"])
    answer = slack_api.message(CHANNEL, steps["answer0_ts"])
    assert progress is not None
    assert answer is not None
    assert progress["text"] == m.PROGRESS_DONE
    assert len(_posts(slack_api, ":progress")) == 1
    assert answer["thread_ts"] == ts
    assert "DATABASE_URL" in answer["text"]  # the root cause of the recorded incident
    assert "Verification" in answer["text"]


def test_a_channel_outside_the_configured_ones_is_ignored(slack_api, tmp_path):
    settings = settings_for(slack_api, tmp_path, channels=["C0OTHER"])
    with BotServer(settings, demo_app(settings)) as server:
        ts = user_message(slack_api, QUESTION)
        response = server.deliver(mention("Ev0ELSEWHERE", QUESTION, ts=ts))
        assert server.bot.inbox.get("Ev0ELSEWHERE") is None

    assert response.status_code == 200
    assert slack_api.calls["chat.postMessage"] == 0


def test_when_slack_keeps_refusing_the_user_is_told_after_the_last_try(slack_api, tmp_path):
    settings = settings_for(slack_api, tmp_path, max_attempts=2)
    with BotServer(settings, demo_app(settings)) as server:
        ts = user_message(slack_api, QUESTION)
        slack_api.inject("chat.postMessage", error="msg_too_long", times=2)
        server.deliver(mention("Ev0REFUSED", QUESTION, ts=ts))
        row = server.wait_done("Ev0REFUSED", timeout=30)

    assert row["state"] == "failed"
    assert row["attempts"] == 2
    told = slack_api.message(CHANNEL, row["steps"]["gave_up_ts"])
    assert told is not None
    assert "Mention me again" in told["text"]
