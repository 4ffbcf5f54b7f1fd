"""A run cut short (the process died in the middle of the tools) resumes on the same Slack
thread id from its last checkpoint: the calls already made are not made again, and the answer
is the one an uncut run gives."""

from __future__ import annotations

from typing import Any

import pytest

from tests.slack.support import demo_backend, settings_for
from tools.read import ReadTools
from tools.results import ToolResult
from triage.slack.inbox import Inbound, Kind
from triage.slack.worker import Backend, investigate

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


def _quiet(_: dict[str, Any]) -> None:
    """No progress to show."""


def _with(backend: Backend, tools: Counting) -> Backend:
    backend.tools = tools
    return backend


def test_the_second_process_carries_on_where_the_first_stopped(slack_api, tmp_path):
    settings = settings_for(slack_api, tmp_path / "uncut")
    uncut_tools = Counting(demo_backend(settings).tools)
    uncut = investigate(
        _with(demo_backend(settings), uncut_tools), _inbound("1.1"), WORDS, None, _quiet
    )

    settings = settings_for(slack_api, tmp_path / "cut")
    first = Counting(demo_backend(settings).tools, die_at=len(uncut_tools.calls) - 2)
    with pytest.raises(SystemExit):
        investigate(_with(demo_backend(settings), first), _inbound("1.1"), WORDS, None, _quiet)
    second = Counting(demo_backend(settings).tools)
    resumed = investigate(
        _with(demo_backend(settings), second), _inbound("1.1"), WORDS, None, _quiet
    )

    assert 0 < len(second.calls) < len(uncut_tools.calls)
    assert resumed.outcome == uncut.outcome
    assert resumed.best.draft is not None
    assert uncut.best.draft is not None
    assert resumed.best.draft.root_cause_class == uncut.best.draft.root_cause_class
    assert len(resumed.best.evidence) == len(uncut.best.evidence)
