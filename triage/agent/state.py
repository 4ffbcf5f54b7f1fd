"""The graph's state, kept JSON-plain so any checkpointer stores it and any process resumes it.

Models travel as dicts (`model_dump(mode="json")`) and are rebuilt by the accessors below; the
evidence list only grows (an `operator.add` reducer), so a resumed run never loses or reorders
what it already found. The evidence's payloads (`data`: the pod lists, the logs) are not in
the state when the graph has an evidence store (triage/core/evidence_store.py): each record
says `stored`, and the payload is read back by id. The goal comes in already parsed (intake
runs once per request, before the graph), with the run id that operation IDs are derived from
and who asked.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

from triage.core.errors import StateUnavailable
from triage.core.evidence_store import EvidenceStore
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


def evidence_of(
    state: TriageState,
    store: EvidenceStore | None = None,
    thread: str = "",
    cache: dict[str, Evidence] | None = None,
) -> list[Evidence]:
    """The evidence, payloads included. Records marked `stored` get theirs from `store`;
    `cache` (one run's, per process) keeps what was built, so each step reads only new ids."""
    raw = state.get("evidence") or []
    cache = {} if cache is None else cache
    wanted = [str(r["id"]) for r in raw if r.get("stored") and str(r["id"]) not in cache]
    payloads = store.get(thread, wanted) if wanted and store is not None else {}
    out = []
    for r in raw:
        key = str(r.get("id"))
        if not r.get("stored"):
            out.append(Evidence.model_validate(r))
            continue
        if key not in cache:
            if key not in payloads:
                msg = f"the payload of evidence {key} of run {thread} is not in the evidence store"
                raise StateUnavailable(msg)
            cache[key] = Evidence.model_validate({**r, "data": payloads[key]})
        out.append(cache[key])
    return out


def records_of(
    evidence: list[Evidence], store: EvidenceStore | None = None, thread: str = ""
) -> list[dict[str, Any]]:
    """What the state keeps of new evidence: everything, or, with a store, everything but the
    payload, which is written to the store first (so no checkpoint names a missing one)."""
    if store is None or not evidence:
        return [e.model_dump(mode="json") for e in evidence]
    # a tool's payload is JSON-plain already (tools/read/payloads.py): stored as it is
    store.put(thread, {e.id: e.data for e in evidence})
    return [{**e.model_dump(mode="json", exclude={"data"}), "stored": True} for e in evidence]


def draft_of(state: TriageState) -> RCADraft | None:
    raw = state.get("draft")
    return RCADraft.model_validate(raw) if raw else None
