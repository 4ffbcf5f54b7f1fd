"""The judge's answer: verified or rejected, with the three lists the rest of the system reads.

- `met`: what was asked and is shown to hold (each entry says how it was checked);
- `missing`: what does not hold yet — the list the worker gets back on a retry;
- `nonexistent`: things the request names that do not exist. They are reported to the user and
  are never a reason to retry: no second attempt can make a Deployment exist.

Only a `verified` verdict lets anyone call the run done.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field


class Decision(StrEnum):
    VERIFIED = "verified"
    REJECTED = "rejected"


class ModelPass(StrEnum):
    """What became of the LLM pass after the deterministic gates."""

    NOT_CONFIGURED = "not_configured"  # no judge model: the gates alone decide
    SKIPPED = "skipped"  # the gates already rejected: no tokens spent on a known answer
    AGREED = "agreed"  # the model found nothing missing
    OBJECTED = "objected"  # the model named something missing
    UNAVAILABLE = "unavailable"  # no usable answer within the bounded retries
    UNAFFORDABLE = "unaffordable"  # the run's budget could not pay for the call


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True)

    decision: Decision
    met: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    nonexistent: tuple[str, ...] = ()
    model_pass: ModelPass = ModelPass.NOT_CONFIGURED
    failed_gates: tuple[str, ...] = Field(
        default=(), description="The deterministic gates that found something missing."
    )
    seconds: float = Field(default=0.0, description="How long judging took, wall clock.")

    @property
    def verified(self) -> bool:
        return self.decision is Decision.VERIFIED

    @property
    def only_delivery_failed(self) -> bool:
        """Everything but the deliverable's storage held: resubmitting the same draft may help."""
        return bool(self.failed_gates) and set(self.failed_gates) <= {"deliverable_stored"}

    @property
    def retryable(self) -> bool:
        """A retry can help only when something is missing (nonexistent things never count)."""
        return self.decision is Decision.REJECTED and bool(self.missing)
