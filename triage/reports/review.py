"""A person's verdict on an RCA: confirmed or disputed, by whom, when, with an optional note.

The judge's `verified` is the product's claim; a reviewer's confirmation or dispute is the
ground truth that says how often the judge is wrong in production. A review is recorded on the
report's status (`status.review`, the latest; `status.reviews`, the earlier ones, newest last,
at most `MAX_HISTORY`), from the review page, a Slack button or `triage reports review`, and
is never a reason to change the outcome: both are shown side by side.

`triage_reviews_total{outcome, review}` counts review entries by the report's outcome when it
was reviewed and the verdict, so "verified but disputed" — the judge's false-done rate — is
`triage_reviews_total{outcome="verified", review="disputed"}` over all verified reviews. A
review written by another process (the CLI runs as the person, not inside `triage serve`) is
counted when the server next reads the reports (`ReviewTally.observe`): every entry has a key
(report, time, reviewer, verdict), and each key is counted once per process.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from tools.redact import Redactor
from tools.results import clip
from triage.core import metrics

MAX_HISTORY = 20
NOTE_CHARS = 1_000
Json = dict[str, Any]


class Verdict(StrEnum):
    CONFIRMED = "confirmed"  # the cause is right
    DISPUTED = "disputed"  # the cause is wrong (the note says why, ideally)


class Via(StrEnum):
    PAGE = "page"
    SLACK = "slack"
    CLI = "cli"


class Review(BaseModel):
    """One review as stored on `status.review` (camelCase, as the CRD spells it)."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)
    verdict: Verdict
    by: str = Field(description="Who: 'kube:<apiserver user>' or 'slack:<team>/<user>'.")
    via: Via
    at: str = Field(description="When, RFC 3339 UTC.")
    note: str = ""
    outcome: str = Field(
        default="pending", description="The report's outcome when it was reviewed."
    )

    @classmethod
    def new(
        cls, verdict: Verdict, by: str, via: Via, note: str, redactor: Redactor | None = None
    ) -> Review:
        text = " ".join(note.split())
        return cls(
            verdict=verdict,
            by=clip(by, 250),
            via=via,
            at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            note=clip(redactor.text(text) if redactor else text, NOTE_CHARS),
        )

    def key(self, namespace: str, name: str) -> str:
        return f"{namespace}/{name}/{self.at}/{self.by}/{self.verdict.value}"


def reviews_of(obj: Json) -> list[Review]:
    """Every review on a report, oldest first (unreadable entries skipped)."""
    status = obj.get("status") or {}
    raw = [*(status.get("reviews") or []), *([status["review"]] if status.get("review") else [])]
    out = []
    for entry in raw:
        try:
            out.append(Review.model_validate(entry))
        except ValueError:
            continue
    return out


def latest(obj: Json) -> Review | None:
    found = reviews_of(obj)
    return found[-1] if found else None


def review_status(obj: Json) -> str:
    """confirmed, disputed, or unreviewed: the printer column and the list's filter."""
    last = latest(obj)
    return last.verdict.value if last else "unreviewed"


def status_with(obj: Json, review: Review) -> Json:
    """The status fields a new review writes: itself as `review`, the previous one moved to
    `reviews` (capped). The outcome at review time is taken from the report."""
    status = obj.get("status") or {}
    stamped = review.model_copy(update={"outcome": str(status.get("outcome") or "pending")})
    history = list(status.get("reviews") or [])
    if status.get("review"):
        history.append(status["review"])
    return {
        "review": stamped.model_dump(mode="json"),
        "reviews": history[-MAX_HISTORY:],
    }


class ReviewTally:
    """Counts each review entry once into `triage_reviews_total` (see the module docstring)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def count(self, namespace: str, name: str, review: Review) -> bool:
        key = review.key(namespace, name)
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
        metrics.record_review(review.outcome, review.verdict.value)
        return True

    def observe(self, reports: Iterable[Json]) -> int:
        """Count the reviews found on `reports` not counted yet; how many were new."""
        new = 0
        for obj in reports:
            meta = obj.get("metadata") or {}
            ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            for review in reviews_of(obj):
                new += self.count(ns, name, review)
        return new


TALLY = ReviewTally()


class _Reviews(Protocol):
    def review(self, namespace: str, name: str, review: Review) -> Json: ...


def record(store: _Reviews, namespace: str, name: str, review: Review) -> Json:
    """Store `review` on the report and count it; the report as it is now. Every surface
    (page, Slack, CLI) records through here."""
    updated = store.review(namespace, name, review)
    stored = latest(updated)
    if stored is not None:
        TALLY.count(namespace, name, stored)
    return updated
