"""Slack's Socket Mode at the wire, for tests: `apps.connections.open` hands out a websocket
URL, the websocket says hello, then carries the envelopes a test sends and collects the acks.
Every other Web API method is forwarded to the local Slack Web API (tests/support/fake_slack),
so the bot's posts, edits and reactions are counted there as usual."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

import httpx
from aiohttp import WSMsgType, web

from tests.slack.support import free_port
from tests.support.fake_slack import FakeSlack

APP_TOKEN = "xapp-1-A0TRIAGE-1234567890-0123456789abcdef0123456789abcdef"


class SocketModeSlack:
    def __init__(self, fake: FakeSlack) -> None:
        self.fake = fake
        self.port = free_port()
        self.acks: list[dict[str, Any]] = []
        self.opened = 0
        self.connected = threading.Event()
        self._ws: web.WebSocketResponse | None = None
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._runner: web.AppRunner | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def __enter__(self) -> SocketModeSlack:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/link", self._socket)
        app.router.add_route("*", "/api/{method}", self._api)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", self.port).start()

    async def _stop(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        if method == "apps.connections.open":
            self.opened += 1
            if request.headers.get("Authorization") != f"Bearer {APP_TOKEN}":
                return web.json_response({"ok": False, "error": "invalid_auth"})
            return web.json_response({"ok": True, "url": f"ws://127.0.0.1:{self.port}/link"})
        headers = {
            k: v
            for k, v in request.headers.items()
            if k.lower() in ("authorization", "content-type")
        }
        async with httpx.AsyncClient(timeout=10) as client:
            reply = await client.request(
                request.method,
                f"{self.fake.url}/api/{method}",
                params=dict(request.query),
                content=await request.read(),
                headers=headers,
            )
        out = {k: v for k, v in reply.headers.items() if k.lower() == "retry-after"}
        return web.Response(
            status=reply.status_code,
            body=reply.content,
            headers=out,
            content_type="application/json",
        )

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        self._ws = ws
        await ws.send_json(
            {"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0TRIAGE"}}
        )
        self.connected.set()
        async for message in ws:
            if message.type == WSMsgType.TEXT:
                data = json.loads(message.data)
                if "envelope_id" in data:
                    self.acks.append(data)
        return ws

    def send_event(self, envelope_id: str, body: dict[str, Any], retry_attempt: int = 0) -> None:
        envelope = {
            "envelope_id": envelope_id,
            "type": "events_api",
            "payload": body,
            "accepts_response_payload": False,
            "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else "",
        }
        ws = self._ws
        assert ws is not None, "the bot is not connected"
        asyncio.run_coroutine_threadsafe(ws.send_json(envelope), self._loop).result(5)

    def wait_acks(self, count: int, timeout: float = 10) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(self.acks) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return [a["envelope_id"] for a in self.acks]
