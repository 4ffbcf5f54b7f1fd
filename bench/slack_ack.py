"""Benchmark: how fast `triage serve` acks Slack with 50 mentions arriving at once, against the
floor on this machine, measured in the same run.

Three processes besides this one: `triage serve --demo` (the product as shipped: bolt, the
inbox, workers investigating recorded incidents while mentions still arrive), the floor
endpoint (bench/ack_floor.py: HMAC check, JSON parse, one SQLite INSERT, nothing else), and the
load generator (bench/ack_load.py), which sends `--rounds` bursts of `--mentions` signed
mentions at once to each server in turn, `--reps` times. The ratio is Triage's p99 over the
floor's. Then the same with a slow apiserver (every read 2 s slower) and the most workers the
settings allow (64): acks must not queue behind investigations.

    .venv/bin/python -m bench.slack_ack [--reps 5] [--rounds 3] [--mentions 50]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.slack.serve_process import Serve
from tests.slack.support import SECRET, free_port
from tests.support.fake_slack import FakeSlack
from triage.slack.inbox import Kind, State
from triage.slack.inbox_sqlite import SqliteInbox

ROOT = str(Path(__file__).resolve().parents[1])
SERVE = [sys.executable, "-m", "tests.slack.crash_serve", "serve", "--demo", "crashloop-bad-env"]


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Floor:
    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-m", "bench.ack_floor", str(self.port), str(workdir / "floor.db")]
        self.proc = subprocess.Popen([*cmd, SECRET], env=os.environ | {"PYTHONPATH": ROOT})
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("the floor endpoint did not start")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _load(urls: list[str], rounds: int, mentions: int, tag: str) -> dict[str, list[float]]:
    cmd = [sys.executable, "-m", "bench.ack_load", *urls, "--rounds", str(rounds)]
    cmd += ["--mentions", str(mentions), "--tag", tag]
    out = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
        env=os.environ | {"PYTHONPATH": ROOT},
    )
    loaded: dict[str, list[float]] = json.loads(out.stdout)
    return loaded


def scenario(
    name: str, slack: FakeSlack, work: Path, args: argparse.Namespace, env: dict[str, str]
) -> dict[str, float]:
    state = work / name
    state.mkdir()
    serve = Serve(slack, state, env={"PYTHONPATH": ROOT, **env}, command=SERVE).start()
    floor = Floor(state)
    triage_ms: list[float] = []
    floor_ms: list[float] = []
    try:
        for rep in range(args.reps):
            got = _load([serve.url, floor.url], args.rounds, args.mentions, f"{name}{rep}")
            triage_ms += got[serve.url]
            floor_ms += got[floor.url]
        metrics = httpx.get(f"{serve.url}/metrics", timeout=5).text
        rss = serve.rss_mb()
    finally:
        serve.stop()
        floor.stop()
    inbox = SqliteInbox(state / "slack-inbox.sqlite")
    stored = len(inbox.ids(Kind.MENTION))
    failed = inbox.count(State.FAILED)
    inbox.close()
    sent = len(triage_ms)
    ratio = _pct(triage_ms, 0.99) / _pct(floor_ms, 0.99)
    served = [
        line for line in metrics.splitlines() if line.startswith("triage_slack_ack_seconds_count")
    ]
    print(
        f"\n{name}: {sent} mentions per server ({args.reps} reps x {args.rounds} bursts of "
        f"{args.mentions} at once), load generator in its own process; {env or 'defaults'}"
    )
    print(f"  {'':8} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8}")
    for label, ms in (("triage", triage_ms), ("floor", floor_ms)):
        print(f"  {label:8} {_pct(ms, 0.5):8.1f} {_pct(ms, 0.99):8.1f} {max(ms):8.1f}")
    print(f"  ratio p99 triage/floor: {ratio:.2f} (bar: <= 1.5); triage p99 bar: <= 100 ms")
    print(f"  stored before ack: {stored}/{sent}; failed: {failed}; rss {rss:.0f} MB; {served}")
    return {"p99": _pct(triage_ms, 0.99), "ratio": ratio, "stored": stored, "sent": sent}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mentions", type=int, default=50)
    parser.add_argument("--only", choices=["default", "slow"], default=None)
    parser.add_argument("--env", action="append", default=[], help="K=V for triage serve")
    args = parser.parse_args()
    extra = dict(kv.split("=", 1) for kv in args.env)
    logging.getLogger("triage.slack").setLevel(logging.ERROR)
    slack = FakeSlack().start()
    results = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            if args.only in (None, "default"):
                results["default"] = scenario("default", slack, work, args, extra)
            if args.only in (None, "slow"):
                env = {"TRIAGE_TEST_SLOW_TOOLS": "2", "TRIAGE_SLACK__WORKERS": "64", **extra}
                results["slow"] = scenario("slow", slack, work, args, env)
    finally:
        slack.stop()
    ok = all(r["p99"] <= 100 and r["stored"] == r["sent"] for r in results.values())
    ok = ok and results.get("default", {"ratio": 0})["ratio"] <= 1.5
    print(f"\n{'PASS' if ok else 'FAIL'}: {json.dumps(results)}")


if __name__ == "__main__":
    main()
