"""Every shipped demo bundle replays offline to the root cause it was recorded with.

The bundles were recorded from real runs against the test control plane; replaying them runs
the real graph and rules planner with no cluster. A planner change that makes a different
call than the recording did shows up as a replay miss; one that changes the diagnosis shows
up as a different class.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.support.scenario_format import load_scenarios
from tools.read.registry import canonical_args
from triage.app import App, Request
from triage.cli.main import app
from triage.core.bundles import Bundle, demo_dir, demo_names
from triage.core.settings import Settings, StateSettings

EXPECTED = {s.name: s.expect for s in load_scenarios(split="dev")}


def test_every_demo_bundle_is_a_dev_scenario() -> None:
    """`triage demo` replays real runs of development scenarios (never held-out ones)."""
    assert len(demo_names()) >= 10
    assert set(demo_names()) <= set(EXPECTED)


@pytest.mark.parametrize("name", demo_names())
def test_bundle_replays_to_its_root_cause(name: str, tmp_path: Path) -> None:
    bundle = Bundle.read(demo_dir() / f"{name}.json")
    product, replay = App.replay(Settings(state=StateSettings(dir=tmp_path)), bundle)
    run = product.checked_run(Request(words=bundle.question, now=bundle.now, planner="rules"))
    result = run.best
    assert replay.misses == []
    keys = [f"{e.tool} {canonical_args(e.args)}" for e in result.evidence]
    assert len(keys) == len(set(keys)), "the same call was made twice"
    assert result.draft is not None
    expect = EXPECTED[name]
    assert result.draft.root_cause_class in {expect.root_cause_class, *expect.also_accept}
    text = " ".join([result.draft.summary, *(c.text for c in result.draft.root_cause)]).lower()
    assert all(k.lower() in text for k in expect.keywords), text
    ok = {e.id for e in result.evidence if e.ok}
    assert result.draft.cited_ids() <= ok


def test_demo_command_prints_an_rca_with_citations(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["demo", "-o", "json"], env={"TRIAGE_STATE__DIR": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["draft"]["root_cause"], "the demo RCA has a root cause"
    assert all(c["evidence"] for c in out["draft"]["root_cause"])
    assert out["replay_misses"] == []


def test_unknown_demo_name_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["demo", "no-such-incident"], env={"TRIAGE_STATE__DIR": str(tmp_path)}
    )
    assert result.exit_code == 2
    assert "choose one of" in result.stderr
