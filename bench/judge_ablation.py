"""Ablation: how often a run is called "done" when it is not, with the judge on and off.

    .venv/bin/python -m bench.judge_ablation [--runs 3] [--scenarios oomkilled,healthy]

Every scenario of tests/scenarios is asked for a written RCA ("… Write the RCA.") and run once
per fault below, with the judge on (the default policy) and off (`verification.enabled:
false`), `--runs` times each. Faults are injected at the wire (the scripted OpenAI-compatible
server the LLM worker and the judge's model talk to) or in the cluster (an identity without the
right, an admission policy, a real delete or edit of the report), never by replacing our code:

    clean                 no fault (the baseline: how often correct work is called done)
    write_rbac            the report is written as an identity without the right (403)
    write_admission       a ValidatingAdmissionPolicy refuses the report (422)
    report_deleted        an admin deletes the report right after the first submit
    report_changed        an admin edits the report's draft right after the first submit
    section_missing       the worker model's RCA has no impact section
    claim_error_evidence  the worker model cites a failed read (the LLM planner drops the claim)
    claim_contradicts     the worker model names a root cause the cluster contradicts
    mutation_not_done     the request asks for a restart that is never performed
    nonexistent_target    the request names a Deployment that does not exist
    judge_model_down      the judge's model answers HTTP 500
    budget_too_small      the budget cannot pay for the judge's model pass

A run is *called done* when its outcome is `verified` (judge on), or — judge off, the worker
grading itself — when it ended with a draft and its own report write did not fail. It is
*actually done* when an oracle that shares no code with the judge says so: the RCAReport (if
the request keeps something) is in the cluster holding exactly the returned candidate, the
candidate's root-cause class is the scenario's expected one, it has its sections and cites only
ok evidence, no restart was asked for (none is ever performed: the ledger is not in the graph
yet), and the target exists. False-"done" rate = called done but not actually done, over runs.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client

from policies import Policy
from policies.verification import VerificationPolicy
from tests.judge.support import REJECT_LABEL, install_reports, model_settings
from tests.support.controlplane import ControlPlane
from tests.support.fake_openai import FakeOpenAI
from tests.support.fake_openai import ToolCall as FakeToolCall
from tests.support.observability import openmetrics_from_series, start_prometheus
from tests.support.scenario_format import Scenario, load_scenarios, scenario_series
from tests.support.scenarios import load_all
from tools.read.kube import KubeReader
from tools.read.prometheus import PrometheusReader
from tools.read.registry import ReadRegistry
from tools.redact import Redactor
from tools.results import ToolStatus, digest
from triage.app import App, Request
from triage.core.settings import Settings, StateSettings
from triage.reports.store import KubeReportStore, report_name
from triage.verification.loop import CheckedRun, Outcome

GROUP, VERSION, PLURAL = "triage.dev", "v1alpha1", "rcareports"
MODEL = "openai:triage-test-model"
FAULTS = (
    "clean",
    "write_rbac",
    "write_admission",
    "report_deleted",
    "report_changed",
    "section_missing",
    "claim_error_evidence",
    "claim_contradicts",
    "mutation_not_done",
    "nonexistent_target",
    "judge_model_down",
    "budget_too_small",
)
EXPECTED_ON = {
    "clean": {"verified"},
    "write_rbac": {"rejected"},
    "write_admission": {"rejected"},
    "report_deleted": {"verified"},  # caught, and the retry writes it again
    "report_changed": {"verified"},  # caught, and the retry writes it again
    "section_missing": {"rejected"},
    "claim_error_evidence": {"rejected"},  # claim dropped by the worker; fallback inconclusive
    "claim_contradicts": {"rejected"},
    "mutation_not_done": {"rejected"},
    "nonexistent_target": {"rejected"},
    "judge_model_down": {"evaluator_unavailable"},
    "budget_too_small": {"budget_exhausted"},
}


@dataclass
class Rig:
    cp: ControlPlane
    admin: client.ApiClient
    reader: client.ApiClient
    mutator: client.ApiClient
    prom_url: str
    llm: FakeOpenAI
    work: Path

    def tools(self, prometheus: bool = True) -> ReadRegistry:
        prom = PrometheusReader(self.prom_url) if prometheus else None
        return ReadRegistry(KubeReader(self.reader, timeout_s=10), prom)


@dataclass
class Result:
    fault: str
    scenario: str
    judge: bool
    outcome: str
    attempts: int
    called_done: bool
    actually_done: bool
    why_not: str


def words_for(sc: Scenario, fault: str) -> str:
    if fault == "mutation_not_done":
        return f"restart {sc.target.name} in {sc.namespace} and write the RCA"
    if fault == "nonexistent_target":
        return f"deployment ghost-{sc.target.name} in {sc.namespace} is down, write the RCA"
    return f"{sc.rendered_question} Write the RCA."


def _rca(sc: Scenario, fault: str) -> dict[str, Any]:
    cls = sc.expect.root_cause_class.value
    if fault == "claim_contradicts":
        cls = "image_pull" if cls == "oom_killed" else "oom_killed"
    cite = "E2" if fault == "claim_error_evidence" else "E1"
    return {
        "title": f"{sc.target.name}: {cls}",
        "summary": f"{sc.target.name} fails: {cls} ({', '.join(sc.expect.keywords)}).",
        "root_cause_class": cls,
        "impact": "" if fault == "section_missing" else f"{sc.target.name} is degraded.",
        "root_cause": [{"text": f"{sc.target.name}: {cls}", "evidence": [cite]}],
    }


def script_worker(llm: FakeOpenAI, sc: Scenario, fault: str, attempts: int) -> None:
    """What the worker model says in each attempt (the same mistake every time)."""
    for _ in range(attempts):
        if fault == "claim_error_evidence":
            # read something that fails (no Prometheus for this worker), then cite it
            call = FakeToolCall("prom_query", {"query": "up"})
            llm.reply(tool_calls=[call], prompt_tokens=300, completion_tokens=20)
        llm.reply("The evidence is enough.", prompt_tokens=300, completion_tokens=10)
        llm.reply(
            tool_calls=[FakeToolCall("submit_rca", _rca(sc, fault))],
            prompt_tokens=300,
            completion_tokens=100,
        )


def oracle(rig: Rig, sc: Scenario, fault: str, run: CheckedRun, run_id: str) -> tuple[bool, str]:
    """Was the request really met? Reads the cluster as admin; shares no code with the judge."""
    draft = run.best.draft
    if draft is None:
        return False, "no candidate"
    if fault == "nonexistent_target":
        return False, "the target does not exist"
    if fault == "mutation_not_done":
        return False, "the restart was never performed"
    name = report_name(run_id)
    try:
        obj = client.CustomObjectsApi(rig.admin).get_namespaced_custom_object(
            GROUP, VERSION, sc.namespace, PLURAL, name
        )
    except client.ApiException:
        return False, "no RCAReport in the cluster"
    assert isinstance(obj, dict)
    stored = obj.get("spec", {}).get("draft")
    if digest(stored) != digest(draft.model_dump(mode="json")):
        return False, "the RCAReport does not hold the returned candidate"
    if draft.root_cause_class != sc.expect.root_cause_class:
        return False, f"wrong root cause ({draft.root_cause_class})"
    if not draft.impact.strip() or not (draft.root_cause or draft.inconclusive):
        return False, "a required section is empty"
    status = {e.id: e.status for e in run.best.evidence}
    if any(status.get(i) is not ToolStatus.OK for i in draft.cited_ids()):
        return False, "cites evidence that is not ok"
    return True, ""


def set_admission(rig: Rig, ns: str, reject: bool) -> None:
    core = client.CoreV1Api(rig.admin)
    core.patch_namespace(ns, {"metadata": {"labels": {REJECT_LABEL: "true" if reject else None}}})
    deadline = time.monotonic() + 30
    api = client.CustomObjectsApi(rig.reader)
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "RCAReport",
        "metadata": {"generateName": "probe-", "namespace": ns},
        "spec": {"request": "probe", "digest": "sha256:" + "0" * 64, "draft": {}},
    }
    while time.monotonic() < deadline:
        try:
            made: Any = api.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, body)
            client.CustomObjectsApi(rig.admin).delete_namespaced_custom_object(
                GROUP, VERSION, ns, PLURAL, made["metadata"]["name"]
            )
            refused = False
        except client.ApiException:
            refused = True
        if refused == reject:
            return
        time.sleep(0.2)
    msg = f"admission label on {ns} did not take effect"
    raise RuntimeError(msg)


def one_run(rig: Rig, sc: Scenario, fault: str, judge_on: bool) -> Result:
    """One checked run through the product's composition root (`App.checked_run`), with the
    fault injected at the wire (the scripted model server) or in the cluster."""
    verification = VerificationPolicy.model_validate(
        {
            "enabled": judge_on,
            "budget": {"max_tokens": 50 if fault == "budget_too_small" else 200_000},
            "pricing": {MODEL: {"input_per_mtok": 0.4, "output_per_mtok": 1.6}},
        }
    )
    words = words_for(sc, fault)
    rig.llm.reset()
    llm_worker = fault in ("section_missing", "claim_error_evidence", "claim_contradicts")
    settings = Settings(state=StateSettings(dir=rig.work, checkpointer="memory"))
    if llm_worker:
        settings.worker_model = model_settings(rig.llm.base_url, rig.llm.api_key, attempts=1)
        script_worker(rig.llm, sc, fault, verification.max_attempts)
    if fault in ("judge_model_down", "budget_too_small"):
        settings.judge_model = model_settings(rig.llm.base_url, rig.llm.api_key)
        if fault == "judge_model_down":
            rig.llm.fail(500, times=10)
    writer = rig.mutator if fault == "write_rbac" else rig.reader
    product = App(
        settings=settings,
        tools=rig.tools(prometheus=not llm_worker),
        store=KubeReportStore(writer),
        policy=Policy(verification=verification),
        redactor=Redactor(),
    )
    run_id = f"bench:{uuid.uuid4()}"
    request = Request(words=words, run_id=run_id, planner="llm" if llm_worker else "rules")
    if fault == "write_admission":
        set_admission(rig, sc.namespace, True)
    try:
        run = product.checked_run(request, on_progress=_hook(rig, fault))
    finally:
        if fault == "write_admission":
            set_admission(rig, sc.namespace, False)
    if judge_on:
        called = run.outcome is Outcome.VERIFIED
    else:
        last = run.attempts[-1]
        called = run.best.draft is not None and last.submit_error is None
    actual, why = oracle(rig, sc, fault, run, run_id)
    with contextlib.suppress(client.ApiException):  # leave the scenario namespaces as found
        client.CustomObjectsApi(rig.admin).delete_namespaced_custom_object(
            GROUP, VERSION, sc.namespace, PLURAL, report_name(run_id)
        )
    return Result(
        fault, sc.name, judge_on, run.outcome.value, len(run.attempts), called, actual, why
    )


def _hook(rig: Rig, fault: str) -> Callable[[dict[str, Any]], None] | None:
    if fault not in ("report_deleted", "report_changed"):
        return None
    api = client.CustomObjectsApi(rig.admin)
    done: list[str] = []

    def hook(event: dict[str, Any]) -> None:
        if "submitted" not in event or done:
            return
        ns, name = event["submitted"].split("/")
        if fault == "report_deleted":
            api.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
        else:
            patch = {"spec": {"draft": {"summary": "Nothing happened; no action needed."}}}
            api.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name, patch)
        done.append(name)

    return hook


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per fault, scenario and mode")
    parser.add_argument("--scenarios", default="", help="comma-separated names (default: all)")
    parser.add_argument("--faults", default="", help="comma-separated faults (default: all)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    cp = ControlPlane.start_or_reuse()
    install_reports(cp)
    scenarios = load_scenarios(split="dev")
    if args.scenarios:
        wanted = set(args.scenarios.split(","))
        scenarios = [s for s in scenarios if s.name in wanted]
    faults = [f for f in FAULTS if not args.faults or f in args.faults.split(",")]
    load_all(cp, scenarios)
    work = Path(tempfile.mkdtemp(prefix="triage-ablation-"))
    prom = start_prometheus(
        openmetrics_from_series(scenario_series(scenarios), time.time()), workdir=work / "prom"
    )
    llm = FakeOpenAI().start()
    rig = Rig(
        cp,
        cp.api_client(),
        cp.api_client(cp.reader_kubeconfig),
        cp.api_client(cp.mutator_kubeconfig),
        prom.url,
        llm,
        work,
    )
    print(f"setup: {time.perf_counter() - t0:.1f}s; {len(scenarios)} scenarios, runs={args.runs}")
    results: list[Result] = []
    try:
        for fault in faults:
            for sc in sorted(scenarios, key=lambda s: s.name):
                for judge_on in (True, False):
                    for _ in range(args.runs):
                        results.append(one_run(rig, sc, fault, judge_on))
    finally:
        llm.stop()
        prom.stop()
    report(results)
    print(f"\ntotal {time.perf_counter() - t0:.0f}s")


def report(results: list[Result]) -> None:
    by: dict[tuple[str, bool], list[Result]] = defaultdict(list)
    for r in results:
        by[(r.fault, r.judge)].append(r)
    header = (
        f"{'fault':22} {'judge':5} {'runs':>4} {'false done':>10} {'done':>5} "
        f"{'expected outcome':>16}  outcomes"
    )
    print("\n" + header + "\n" + "-" * len(header))
    for (fault, judge_on), rs in by.items():
        false_done = sum(r.called_done and not r.actually_done for r in rs)
        done = sum(r.called_done for r in rs)
        outcomes: dict[str, int] = defaultdict(int)
        for r in rs:
            outcomes[r.outcome] += 1
        expected = (
            f"{sum(r.outcome in EXPECTED_ON[fault] for r in rs)}/{len(rs)}" if judge_on else "-"
        )
        print(
            f"{fault:22} {'on' if judge_on else 'off':5} {len(rs):4d} "
            f"{false_done / len(rs):10.1%} {done:5d} {expected:>16}  "
            + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))
        )
    for judge_on in (True, False):
        rs = [r for r in results if r.judge == judge_on and r.fault != "clean"]
        clean = [r for r in results if r.judge == judge_on and r.fault == "clean"]
        if rs:
            rate = sum(r.called_done and not r.actually_done for r in rs) / len(rs)
            print(
                f"\njudge {'on ' if judge_on else 'off'}: false-done rate over faulted runs "
                f"{rate:.1%} ({len(rs)} runs)"
                + (
                    f"; clean runs called done {sum(r.called_done for r in clean)}/{len(clean)}"
                    if clean
                    else ""
                )
            )
    wrong = [r for r in results if r.called_done and not r.actually_done]
    for r in wrong[:20]:
        print(
            f"  false done: {r.fault} {r.scenario} judge={'on' if r.judge else 'off'}: {r.why_not}"
        )


if __name__ == "__main__":
    main()
