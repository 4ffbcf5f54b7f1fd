"""The scheduler stops at a node's first failing filter, and pod affinity, anti-affinity and
topology spread run after the resource fit: a node counted under one of them had room for the
pod. So "1 Too many pods, 7 node(s) didn't match pod affinity rules" is a placement rule that
matches nowhere, not a cluster short of room; without a pod rule, capacity is the cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass

FULL = "0/9 nodes are available: 1 node(s) had untolerated taint(s), 8 Insufficient cpu."


def _class(tmp_path: Path, message: str) -> CauseClass:
    recorded = recorded_bundle("pending-insufficient-cpu.json")
    for c in recorded["calls"]:
        if c["tool"] == "k8s.events":
            for e in c["result"]["data"]:
                if e["reason"] == "FailedScheduling":
                    e["message"] = e["message"].replace(FULL, message)
    return rules_draft(tmp_path, recorded).root_cause_class


@pytest.mark.parametrize(
    "rule",
    [
        "1 Too many pods, 7 node(s) didn't match pod affinity rules",
        "2 Insufficient cpu, 6 node(s) didn't match pod anti-affinity rules",
        "3 Insufficient memory, 5 node(s) didn't match pod topology spread constraints",
    ],
)
def test_a_pod_rule_that_nodes_with_room_fail_is_the_cause(tmp_path: Path, rule: str) -> None:
    message = f"0/9 nodes are available: 1 node(s) had untolerated taint(s), {rule}."
    assert _class(tmp_path, message) is CauseClass.UNSCHEDULABLE_PLACEMENT


def test_without_a_pod_rule_capacity_is_the_cause(tmp_path: Path) -> None:
    assert _class(tmp_path, FULL) is CauseClass.INSUFFICIENT_RESOURCES
