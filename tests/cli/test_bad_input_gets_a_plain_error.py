"""What a user gets when the cluster, the namespace or Prometheus is not what they expect.

Each case: a distinct exit status, one plain line saying what to do, and — for Prometheus —
an RCA that still comes out of the Kubernetes evidence with Prometheus marked unavailable.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.support.product import app_over
from tests.support.scenario_format import scenario_series
from tools.read.kube import KubeReader
from tools.read.prometheus import PrometheusReader
from tools.read.registry import ReadRegistry
from tools.results import ToolStatus
from triage.app import Request
from triage.cli.main import app
from triage.core.errors import EXIT_CLUSTER, EXIT_NOT_FOUND, EXIT_USAGE


def _run(*args: str, state: Path) -> Any:
    return CliRunner().invoke(app, list(args), env={"TRIAGE_STATE__DIR": str(state)})


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", [["demo"], ["investigate", "why", "-n", "shop"]])
def test_a_bad_setting_is_one_plain_line_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    result = CliRunner().invoke(
        app, command, env={"TRIAGE_STATE__DIR": str(tmp_path), "TRIAGE_KUBE__TIMEOUT_S": "-1"}
    )
    assert result.exit_code == EXIT_USAGE
    assert "TRIAGE_KUBE__TIMEOUT_S" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_missing_kubeconfig_is_a_usage_error(tmp_path: Path) -> None:
    result = _run(
        "investigate", "why", "-n", "shop", "--kubeconfig", str(tmp_path / "nope"), state=tmp_path
    )
    assert result.exit_code == EXIT_USAGE
    assert "kubeconfig" in result.stderr


@pytest.fixture
def dead_kubeconfig(tmp_path: Path) -> Path:
    """A valid kubeconfig whose apiserver address has nothing listening."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": f"http://127.0.0.1:{_closed_port()}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    return kubeconfig


def test_unreachable_apiserver_is_said_plainly(tmp_path: Path, dead_kubeconfig: Path) -> None:
    kubeconfig = dead_kubeconfig
    result = _run(
        "investigate",
        "why is it down",
        "-n",
        "shop",
        "--kubeconfig",
        str(kubeconfig),
        "-q",
        state=tmp_path,
    )
    assert result.exit_code == EXIT_CLUSTER
    assert "cannot reach the apiserver" in result.stderr
    assert "Traceback" not in result.output


def test_no_namespace_is_a_usage_error(tmp_path: Path, dead_kubeconfig: Path) -> None:
    result = _run(
        "investigate",
        "why is everything slow",
        "--kubeconfig",
        str(dead_kubeconfig),
        "-q",
        state=tmp_path,
    )
    assert result.exit_code == EXIT_USAGE
    assert "--namespace" in result.stderr


@pytest.mark.cluster
def test_unknown_namespace_is_reported_not_retried(tmp_path: Path, control_plane) -> None:
    result = _run(
        "investigate",
        "checkout is down",
        "-n",
        "no-such-namespace",
        "--kubeconfig",
        str(control_plane.reader_kubeconfig),
        "-o",
        "json",
        "-q",
        state=tmp_path,
    )
    assert result.exit_code == EXIT_NOT_FOUND
    assert "no-such-namespace" in result.stderr
    assert "does not exist" in result.stderr


@pytest.mark.cluster
@pytest.mark.prometheus
def test_prometheus_stopped_mid_run_still_gives_an_rca(
    tmp_path: Path, control_plane, loaded_scenarios, prometheus_factory
) -> None:
    scenario = loaded_scenarios["oomkilled"].scenario
    prom = prometheus_factory(scenario_series([scenario]), name="prom-killed")
    kube = KubeReader(control_plane.api_client(control_plane.reader_kubeconfig))
    tools = ReadRegistry(kube, PrometheusReader(prom.url, timeout_s=2))
    killed: list[bool] = []

    def kill_after_first_result(event: dict[str, Any]) -> None:
        if "done" in event and not killed:
            prom.kill()  # the survey is done; Prometheus dies before the follow-ups
            killed.append(True)

    run = app_over(tools, tmp_path).checked_run(
        Request(words=scenario.rendered_question), on_progress=kill_after_first_result
    )
    result = run.best
    assert killed
    draft = result.draft
    assert draft is not None
    assert draft.root_cause_class == "oom_killed"
    prom_evidence = [e for e in result.evidence if e.tool.startswith("prom.")]
    assert prom_evidence
    assert all(e.status is ToolStatus.ERROR for e in prom_evidence)
    assert any("Prometheus evidence unavailable" in u for u in draft.unavailable)
    cited = draft.cited_ids()
    assert all(e.ok for e in result.evidence if e.id in cited)
