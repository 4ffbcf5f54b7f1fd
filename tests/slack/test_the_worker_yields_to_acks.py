"""`triage serve` investigates in a process below the acking one: an ack that wakes preempts an
investigation at once (SCHED_IDLE), so acks do not wait behind CPU-bound runs."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.slack.serve_process import Serve
from tests.support.fake_slack import FakeSlack


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_the_worker_process_runs_below_the_acking_one(slack_api: FakeSlack, tmp_path: Path):
    serve = Serve(slack_api, tmp_path).start()
    try:
        assert serve.proc is not None
        deadline = time.monotonic() + 30
        workers: list[int] = []
        while not workers and time.monotonic() < deadline:
            workers = [
                c
                for c in _children(serve.proc.pid)
                if b"worker" in Path(f"/proc/{c}/cmdline").read_bytes()
            ]
            time.sleep(0.1)
        assert workers, "no worker process started"
        while os.sched_getscheduler(workers[0]) != os.SCHED_IDLE:  # it lowers itself as it starts
            assert time.monotonic() < deadline, "the worker kept the acking process's priority"
            time.sleep(0.1)
        assert os.getpriority(os.PRIO_PROCESS, workers[0]) == 19
        assert os.sched_getscheduler(serve.proc.pid) == os.SCHED_OTHER
        assert os.getpriority(os.PRIO_PROCESS, serve.proc.pid) == 0
    finally:
        serve.stop()
