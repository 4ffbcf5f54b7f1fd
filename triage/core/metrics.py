"""Prometheus counters for model use, by role: what the worker and the judge cost and how often
the model failed us.

One place for them so `/metrics`, the budget and the tests read the same numbers. Roles are
fixed (`worker` is the LLM planner, `judge` the checker) and every label combination is created
up front, so a dashboard shows a zero rather than nothing before the first call.
"""

from __future__ import annotations

from typing import Literal, get_args

from prometheus_client import Counter, Histogram

Role = Literal["worker", "judge"]
ROLES: tuple[Role, ...] = get_args(Role)
Outcome = Literal["ok", "error", "timeout", "invalid"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

LLM_TOKENS = Counter(
    "triage_llm_tokens",
    "Tokens used by chat-model requests, as the provider reported them.",
    ["role", "direction"],
)
LLM_REQUESTS = Counter(
    "triage_llm_requests",
    "Chat-model requests by outcome: ok, error (HTTP or transport), timeout, invalid (reply "
    "unusable: malformed tool calls, no structured answer).",
    ["role", "outcome"],
)
LLM_FALLBACKS = Counter(
    "triage_llm_fallbacks",
    "Times a role gave up on its model after bounded retries and used its deterministic path.",
    ["role"],
)

for _role in ROLES:
    for _direction in ("input", "output"):
        LLM_TOKENS.labels(role=_role, direction=_direction)
    for _outcome in OUTCOMES:
        LLM_REQUESTS.labels(role=_role, outcome=_outcome)
    LLM_FALLBACKS.labels(role=_role)


def record_tokens(role: Role, input_tokens: int, output_tokens: int) -> None:
    LLM_TOKENS.labels(role=role, direction="input").inc(max(0, input_tokens))
    LLM_TOKENS.labels(role=role, direction="output").inc(max(0, output_tokens))


def record_request(role: Role, outcome: Outcome) -> None:
    LLM_REQUESTS.labels(role=role, outcome=outcome).inc()


def record_fallback(role: Role) -> None:
    LLM_FALLBACKS.labels(role=role).inc()


# -- verification: the judge and the bounded loop (triage/loop.py) ---------------------------------

Activation = Literal["none", "answer", "record", "off"]
ACTIVATIONS: tuple[Activation, ...] = get_args(Activation)
RunOutcome = Literal[
    "verified", "rejected", "budget_exhausted", "evaluator_unavailable", "unchecked"
]
RUN_OUTCOMES: tuple[RunOutcome, ...] = get_args(RunOutcome)

VERIFICATION_RUNS = Counter(
    "triage_verification_runs",
    "Runs by the check the activation policy chose: none (casual), answer, record (system of "
    "record), off (switched off by the operator).",
    ["activation"],
)
RUN_OUTCOMES_TOTAL = Counter(
    "triage_run_outcomes",
    "Runs by outcome. Only `verified` is done; the others returned an unverified candidate.",
    ["outcome"],
)
LLM_COST = Counter(
    "triage_llm_cost_usd",
    "Estimated model cost in US dollars, from the policy's pricing table (priced models only).",
    ["role"],
)
COST_ESTIMATES = Counter(
    "triage_cost_estimates",
    "Cost estimates made per role and run, by whether the model had a price (priced=true). "
    "The share with a real price is priced=true over the sum.",
    ["priced"],
)
JUDGE_SECONDS = Histogram(
    "triage_judge_seconds",
    "Time one judgement took (gates, cluster reads and the model pass).",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
JUDGE_ATTEMPTS = Counter(
    "triage_judge_attempts", "Worker attempts per run, summed (retries show as more than runs)."
)

for _activation in ACTIVATIONS:
    VERIFICATION_RUNS.labels(activation=_activation)
for _run_outcome in RUN_OUTCOMES:
    RUN_OUTCOMES_TOTAL.labels(outcome=_run_outcome)
for _role in ROLES:
    LLM_COST.labels(role=_role)
for _priced in ("true", "false"):
    COST_ESTIMATES.labels(priced=_priced)


def record_run(activation: Activation, outcome: str, attempts: int) -> None:
    """One finished run (a paused one is counted when it finishes)."""
    if outcome not in RUN_OUTCOMES:
        msg = f"not a run outcome: {outcome!r}"
        raise ValueError(msg)
    VERIFICATION_RUNS.labels(activation=activation).inc()
    RUN_OUTCOMES_TOTAL.labels(outcome=outcome).inc()
    JUDGE_ATTEMPTS.inc(max(0, attempts))


def record_cost(role: Role, cost_usd: float | None) -> None:
    """One cost estimate for a role's spend in a run; None when its model had no price."""
    COST_ESTIMATES.labels(priced="false" if cost_usd is None else "true").inc()
    if cost_usd is not None:
        LLM_COST.labels(role=role).inc(max(0.0, cost_usd))


def record_judge_seconds(seconds: float) -> None:
    JUDGE_SECONDS.observe(max(0.0, seconds))


# -- human review (triage/reports/review.py) -------------------------------------------------------

ReviewVerdict = Literal["confirmed", "disputed"]
REVIEW_VERDICTS: tuple[ReviewVerdict, ...] = get_args(ReviewVerdict)

REVIEWS = Counter(
    "triage_reviews",
    "People's reviews of RCAs, by the report's outcome when reviewed and the verdict. "
    'outcome="verified", review="disputed" over all verified reviews is the judge\'s '
    "false-done rate in production.",
    ["outcome", "review"],
)

for _reviewed in (*RUN_OUTCOMES, "pending"):
    for _verdict in REVIEW_VERDICTS:
        REVIEWS.labels(outcome=_reviewed, review=_verdict)


def record_review(outcome: str, verdict: str) -> None:
    """One review entry (counted once per process by triage.reports.review.ReviewTally)."""
    if verdict not in REVIEW_VERDICTS:
        msg = f"not a review verdict: {verdict!r}"
        raise ValueError(msg)
    known = outcome if outcome in RUN_OUTCOMES else "pending"
    REVIEWS.labels(outcome=known, review=verdict).inc()
