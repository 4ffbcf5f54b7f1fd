"""The final ticket carries "Confirm cause", "Dispute" and "Open report"; a dispute (with its
note, from the modal) and a confirmation land on the RCAReport with the Slack user who made
them, show on the ticket, and move triage_reviews_total."""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any

import httpx

from tests.slack.support import (
    CHANNEL,
    BotServer,
    demo_app,
    mention,
    settings_for,
    sign,
    user_message,
)
from tests.support.fake_slack import TEAM_ID, FakeSlack
from triage.core.settings import ReviewSettings
from triage.reports.store import MemoryReportStore
from triage.slack.blocks import ACTION_REVIEW_CONFIRM, ACTION_REVIEW_DISPUTE, VIEW_DISPUTE
from triage.slack.inbox import Kind

QUESTION = (
    "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why and "
    "write the RCA"
)
CAROL, DAN = "U0CAROL", "U0DAN"


def _form(payload: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    body = ("payload=" + urllib.parse.quote(json.dumps(payload))).encode()
    return body, sign(body) | {"Content-Type": "application/x-www-form-urlencoded"}


def _click(ticket: dict[str, Any], user: str, action_id: str, n: int) -> dict[str, Any]:
    button = next(
        e
        for b in ticket["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"] == action_id
    )
    return {
        "type": "block_actions",
        "team": {"id": TEAM_ID},
        "user": {"id": user},
        "api_app_id": "A0TRIAGE",
        "channel": {"id": CHANNEL},
        "container": {"type": "message", "message_ts": ticket["ts"], "channel_id": CHANNEL},
        "message": {"ts": ticket["ts"], "thread_ts": ticket.get("thread_ts")},
        "trigger_id": f"trigger-{n}",
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "b",
                "value": button["value"],
                "action_ts": f"{time.time():.6f}{n}",
            }
        ],
    }


def _metric(server: BotServer, outcome: str, review: str) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=5).text
    line = f'triage_reviews_total{{outcome="{outcome}",review="{review}"}} '
    return float(next(x for x in text.splitlines() if x.startswith(line)).split()[-1])


def _wait_actions(server: BotServer, count: int) -> list[str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        ids = server.bot.inbox.ids(Kind.ACTION)
        if len(ids) >= count:
            for request_id in ids:
                server.wait_done(request_id)
            return ids
        time.sleep(0.05)
    raise AssertionError(f"{count} actions expected, {server.bot.inbox.ids(Kind.ACTION)}")


def test_a_dispute_and_a_confirmation_land_on_the_report(slack_api: FakeSlack, tmp_path) -> None:
    settings = settings_for(slack_api, tmp_path)
    settings.review = ReviewSettings(external_url="https://triage.example.com/")
    product = demo_app(settings)
    store = product.store
    assert isinstance(store, MemoryReportStore)
    with BotServer(settings, product) as server:
        server.deliver(mention("Ev0REVIEW", QUESTION, ts=user_message(slack_api, QUESTION)))
        row = server.wait_done("Ev0REVIEW", timeout=60)
        ticket = slack_api.message(CHANNEL, row["steps"]["ticket_ts"])
        assert ticket is not None
        ((ns, name),) = store.reports
        buttons = {
            e["action_id"]: e
            for b in ticket["blocks"]
            if b["type"] == "actions"
            for e in b["elements"]
        }
        assert (
            buttons["triage_open_report"]["url"]
            == f"https://triage.example.com/reports/{ns}/{name}"
        )
        assert {"Confirm cause", "Dispute"} <= {e["text"]["text"] for e in buttons.values()}
        disputed_before = _metric(server, "verified", "disputed")

        # Dispute: the click opens the note form, the submitted form is recorded.
        body, headers = _form(_click(ticket, CAROL, ACTION_REVIEW_DISPUTE, 1))
        assert server.post(body, headers).status_code == 200
        (modal,) = slack_api.views
        assert modal["callback_id"] == VIEW_DISPUTE
        submitted = {
            "type": "view_submission",
            "team": {"id": TEAM_ID},
            "user": {"id": CAROL},
            "api_app_id": "A0TRIAGE",
            "trigger_id": "trigger-2",
            "view": {
                "id": modal["id"],
                "type": "modal",
                "callback_id": VIEW_DISPUTE,
                "private_metadata": modal["private_metadata"],
                "state": {
                    "values": {
                        "note": {
                            "note": {
                                "type": "plain_text_input",
                                "value": "It was the DB failover at 20:58",
                            }
                        }
                    }
                },
            },
        }
        body, headers = _form(submitted)
        assert server.post(body, headers).status_code == 200
        _wait_actions(server, 1)
        review = store.reports[(ns, name)]["status"]["review"]
        assert review["verdict"] == "disputed"
        assert review["by"] == f"slack:{TEAM_ID}/{CAROL}"
        assert review["via"] == "slack"
        assert review["note"] == "It was the DB failover at 20:58"
        assert review["outcome"] == "verified"
        assert _metric(server, "verified", "disputed") == disputed_before + 1
        shown = json.dumps(slack_api.message(CHANNEL, ticket["ts"])["blocks"])
        assert f"Cause disputed by <@{CAROL}>" in shown
        assert "It was the DB failover" in shown
        assert any("Recorded: you disputed" in e["text"] for e in slack_api.ephemeral)

        # A second person confirms: the latest review wins, the dispute stays in the history.
        confirm = _form(
            _click(slack_api.message(CHANNEL, ticket["ts"]), DAN, ACTION_REVIEW_CONFIRM, 3)
        )
        assert server.post(*confirm).status_code == 200
        assert server.post(*confirm).status_code == 200  # Slack redelivers the same click
        _wait_actions(server, 2)
        status = store.reports[(ns, name)]["status"]
        assert status["review"]["verdict"] == "confirmed"
        assert status["review"]["by"] == f"slack:{TEAM_ID}/{DAN}"
        assert [r["by"] for r in status["reviews"]] == [f"slack:{TEAM_ID}/{CAROL}"]
        shown = json.dumps(slack_api.message(CHANNEL, ticket["ts"])["blocks"])
        assert f"Cause confirmed by <@{DAN}>" in shown
        assert "Cause disputed" not in shown  # one review line, the latest
        assert _metric(server, "verified", "confirmed") >= 1
