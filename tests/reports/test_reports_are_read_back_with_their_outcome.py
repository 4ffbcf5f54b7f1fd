"""`triage reports` and the review page read RCAReports back with their verification outcome."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from typer.testing import CliRunner

from tests.judge.support import install_reports
from tests.slack.support import BotServer, demo_app, settings_for
from tests.support.scenario_format import SCENARIO_DIR
from tests.support.scenarios import apply_scenario, load_scenario
from triage.agent.intake import parse
from triage.cli.main import app
from triage.core.models import Claim, RCADraft
from triage.reports import views
from triage.reports.store import MemoryReportStore


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
    written = json.loads(run.stdout)

    listed = _cli(
        "reports", "list", "-n", ns, "--kubeconfig", kubeconfig, "-o", "json", state=tmp_path
    )
    assert listed.exit_code == 0, listed.output
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    name = written["verification"]["report"]["name"]
    assert rows[name]["outcome"] == "verified"
    assert "OOMKilled" in rows[name]["root_cause"]

    shown = _cli("reports", "show", name, "-n", ns, "--kubeconfig", kubeconfig, state=tmp_path)
    assert shown.exit_code == 0, shown.output
    assert "outcome **verified**" in shown.stdout
    assert "## Judge: Met" in shown.stdout

    missing = _cli(
        "reports", "show", "rca-nope", "-n", ns, "--kubeconfig", kubeconfig, state=tmp_path
    )
    assert missing.exit_code == 4
    assert "triage reports list" in missing.stderr


def test_listing_needs_a_scope(tmp_path) -> None:
    result = _cli("reports", "list", "--kubeconfig", str(tmp_path / "none"), state=tmp_path)
    assert result.exit_code == 2
    assert "--all-namespaces" in result.stderr


def test_the_review_page_escapes_what_reports_quote() -> None:
    hostile = {
        "metadata": {"namespace": "shop", "name": "rca-1", "creationTimestamp": "2026-11-29"},
        "spec": {
            "request": "why <b>down</b>?",
            "rootCause": "<script>alert(1)</script> OOMKilled",
            "draft": {},
        },
        "status": {"outcome": "rejected", "missing": ["<img src=x onerror=alert(1)>"]},
    }
    index = views.html_index([hostile], None)
    page = views.html_report(hostile)
    for html in (index, page):
        assert "<script>" not in html
        assert "<img" not in html
    assert "&lt;script&gt;" in index
    assert "rejected" in page
    assert "UNVERIFIED" in page


def test_triage_serve_shows_reports_on_a_review_page(slack_api, tmp_path) -> None:
    settings = settings_for(slack_api, tmp_path)
    product = demo_app(settings)
    store = product.store
    assert isinstance(store, MemoryReportStore)
    draft = RCADraft(
        title="RCA: image-resizer is OOMKilled",
        summary="image-resizer is OOMKilled",
        root_cause_class="oom_killed",
        impact="restarts",
        root_cause=(Claim(text="container resizer was OOMKilled", evidence=("E2",)),),
    )
    goal = parse("image-resizer in shop keeps restarting, write the RCA", now=0)
    ref = store.submit("shop", goal, draft, attempt=1, run_id="cli:1")
    store.publish(ref, {"outcome": "verified", "met": ["report exists"]})
    with BotServer(settings, product) as server:
        index = httpx.get(f"{server.url}/reports", timeout=10)
        page = httpx.get(f"{server.url}/reports/shop/{ref.name}", timeout=10)
        absent = httpx.get(f"{server.url}/reports/shop/rca-nope", timeout=10)
    assert index.status_code == 200
    assert ref.name in index.text
    assert "verified" in index.text
    assert page.status_code == 200
    assert "container resizer was OOMKilled" in page.text
    assert absent.status_code == 404
