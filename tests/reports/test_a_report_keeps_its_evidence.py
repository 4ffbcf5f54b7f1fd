"""A stored report is self-contained: the evidence its claims cite (id, tool, arguments, status,
redacted excerpt, digest) is kept with it, bounded so the object always fits in etcd, and read
back after the run's process has gone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.contract import valid
from tests.judge.support import install_reports
from tests.support.scenario_format import SCENARIO_DIR
from tests.support.scenarios import apply_scenario, load_scenario
from tools.redact import Redactor
from tools.results import ToolStatus
from triage.agent.intake import parse
from triage.core.models import Claim, Evidence, RCADraft
from triage.reports import evidence as bounds
from triage.reports.store import KubeReportStore, manifest

# A log line as tools quote it. (Not a run of one letter: tools/redact.py's URL-credentials
# pattern takes time quadratic in the length of such a run, which is that module's concern.)
LOG = "2026-11-29T21:23:16Z FATAL env DATABASE_URL is not a valid URL: missing scheme; "
ETCD_LIMIT = 1_572_864  # etcd's default --max-request-bytes: 1.5 MiB
ROOT = Path(__file__).resolve().parents[2]


def _evidence(
    count: int, excerpt_chars: int, cited_every: int = 5
) -> tuple[RCADraft, list[Evidence]]:
    evidence = [
        Evidence(
            id=f"E{i}",
            tool="prom.range" if i % 2 else "k8s.logs",
            args={"namespace": "shop", "query": "sum(rate(x[5m])) " * 200, "pod": f"api-{i}"},
            status=ToolStatus.OK if i % 7 else ToolStatus.ERROR,
            excerpt=(f"line {i} password=hunter2 " + LOG * (excerpt_chars // len(LOG) + 1))[
                :excerpt_chars
            ],
            digest=f"sha256:{i:064x}",
        )
        for i in range(1, count + 1)
    ]
    cited = [e.id for e in evidence if e.ok and int(e.id[1:]) % cited_every == 0]
    draft = RCADraft(
        title="api crash-loops",
        summary="api is in CrashLoopBackOff.",
        root_cause_class="bad_config",
        impact="Requests fail.",
        root_cause=tuple(Claim(text=f"fact {c}", evidence=(c,)) for c in cited),
    )
    return draft, evidence


def _size(obj: object) -> int:
    return len(json.dumps(obj, separators=(",", ":")).encode())


def test_200_evidence_items_with_huge_outputs_stay_under_the_etcd_limit() -> None:
    draft, evidence = _evidence(200, 50_000)
    goal = parse("api in shop is down, write the RCA", now=0)
    body = manifest("rca-x", "shop", goal, draft, attempt=1, run_id="cli:x", evidence=evidence)
    assert _size(body) < ETCD_LIMIT // 2  # room for the status and the metadata
    records = {r["id"]: r for r in body["spec"]["evidence"]}
    # Every cited record is there, with an excerpt a reader can check, redacted.
    for cited in draft.cited_ids():
        assert records[cited]["cited"] is True
        assert records[cited]["excerpt"].startswith(f"line {cited[1:]} ")
        assert "hunter2" not in records[cited]["excerpt"]
        assert records[cited]["digest"] == f"sha256:{int(cited[1:]):064x}"
        assert records[cited]["args"]["pod"] == f"api-{cited[1:]}"
    assert body["spec"]["evidenceTotal"] == 200
    assert body["spec"]["evidenceOmitted"] == 200 - len(records)
    assert all("data" not in r for r in body["spec"]["evidence"])  # raw output never stored


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    count=st.integers(min_value=0, max_value=400),
    excerpt_chars=st.integers(min_value=0, max_value=20_000),
    cited_every=st.integers(min_value=1, max_value=50),
)
def test_the_bound_holds_and_keeps_every_cited_record(
    count: int, excerpt_chars: int, cited_every: int
) -> None:
    draft, evidence = _evidence(count, excerpt_chars, cited_every)
    records, omitted = bounds.bounded(evidence, draft.cited_ids(), Redactor())
    assert _size(records) <= bounds.BUDGET_BYTES
    assert len(records) <= bounds.MAX_RECORDS
    kept = {r["id"] for r in records}
    if len(draft.cited_ids()) <= bounds.MAX_RECORDS:
        assert draft.cited_ids() <= kept
    else:  # more citations than records: all kept records are cited ones
        assert kept <= draft.cited_ids()
    assert omitted == count - len(records)
    # Kept in run order, so E2 still reads before E10.
    order = [int(r["id"][1:]) for r in records]
    assert order == sorted(order)


@pytest.mark.cluster
def test_a_report_with_200_evidence_items_is_accepted_by_the_apiserver(
    control_plane, namespace
) -> None:
    install_reports(control_plane)
    draft, evidence = _evidence(200, 50_000, cited_every=2)
    goal = parse(f"api in {namespace} is down, write the RCA", now=0)
    with control_plane.api_client(control_plane.reader_kubeconfig) as api:
        store = KubeReportStore(api)
        ref = store.submit(namespace, goal, draft, attempt=1, run_id="cli:big", evidence=evidence)
        store.publish(ref, {"outcome": "rejected", "missing": ["x" * 480] * 100})
        stored = store.get(namespace, ref.name)
    assert stored is not None
    assert _size(stored) < ETCD_LIMIT
    ids = {r["id"] for r in stored["spec"]["evidence"]}
    assert draft.cited_ids() <= ids
    assert len(stored["status"]["missing"]) == 100


def _triage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("triage")), *args],  # the installed command
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=180,
        check=False,
    )


@pytest.mark.cluster
def test_reports_show_lists_the_cited_evidence_after_the_run_has_exited(
    control_plane, tmp_path
) -> None:
    install_reports(control_plane)
    scenario = load_scenario(SCENARIO_DIR / "crashloop-bad-env.yaml")
    apply_scenario(control_plane, scenario)
    ns = scenario.namespace
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "KUBECONFIG": str(control_plane.reader_kubeconfig),
        "TRIAGE_STATE__DIR": str(tmp_path / "state"),
    }
    run = _triage(
        "investigate",
        f"checkout-api in {ns} returns 503, write the RCA",
        "-o",
        "json",
        "-q",
        env=env,
    )
    assert run.returncode in (0, 5), run.stderr
    written = json.loads(run.stdout)
    name = written["verification"]["report"]["name"]
    cited = set(RCADraft.model_validate(written["draft"]).cited_ids())
    excerpts = {e["id"]: e["excerpt"] for e in written["evidence"]}
    assert cited

    # A new process, reading only the cluster.
    shown = _triage("reports", "show", name, "-n", ns, "-o", "markdown", env=env)
    assert shown.returncode == 0, shown.stderr
    table = {
        line.split("|")[1].strip(): line
        for line in shown.stdout.splitlines()
        if line.startswith("| E")
    }
    for evidence_id in cited:
        assert evidence_id in table, shown.stdout
        assert excerpts[evidence_id][:60].replace("|", "\\|") in table[evidence_id]
    assert f"{written['evidence'].__len__()} tool calls" in shown.stdout
    assert "## Attempts" in shown.stdout
    assert "## Spend by role" in shown.stdout
    assert "## Timings" in shown.stdout

    whole = _triage("reports", "show", name, "-n", ns, "-o", "json", env=env)
    obj = valid(whole.stdout, kind="RCAReport")  # the stored object, against its shipped schema
    assert {r["id"] for r in obj["spec"]["evidence"]} >= cited
    assert obj["status"]["attemptLog"][0]["toolCalls"] == len(written["evidence"])
    assert obj["status"]["planner"] == "rules"
    assert obj["status"]["timings"]["seconds"] >= 0
