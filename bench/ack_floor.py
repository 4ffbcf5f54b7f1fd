"""The floor an ack can reach on this machine: the least a Slack endpoint must do before it
answers — check the HMAC signature, parse the JSON, INSERT the request into SQLite (WAL,
`synchronous=NORMAL`) — in a bare Starlette app under uvicorn. bench/slack_ack.py runs it
beside `triage serve` and compares the two in the same run.

    .venv/bin/python -m bench.ack_floor PORT DB SECRET
"""

from __future__ import annotations

import hashlib
import hmac
import json
import sqlite3
import sys

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route


def app(db_path: str, secret: str) -> Starlette:
    db = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS inbox (id TEXT PRIMARY KEY, body TEXT NOT NULL)")

    async def events(request: Request) -> Response:
        body = await request.body()
        ts = request.headers.get("x-slack-request-timestamp", "")
        base = f"v0:{ts}:".encode() + body
        want = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, request.headers.get("x-slack-signature", "")):
            return PlainTextResponse("bad signature", status_code=401)
        event = json.loads(body)
        db.execute(
            "INSERT INTO inbox (id, body) VALUES (?, ?) ON CONFLICT (id) DO NOTHING",
            (event["event_id"], body.decode()),
        )
        return PlainTextResponse("")

    async def healthz(_: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route("/slack/events", events, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )


if __name__ == "__main__":
    port, db_path, secret = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    uvicorn.run(app(db_path, secret), host="127.0.0.1", port=port, log_level="warning")
