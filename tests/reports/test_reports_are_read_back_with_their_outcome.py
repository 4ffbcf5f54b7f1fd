"""`triage reports` reads RCAReports back with their verification outcome (the review page:
tests/web/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.cli.contract import valid
from tests.judge.support import install_reports
from tests.support.scenario_format import SCENARIO_DIR
from tests.support.scenarios import apply_scenario, load_scenario
from triage.cli.main import app


def _cli(*args: str, state: Path) -> Any:
    return CliRunner().invoke(app, list(args), env={"TRIAGE_STATE__DIR": str(state)})


@pytest.mark.cluster
def test_a_written_report_is_listed_and_shown_with_its_outcome(control_plane, tmp_path) -> None:
    install_reports(control_plane)
    scenario = load_scenario(SCENARIO_DIR / "oomkilled.yaml")
    apply_scenario(control_plane, scenario)
    ns, kubeconfig = scenario.namespace, str(control_plane.reader_kubeconfig)
    run = _cli(
        "investigate",
        f"image-resizer in {ns} keeps restarting, write the RCA",
        "--kubeconfig",
        kubeconfig,
        "-o",
        "json",
        "-q",
        state=tmp_path,
    )
    assert run.exit_code == 0, run.output
    written = valid(run.stdout, kind="Investigation")

    listed = _cli(
        "reports", "list", "-n", ns, "--kubeconfig", kubeconfig, "-o", "json", state=tmp_path
    )
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in valid(listed.stdout, kind="ReportList")["items"]}
    name = written["verification"]["report"]["name"]
    assert rows[name]["outcome"] == "verified"
    # the line is the cause (the limit the container outgrows), not the symptom's reason
    assert "256Mi" in rows[name]["root_cause"]
    assert "memory" in rows[name]["root_cause"]

    shown = _cli("reports", "show", name, "-n", ns, "--kubeconfig", kubeconfig, state=tmp_path)
    assert shown.exit_code == 0, shown.output
    assert "outcome **verified**" in shown.stdout
    assert "## Judge: Met" in shown.stdout

    missing = _cli(
        "reports", "show", "rca-nope", "-n", ns, "--kubeconfig", kubeconfig, state=tmp_path
    )
    assert missing.exit_code == 4
    assert "triage reports list" in missing.stderr


NO_NAMESPACE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:9"}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody}
current-context: nowhere
users:
- name: nobody
  user: {token: not-a-token}
"""


def test_listing_needs_a_scope(tmp_path) -> None:
    # the context names no namespace (like kubectl, its namespace is the default scope)
    config = tmp_path / "kubeconfig"
    config.write_text(NO_NAMESPACE_KUBECONFIG)
    result = _cli("reports", "list", "--kubeconfig", str(config), state=tmp_path)
    assert result.exit_code == 2
    assert "--all-namespaces" in result.stderr
    # no kubeconfig at all: that is what is said, before the scope
    result = _cli("reports", "list", "--kubeconfig", str(tmp_path / "none"), state=tmp_path)
    assert result.exit_code == 2
    assert "Set KUBECONFIG or pass --kubeconfig" in result.stderr
