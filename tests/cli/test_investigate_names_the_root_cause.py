"""`triage investigate` against the real control plane and Prometheus, one test per scenario.

The CLI runs in-process as the reader identity (a real ServiceAccount token), exactly as a user
would run it; the assertions read its JSON output: the expected root-cause class, the
scenario's keywords in the root cause, and every cited evidence id pointing at an `ok` result.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.scenario_format import load_scenarios
from triage.cli.main import app
from triage.core.errors import EXIT_OK

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus]

SCENARIOS = sorted(s.name for s in load_scenarios())


def investigate(
    question: str, kubeconfig: Path, prometheus_url: str | None, state_dir: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    runner = CliRunner()
    args = ["investigate", question, "--kubeconfig", str(kubeconfig), "-o", "json", "-q", *extra]
    if prometheus_url:
        args += ["--prometheus-url", prometheus_url]
    result = runner.invoke(app, args, env={"TRIAGE_STATE__DIR": str(state_dir)})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def root_cause_text(draft: dict[str, Any]) -> str:
    parts = [draft["summary"], *(c["text"] for c in draft["root_cause"])]
    return " ".join(parts).lower()


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_root_cause(
    name: str, loaded_scenarios, scenario_prometheus, control_plane, tmp_path: Path
) -> None:
    scenario = loaded_scenarios[name].scenario
    code, out = investigate(
        scenario.rendered_question,
        control_plane.reader_kubeconfig,
        scenario_prometheus.url,
        tmp_path,
    )
    draft = out["draft"]
    assert draft["root_cause_class"] == scenario.expect.root_cause_class, draft["summary"]
    assert code == EXIT_OK
    text = root_cause_text(draft)
    missing = [k for k in scenario.expect.keywords if k.lower() not in text]
    assert not missing, f"keywords {missing} not in: {text}"
    status = {e["id"]: e["status"] for e in out["evidence"]}
    cited = {i for c in draft["root_cause"] + draft["contributing_factors"] for i in c["evidence"]}
    assert cited, "a root cause must cite evidence"
    assert {status[i] for i in cited} == {"ok"}
    assert draft["nonexistent"] == [], "the scenario's workloads exist"
