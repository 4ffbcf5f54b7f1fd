"""The graph's state, kept JSON-plain so any checkpointer stores it and any process resumes it.

Models travel as dicts (`model_dump(mode="json")`) and are rebuilt by the accessors below; the
evidence list only grows (an `operator.add` reducer), so a resumed run never loses or reorders
what it already found.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from triage.models import Evidence, Goal, RCADraft


class TriageState(TypedDict, total=False):
    words: str  # the user's message, verbatim
    namespace: str | None  # explicit scope from the caller (CLI flag, Slack channel mapping)
    now: float  # the investigation's reference time, unix seconds
    goal: dict[str, Any]
    evidence: Annotated[list[dict[str, Any]], operator.add]
    pending: list[dict[str, Any]]
    tool_calls: int
    draft: dict[str, Any] | None
    mutations: list[dict[str, Any]]  # what each asked-for change came to (triage/approvals.py)


def goal_of(state: TriageState) -> Goal:
    return Goal.model_validate(state["goal"])


def evidence_of(state: TriageState) -> list[Evidence]:
    return [Evidence.model_validate(e) for e in state.get("evidence") or []]


def draft_of(state: TriageState) -> RCADraft | None:
    raw = state.get("draft")
    return RCADraft.model_validate(raw) if raw else None
