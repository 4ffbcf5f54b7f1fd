"""'No fault' is about what the question's names resolved to: a name that matches nothing in
the namespace is said to match nothing, never reported as a healthy workload."""

from __future__ import annotations

from pathlib import Path

from triage.app import App, Request
from triage.core.bundles import Bundle, demo_dir
from triage.core.causes import CauseClass
from triage.core.models import RCADraft
from triage.core.settings import Settings, StateSettings


def _answer(words: str, tmp_path: Path) -> RCADraft:
    bundle = Bundle.read(demo_dir() / "healthy.json")
    product, _ = App.replay(Settings(state=StateSettings(dir=tmp_path)), bundle)
    run = product.checked_run(
        Request(words=words.format(ns=bundle.namespace), now=bundle.now, planner="rules")
    )
    assert run.best.draft is not None
    return run.best.draft


def test_a_name_that_matches_nothing_is_said_to_match_nothing(tmp_path: Path) -> None:
    draft = _answer("is payments-xyz in namespace {ns} down?", tmp_path)
    assert draft.root_cause_class is CauseClass.NO_FAULT
    assert "payments-xyz" not in draft.title
    assert any("Nothing named payments-xyz was found" in c.text for c in draft.root_cause)


def test_a_name_that_exists_is_what_the_answer_is_about(tmp_path: Path) -> None:
    draft = _answer("is inventory-service in namespace {ns} ok?", tmp_path)
    assert draft.root_cause_class is CauseClass.NO_FAULT
    assert draft.title == "No fault found for inventory-service"
    assert not any("Nothing named" in c.text for c in draft.root_cause)
