"""The bounded completion loop: worker → submit → judge → (retry with the missing list | publish).

The worker never grades itself. Each attempt's draft is submitted (when the request keeps,
sends or changes something), then judged by `judge.Judge`; a rejected attempt goes back to the
worker with the judge's `missing` list, until the verdict is `verified`, the attempt limit is
reached, or the one budget that counts worker and judge together is spent. Things the request
names that do not exist never cause a retry. The run ends with exactly one outcome:

    verified               the judge checked it: the only outcome that may be called done
    rejected               the judge found something missing and retrying cannot or did not help
    budget_exhausted       the budget ran out before the work could be verified
    evaluator_unavailable  the judge's model gave no answer; the gates' findings are kept
    unchecked              no check ran (casual chat, or an operator switched checking off)

and one pause, `awaiting_approval`: a change the request commands waits for a person's
approval; nothing is submitted or judged until the surface resumes the run.

Every outcome but `verified` returns the best candidate (fewest missing items, latest on a
tie) marked unverified. The outcome is published on the RCAReport, counted in the metrics and
returned to the surface (CLI, Slack) that prints it. A worker that cannot use the judge's
missing list (the deterministic rules planner) is not run again: the same input would give
the same answer at the same cost, so the attempt ends with the judge's verdict and says why.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Protocol

from judge import (
    Activation,
    Delivery,
    EvaluatorUnavailable,
    Judge,
    JudgeInput,
    PerformedMutation,
    Verdict,
    decide,
    delivers,
)
from judge.verdict import ModelPass
from policies.verification import VerificationPolicy
from tools.errors import truncate
from tools.redact import Redactor
from triage.agent.graph import RunResult
from triage.core import metrics
from triage.core.errors import ReportError
from triage.reports.store import ReportRef, ReportStore, report_name
from triage.verification.budget import Budget

MAX_STATUS_ITEMS = 100
MAX_STATUS_CHARS = 480


class Outcome(StrEnum):
    VERIFIED = "verified"
    REJECTED = "rejected"
    BUDGET_EXHAUSTED = "budget_exhausted"
    EVALUATOR_UNAVAILABLE = "evaluator_unavailable"
    UNCHECKED = "unchecked"
    AWAITING_APPROVAL = "awaiting_approval"


class Worker(Protocol):
    """Runs one attempt: (attempt number from 1, the judge's missing list so far) → result."""

    @property
    def takes_feedback(self) -> bool:
        """Can a later attempt use the judge's missing list (or would it repeat itself)?"""
        ...

    def __call__(self, attempt: int, feedback: tuple[str, ...]) -> RunResult: ...


ProgressFn = Callable[[dict[str, Any]], None]


@dataclass
class Attempt:
    number: int
    result: RunResult
    report: ReportRef | None = None
    submit_error: str | None = None
    verdict: Verdict | None = None


@dataclass
class CheckedRun:
    outcome: Outcome
    activation: Activation
    best: RunResult
    attempts: list[Attempt]
    verdict: Verdict | None
    report: ReportRef | None
    notes: list[str] = field(default_factory=list)
    spend: dict[str, Any] = field(default_factory=dict)
    started_at: float = 0.0  # unix seconds
    finished_at: float = 0.0

    @property
    def done(self) -> bool:
        """Only a verified run is done."""
        return self.outcome is Outcome.VERIFIED

    @property
    def awaiting(self) -> list[dict[str, Any]]:
        """Operations waiting for a person's approval (the run is paused while any are)."""
        return self.best.awaiting

    def summary(self) -> dict[str, Any]:
        """Plain data for JSON output and the RCAReport's status."""
        v = self.verdict
        return {
            "outcome": self.outcome.value,
            "done": self.done,
            "activation": self.activation.value,
            "attempts": len(self.attempts),
            "met": list(v.met) if v else [],
            "missing": list(v.missing) if v else [],
            "nonexistent": list(v.nonexistent) if v else [],
            "model_pass": v.model_pass.value if v else None,
            "report": (
                {"namespace": self.report.namespace, "name": self.report.name}
                if self.report
                else None
            ),
            "notes": self.notes,
            "spend": self.spend,
            "planner": self.best.draft.planner if self.best.draft else None,
            "attempt_log": [_attempt_line(a) for a in self.attempts],
            "timings": self.timings(),
        }

    def timings(self) -> dict[str, Any]:
        """Where the run's time went: investigating (the graph) and judging, over all attempts."""
        investigate = sum(a.result.seconds for a in self.attempts)
        judge = sum(a.verdict.seconds for a in self.attempts if a.verdict is not None)
        return {
            "startedAt": _iso(self.started_at),
            "finishedAt": _iso(self.finished_at),
            "seconds": round(max(0.0, self.finished_at - self.started_at), 3),
            "investigateSeconds": round(investigate, 3),
            "judgeSeconds": round(judge, 3),
        }


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _attempt_line(a: Attempt) -> dict[str, Any]:
    v = a.verdict
    return {
        "number": a.number,
        "planner": a.result.draft.planner if a.result.draft else None,
        "toolCalls": len(a.result.evidence),
        "investigateSeconds": round(a.result.seconds, 3),
        "judgeSeconds": round(v.seconds, 3) if v else None,
        "decision": v.decision.value if v else None,
        "missing": len(v.missing) if v else 0,
        "submitted": a.report is not None,
        "submitError": truncate(a.submit_error, 300) if a.submit_error else None,
    }


def performed(result: RunResult) -> list[PerformedMutation]:
    """What the run's change step did, as the judge reads it (the ledger's own records)."""
    out = []
    for m in result.mutations:
        if not m.get("operation") and not m.get("target"):
            continue
        out.append(
            PerformedMutation(
                action=str(m.get("action") or ""),
                target=str(m.get("target") or ""),
                args=dict(m.get("args") or {}),
                operation_id=m.get("operation"),
                status=m.get("phase"),
                detail=str(m.get("excerpt") or "")[:300],
            )
        )
    return out


def _missing_count(attempt: Attempt) -> int:
    return len(attempt.verdict.missing) if attempt.verdict else 1_000_000


def _best(attempts: Sequence[Attempt]) -> Attempt:
    with_draft = [a for a in attempts if a.result.draft is not None] or list(attempts)
    return min(reversed(with_draft), key=_missing_count)


def _capped(items: Sequence[str]) -> list[str]:
    return [truncate(i, MAX_STATUS_CHARS) for i in items[:MAX_STATUS_ITEMS]]


@dataclass
class _Loop:
    """One run's state and steps (run_checked below is the entry point)."""

    worker: Worker
    judge: Judge | None
    store: ReportStore | None
    policy: VerificationPolicy
    budget: Budget
    redactor: Redactor
    run_id: str
    on_progress: ProgressFn | None
    attempts: list[Attempt] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    activation: Activation = Activation.NONE
    last_report: ReportRef | None = None

    def progress(self, event: dict[str, Any]) -> None:
        if self.on_progress is not None:
            self.on_progress(event)

    def run(self) -> Outcome:
        feedback: tuple[str, ...] = ()
        for number in range(1, self.policy.max_attempts + 1):
            if number > 1 and self.budget.exhausted():
                self.notes.append(f"budget spent after {number - 1} attempt(s): no further attempt")
                return Outcome.BUDGET_EXHAUSTED
            self.progress({"attempt": number, "feedback": list(feedback)})
            previous = self.attempts[-1] if self.attempts else None
            if previous is not None and not self.worker.takes_feedback:
                # Only the delivery failed: submit the same draft again, no new investigation.
                attempt = Attempt(number, previous.result)
            else:
                attempt = Attempt(number, self.worker(number, feedback))
            self.attempts.append(attempt)
            if attempt.result.awaiting:
                self.activation = decide(attempt.result.goal.kind, self.policy)
                self.notes.append("a change waits for approval: nothing was submitted or judged")
                return Outcome.AWAITING_APPROVAL
            outcome = self.check(attempt)
            if outcome is not None:
                return outcome
            verdict = attempt.verdict
            assert verdict is not None  # check() returns None only after a retryable verdict
            if not self.worker.takes_feedback and not verdict.only_delivery_failed:
                self.notes.append(
                    "not retried: this planner cannot use the judge's missing list, so another "
                    "attempt would repeat the same reads and the same answer"
                )
                return Outcome.REJECTED
            feedback = verdict.missing
        return Outcome.REJECTED  # unreachable: the last attempt always decides

    def submit(self, attempt: Attempt) -> None:
        goal, draft = attempt.result.goal, attempt.result.draft
        ns = goal.scope.namespace
        if self.store is None or ns is None or draft is None:
            return
        if not delivers(goal.kind, self.policy):
            return
        try:
            attempt.report = self.store.submit(
                ns,
                goal,
                draft,
                attempt=attempt.number,
                run_id=self.run_id,
                evidence=attempt.result.evidence,
                operations=attempt.result.mutations,
                redactor=self.redactor,
            )
        except ReportError as e:
            attempt.submit_error = f"{e.kind.value}: {e}"
            self.progress({"submit_failed": attempt.submit_error, "attempt": attempt.number})
            return
        self.last_report = attempt.report
        self.progress({"submitted": f"{ns}/{attempt.report.name}", "attempt": attempt.number})

    def judge_input(self, attempt: Attempt) -> JudgeInput:
        result = attempt.result
        assert result.draft is not None
        ns = result.goal.scope.namespace
        delivery = None
        if attempt.report is not None:
            delivery = Delivery(namespace=attempt.report.namespace, name=attempt.report.name)
        elif attempt.submit_error is not None and ns is not None:
            name = report_name(self.run_id)
            delivery = Delivery(namespace=ns, name=name, error=attempt.submit_error)
        return JudgeInput.build(
            result.goal,
            result.draft,
            result.evidence,
            redactor=self.redactor,
            delivery=delivery,
            mutations=performed(result),
        )

    def check(self, attempt: Attempt) -> Outcome | None:
        """The outcome this attempt settles, or None to retry with its missing list."""
        goal, draft = attempt.result.goal, attempt.result.draft
        self.activation = decide(goal.kind, self.policy)
        if draft is None:
            self.notes.append("nothing to check: the message asked for nothing")
            return Outcome.UNCHECKED
        self.submit(attempt)
        if self.activation is Activation.NONE:
            return Outcome.UNCHECKED
        if self.activation is Activation.OFF or self.judge is None:
            self.activation = Activation.OFF
            self.notes.append("checking is switched off: nothing was verified")
            return Outcome.UNCHECKED
        self.progress({"node": "judge", "attempt": attempt.number})
        try:
            verdict = self.judge.judge(
                self.judge_input(attempt),
                record=self.activation is Activation.RECORD,
                afford=lambda i, o: self.budget.can_afford("judge", i, o),
            )
        except EvaluatorUnavailable as e:
            attempt.verdict = e.gates_verdict
            metrics.record_judge_seconds(e.gates_verdict.seconds)
            self.notes.append(f"the judge's model is unavailable: {truncate(e.reason, 200)}")
            return Outcome.EVALUATOR_UNAVAILABLE
        attempt.verdict = verdict
        metrics.record_judge_seconds(verdict.seconds)
        self.progress({"verdict": verdict.decision.value, "missing": list(verdict.missing)})
        return self.settle(attempt.number, verdict)

    def settle(self, number: int, verdict: Verdict) -> Outcome | None:
        if verdict.verified:
            return Outcome.VERIFIED
        if verdict.model_pass is ModelPass.UNAFFORDABLE:
            self.notes.append("the budget cannot pay for the judge's model pass")
            return Outcome.BUDGET_EXHAUSTED
        if not verdict.retryable:
            if verdict.nonexistent:
                self.notes.append("the request names things that do not exist: not retried")
            return Outcome.REJECTED
        if number >= self.policy.max_attempts:
            self.notes.append(f"attempt limit reached ({self.policy.max_attempts})")
            return Outcome.REJECTED
        if self.budget.exhausted():
            self.notes.append(f"budget spent after {number} attempt(s): no further attempt")
            return Outcome.BUDGET_EXHAUSTED
        return None


def run_checked(
    *,
    worker: Worker,
    judge: Judge | None,
    store: ReportStore | None,
    policy: VerificationPolicy,
    budget: Budget,
    redactor: Redactor,
    run_id: str,
    on_progress: ProgressFn | None = None,
) -> CheckedRun:
    """Run attempts until an outcome; see the module docstring. `judge=None` means checking
    is off. `on_progress` gets {"attempt"}, {"submitted"}, {"submit_failed"}, {"verdict"} and
    {"outcome"} events, synchronously, between steps."""
    loop = _Loop(worker, judge, store, policy, budget, redactor, run_id, on_progress)
    started = time.time()
    outcome = loop.run()
    best = _best(loop.attempts)
    run = CheckedRun(
        outcome=outcome,
        activation=loop.activation,
        best=best.result,
        attempts=loop.attempts,
        verdict=best.verdict,
        report=loop.last_report,
        notes=[*loop.notes, *budget.notes()],
        spend=budget.summary(),
        started_at=started,
        finished_at=time.time(),
    )
    if outcome is Outcome.AWAITING_APPROVAL:
        loop.progress({"awaiting": run.awaiting})
        return run  # a pause, not an outcome: nothing is published or counted yet
    if loop.last_report is not None and store is not None:
        _publish(store, loop.last_report, run)
    metrics.record_run(loop.activation.value, outcome.value, len(loop.attempts))
    for spend in budget.by_role():
        metrics.record_cost(spend.role, spend.cost_usd)
    loop.progress({"outcome": run.outcome.value})
    return run


def _publish(store: ReportStore, ref: ReportRef, run: CheckedRun) -> None:
    summary = run.summary()
    status = {
        "outcome": summary["outcome"],
        "activation": summary["activation"],
        "attempts": summary["attempts"],
        "met": _capped(summary["met"]),
        "missing": _capped(summary["missing"]),
        "nonexistent": _capped(summary["nonexistent"]),
        "notes": _capped(summary["notes"])[:50],
        "spend": summary["spend"],
        **({"planner": summary["planner"]} if summary["planner"] else {}),
        "attemptLog": summary["attempt_log"][:MAX_STATUS_ITEMS],
        "timings": summary["timings"],
        "checkedAt": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    try:
        store.publish(ref, status)
    except ReportError as e:
        run.notes.append(f"the outcome could not be stored on the RCAReport: {e}")
        if run.outcome is Outcome.VERIFIED:
            # Verified a moment ago, gone now: the deliverable is not in the system of record.
            run.outcome = Outcome.REJECTED
            run.notes.append("the report vanished after the verdict: not verified")
