"""A root cause's cluster signature is checked on the pods of what the causal chain names, not
anywhere in the namespace: an OOMKilled pod of `batch` does not make "checkout was OOMKilled"
true, a misspelt or unknown workload has no pods, a chain that names no workload is checked on
what was asked about, and a read that fails is "could not confirm", never a pass.

Cases written from the shapes an outside review tried (lower-case kinds, a Job labelled only
with batch.kubernetes.io/job-name, a subject in another form)."""

from __future__ import annotations

from typing import Any

import pytest

from judge import Judge, JudgeInput
from tools.redact import Redactor
from tools.results import ErrorKind, ToolResult, ToolStatus
from triage.agent import intake
from triage.core.models import Claim, Evidence, LinkRole, RCADraft

NS = "shop"


def _pod(name: str, owner: tuple[str, str], labels: dict[str, str], oom: bool) -> dict[str, Any]:
    last = {"kind": "terminated", "reason": "OOMKilled", "exit_code": 137} if oom else None
    return {
        "name": name,
        "phase": "Running",
        "ready": not oom,
        "labels": labels,
        "owner": {"kind": owner[0], "name": owner[1]},
        "containers": [
            {"name": "app", "restarts": 3 if oom else 0, "ready": not oom, "last_terminated": last}
        ],
    }


PODS = [
    _pod("batch-5d8f-aaaaa", ("ReplicaSet", "batch-5d8f"), {"app": "batch"}, oom=True),
    _pod("checkout-7c9d-bbbbb", ("ReplicaSet", "checkout-7c9d"), {"app": "checkout"}, oom=False),
    _pod("report-ccccc", ("Job", "report"), {"batch.kubernetes.io/job-name": "report"}, oom=True),
    # shares checkout's labels, owned by something else
    _pod("impostor", ("ReplicaSet", "other-1a2b"), {"app": "checkout"}, oom=True),
]
DEPLOYMENTS = [
    {"name": "batch", "selector": {"app": "batch"}, "replicas": 1, "available": 0},
    {"name": "checkout", "selector": {"app": "checkout"}, "replicas": 1, "available": 1},
]


def _matches(pod: dict[str, Any], args: dict[str, Any]) -> bool:
    for pair in filter(None, str(args.get("label_selector") or "").split(",")):
        key, _, value = pair.partition("=")
        if pod["labels"].get(key) != value:
            return False
    field = str(args.get("field_selector") or "")
    return not field or pod["name"] == field.removeprefix("metadata.name=")


class Cluster:
    """The judge's reads from fixed data, honouring selectors the way the apiserver does."""

    def __init__(self, broken: str | None = None, logs: dict[str, list[str]] | None = None) -> None:
        self.broken = broken
        self.pod_reads: list[dict[str, Any]] = []
        self.logs = logs or {}

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if name == self.broken:
            return ToolResult(
                tool=name, args=args, status=ToolStatus.ERROR, excerpt="refused",
                error_kind=ErrorKind.UNREACHABLE,
            )  # fmt: skip
        data: Any = []
        if name == "k8s.namespace":
            data = {"name": NS}
        elif name == "k8s.pods":
            self.pod_reads.append(args)
            data = [p for p in PODS if _matches(p, args)]
        elif name == "k8s.deployments":
            data = DEPLOYMENTS
        elif name == "k8s.logs" and not args.get("previous"):
            data = self.logs.get(str(args.get("pod")), [])
        status = ToolStatus.OK if data else ToolStatus.NO_DATA
        return ToolResult(tool=name, args=args, status=status, excerpt="", data=data)


def _verdict(subject: str | None, words: str, cluster: Cluster) -> list[str]:
    ev = Evidence(id="E1", tool="k8s.pods", args={}, status=ToolStatus.OK, excerpt="ok", digest="")
    candidate = RCADraft(
        title="OOM",
        summary="killed at its memory limit",
        root_cause_class="oom_killed",
        impact="requests fail",
        root_cause=(
            Claim(
                text="the container was OOMKilled",
                evidence=("E1",),
                role=LinkRole.CAUSE,
                subject=subject,
            ),
        ),
    )
    goal = intake.parse(f"{words} in namespace {NS}", now=1e9)
    inp = JudgeInput.build(goal, candidate, [ev], redactor=Redactor())
    verdict = Judge(cluster).judge(inp, record=False)
    return [*verdict.met, *verdict.missing]


