"""Signed Slack requests sent over HTTP into the real bolt app that `triage serve` runs.

`BotServer` builds the bot exactly as `triage serve` does (`triage.web.server.build_bot` over
the composition root `triage.app.App`), with a recorded incident replayed as the cluster
(triage/demo, the real graph and judge: `App.replay`, as `triage serve --demo` does), the local
Slack Web API (tests/support/fake_slack.py) as Slack, and uvicorn serving it on a free port.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from slack_sdk import WebClient

from tests.support.fake_slack import BOT_ID, BOT_USER_ID, TEAM_ID, FakeSlack
from triage.app import App
from triage.core.bundles import Bundle, demo_dir
from triage.core.settings import Settings, SlackSettings, StateSettings
from triage.web.server import Bot, build_bot, starlette_app

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0INCIDENT"
USER = "U0ENGINEER"
BUNDLE = "crashloop-bad-env"


def sign(body: bytes, *, secret: str = SECRET, ts: int | None = None) -> dict[str, str]:
    ts = int(time.time()) if ts is None else ts
    base = f"v0:{ts}:".encode() + body
    digest = hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return {
        "X-Slack-Request-Timestamp": str(ts),
        "X-Slack-Signature": f"v0={digest}",
        "Content-Type": "application/json",
    }


def mention(
    event_id: str, text: str, *, ts: str, thread_ts: str | None = None, user: str = USER
) -> bytes:
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": user,
        "text": f"<@{BOT_USER_ID}> {text}",
        "ts": ts,
        "channel": CHANNEL,
        "event_ts": ts,
    }
    if thread_ts:
        event["thread_ts"] = thread_ts
    return json.dumps(
        {
            "token": "legacy",
            "team_id": TEAM_ID,
            "api_app_id": "A0TRIAGE",
            "event": event,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(time.time()),
            "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
        }
    ).encode()


def bot_message(event_id: str, ts: str) -> bytes:
    """An app_mention that the bot itself wrote (it quoted its own name)."""
    body = json.loads(mention(event_id, "see above", ts=ts, user=BOT_USER_ID))
    body["event"]["bot_id"] = BOT_ID
    return json.dumps(body).encode()


def user_message(slack_api: FakeSlack, text: str) -> str:
    """Put the user's message in the channel (the local Slack has no users); its ts."""
    client = WebClient(token=slack_api.token, base_url=slack_api.base_url, timeout=5)
    ts = str(client.chat_postMessage(channel=CHANNEL, text=text)["ts"])
    slack_api.calls.clear()
    slack_api.log.clear()
    return ts


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def settings_for(slack_api: FakeSlack, state_dir: Path, **slack: Any) -> Settings:
    """Settings as `triage serve` reads them from TRIAGE_SLACK__*, pointed at the local Slack."""
    fields: dict[str, Any] = {
        "bot_token": slack_api.token,
        "signing_secret": SECRET,
        "api_base_url": slack_api.base_url,
        "api_timeout_s": 5,
        "progress_interval_s": 0.2,
        "lease_s": 5,
    }
    return Settings(
        state=StateSettings(dir=state_dir),
        slack=SlackSettings(**(fields | slack)),
    )


def demo_app(settings: Settings, bundle_name: str = BUNDLE) -> App:
    """The product over a recorded incident, as `triage serve --demo NAME` builds it."""
    product, _ = App.replay(settings, Bundle.read(demo_dir() / f"{bundle_name}.json"))
    return product


class BotServer:
    """`triage serve` in this process: uvicorn on a free port, in a thread."""

    def __init__(self, settings: Settings, product: App) -> None:
        self.settings = settings
        self.product = product
        self.bot: Bot = build_bot(settings, product)
        self.port = free_port()
        config = uvicorn.Config(
            starlette_app(self.bot),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="on",
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> BotServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the bot did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)

    def post(self, body: bytes, headers: dict[str, str], **kw: Any) -> httpx.Response:
        return httpx.post(
            f"{self.url}/slack/events", content=body, headers=headers, timeout=10, **kw
        )

    def deliver(self, body: bytes, retry: int = 0) -> httpx.Response:
        headers = sign(body)
        if retry:
            headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        return self.post(body, headers)

    def wait_done(self, request_id: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            row = self.bot.inbox.get(request_id)
            if row is not None and row["state"] not in ("queued",):
                return row
            time.sleep(0.05)
        raise AssertionError(f"{request_id} not finished: {self.bot.inbox.get(request_id)}")


async def deliver_concurrently(url: str, bodies: list[tuple[bytes, dict[str, str]]]) -> list[int]:
    async with httpx.AsyncClient(timeout=10) as client:
        responses = await asyncio.gather(
            *(client.post(f"{url}/slack/events", content=b, headers=h) for b, h in bodies)
        )
    return [r.status_code for r in responses]
