"""A run cut short (the process died in the middle of the tools) resumes on the same Slack
thread id from its last checkpoint: the calls already made are not made again, and the answer
is the one an uncut run gives."""

from __future__ import annotations

from typing import Any

import pytest

from tests.slack.support import demo_app, settings_for
from tools.read.registry import ReadTools
from tools.results import ToolResult
from triage.app import App, Request
from triage.slack.inbox import Inbound, Kind
from triage.slack.worker import Worker

WORDS = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"


class Counting:
    """The replayed cluster, counting calls; `die_at` makes that call kill the 'process'."""

    def __init__(self, inner: ReadTools, die_at: int | None = None) -> None:
        self.inner = inner
        self.die_at = die_at
        self.calls: list[str] = []

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append(name)
        if self.die_at is not None and len(self.calls) >= self.die_at:
            raise SystemExit("killed")  # what a SIGKILL looks like from inside: nothing more runs
        return self.inner.call(name, args)


def _inbound(ts: str) -> Inbound:
    return Inbound(
        id="Ev0CUT", kind=Kind.MENTION, team="T1", channel="C1", thread_ts=ts, ts=ts, user="U1"
    )


def _with(product: App, tools: Counting) -> App:
    product.tools = tools
    return product


def _request(product: App, settings: Any) -> Request:
    """The request the Slack worker makes of a mention (run id = the Slack thread id)."""
    worker = Worker(None, None, product, settings.slack)  # type: ignore[arg-type]
    return worker.request_for(_inbound("1.1"), WORDS)


def test_the_second_process_carries_on_where_the_first_stopped(slack_api, tmp_path):
    settings = settings_for(slack_api, tmp_path / "uncut")
    uncut_tools = Counting(demo_app(settings).tools)
    product = _with(demo_app(settings), uncut_tools)
    uncut = product.checked_run(_request(product, settings))

    settings = settings_for(slack_api, tmp_path / "cut")
    first = Counting(demo_app(settings).tools, die_at=len(uncut_tools.calls) - 2)
    product = _with(demo_app(settings), first)
    with pytest.raises(SystemExit):
        product.checked_run(_request(product, settings))
    second = Counting(demo_app(settings).tools)
    product = _with(demo_app(settings), second)
    resumed = product.checked_run(_request(product, settings))

    assert 0 < len(second.calls) < len(uncut_tools.calls)
    assert resumed.outcome == uncut.outcome
    assert resumed.best.draft is not None
    assert uncut.best.draft is not None
    assert resumed.best.draft.root_cause_class == uncut.best.draft.root_cause_class
    assert len(resumed.best.evidence) == len(uncut.best.evidence)
