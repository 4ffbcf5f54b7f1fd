"""Under a PodDisruptionBudget's unhealthyPodEvictionPolicy IfHealthyBudget (the default when
the field is unset), a Running pod that is not Ready may be evicted only while the budget is
met: when too few pods are healthy, even the ones that serve nothing are refused. The answer
says which policy applies and that AlwaysAllow lets such pods go; a budget that sets
AlwaysAllow, or one that is met, or pods that are not Running, get no such words."""

from __future__ import annotations

from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from tools.read.shapes_kinds import pdb as shaped_pdb
from triage.agent.planners.rules.analyzers.workloads import _if_healthy


def _budget(policy: str | None, healthy: int, desired: int) -> p.PDB:
    spec: dict[str, object] = {"minAvailable": desired, "selector": {"matchLabels": {"a": "b"}}}
    if policy:
        spec["unhealthyPodEvictionPolicy"] = policy
    status = {"currentHealthy": healthy, "desiredHealthy": desired, "disruptionsAllowed": 0}
    return shaped_pdb({"metadata": {"name": "api"}, "spec": spec, "status": status})


def _pods(n: int, phase: str) -> list[p.Pod]:
    return [cast(p.Pod, {"name": f"api-{i}", "phase": phase, "ready": False}) for i in range(n)]


@given(
    unready=st.integers(1, 5),
    desired=st.integers(1, 5),
    policy=st.sampled_from([None, "IfHealthyBudget"]),
)
def test_unready_pods_a_budget_not_met_keeps_are_explained(
    unready: int, desired: int, policy: str | None
) -> None:
    said = _if_healthy(_budget(policy, 0, desired), _pods(unready, "Running"))
    assert "AlwaysAllow" in said
    assert f"currentHealthy 0 >= desiredHealthy {desired}" in said
    assert ("the default" in said) == (policy is None)


def test_always_allow_a_met_budget_or_pods_not_running_are_not() -> None:
    running = _pods(2, "Running")
    assert _if_healthy(_budget("AlwaysAllow", 0, 2), running) == ""
    assert _if_healthy(_budget(None, 2, 2), running) == ""
    assert _if_healthy(_budget(None, 0, 2), _pods(2, "Pending")) == ""
