"""An application that creates objects itself (a dispatcher making a Job per request, an
operator writing ConfigMaps) gets the apiserver's refusal as a 403 and only logs it: no
controller records a FailedCreate event. The refusal's words are the same ones the ResourceQuota
and admission plugins give a controller (`jobs.batch "x" is forbidden: exceeded quota: q,
requested: …, used: …, limited: …`), so the answer reads them the same way, from the log, in
plain text or inside a JSON field. A refused pod is left to its controller's event; a line that
refuses nothing is no cause."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tools.read.shapes import pod as shaped_pod
from tools.read.shapes_kinds import deployment as shaped_deployment
from tools.read.shapes_kinds import job as shaped_job
from tools.read.shapes_kinds import resource_quota
from tools.results import ToolStatus
from triage.agent.intake import parse
from triage.agent.planners.rules.analyzers.scheduling import create_failures
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import Facts
from triage.core.causes import CauseClass
from triage.core.models import Evidence

NS = "reports"
NOW = 1_800_000_000.0
POD = "dispatcher-7d9f8c6b5-abcde"
names = st.from_regex(r"[a-z][a-z0-9-]{2,16}[a-z0-9]", fullmatch=True)
# object-count resources an application creates itself (ResourceQuota's count/<resource>)
made = st.sampled_from(["jobs.batch", "configmaps", "cronjobs.batch", "secrets", "services"])


DEPLOYMENT = shaped_deployment(
    {
        "metadata": {"name": "dispatcher"},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "dispatcher"}},
            "template": {
                "metadata": {"labels": {"app": "dispatcher"}},
                "spec": {"containers": [{"name": "dispatcher", "image": "dispatcher:3.0"}]},
            },
        },
    }
)


def _evidence(i: int, tool: str, data: Any, **args: Any) -> Evidence:
    return Evidence(
        id=f"e{i}",
        tool=tool,
        args={"namespace": NS, **args},
        status=ToolStatus.OK,
        excerpt="",
        digest="",
        data=data,
    )


def _findings(log: list[str], quota: str, resource: str, limit: int, ttl: bool) -> list[Any]:
    pod = shaped_pod(
        {
            "metadata": {
                "name": POD,
                "namespace": NS,
                "labels": {"app": "dispatcher", "pod-template-hash": "7d9f8c6b5"},
                "ownerReferences": [
                    {"kind": "ReplicaSet", "name": "dispatcher-7d9f8c6b5", "controller": True}
                ],
            },
            "spec": {"containers": [{"name": "dispatcher", "image": "x"}], "nodeName": "n1"},
            "status": {"phase": "Running"},
        }
    )
    jobs = [
        shaped_job(
            {
                "metadata": {"name": f"export-{i:05d}"},
                "spec": {"ttlSecondsAfterFinished": 600} if ttl else {},
                "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]},
            }
        )
        for i in range(limit)
    ]
    used = {f"count/{resource}": str(limit), "pods": "1"}
    hard = {f"count/{resource}": str(limit), "pods": "40"}
    facts = Facts(
        [
            _evidence(1, "k8s.pods", [pod]),
            _evidence(2, "k8s.events", [], warnings_only=True),
            _evidence(
                3,
                "k8s.resource_quotas",
                [
                    resource_quota(
                        {"metadata": {"name": quota}, "status": {"hard": hard, "used": used}}
                    )
                ],
            ),
            _evidence(4, "k8s.jobs", jobs),
            _evidence(5, "k8s.logs", log, pod=POD, container="dispatcher"),
            _evidence(6, "k8s.deployments", [DEPLOYMENT]),
        ]
    )
    ctx = Ctx(
        goal=parse("exports are stuck queued", now=NOW, namespace=NS), facts=facts, ns=NS, now=NOW
    )
    ctx.focus_pods = facts.pods(NS)[0]
    return create_failures(ctx)


def _refusal(resource: str, obj: str, quota: str, limit: int) -> str:
    r = f"count/{resource}"
    return (
        f'{resource} "{obj}" is forbidden: exceeded quota: {quota}, requested: {r}=1, '
        f"used: {r}={limit}, limited: {r}={limit}"
    )


@given(quota=names, obj=names, resource=made, limit=st.integers(1, 50), structured=st.booleans())
def test_a_quota_refusal_in_a_log_is_a_quota_cause(
    quota: str, obj: str, resource: str, limit: int, structured: bool
) -> None:
    refusal = _refusal(resource, obj, quota, limit)
    line = (
        json.dumps({"level": "ERROR", "msg": "create failed, will retry", "error": refusal})
        if structured
        else f"E1203 12:00:01.123 dispatcher.go:88] create failed: {refusal}"
    )
    found = _findings(["starting", line, "queue depth 12"], quota, resource, limit, ttl=True)
    assert len(found) == 1
    finding = found[0]
    assert finding.cls is CauseClass.QUOTA_EXCEEDED
    assert f"ResourceQuota {quota}" in finding.cause
    assert f"the {resource} dispatcher creates" in finding.cause
    assert f"count/{resource} {limit}/{limit}" in finding.cause
    assert '"}' not in finding.cause  # the JSON line's other fields are not the message


@given(quota=names, limit=st.integers(1, 30))
def test_finished_jobs_no_ttl_deletes_are_named_as_what_holds_the_quota(
    quota: str, limit: int
) -> None:
    line = _refusal("jobs.batch", "export-99999", quota, limit)
    kept = _findings([line], quota, "jobs.batch", limit, ttl=False)[0]
    assert f"{limit} finished Jobs with no ttlSecondsAfterFinished" in kept.cause
    assert "ttlSecondsAfterFinished" in kept.follow_ups[0]
    # Jobs a TTL will delete are still counted until then, but no TTL is missing
    timed = _findings([line], quota, "jobs.batch", limit, ttl=True)[0]
    assert "no ttlSecondsAfterFinished" not in timed.cause


@given(hook=names, obj=names)
def test_an_admission_refusal_in_a_log_names_the_webhook(hook: str, obj: str) -> None:
    line = json.dumps(
        {
            "level": "error",
            "error": f'jobs.batch "{obj}" is forbidden: admission webhook "{hook}.example.com" '
            "denied the request: every Job must carry a cost-center label",
        }
    )
    found = _findings([line], "q", "jobs.batch", 1, ttl=True)
    assert [f.cls for f in found] == [CauseClass.ADMISSION_WEBHOOK]
    assert f"admission webhook {hook}.example.com denies the jobs.batch" in found[0].cause
    assert "pod template" not in found[0].cause  # the Jobs were judged, not its own pods


def test_a_refused_pod_or_a_line_that_refuses_nothing_is_no_cause() -> None:
    pod_refusal = _refusal("pods", "dispatcher-x", "q", 3)  # the controller's event says it
    unrelated = 'jobs.batch "export-1" created'
    assert _findings([pod_refusal, unrelated], "q", "jobs.batch", 3, ttl=True) == []
