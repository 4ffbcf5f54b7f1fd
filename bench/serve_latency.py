"""Benchmark: `triage serve` from a mention to its final ticket, and the memory of one replica
with 50 investigations in flight.

One `triage serve --demo` process (the product as shipped: bolt, the inbox, the worker
process investigating a recorded incident) with `TRIAGE_SLACK__WORKERS` = `--mentions`, and the
local Slack Web API stand-in. `--mentions` signed mentions are sent at once; each one's latency
is its inbox row's `updated_at` when it became `done` (after the ticket's final edit) minus its
`received_at` (its accept), both taken by the server. The replica's RSS is sampled every 50 ms
over its process group (the HTTP process and its worker process) while the work runs; the
peak is printed, with the bar of 400 MB.

    .venv/bin/python -m bench.serve_latency [--mentions 50] [--bundle crashloop-bad-env]
        [--source DIR]

`--source DIR` runs another checkout's `triage serve` (e.g. a `git worktree` of an older
commit, for a before/after) by putting DIR first on its PYTHONPATH.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.slack.serve_process import Serve
from tests.slack.support import mention, sign
from tests.support.fake_slack import FakeSlack

RSS_BAR_MB = 400
QUESTION = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"


def _rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total / 1024


def _group(leader: int) -> list[int]:
    """The leader and every process of its session (the worker process)."""
    pids = [leader]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[3]) == leader and int(stat.parent.name) != leader:  # session id
            pids.append(int(stat.parent.name))
    return pids


def _done(db: Path) -> dict[str, tuple[float, float]]:
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as conn:
        rows = conn.execute(
            "SELECT id, received_at, updated_at FROM slack_inbox WHERE state = 'done'"
        ).fetchall()
    return {r[0]: (r[1], r[2]) for r in rows}


class Sampler:
    """The peak RSS of a process group, sampled every 50 ms on a thread of its own."""

    def __init__(self, leader: int) -> None:
        self.leader = leader
        self.peak = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _rss_mb(_group(self.leader)))
            time.sleep(0.05)

    def stop(self) -> float:
        self._stop.set()
        self._thread.join(5)
        return self.peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mentions", type=int, default=50)
    parser.add_argument("--bundle", default="crashloop-bad-env")
    parser.add_argument("--source", type=Path, default=None, help="another checkout to run")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds for every answer")
    args = parser.parse_args()
    root = str(args.source or Path(__file__).resolve().parents[1])
    slack = FakeSlack().start()
    peak = {"total": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp)
        env = {"PYTHONPATH": root, "TRIAGE_SLACK__WORKERS": str(args.mentions)}
        serve = Serve(slack, state, env=env, bundle=args.bundle).start()
        assert serve.proc is not None
        idle_mb = _rss_mb(_group(serve.proc.pid))
        sampler = Sampler(serve.proc.pid)
        stamp = int(time.time())

        def send(i: int) -> int:
            body = mention(f"EvLAT{stamp}x{i}", QUESTION, ts=f"{stamp}.{i:06d}")
            return httpx.post(
                f"{serve.url}/slack/events", content=body, headers=sign(body), timeout=30
            ).status_code

        started = time.monotonic()
        try:
            with ThreadPoolExecutor(args.mentions) as pool:
                codes = list(pool.map(send, range(args.mentions)))
            db = state / "slack-inbox.sqlite"
            deadline = time.monotonic() + args.timeout
            done: dict[str, tuple[float, float]] = {}
            while time.monotonic() < deadline:
                done = _done(db)
                if len(done) >= args.mentions:
                    break
                time.sleep(0.2)
            wall = time.monotonic() - started
        finally:
            peak["total"] = sampler.stop()
            serve.stop()
            slack.stop()
    latencies = sorted(max(0.0, end - begin) for begin, end in done.values())
    if not latencies:
        print(f"FAIL: no mention answered; acks {sorted(set(codes))}", file=sys.stderr)
        raise SystemExit(1)

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, round(q * (len(latencies) - 1)))]

    print(
        f"triage serve --demo {args.bundle} from {root}: {args.mentions} mentions at once, "
        f"{args.mentions} workers; acks {sorted(set(codes))}"
    )
    print(
        f"  mention -> final ticket: p50 {pct(0.5):.2f}s  p99 {pct(0.99):.2f}s  "
        f"max {latencies[-1]:.2f}s  mean {statistics.fmean(latencies):.2f}s; "
        f"all {len(latencies)}/{args.mentions} answered in {wall:.1f}s"
    )
    print(
        f"  RSS of the replica (HTTP process + worker process): idle {idle_mb:.0f} MB, "
        f"peak {peak['total']:.0f} MB with {args.mentions} in flight (bar: <= {RSS_BAR_MB} MB)"
    )
    ok = len(latencies) == args.mentions and peak["total"] <= RSS_BAR_MB
    summary = {"p50_s": pct(0.5), "p99_s": pct(0.99), "rss_peak_mb": peak["total"]}
    print(f"{'PASS' if ok else 'FAIL'}: {json.dumps(summary)}")


if __name__ == "__main__":
    main()
