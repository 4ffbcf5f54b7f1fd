"""Every checked run is counted: by activation, by outcome, its cost by role (and whether the
model had a price), and how long the judge took. Read back from prometheus-client's registry."""

from __future__ import annotations

from prometheus_client import REGISTRY

from judge import Judge
from policies.verification import Budget as BudgetPolicy
from policies.verification import Price
from tests.judge.support import policy
from tests.judge.test_the_judge_decides_on_fields import POD_OOM, Cluster, draft, evidence
from tools.redact import Redactor
from triage.agent import intake
from triage.agent.graph import RunResult
from triage.core.llm import Usage
from triage.reports.store import MemoryReportReads, MemoryReportStore
from triage.verification.budget import Budget
from triage.verification.loop import Outcome, run_checked


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


class worker:  # noqa: N801 (a worker is called like a function)
    """A fixed attempt, for counting what the loop records (the loop's own unit test)."""

    takes_feedback = True

    def __init__(self, words: str) -> None:
        self.words = words

    def __call__(self, attempt: int, feedback: tuple[str, ...]) -> RunResult:
        goal = intake.parse(self.words, now=1e9)
        return RunResult("t", goal, [evidence("E1")], draft(), 0.0)


def test_a_verified_record_run_is_counted_with_its_cost() -> None:
    store = MemoryReportStore()
    tools = MemoryReportReads(Cluster(pods=[POD_OOM]), store)
    verification = policy(pricing={"m-priced": Price(input_per_mtok=2.0, output_per_mtok=8.0)})
    budget = Budget(verification.budget, verification.pricing)
    budget.track("worker", "m-priced", Usage(requests=1, input_tokens=1000, output_tokens=500))
    budget.track("judge", "m-unpriced", Usage(requests=1, input_tokens=100, output_tokens=10))
    before = {
        "record": sample("triage_verification_runs_total", activation="record"),
        "verified": sample("triage_run_outcomes_total", outcome="verified"),
        "cost": sample("triage_llm_cost_usd_total", role="worker"),
        "priced": sample("triage_cost_estimates_total", priced="true"),
        "unpriced": sample("triage_cost_estimates_total", priced="false"),
        "judged": sample("triage_judge_seconds_count"),
    }
    run = run_checked(
        worker=worker("api in shop keeps restarting, write the RCA"),
        judge=Judge(tools),
        store=store,
        policy=verification,
        budget=budget,
        redactor=Redactor(),
        run_id="cli:counted",
    )
    assert run.outcome is Outcome.VERIFIED
    assert run.report is not None
    stored = store.get("shop", run.report.name)
    assert stored is not None
    assert stored["status"]["outcome"] == "verified"
    assert sample("triage_verification_runs_total", activation="record") == before["record"] + 1
    assert sample("triage_run_outcomes_total", outcome="verified") == before["verified"] + 1
    assert sample("triage_llm_cost_usd_total", role="worker") - before["cost"] == (
        (1000 * 2.0 + 500 * 8.0) / 1e6
    )
    assert sample("triage_cost_estimates_total", priced="true") == before["priced"] + 1
    assert sample("triage_cost_estimates_total", priced="false") == before["unpriced"] + 1
    assert sample("triage_judge_seconds_count") == before["judged"] + 1


def test_a_budget_spent_by_the_worker_stops_the_retry() -> None:
    store = MemoryReportStore()
    tools = MemoryReportReads(Cluster(pods=[]), store)  # no OOMKilled pod: the judge rejects
    spent = Usage(requests=1, input_tokens=900, output_tokens=200)
    budget = Budget(BudgetPolicy(max_tokens=1000, max_cost_usd=None), {})
    budget.track("worker", "m", spent)
    run = run_checked(
        worker=worker("api in shop keeps restarting, write the RCA"),
        judge=Judge(tools),
        store=store,
        policy=policy(),
        budget=budget,
        redactor=Redactor(),
        run_id="cli:spent",
    )
    assert run.outcome is Outcome.BUDGET_EXHAUSTED
    assert len(run.attempts) == 1
    assert run.best.draft is not None
