"""A controller's own status counts, whatever its pods say: a Deployment with fewer replicas
available than it asks for — none at all when admission refuses every pod, so there is no
unhealthy pod to look at — is never "no fault"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from triage.app import App, Request
from triage.core.bundles import Bundle, demo_dir
from triage.core.causes import CauseClass
from triage.core.models import RCADraft
from triage.core.settings import Settings, StateSettings


def _answer(tmp_path: Path, change: Any = None) -> RCADraft:
    recorded = json.loads((demo_dir() / "healthy.json").read_text())
    if change is not None:
        for call in recorded["calls"]:
            change(call["tool"], call["result"])
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(recorded))
    bundle = Bundle.read(path)
    product, _ = App.replay(Settings(state=StateSettings(dir=tmp_path / "state")), bundle)
    run = product.checked_run(Request(words=bundle.question, now=bundle.now, planner="rules"))
    assert run.best.draft is not None
    return run.best.draft


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
