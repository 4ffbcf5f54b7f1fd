"""The `verification` section of the policy: when the judge checks, how often a run may retry,
what one run may spend, and what models cost.

Decisions an operator owns, kept apart from the code that applies them (judge/activation.py,
triage/budget.py, triage/loop.py):

- **Activation per kind of request.** Casual chat is never checked; a find-or-tell request is
  judged by its answer; anything that keeps, sends or changes something is checked against the
  system of record. `enabled: false` switches checking off: runs still deliver, and every
  outcome then says `unchecked`.
- **One budget per run**, counting the worker's and the judge's model use together, in tokens
  and in money. Money needs a price: a model missing from `pricing` cannot be costed, so for it
  only the attempt limit (and the token cap, if set) bounds the run, and the outcome says so.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Check(StrEnum):
    """What the judge does for one kind of request."""

    NONE = "none"  # no check at all (casual chat)
    ANSWER = "answer"  # judge the answer: citations, facts, named things exist
    RECORD = "record"  # the answer, plus the deliverable in the system of record (RCAReport)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ActivationRules(_Strict):
    """Which check runs for each kind of request (triage.models.RequestKind)."""

    casual: Check = Field(default=Check.NONE, description="'thanks', 'hi': nothing to check.")
    find_tell: Check = Field(
        default=Check.ANSWER,
        description="'why is X broken': judged by the answer. `record` also writes and checks "
        "an RCAReport for every answer.",
    )
    keep_send_change: Check = Field(
        default=Check.RECORD,
        description="'write the RCA', 'restart X': checked against the system of record. "
        "Lowering this to `answer` means a report that never reached the cluster can pass.",
    )


class Budget(_Strict):
    """What one run (every attempt, worker and judge together) may spend."""

    max_tokens: int | None = Field(
        default=200_000,
        ge=0,
        description="Input plus output tokens across worker and judge. 200k is a few full "
        "investigations with a large model; unset: no token cap.",
    )
    max_cost_usd: float | None = Field(
        default=1.0,
        ge=0,
        description="US dollars across worker and judge, priced from `pricing`. A model "
        "without a price cannot be costed: then only the attempt limit and the token cap apply, "
        "and the outcome says so. Unset: no cost cap.",
    )


class Price(_Strict):
    """A model's list price, US dollars per million tokens."""

    input_per_mtok: float = Field(ge=0, description="USD per 1,000,000 input tokens.")
    output_per_mtok: float = Field(ge=0, description="USD per 1,000,000 output tokens.")


class VerificationPolicy(_Strict):
    """The `verification` section."""

    enabled: bool = Field(
        default=True,
        description="false: the judge never runs; deliverables are still written and every "
        "outcome is `unchecked` (never `verified`).",
    )
    activation: ActivationRules = Field(default_factory=ActivationRules)
    max_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Worker attempts per run, the first included. A rejected attempt goes back "
        "with the judge's missing list; three gives two corrections before the run ends.",
    )
    budget: Budget = Field(default_factory=Budget)
    pricing: dict[str, Price] = Field(
        default_factory=dict,
        description="Model name as configured (e.g. 'openai:gpt-4.1-mini') → price. Models not "
        "listed are counted in tokens only.",
    )
