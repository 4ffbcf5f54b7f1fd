"""The judge's gates on a candidate, without a cluster: the cluster's answers come from a
static read registry (a stand-in for the apiserver, like kmock), the judge is the real one."""

from __future__ import annotations

from typing import Any

from judge import Judge, JudgeInput
from judge.input import MAX_EXCERPT_CHARS, MAX_OUTCOMES
from tools.redact import Redactor
from tools.results import ErrorKind, ToolResult, ToolStatus
from triage.agent import intake
from triage.core.models import Claim, Evidence, RCADraft, draft_digest

NS = "shop"
POD_OOM = {
    "name": "api-1",
    "phase": "Running",
    "ready": False,
    "labels": {"app": "api"},
    "owner": {"kind": "ReplicaSet", "name": "api-5d8f"},
    "containers": [
        {
            "name": "api",
            "restarts": 3,
            "state": {"kind": "running"},
            "last_terminated": {"kind": "terminated", "reason": "OOMKilled", "exit_code": 137},
        }
    ],
}


class Cluster:
    """Answers read calls from fixed data; counts calls."""

    def __init__(self, **lists: list[dict[str, Any]]) -> None:
        self.lists = lists
        self.calls: list[str] = []

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        self.calls.append(name)
        if name == "k8s.namespace":
            return ToolResult(tool=name, args=args, status=ToolStatus.OK, excerpt="exists")
        items = self.lists.get(name.removeprefix("k8s."), [])
        status = ToolStatus.OK if items else ToolStatus.NO_DATA
        return ToolResult(tool=name, args=args, status=status, excerpt="", data=items)


def evidence(eid: str, status: ToolStatus = ToolStatus.OK, excerpt: str = "ok") -> Evidence:
    kind = ErrorKind.UNREACHABLE if status is ToolStatus.ERROR else None
    return Evidence(
        id=eid, tool="k8s.pods", args={}, status=status, excerpt=excerpt, digest="", error_kind=kind
    )


def draft(**changes: Any) -> RCADraft:
    base: dict[str, Any] = {
        "title": "api OOMKilled",
        "summary": "api is killed at its memory limit.",
        "root_cause_class": "oom_killed",
        "impact": "Requests fail while it restarts.",
        "root_cause": (Claim(text="api's container was OOMKilled", evidence=("E1",)),),
    }
    return RCADraft(**{**base, **changes})


def judge_input(candidate: RCADraft, ev: list[Evidence], words: str = "") -> JudgeInput:
    goal = intake.parse(words or f"api in {NS} keeps restarting, why?", now=1e9)
    return JudgeInput.build(goal, candidate, ev, redactor=Redactor())


def test_a_sound_answer_is_verified() -> None:
    verdict = Judge(Cluster(pods=[POD_OOM])).judge(
        judge_input(draft(), [evidence("E1")]), record=False
    )
    assert verdict.verified, verdict.missing


def test_a_claim_citing_error_evidence_is_missing() -> None:
    ev = [evidence("E1", ToolStatus.ERROR, "apiserver unreachable")]
    verdict = Judge(Cluster(pods=[POD_OOM])).judge(judge_input(draft(), ev), record=False)
    assert not verdict.verified
    assert any("cites E1" in m and "error, not ok" in m for m in verdict.missing)


def test_a_claim_citing_no_data_or_unrecorded_evidence_is_missing() -> None:
    candidate = draft(
        root_cause=(Claim(text="api was OOMKilled", evidence=("E1", "E9")),),
    )
    ev = [evidence("E1", ToolStatus.NO_DATA)]
    verdict = Judge(Cluster(pods=[POD_OOM])).judge(judge_input(candidate, ev), record=False)
    assert any("no_data, not ok" in m for m in verdict.missing)
    assert any("E9, which was never recorded" in m for m in verdict.missing)


def test_a_missing_section_is_missing() -> None:
    verdict = Judge(Cluster(pods=[POD_OOM])).judge(
        judge_input(draft(impact="", root_cause=()), [evidence("E1")]), record=False
    )
    assert "required section missing: impact" in verdict.missing
    assert "required section missing: root cause (no claim)" in verdict.missing


def test_a_root_cause_the_cluster_contradicts_is_missing() -> None:
    healthy = {**POD_OOM, "ready": True, "containers": [{"name": "api", "restarts": 0}]}
    verdict = Judge(Cluster(pods=[healthy])).judge(
        judge_input(draft(), [evidence("E1")]), record=False
    )
    assert any("'oom_killed' contradicts the cluster" in m for m in verdict.missing)


def test_no_fault_contradicted_by_a_failing_pod_is_missing() -> None:
    candidate = draft(root_cause_class="no_fault", root_cause=())
    candidate = candidate.model_copy(
        update={"root_cause": (Claim(text="all healthy", evidence=("E1",)),)}
    )
    verdict = Judge(Cluster(pods=[POD_OOM])).judge(
        judge_input(candidate, [evidence("E1")]), record=False
    )
    assert any("says no fault" in m for m in verdict.missing)


def test_a_requested_record_without_a_report_is_missing() -> None:
    inp = judge_input(draft(), [evidence("E1")], words=f"api in {NS} is down, write the RCA")
    verdict = Judge(Cluster(pods=[POD_OOM])).judge(inp, record=True)
    assert any("not submitted to the cluster" in m for m in verdict.missing)


def test_a_requested_restart_that_never_happened_is_missing() -> None:
    inp = judge_input(draft(), [evidence("E1")], words=f"restart api in {NS}")
    deployment = {"name": "api", "replicas": 1, "generation": 1, "observed_generation": 1}
    verdict = Judge(Cluster(pods=[POD_OOM], deployments=[deployment])).judge(inp, record=False)
    assert "requested restart deployment api in namespace shop was not performed" in verdict.missing


def test_the_input_is_bounded_and_redacted() -> None:
    secret = "password=hunter2hunter2"
    ev = [evidence(f"E{i}", excerpt=f"{secret} " + "x" * 1000) for i in range(1, 400)]
    inp = judge_input(draft(summary=f"db {secret}"), ev, words=f"api in {NS} {secret}")
    assert len(inp.outcomes) == MAX_OUTCOMES
    assert inp.outcomes_dropped == 399 - MAX_OUTCOMES
    assert inp.outcomes[0].id == "E1"  # the cited evidence is kept first
    assert all(len(o.excerpt) <= MAX_EXCERPT_CHARS for o in inp.outcomes)
    text = inp.model_dump_json()
    assert "hunter2" not in text
    assert inp.digest == draft_digest(draft(summary=f"db {secret}"))
