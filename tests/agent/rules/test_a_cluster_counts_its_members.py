"""Pods that form a cluster of their own (an embedded Hazelcast, a consensus group) say in
their log how many members it has. In a "no fault" answer that count is set against the
workload's ready pods: all of them members means the cluster formed, whatever discovery
warnings surround it; fewer is said as it is, never as formed."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.models import RCADraft


def _answer(tmp_path: Path, line: str) -> RCADraft:
    recorded = recorded_bundle("healthy.json")
    for c in recorded["calls"]:
        if c["tool"] == "k8s.logs" and isinstance(c["result"].get("data"), list):
            c["result"]["data"] = [
                "INFO Kubernetes Discovery activated with mode: KUBERNETES_API",
                "WARN Cannot fetch public IPs of Hazelcast Member PODs",
                line,
                "\tMember [10.244.1.18]:5701 - 3f0c9d2a",
                "]",
            ]
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join(c.text for c in draft.root_cause)


@pytest.mark.parametrize(
    "line",
    ["Members {size:2, ver:2} [", "cluster formed with 2 members", "2 nodes joined the cluster"],
)
def test_every_ready_pod_a_member_is_a_formed_cluster(tmp_path: Path, line: str) -> None:
    said = _said(_answer(tmp_path, line))
    assert "have formed their cluster" in said, said
    assert "last counts 2 members, and 2 of its pods are ready" in said, said


def test_fewer_members_than_ready_pods_is_not_called_formed(tmp_path: Path) -> None:
    said = _said(_answer(tmp_path, "Members {size:1, ver:5} ["))
    assert "formed their cluster" not in said, said
    assert "last counts 1 cluster members while 2 pods" in said, said
