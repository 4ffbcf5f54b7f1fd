"""Benchmark: how fast `triage serve` acks Slack, with 50 mentions arriving at once.

Each mention is signed, sent over HTTP into the real bolt app and written durably to the inbox
before its ack; the workers start investigating (recorded incidents replayed, the real graph
and judge) while the rest are still arriving, as in production. Prints p50/p99/max ack latency
measured by the client, and checks that every ack means a stored request. Slack's limit is 3 s.

    .venv/bin/python -m bench.slack_ack [--mentions 50] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from tests.slack.support import BotServer, demo_app, mention, settings_for, sign
from tests.support.fake_slack import FakeSlack
from triage.slack.inbox import Kind, State

QUESTION = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"


async def _burst(url: str, round_no: int, count: int) -> list[float]:
    async def one(client: httpx.AsyncClient, i: int) -> float:
        body = mention(f"EvBench{round_no}x{i}", QUESTION, ts=f"{time.time():.6f}")
        started = time.perf_counter()
        response = await client.post(f"{url}/slack/events", content=body, headers=sign(body))
        elapsed = time.perf_counter() - started
        if response.status_code != 200:
            msg = f"mention {i}: HTTP {response.status_code}"
            raise RuntimeError(msg)
        return elapsed

    limits = httpx.Limits(max_connections=count, max_keepalive_connections=count)
    async with httpx.AsyncClient(timeout=10, limits=limits) as client:
        return list(await asyncio.gather(*(one(client, i) for i in range(count))))


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--mentions", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--drain-s", type=float, default=600, help="wait this long for answers")
    args = parser.parse_args()
    logging.getLogger("triage.slack").setLevel(logging.ERROR)  # no 👀 targets in this bench
    slack = FakeSlack().start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            settings = settings_for(slack, Path(tmp))
            with BotServer(settings, demo_app(settings)) as server:
                latencies: list[float] = []
                started = time.perf_counter()
                for r in range(args.rounds):
                    latencies += asyncio.run(_burst(server.url, r, args.mentions))
                stored = len(server.bot.inbox.ids(Kind.MENTION))
                deadline = time.monotonic() + args.drain_s
                while server.bot.inbox.count(State.QUEUED) and time.monotonic() < deadline:
                    time.sleep(0.1)
                drained = time.perf_counter() - started
                answered = server.bot.inbox.count(State.DONE)
                failed = server.bot.inbox.count(State.FAILED)
    finally:
        slack.stop()
    ms = [v * 1000 for v in latencies]
    print(f"ack latency over {len(ms)} mentions ({args.rounds} bursts of {args.mentions} at once)")
    print(f"  p50 {_pct(ms, 0.50):7.1f} ms")
    print(f"  p99 {_pct(ms, 0.99):7.1f} ms")
    print(f"  max {max(ms):7.1f} ms   mean {statistics.fmean(ms):7.1f} ms   (Slack allows 3000 ms)")
    print(f"  stored before ack: {stored}/{len(ms)}")
    print(
        f"answered {answered}/{len(ms)} (failed {failed}) in {drained:.1f} s with "
        f"{settings.slack.workers} workers: each a replayed investigation, judged, ticket edited"
    )


if __name__ == "__main__":
    main()
