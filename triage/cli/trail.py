"""The step trail: what a run did, one line per step on stderr, kept after the run.

A spinner that disappears leaves nothing to scroll back to; this leaves the steps of the
graph, the judge's verdict and the outcome (and with `-v` every tool call with its status and
evidence id), one line each, never wrapped when stderr is not a terminal. `-q` prints none of
it. stdout stays the answer alone, so `-o json | jq` works with the trail on.
"""

from __future__ import annotations

import time
from typing import Any, TextIO

from triage.cli.common import Trail

_SKIP_NODES = {"", "__start__", "__end__", "tools"}


def _args(args: dict[str, Any]) -> str:
    text = " ".join(f"{k}={v}" for k, v in args.items() if k not in ("start", "end"))
    return text if len(text) < 120 else text[:119] + "…"


class StepTrail:
    """An `on_progress` callback that writes the trail to `stream`."""

    def __init__(self, level: Trail, stream: TextIO) -> None:
        self.level = level
        self.stream = stream
        self.started = time.monotonic()
        self.calls = 0
        self.lines = 0
        self._pending: dict[str, str] = {}
        self._last_node = ""

    def _say(self, text: str) -> None:
        self.stream.write(f"[{time.monotonic() - self.started:6.1f}s] {text}\n")
        self.stream.flush()
        self.lines += 1

    def __call__(self, event: dict[str, Any]) -> None:
        if self.level is Trail.quiet:
            return
        if "tool" in event:
            self._pending[str(event["tool"])] = _args(dict(event.get("args") or {}))
            return
        if "done" in event:
            self.calls += 1
            if self.level is Trail.calls:
                tool = str(event["done"])
                args = self._pending.pop(tool, "")
                status = event.get("status", "?")
                self._say(f"  {event.get('id', '?')} {tool} {args} → {status}".rstrip())
            return
        node = event.get("node")
        if isinstance(node, str) and node not in _SKIP_NODES and node != self._last_node:
            self._last_node = node
            self._say(f"{node}" + (f" (attempt {event['attempt']})" if "attempt" in event else ""))
            return
        if "feedback" in event and "attempt" in event:
            if int(event["attempt"]) > 1:
                self._say(f"attempt {event['attempt']}: back to the planner with the judge's list")
        elif "submitted" in event:
            self._say(f"submitted rcareport {event['submitted']}")
        elif "submit_failed" in event:
            self._say(f"could not submit the report: {event['submit_failed']}")
        elif "verdict" in event:
            missing = list(event.get("missing") or [])
            more = f"; missing: {'; '.join(missing)}" if missing else ""
            self._say(f"judge: {event['verdict']}{more}")
        elif "awaiting" in event:
            self._say(f"waiting for approval of {len(event['awaiting'])} change(s)")
        elif "outcome" in event:
            self._say(f"outcome: {event['outcome']} after {self.calls} tool call(s)")
