"""A controller's own status counts, whatever its pods say: a Deployment with fewer replicas
available than it asks for — none at all when admission refuses every pod, so there is no
unhealthy pod to look at — is never "no fault"."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass
from triage.core.models import RCADraft


def _answer(tmp_path: Path, change: Any = None) -> RCADraft:
    recorded = recorded_bundle("healthy.json")
    if change is not None:
        for call in recorded["calls"]:
            change(call["tool"], call["result"])
    return rules_draft(tmp_path, recorded)


def _no_pods_available(tool: str, result: dict[str, Any]) -> None:
    if tool == "k8s.deployments":
        for d in result["data"]:
            d.update(ready=0, available=0, unavailable=d["replicas"])
    elif tool in ("k8s.pods", "k8s.endpoints"):
        result["data"] = []


def test_the_healthy_recording_is_no_fault(tmp_path: Path) -> None:
    assert _answer(tmp_path).root_cause_class is CauseClass.NO_FAULT


def test_a_deployment_with_no_replica_available_is_not_no_fault(tmp_path: Path) -> None:
    draft = _answer(tmp_path, _no_pods_available)
    assert draft.root_cause_class is not CauseClass.NO_FAULT
    said = " ".join([draft.title, *(c.text for c in draft.root_cause)])
    assert "0 of 2" in said, said
