"""The graph's state, kept JSON-plain so any checkpointer stores it and any process resumes it.

Models travel as dicts (`model_dump(mode="json")`) and are rebuilt by the accessors below; the
evidence list only grows (an `operator.add` reducer), so a resumed run never loses or reorders
what it already found. The goal comes in already parsed (intake runs once per request, before
the graph), with the run id that operation IDs are derived from and who asked.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from triage.core.models import Evidence, Goal, RCADraft


class TriageState(TypedDict, total=False):
    goal: dict[str, Any]  # the parsed request (triage.agent.intake), the user's words inside
    run: str  # the run id: stable across attempts, so a change is never planned twice
    requested_by: str  # who asked (slack:T/U, kube:alice), recorded on every Operation
    requested_via: str  # and from where (a Slack thread, cli)
    now: float  # the investigation's reference time, unix seconds
    evidence: Annotated[list[dict[str, Any]], operator.add]
    pending: list[dict[str, Any]]
    tool_calls: int
    draft: dict[str, Any] | None
    mutations: list[dict[str, Any]]  # what each asked-for change came to (triage.agent.changes)
    awaiting: list[dict[str, Any]]  # operations waiting for a person's approval
    finished: bool  # written by the last node: the only sign that the run is complete


def goal_of(state: TriageState) -> Goal:
    return Goal.model_validate(state["goal"])


def evidence_of(state: TriageState) -> list[Evidence]:
    return [Evidence.model_validate(e) for e in state.get("evidence") or []]


def draft_of(state: TriageState) -> RCADraft | None:
    raw = state.get("draft")
    return RCADraft.model_validate(raw) if raw else None
