"""What the judge is given, and nothing more: the request in the user's own words, the
candidate, where it was delivered, and a bounded, redacted list of tool outcomes.

Not the transcript: the judge must not be talked round by the worker's reasoning, and a bounded
input keeps the judge's model pass cheap and its cost predictable. Every string is redacted
here again (whatever the caller did) and clipped; the outcome list keeps the cited and the
failed results first, so what the caps drop is what matters least. The candidate's digest is
taken from the full draft before any clipping: it is what the system of record must hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judge.symptoms import Reported, reported
from tools.redact import Redactor
from tools.results import ToolStatus, clip
from triage.core.models import (
    Command,
    Deliverable,
    Evidence,
    Goal,
    RCADraft,
    RequestKind,
    Workload,
    draft_digest,
)

MAX_WORDS_CHARS = 4_000
MAX_OUTCOMES = 120
MAX_EXCERPT_CHARS = 300
MAX_CLAIMS = 40
MAX_LIST_ITEMS = 40
MAX_TEXT_CHARS = 1_000


class ToolOutcome(BaseModel):
    """One tool call as the judge sees it: name, status, a short excerpt. No data."""

    model_config = ConfigDict(frozen=True)
    id: str
    name: str
    status: ToolStatus
    excerpt: str = Field(max_length=MAX_EXCERPT_CHARS + 1)
    truncated: bool = False


class Delivery(BaseModel):
    """Where the candidate was submitted, as the worker reports it (the judge re-reads it)."""

    model_config = ConfigDict(frozen=True)
    namespace: str
    name: str
    error: str | None = Field(default=None, description="Why the write failed, if it did.")


class PerformedMutation(BaseModel):
    """A change the worker says it made through the ledger; the judge looks for its effect."""

    model_config = ConfigDict(frozen=True)
    action: str
    target: str = Field(description="kind/namespace/name")
    args: dict[str, Any] = Field(default_factory=dict)
    operation_id: str | None = None
    status: str | None = Field(default=None, description="The ledger's phase, e.g. Succeeded.")
    detail: str = Field(default="", description="What the registry said (redacted, short).")


class JudgeInput(BaseModel):
    model_config = ConfigDict(frozen=True)

    words: str = Field(max_length=MAX_WORDS_CHARS + 1)
    kind: RequestKind
    deliverables: tuple[Deliverable, ...]
    namespace: str | None
    named: tuple[Workload, ...]
    commands: tuple[Command, ...] = Field(
        description="The changes the request commands (typed by intake), checked in the cluster."
    )
    candidate: RCADraft
    digest: str = Field(description="draft_digest() of the full draft, before clipping.")
    outcomes: tuple[ToolOutcome, ...] = Field(max_length=MAX_OUTCOMES)
    outcomes_dropped: int = 0
    delivery: Delivery | None = None
    mutations: tuple[PerformedMutation, ...] = ()
    checks: tuple[str, ...] = Field(default=(), description="What the user asked to check.")
    alert: str | None = Field(default=None, description="The name of the alert they pasted.")
    reported: tuple[Reported, ...] = Field(
        default=(),
        description="What the request reports that the judge can measure, typed from the "
        "whole request (before its words are clipped) and the alert's name.",
    )
    now: float | None = Field(
        default=None, description="The investigation's time (unix s): what 'long ago' is from."
    )

    @classmethod
    def build(
        cls,
        goal: Goal,
        draft: RCADraft,
        evidence: Sequence[Evidence],
        *,
        redactor: Redactor,
        delivery: Delivery | None = None,
        mutations: Iterable[PerformedMutation] = (),
    ) -> JudgeInput:
        outcomes, dropped = bounded_outcomes(evidence, draft.cited_ids(), redactor)
        return cls(
            words=clip(redactor.text(goal.words), MAX_WORDS_CHARS),
            kind=goal.kind,
            deliverables=goal.deliverables,
            namespace=goal.scope.namespace,
            named=goal.scope.workloads[:MAX_LIST_ITEMS],
            commands=goal.commands[:MAX_LIST_ITEMS],
            candidate=bounded_draft(draft, redactor),
            digest=draft_digest(draft),
            outcomes=outcomes,
            outcomes_dropped=dropped,
            delivery=delivery,
            mutations=tuple(mutations)[:MAX_LIST_ITEMS],
            checks=goal.checks,
            alert=goal.alert.name[:200] if goal.alert else None,
            reported=tuple(reported(goal.words, goal.alert.name if goal.alert else None)),
            now=goal.scope.until,
        )

    def status_of(self, evidence_id: str) -> ToolOutcome | None:
        return next((o for o in self.outcomes if o.id == evidence_id), None)


def bounded_outcomes(
    evidence: Sequence[Evidence], cited: set[str], redactor: Redactor
) -> tuple[tuple[ToolOutcome, ...], int]:
    """Cited results first, then failures, then the rest, up to MAX_OUTCOMES."""

    def rank(e: Evidence) -> int:
        return 0 if e.id in cited else 1 if e.status is not ToolStatus.OK else 2

    ordered = sorted(evidence, key=rank)  # stable: keeps call order within a rank
    kept = ordered[:MAX_OUTCOMES]
    outcomes = tuple(
        ToolOutcome(
            id=e.id,
            name=e.tool,
            status=e.status,
            excerpt=clip(redactor.text(e.excerpt), MAX_EXCERPT_CHARS),
            truncated=e.truncated,
        )
        for e in kept
    )
    return outcomes, len(evidence) - len(kept)


def bounded_draft(draft: RCADraft, redactor: Redactor) -> RCADraft:
    """The draft with every text redacted and clipped and every list capped."""

    def text(value: str) -> str:
        return clip(redactor.text(value), MAX_TEXT_CHARS)

    def claims(items: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple(c.model_copy(update={"text": text(c.text)}) for c in items[:MAX_CLAIMS])

    return draft.model_copy(
        update={
            "title": text(draft.title),
            "summary": text(draft.summary),
            "impact": text(draft.impact),
            "root_cause": claims(draft.root_cause),
            "contributing_factors": claims(draft.contributing_factors),
            "timeline": tuple(
                t.model_copy(update={"what": text(t.what)}) for t in draft.timeline[:MAX_LIST_ITEMS]
            ),
            "remediation": tuple(
                r.model_copy(update={"rationale": text(r.rationale)})
                for r in draft.remediation[:MAX_LIST_ITEMS]
            ),
            "follow_ups": tuple(text(f) for f in draft.follow_ups[:MAX_LIST_ITEMS]),
            "checked": tuple(text(c) for c in draft.checked[:MAX_LIST_ITEMS]),
            "unavailable": tuple(text(u) for u in draft.unavailable[:MAX_LIST_ITEMS]),
            "nonexistent": tuple(text(n) for n in draft.nonexistent[:MAX_LIST_ITEMS]),
        }
    )
