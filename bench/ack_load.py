"""The load generator of bench/slack_ack.py, in a process of its own (so its own work never
shares a GIL or an event loop with the server it measures): `rounds` bursts of `mentions`
signed mentions sent at once to each URL in turn, over warm keep-alive connections. Prints one
JSON object: URL -> the ack latencies in milliseconds, as the client saw them.

    .venv/bin/python -m bench.ack_load --rounds 3 --mentions 50 --tag rep1 URL [URL ...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

import aiohttp

from tests.slack.support import mention, sign

QUESTION = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"


async def _burst(session: aiohttp.ClientSession, url: str, tag: str, n: int) -> list[float]:
    bodies = [mention(f"Ev{tag}x{i}", QUESTION, ts=f"{time.time():.6f}") for i in range(n)]

    async def one(body: bytes) -> float:
        headers = sign(body)
        started = time.perf_counter()
        async with session.post(f"{url}/slack/events", data=body, headers=headers) as response:
            await response.read()
            if response.status != 200:
                raise RuntimeError(f"{url}: HTTP {response.status}")
        return (time.perf_counter() - started) * 1000

    return list(await asyncio.gather(*(one(b) for b in bodies)))


async def _main(urls: list[str], rounds: int, mentions: int, tag: str, pause_s: float) -> None:
    out: dict[str, list[float]] = {u: [] for u in urls}
    connector = aiohttp.TCPConnector(limit=mentions * len(urls), limit_per_host=mentions)
    timeout = aiohttp.ClientTimeout(total=30)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:

        async def warm(url: str) -> None:
            async with session.get(f"{url}/healthz") as response:
                await response.read()

        for url in urls:  # open the connections first: not measured
            await asyncio.gather(*(warm(url) for _ in range(mentions)))
        for r in range(rounds):
            for url in urls:
                out[url] += await _burst(session, url, f"{tag}r{r}{abs(hash(url)) % 997}", mentions)
                await asyncio.sleep(pause_s)
    print(json.dumps(out))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("urls", nargs="+")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mentions", type=int, default=50)
    parser.add_argument("--tag", default="x")
    parser.add_argument("--pause-s", type=float, default=0.5)
    args = parser.parse_args()
    asyncio.run(_main(args.urls, args.rounds, args.mentions, args.tag, args.pause_s))


if __name__ == "__main__":
    main()