@pytest.mark.parametrize(
    ("subject", "agrees"),
    [
        ("Deployment/shop/batch", True),
        ("deployment/shop/batch", True),  # the kind in any case
        ("Deployment/shop/checkout", False),  # another workload's OOM, an impostor's labels
        ("Deployment/shop/checkout-typo", False),  # names nothing: no pods
        ("Deployment/shop/batch/extra", False),
        ("Job/shop/report", True),  # labelled batch.kubernetes.io/job-name only
        ("Pod/shop/batch-5d8f-aaaaa", True),
        ("ReplicaSet/shop/checkout-7c9d", False),
    ],
)
def test_the_signature_is_on_the_named_workloads_pods(subject: str, agrees: bool) -> None:
    lines = _verdict(subject, "why does it keep restarting", Cluster())
    assert any("'oom_killed' agrees with the cluster" in x for x in lines) is agrees
    assert any("'oom_killed' contradicts the cluster" in x for x in lines) is not agrees


def test_a_chain_naming_no_workload_is_checked_on_what_was_asked_about() -> None:
    lines = _verdict(None, "why does checkout-7c9d-bbbbb keep restarting", Cluster())
    assert any("'oom_killed' contradicts the cluster" in x for x in lines)
    lines = _verdict(None, "why does batch keep restarting", Cluster())
    assert any("'oom_killed' agrees with the cluster" in x for x in lines)


def test_a_failed_read_is_not_a_pass() -> None:
    lines = _verdict("Deployment/shop/batch", "why", Cluster(broken="k8s.deployments"))
    assert any("could not read the cluster to confirm 'oom_killed'" in x for x in lines)


def test_the_workload_is_read_by_its_selector_not_the_whole_namespace() -> None:
    cluster = Cluster()
    _verdict("Deployment/shop/batch", "why", cluster)
    assert cluster.pod_reads
    assert all(r.get("label_selector") or r.get("field_selector") for r in cluster.pod_reads)


RESOLVE = "[ioredis] Unhandled error event: Error: getaddrinfo ENOTFOUND coupon-redis.cache"


def _config_verdict(cluster: Cluster) -> list[str]:
    ev = Evidence(id="E1", tool="k8s.logs", args={}, status=ToolStatus.OK, excerpt="ok", digest="")
    candidate = RCADraft(
        title="DNS",
        summary="lookups fail",
        root_cause_class="bad_config",
        impact="requests fail",
        root_cause=(
            Claim(
                text=f"Revision 2 of checkout changed dnsPolicy ClusterFirst → Default; names "
                f"resolve through the pod's DNS settings, and the new pods fail with: {RESOLVE}",
                evidence=("E1",),
                role=LinkRole.CAUSE,
                subject="Deployment/shop/checkout",
            ),
        ),
    )
    goal = intake.parse(f"checkout returns 500s in namespace {NS}", now=1e9)
    inp = JudgeInput.build(goal, candidate, [ev], redactor=Redactor())
    verdict = Judge(cluster).judge(inp, record=False)
    return [*verdict.met, *verdict.missing]


def test_a_setting_that_fails_requests_of_ready_pods_is_checked_in_their_log() -> None:
    """checkout's pods are Ready: the judge's own read of their log must show the quoted line."""
    logged = Cluster(logs={"checkout-7c9d-bbbbb": ["GET /healthz 200", RESOLVE + " (retrying)"]})
    lines = _config_verdict(logged)
    assert any("'bad_config' agrees with the cluster" in x and "quotes" in x for x in lines)

    clean = Cluster(logs={"checkout-7c9d-bbbbb": ["GET /healthz 200", "GET /v1/coupons 200"]})
    lines = _config_verdict(clean)
    assert any("'bad_config' contradicts the cluster" in x for x in lines)


def _regression(cause_tool: str) -> list[str]:
    history = Evidence(
        id="E1", tool="k8s.rollout_history", args={}, status=ToolStatus.OK, excerpt="ok", digest=""
    )
    cause = Evidence(
        id="E2", tool=cause_tool, args={}, status=ToolStatus.OK, excerpt="ok", digest=""
    )
    candidate = RCADraft(
        title="regression",
        summary="errors rose after the deploy",
        root_cause_class="regression_after_deploy",
        impact="requests fail",
        root_cause=(
            Claim(
                text="checkout rolled out revision 2 as the error ratio rose",
                evidence=("E1", "E2"),
                role=LinkRole.CAUSE,
                subject="Deployment/shop/checkout",
            ),
        ),
    )
    goal = intake.parse(f"why does checkout return 500s in namespace {NS}", now=1e9)
    inp = JudgeInput.build(goal, candidate, [history, cause], redactor=Redactor())
    return [*Judge(Cluster()).judge(inp, record=False).missing]


def test_a_release_is_blamed_for_what_it_does_not_for_when_it_happened() -> None:
    assert any("timing alone" in m for m in _regression("k8s.deployments"))
    assert not any("timing alone" in m for m in _regression("k8s.logs"))
