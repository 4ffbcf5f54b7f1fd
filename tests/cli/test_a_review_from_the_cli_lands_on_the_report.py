"""`triage reports review NAME --dispute "note"` records the verdict on the report as the user
the apiserver says you are; only a user with patch on rcareports/status may; the running
server counts it into triage_reviews_total when it next reads the reports."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from policies import Policy
from tests.cli.contract import valid
from tests.web.kube import bind, install_review, kubeconfig, person
from tests.web.support import ReviewServer
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from tools.redact import Redactor
from triage.agent.intake import parse
from triage.app import App
from triage.core import metrics
from triage.core.models import Claim, RCADraft
from triage.core.settings import ReviewSettings, Settings, StateSettings
from triage.reports.store import KubeReportStore
from triage.web.review import build_review

pytestmark = pytest.mark.cluster
TRIAGE = str(Path(sys.executable).with_name("triage"))
DRAFT = RCADraft(
    title="RCA: api is OOMKilled",
    summary="api restarts.",
    root_cause_class="oom_killed",
    impact="Requests fail.",
    root_cause=(Claim(text="api was OOMKilled at 256Mi", evidence=("E1",)),),
)


def _triage(*args: str, config: Path, state: Path) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(state),
        "KUBECONFIG": str(config),
        "TRIAGE_STATE__DIR": str(state),
    }
    return subprocess.run(
        [TRIAGE, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_a_dispute_from_the_cli_lands_with_the_reviewer_and_moves_the_metric(
    control_plane, namespace, tmp_path
) -> None:
    install_review(control_plane)
    reader = control_plane.api_client(control_plane.reader_kubeconfig)
    store = KubeReportStore(reader)
    ref = store.submit(
        namespace,
        parse(f"api in {namespace} restarts, write the RCA", now=0),
        DRAFT,
        attempt=1,
        run_id=f"cli:{namespace}",
    )
    store.publish(ref, {"outcome": "verified", "attempts": 1})
    reviewer = kubeconfig(control_plane, person(control_plane, namespace, "rev"), tmp_path / "rev")
    viewer = kubeconfig(control_plane, person(control_plane, namespace, "viewer"), tmp_path / "v")
    bind(
        control_plane,
        namespace,
        "triage-report-reviewer",
        {"kind": "ServiceAccount", "name": "rev", "namespace": namespace},
    )
    bind(
        control_plane,
        namespace,
        "triage-report-viewer",
        {"kind": "ServiceAccount", "name": "viewer", "namespace": namespace},
    )

    settings = Settings(state=StateSettings(dir=tmp_path), review=ReviewSettings(refresh_s=1))
    product = App(
        settings=settings,
        tools=ReadRegistry(KubeReader(reader)),
        store=store,
        policy=Policy(),
        redactor=Redactor(),
        api_client=reader,
    )
    parts = build_review(settings, product)
    assert parts is not None
    counter = metrics.REVIEWS.labels(outcome="verified", review="disputed")
    with ReviewServer(parts) as server:
        index = server.server.config.app.app.state.index
        control_plane.wait_for(lambda: index.reads >= 1, 30, "the server's first read")
        before = counter._value.get()

        refused = _triage(
            "reports",
            "review",
            ref.name,
            "-n",
            namespace,
            "--confirm",
            config=viewer,
            state=tmp_path,
        )
        assert refused.returncode == 3, refused.stderr
        assert "may not review" in refused.stderr
        untouched = store.get(namespace, ref.name)
        assert untouched is not None
        assert "review" not in untouched["status"]

        done = _triage(
            "reports",
            "review",
            ref.name,
            "-n",
            namespace,
            "--dispute",
            "the limit was raised an hour before; it is a leak",
            config=reviewer,
            state=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert f"disputed by kube:system:serviceaccount:{namespace}:rev" in done.stdout

        # The server was not told: it finds the review when it next reads the reports.
        control_plane.wait_for(lambda: counter._value.get() >= before + 1, 30, "the metric")
        time.sleep(1.5)  # another refresh or two must not count it again
        assert counter._value.get() == before + 1

    stored = store.get(namespace, ref.name)
    assert stored is not None
    review = stored["status"]["review"]
    assert review["by"] == f"kube:system:serviceaccount:{namespace}:rev"
    assert review["via"] == "cli"
    assert review["verdict"] == "disputed"
    assert review["note"] == "the limit was raised an hour before; it is a leak"
    assert review["outcome"] == "verified"

    listed = _triage(
        "reports", "list", "-n", namespace, "-o", "json", config=viewer, state=tmp_path
    )
    (row,) = valid(listed.stdout, kind="ReportList")["items"]
    assert row["review"] == "disputed"
    assert row["reviewed_by"] == review["by"]
    shown = _triage("reports", "show", ref.name, "-n", namespace, config=viewer, state=tmp_path)
    assert "review **disputed** by kube:system:serviceaccount:" in shown.stdout
    whole = _triage(
        "reports", "show", ref.name, "-n", namespace, "-o", "yaml", config=viewer, state=tmp_path
    )
    assert valid(whole.stdout, kind="RCAReport", as_yaml=True)["status"]["review"] == review
    assert "it is a leak" in shown.stdout
    reader.close()


def test_review_needs_one_verdict(tmp_path) -> None:
    out = _triage(
        "reports", "review", "rca-x", "-n", "shop", config=tmp_path / "none", state=tmp_path
    )
    assert out.returncode == 2
    assert "--confirm or --dispute" in out.stderr
