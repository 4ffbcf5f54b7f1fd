"""In Socket Mode the same bolt app gets the events over a websocket: each envelope is acked
after the request is stored, a redelivered event is answered once, and no HTTP endpoint for
events exists."""

from __future__ import annotations

import json

from tests.slack.socket_mode import APP_TOKEN, SocketModeSlack
from tests.slack.support import BotServer, demo_app, mention, settings_for, user_message

QUESTION = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"


def test_envelopes_are_acked_and_a_redelivery_is_answered_once(slack_api, tmp_path):
    with SocketModeSlack(slack_api) as socket:
        settings = settings_for(
            slack_api,
            tmp_path,
            api_base_url=socket.base_url,
            app_token=APP_TOKEN,
            signing_secret=None,
        )
        with BotServer(settings, demo_app(settings)) as server:
            assert socket.connected.wait(15)
            body = json.loads(mention("Ev0SOCKET", QUESTION, ts=user_message(slack_api, QUESTION)))
            socket.send_event("env-1", body)
            socket.send_event("env-2", body, retry_attempt=1)
            acked = socket.wait_acks(2)
            row = server.wait_done("Ev0SOCKET")
            no_http = server.post(b"{}", {"Content-Type": "application/json"})

    assert sorted(acked) == ["env-1", "env-2"]
    assert row["deliveries"] == 2
    assert row["steps"]["ticket_final"] == "verified"
    tickets = [
        c
        for c in slack_api.calls_to("chat.postMessage")
        if "Ev0SOCKET:ticket" in json.dumps(c.params)
    ]
    assert len(tickets) == 1
    assert no_http.status_code == 404
