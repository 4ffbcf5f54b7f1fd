"""Replaying a recorded bundle that a test has edited: the rules planner and judge run on it
exactly as `triage replay` would, with state kept under the test's own directory."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from triage.app import App, Request
from triage.core.bundles import Bundle, demo_dir
from triage.core.models import RCADraft
from triage.core.settings import Settings, StateSettings


def recorded(name: str) -> dict[str, Any]:
    """The demo bundle `name` (e.g. "healthy.json") as plain JSON, ready to edit."""
    data: dict[str, Any] = json.loads((demo_dir() / name).read_text())
    return data


def rules_draft(tmp_path: Path, edited: dict[str, Any]) -> RCADraft:
    """The best draft the rules planner writes for the edited bundle's own question."""
    path = tmp_path / "bundle.json"
    path.write_text(json.dumps(edited))
    bundle = Bundle.read(path)
    product, _ = App.replay(Settings(state=StateSettings(dir=tmp_path / "state")), bundle)
    run = product.checked_run(Request(words=bundle.question, now=bundle.now, planner="rules"))
    assert run.best.draft is not None
    return run.best.draft
