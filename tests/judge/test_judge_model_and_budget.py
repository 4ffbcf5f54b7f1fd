"""The judge's model pass and the run's one budget, over the wire to the scripted model server.

Everything runs through the product's own checked run (`App.checked_run`), with the judge's
and the worker's models configured as an operator would (TRIAGE_*_MODEL__BASE_URL pointing at
the scripted server). The worker is the LLM planner talking to the same scripted server: its
tokens and the judge's are counted together, and a fault in what the model says (a root cause
the cluster contradicts) or in whether it answers at all (HTTP 500) is injected there.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from policies.verification import Price
from tests.judge.support import (
    checked_run,
    model_settings,
    policy,
    script_judge_agrees,
    script_llm_attempt,
)
from triage.verification.loop import Outcome

pytestmark = pytest.mark.cluster


def judge_requests(server: Any) -> int:
    """Requests the judge's model pass sent (its tool is `report_verdict`)."""
    return sum("report_verdict" in str(r.get("tools")) for r in server.requests)


def rca_request(ns: str) -> str:
    return f"image-resizer in {ns} keeps restarting, write the RCA"


def oom_rca(
    claim: str = "image-resizer's container was OOMKilled at its memory limit",
) -> dict[str, Any]:
    return {
        "title": "image-resizer OOMKilled",
        "summary": "image-resizer is killed for exceeding its 256Mi memory limit.",
        "root_cause_class": "oom_killed",
        "impact": "Thumbnails are delayed.",
        "root_cause": [{"text": claim, "evidence": ["E1"]}],
    }


def test_judge_model_down_gives_evaluator_unavailable_without_hanging(
    reports, oom_namespace, openai_server, tmp_path
) -> None:
    openai_server.fail(500, times=5)
    judge = model_settings(openai_server.base_url, openai_server.api_key)
    start = time.monotonic()
    run = checked_run(
        rca_request(oom_namespace), control_plane=reports, state_dir=tmp_path, judge=judge
    )
    assert time.monotonic() - start < 30
    assert run.outcome is Outcome.EVALUATOR_UNAVAILABLE
    assert not run.done
    assert len(run.attempts) == 1  # the worker is not retried for the judge's outage
    assert run.best.draft is not None
    assert run.best.draft.root_cause_class == "oom_killed"
    assert judge_requests(openai_server) == 2  # its own bounded retries, then it gave up


def test_judge_model_agreeing_verifies(reports, oom_namespace, openai_server, tmp_path) -> None:
    script_judge_agrees(openai_server)
    judge = model_settings(openai_server.base_url, openai_server.api_key)
    run = checked_run(
        rca_request(oom_namespace), control_plane=reports, state_dir=tmp_path, judge=judge
    )
    assert run.outcome is Outcome.VERIFIED
    assert run.verdict is not None
    assert run.verdict.model_pass.value == "agreed"
    assert "report_verdict" in openai_server.request_text()


def test_worker_and_judge_tokens_share_one_budget(
    reports, oom_namespace, openai_server, tmp_path
) -> None:
    model = model_settings(openai_server.base_url, openai_server.api_key, attempts=1)
    script_llm_attempt(openai_server, oom_rca(), tokens=500)
    script_judge_agrees(openai_server, tokens=400)
    words = rca_request(oom_namespace)
    price = Price(input_per_mtok=1.0, output_per_mtok=4.0)
    run = checked_run(
        words,
        control_plane=reports,
        state_dir=tmp_path,
        judge=model,
        worker=model,
        verification=policy(pricing={"openai:triage-test-model": price}),
    )
    assert run.outcome is Outcome.VERIFIED, run.summary()
    roles = {r["role"]: r for r in run.spend["by_role"]}
    assert roles["worker"]["input_tokens"] == 1000
    assert roles["worker"]["output_tokens"] == 110
    assert roles["judge"]["input_tokens"] == 400
    assert run.spend["tokens"] == 1000 + 110 + 400 + 20
    assert run.spend["cost_usd"] == pytest.approx((1400 * 1.0 + 130 * 4.0) / 1e6)
    assert run.spend["priced"] is True


def test_a_budget_too_small_ends_in_budget_exhausted(
    reports, oom_namespace, openai_server, tmp_path
) -> None:
    model = model_settings(openai_server.base_url, openai_server.api_key, attempts=1)
    script_llm_attempt(openai_server, oom_rca(), tokens=900)
    words = rca_request(oom_namespace)
    run = checked_run(
        words,
        control_plane=reports,
        state_dir=tmp_path,
        judge=model,
        worker=model,
        verification=policy(max_tokens=2000),
    )
    assert run.outcome is Outcome.BUDGET_EXHAUSTED, run.summary()
    assert judge_requests(openai_server) == 0  # it could not pay for the judge's call
    assert openai_server.remaining == 0
    assert run.best.draft is not None


def test_without_a_price_only_the_attempt_limit_applies_and_it_is_said(
    reports, oom_namespace, openai_server, tmp_path
) -> None:
    script_judge_agrees(openai_server)
    run = checked_run(
        rca_request(oom_namespace),
        control_plane=reports,
        state_dir=tmp_path,
        judge=model_settings(openai_server.base_url, openai_server.api_key),
        verification=policy(max_tokens=None, max_cost_usd=0.000001),
    )
    assert run.outcome is Outcome.VERIFIED
    assert run.spend["priced"] is False
    assert any("no price for openai:triage-test-model" in n for n in run.notes)


def test_a_root_cause_the_cluster_contradicts_is_rejected_and_retried(
    reports, crashloop_namespace, openai_server, tmp_path
) -> None:
    words = f"checkout-api in {crashloop_namespace} returns 503, write the RCA"
    wrong = oom_rca("checkout-api's container was OOMKilled")
    for _ in range(2):
        script_llm_attempt(openai_server, wrong, tokens=300)
    run = checked_run(
        words,
        control_plane=reports,
        state_dir=tmp_path,
        worker=model_settings(openai_server.base_url, openai_server.api_key, attempts=1),
        verification=policy(max_attempts=2),
    )
    assert run.outcome is Outcome.REJECTED, run.summary()
    assert len(run.attempts) == 2
    assert run.verdict is not None
    assert any("'oom_killed' contradicts the cluster" in m for m in run.verdict.missing)
