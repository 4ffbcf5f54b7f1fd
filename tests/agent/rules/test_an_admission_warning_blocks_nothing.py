"""A warning pasted from `kubectl apply` (a ValidatingAdmissionPolicy in Warn mode, Pod
Security in warn mode) is explained as admitted. That nothing is blocked is said only when the
asked workload has rolled out since; otherwise the answer says that is not known."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tools.read.shapes_kinds import deployment
from tools.results import ToolStatus
from triage.agent.intake import parse
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import Facts
from triage.agent.planners.rules.reasons import admission_warning_explained
from triage.core.models import Evidence

NS = "shop"
NOW = 1_800_000_000.0
WARNINGS = [
    "Warning: Validation failed for ValidatingAdmissionPolicy 'require-team-label' with binding "
    "'require-team-label-warn': labels must include team",
    'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false',
]


def _deployment(replicas: int, updated: int, available: int) -> dict[str, Any]:
    obj = {
        "metadata": {"name": "web", "namespace": NS, "annotations": {}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}},
        },
        "status": {
            "replicas": replicas,
            "updatedReplicas": updated,
            "availableReplicas": available,
        },
    }
    return dict(deployment(obj))


def _said(warning: str, replicas: int, updated: int, available: int) -> str:
    facts = Facts(
        [
            Evidence(
                id="e1",
                tool="k8s.deployments",
                args={"namespace": NS},
                status=ToolStatus.OK,
                excerpt="",
                digest="",
                data=[_deployment(replicas, updated, available)],
            )
        ]
    )
    goal = parse(
        f"I got this when applying:\n{warning}\nis anything broken?", now=NOW, namespace=NS
    )
    claims = [
        c for c in admission_warning_explained(Ctx(goal=goal, facts=facts, ns=NS, now=NOW)) if c
    ]
    assert len(claims) == 1
    return claims[0].text


@given(warning=st.sampled_from(WARNINGS), replicas=st.integers(1, 6))
def test_a_rolled_out_workload_is_not_blocked(warning: str, replicas: int) -> None:
    said = _said(warning, replicas, replicas, replicas)
    assert "admitted" in said
    assert "Nothing is blocked now" in said
    assert f"{replicas}/{replicas} updated" in said


@given(warning=st.sampled_from(WARNINGS), replicas=st.integers(2, 6), short=st.integers(1, 2))
def test_a_workload_not_rolled_out_is_not_said_to_be_unblocked(
    warning: str, replicas: int, short: int
) -> None:
    said = _said(warning, replicas, replicas - min(short, replicas - 1), replicas - 1)
    assert "admitted" in said
    assert "Nothing is blocked" not in said
    assert "not known" in said
