"""slack_sdk's real clients post, edit, react and thread against the local Slack Web API."""

from __future__ import annotations

import asyncio

import pytest
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.support.fake_slack import FakeSlack


def _client(slack_api: FakeSlack) -> WebClient:
    return WebClient(token=slack_api.token, base_url=slack_api.base_url, timeout=5)


def test_post_then_update_edits_the_message_in_place(slack_api: FakeSlack) -> None:
    client = _client(slack_api)

    posted = client.chat_postMessage(channel="C1", text="Investigating checkout-api")
    client.chat_update(channel="C1", ts=posted["ts"], text="Verified: RCA submitted")

    assert [m["text"] for m in slack_api.channel_messages("C1")] == ["Verified: RCA submitted"]
    assert slack_api.message("C1", posted["ts"])["edited"]["user"]  # type: ignore[index]
    assert slack_api.calls["chat.postMessage"] == 1
    assert slack_api.calls["chat.update"] == 1


def test_blocks_arrive_as_structures(slack_api: FakeSlack) -> None:
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": "*Ticket*"}}]

    posted = _client(slack_api).chat_postMessage(channel="C1", text="Ticket", blocks=blocks)

    assert slack_api.message("C1", posted["ts"])["blocks"] == blocks  # type: ignore[index]


def test_thread_replies_reactions_and_permalink(slack_api: FakeSlack) -> None:
    client = _client(slack_api)
    parent = client.chat_postMessage(channel="C1", text="@triage why 503?")
    client.chat_postMessage(channel="C1", text="On it", thread_ts=parent["ts"])
    client.reactions_add(channel="C1", timestamp=parent["ts"], name="eyes")

    replies = client.conversations_replies(channel="C1", ts=parent["ts"])
    permalink = client.chat_getPermalink(channel="C1", message_ts=parent["ts"])

    assert [m["text"] for m in replies["messages"]] == ["@triage why 503?", "On it"]
    assert replies["messages"][0]["reactions"][0]["name"] == "eyes"
    assert permalink["permalink"].endswith(parent["ts"].replace(".", ""))
    with pytest.raises(SlackApiError) as err:
        client.reactions_add(channel="C1", timestamp=parent["ts"], name="eyes")
    assert err.value.response["error"] == "already_reacted"


def test_auth_test_ephemeral_and_views_open(slack_api: FakeSlack) -> None:
    client = _client(slack_api)

    assert client.auth_test()["user_id"]
    assert client.chat_postEphemeral(channel="C1", user="U1", text="only you")["ok"]
    assert client.views_open(trigger_id="t-1", view={"type": "modal", "blocks": []})["ok"]

    assert slack_api.ephemeral[0]["text"] == "only you"
    assert slack_api.views[0]["type"] == "modal"


def test_wrong_token_is_refused(slack_api: FakeSlack) -> None:
    client = WebClient(token="xoxb-wrong", base_url=slack_api.base_url, timeout=5)

    with pytest.raises(SlackApiError) as err:
        client.chat_postMessage(channel="C1", text="hi")

    assert err.value.response["error"] == "invalid_auth"
    assert slack_api.channel_messages("C1") == []
    assert [c.outcome for c in slack_api.log] == ["invalid_auth"]


def test_update_of_unknown_message_fails(slack_api: FakeSlack) -> None:
    with pytest.raises(SlackApiError) as err:
        _client(slack_api).chat_update(channel="C1", ts="1.000001", text="x")

    assert err.value.response["error"] == "message_not_found"


def test_files_upload_v2_shares_the_file_in_the_thread(slack_api: FakeSlack) -> None:
    client = _client(slack_api)
    parent = client.chat_postMessage(channel="C1", text="ticket")

    result = client.files_upload_v2(
        channel="C1",
        thread_ts=parent["ts"],
        content="# RCA\nroot cause: bad env var",
        filename="rca.md",
        title="RCA",
        initial_comment="Full RCA attached",
    )

    file_id = result["file"]["id"]
    assert slack_api.files[file_id]["content"] == b"# RCA\nroot cause: bad env var"
    assert slack_api.files[file_id]["title"] == "RCA"
    reply = slack_api.thread("C1", parent["ts"])[-1]
    assert reply["text"] == "Full RCA attached"
    assert reply["files"][0]["id"] == file_id
    assert slack_api.calls["upload"] == 1


def test_async_client_posts_and_updates(slack_api: FakeSlack) -> None:
    async def run() -> str:
        client = AsyncWebClient(token=slack_api.token, base_url=slack_api.base_url, timeout=5)
        posted = await client.chat_postMessage(channel="C2", text="first")
        await client.chat_update(channel="C2", ts=posted["ts"], text="second")
        return str(posted["ts"])

    ts = asyncio.run(run())

    assert slack_api.message("C2", ts)["text"] == "second"  # type: ignore[index]
    assert slack_api.calls["chat.update"] == 1
