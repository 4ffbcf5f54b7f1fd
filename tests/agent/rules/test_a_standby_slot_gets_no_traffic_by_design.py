"""Blue/green: two Deployments of one app differ by one label, and the Service selects one
of them. When the user asks why the idle one gets no requests, "no fault" says which Service
routes past it, by which label, and to whose pods — and says nothing of the kind when the
Service selects the pods asked about, or when the pods it selects are not ready."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass
from triage.core.models import RCADraft

NAME = "inventory-service"


def _answer(tmp_path: Path, slot: str, green_ready: bool = True) -> RCADraft:
    recorded = recorded_bundle("healthy.json")
    recorded["question"] = (
        f"{NAME} in scn-healthy has had zero requests for 40 minutes, did the Service lose "
        "its endpoints?"
    )
    for c in recorded["calls"]:
        tool, data = c["tool"], c["result"].get("data")
        if tool == "k8s.pods" and isinstance(data, list):
            green: list[dict[str, Any]] = []
            for pod in data:
                pod["labels"]["slot"] = "blue"
                twin = copy.deepcopy(pod)
                twin["name"] = pod["name"].replace(NAME, f"{NAME}-green")
                twin["owner"]["name"] = pod["owner"]["name"].replace(NAME, f"{NAME}-green")
                twin["labels"]["slot"] = "green"
                twin["ready"] = green_ready
                green.append(twin)
            data.extend(green)
        if tool == "k8s.services" and isinstance(data, list):
            for svc in data:
                svc["selector"] = {"app": NAME, "slot": slot}
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join(c.text for c in draft.root_cause)


def test_the_service_routing_to_the_other_slot_is_said(tmp_path: Path) -> None:
    draft = _answer(tmp_path, "green")
    assert draft.root_cause_class is CauseClass.NO_FAULT
    said = _said(draft)
    assert f"No Service selects {NAME}'s pods" in said, said
    assert f"selects slot=green — the pods of {NAME}-green" in said, said
    assert "carry slot=blue" in said, said
    assert draft.nonexistent == (), "'the Service lose' is prose, not a Service named lose"


def test_nothing_is_said_when_the_service_selects_the_pods_asked_about(tmp_path: Path) -> None:
    assert "No Service selects" not in _said(_answer(tmp_path, "blue"))


def test_nothing_is_said_when_the_other_slot_is_not_ready(tmp_path: Path) -> None:
    assert "No Service selects" not in _said(_answer(tmp_path, "green", green_ready=False))
