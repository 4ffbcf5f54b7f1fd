"""One suite, both checkpointers (SQLite, the embedded default; the real PostgreSQL replicas
share): a run cut short resumes from its last checkpoint in a new process without repeating
the calls already made; a finished run is returned as it is, nothing re-run; runs on other
thread ids are separate; runs untouched past the retention are pruned, newer ones kept, their
evidence payloads with them. The checkpoints hold each outcome's record, never its payload:
the payload is stored once, beside them (triage/core/evidence_store.py)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.slack.support import demo_app, settings_for
from tests.support.fake_slack import FakeSlack
from tests.support.state import BACKENDS, state_settings
from tools.read.registry import ReadTools
from tools.results import ToolResult
from triage.agent.graph import checkpointer_for
from triage.agent.state import evidence_of
from triage.app import App, Request
from triage.core import retention
from triage.core.errors import StateUnavailable

WORDS = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"


class Counting:
    """The replayed cluster, counting calls; `die_at` makes that call end the 'process'."""

    def __init__(self, inner: ReadTools, die_at: int | None = None) -> None:
        self.inner = inner
        self.die_at = die_at
        self.calls: list[str] = []

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append(name)
        if self.die_at is not None and len(self.calls) >= self.die_at:
            raise SystemExit("killed")  # what a SIGKILL looks like from inside
        return self.inner.call(name, args)


@pytest.fixture(params=BACKENDS)
def process(request, tmp_path, slack_api: FakeSlack):
    """Builds a fresh 'process' (an App) over one shared state store, with counted tools."""
    settings = settings_for(slack_api, tmp_path)
    settings.state = state_settings(request, request.param, tmp_path)
    opened: list[App] = []

    def start(die_at: int | None = None) -> tuple[App, Counting]:
        product = demo_app(settings.model_copy(deep=True))
        tools = Counting(product.tools, die_at)
        product.tools = tools
        opened.append(product)
        return product, tools

    yield start
    for product in opened:
        product.close()


def _request(run_id: str) -> Request:
    return Request(words=WORDS, run_id=run_id, now=time.time())


def test_a_cut_run_resumes_where_it_stopped(process):
    whole, whole_tools = process()
    uncut = whole.checked_run(_request("slack:T:C:uncut"))

    cut, _ = process(die_at=len(whole_tools.calls) - 2)
    with pytest.raises(SystemExit):
        cut.checked_run(_request("slack:T:C:cut"))
    after, after_tools = process()
    resumed = after.checked_run(_request("slack:T:C:cut"))

    assert 0 < len(after_tools.calls) < len(whole_tools.calls)
    assert resumed.outcome == uncut.outcome
    assert resumed.best.draft is not None
    assert uncut.best.draft is not None
    assert resumed.best.draft.root_cause_class == uncut.best.draft.root_cause_class
    assert [e.id for e in resumed.best.evidence] == [e.id for e in uncut.best.evidence]


def test_a_finished_run_is_returned_as_it_is(process):
    first, _ = process()
    done = first.checked_run(_request("slack:T:C:done"))
    again, tools = process()

    same = again.checked_run(_request("slack:T:C:done"))
    rerun = len(tools.calls)  # the judge's own reads only: the graph ran nothing
    other = again.checked_run(_request("slack:T:C:other"))
    fresh = len(tools.calls) - rerun

    assert done.best.draft is not None
    assert same.best.draft == done.best.draft
    assert same.best.evidence == done.best.evidence
    assert fresh - rerun == len(other.best.evidence) > 0  # a new thread investigates anew


def test_old_runs_are_pruned_and_new_ones_kept(process):
    product, _ = process()
    for run in ("a", "b"):
        product.checked_run(_request(f"slack:T:C:{run}"))
    state = product.settings.state
    pool = product.state_pool()

    kept = retention.prune(state, pool=pool, now=time.time())
    pruned = retention.prune(state, pool=pool, now=time.time() + state.retention_days * 86400 + 60)

    assert kept.threads == 0
    assert pruned.threads == 2
    with checkpointer_for(state, pool) as (_, store):
        assert store.get("slack:T:C:a", ["E1", "E2"]) == {}  # the payloads went with them
    again, tools = process()
    again.checked_run(_request("slack:T:C:a"))
    assert tools.calls  # its checkpoints are gone: the run starts over


def _stored_state(product: App, thread: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The checkpointed state of `thread` and the payloads its records name, read back
    through the backend as another process would."""
    with checkpointer_for(product.settings.state, product.state_pool()) as (saver, store):
        latest = saver.get_tuple({"configurable": {"thread_id": thread}})
        assert latest is not None
        values = dict(latest.checkpoint["channel_values"])
        ids = [str(r["id"]) for r in values["evidence"]]
        return values, store.get(thread, ids)


def test_checkpoints_keep_records_and_the_payloads_are_stored_once(process):
    product, _ = process()
    done = product.checked_run(_request("slack:T:C:payloads"))

    values, payloads = _stored_state(product, "slack:T:C:payloads")

    records = values["evidence"]
    assert records
    assert all(r.get("stored") and "data" not in r for r in records)
    assert set(payloads) == {r["id"] for r in records}
    by_id = {e.id: e for e in done.best.evidence}
    assert any(by_id[i].data for i in payloads)  # a pod list, a log: not empty
    assert all(by_id[i].data == payloads[i] for i in payloads)


def test_a_record_whose_payload_is_gone_is_an_error_not_an_empty_read(process):
    product, _ = process()
    product.checked_run(_request("slack:T:C:lost"))
    values, _ = _stored_state(product, "slack:T:C:lost")
    with (
        checkpointer_for(product.settings.state, product.state_pool()) as (_, store),
        pytest.raises(StateUnavailable, match="not in the evidence store"),
    ):
        evidence_of(values, store, "slack:T:C:another-thread")
