"""A pod that names a scheduler of its own (spec.schedulerName, kept from another cluster) and
that no scheduler has acted on minutes after its creation — unbound, no scheduling event — is
Pending because no scheduler of that name runs: the answer names the field, the scheduler, and
that the default kube-scheduler only takes pods that name it. A young pod, or one that names
the default scheduler, is not said to be so."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tools.read.shapes import pod as shaped_pod
from tools.results import ToolStatus
from triage.agent.intake import parse
from triage.agent.planners.rules.analyzers.scheduling import pending
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import Facts
from triage.core.causes import CauseClass
from triage.core.models import Evidence

NS = "docs"
NOW = 1_800_000_000.0
schedulers = st.from_regex(
    r"[a-z]{2,8}(\.[a-z]{2,5})?/[a-z]{3,10}(-[a-z]{3,10})?-scheduler", fullmatch=True
)


def _pod(name: str, age_s: float, scheduler: str | None, node: str | None) -> dict[str, Any]:
    created = datetime.fromtimestamp(NOW - age_s, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    spec: dict[str, Any] = {"containers": [{"name": "api", "image": "x"}]}
    if scheduler:
        spec["schedulerName"] = scheduler
    if node:
        spec["nodeName"] = node
    obj = {
        "metadata": {"name": name, "namespace": NS, "creationTimestamp": created},
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }
    return dict(shaped_pod(obj))


def _findings(pods: list[dict[str, Any]]) -> list[Any]:
    facts = Facts(
        [
            Evidence(
                id="e1",
                tool="k8s.pods",
                args={"namespace": NS},
                status=ToolStatus.OK,
                excerpt="",
                digest="",
                data=pods,
            )
        ]
    )
    ctx = Ctx(
        goal=parse("why are the pods Pending?", now=NOW, namespace=NS), facts=facts, ns=NS, now=NOW
    )
    ctx.focus_pods = facts.pods(NS)[0]
    return pending(ctx)


@given(scheduler=schedulers, age=st.floats(130, 86_400))
def test_a_pod_no_scheduler_of_its_name_took_is_explained(scheduler: str, age: float) -> None:
    found = _findings(
        [
            _pod("api-7d9f-abcde", age, scheduler, None),
            _pod("worker-5c8b-fghij", age, None, "node-1"),
        ]
    )
    assert len(found) == 1
    finding = found[0]
    assert finding.cls is CauseClass.UNSCHEDULABLE_PLACEMENT
    assert f"schedulerName {scheduler}" in finding.cause
    assert "default-scheduler" in finding.cause
    assert "worker-5c8b-fghij" in finding.cause  # the default scheduler does place others


@given(scheduler=schedulers, age=st.floats(0, 110))
def test_a_young_pod_or_the_default_scheduler_is_not_said_to_wait(
    scheduler: str, age: float
) -> None:
    assert _findings([_pod("api-7d9f-abcde", age, scheduler, None)]) == []
    assert _findings([_pod("api-7d9f-abcde", age + 600, "default-scheduler", None)]) == []
    assert _findings([_pod("api-7d9f-abcde", age + 600, None, None)]) == []
