"""The worker's and the judge's tokens count against one budget whichever surface runs the
check: the Slack worker and the CLI both call the product's one factory (`App.checked_run`).

The models are configured as an operator would (TRIAGE_WORKER_MODEL__* and
TRIAGE_JUDGE_MODEL__* pointing at the scripted OpenAI-compatible server, which reports usage
figures); the spend lands on the RCAReport's status, and a budget too small for the judge's
call ends the Slack run `budget_exhausted`.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.judge.support import model_settings, script_judge_agrees, script_llm_attempt
from tests.slack.support import BotServer, demo_app, mention, settings_for, user_message
from triage.cli.main import app
from triage.core.settings import Settings

WORDS = "checkout-api in scn-crashloop-bad-env is returning 503, find out why and write the RCA"


def crash_rca() -> dict[str, Any]:
    return {
        "title": "checkout-api crash-loops",
        "summary": "checkout-api exits at start-up: DATABASE_URL is not a valid URL.",
        "root_cause_class": "bad_config",
        "impact": "checkout returns 503.",
        "root_cause": [{"text": "checkout-api's pods are in CrashLoopBackOff", "evidence": ["E1"]}],
    }


def slack_settings(slack_api: Any, openai_server: Any, tmp_path: Any, **budget: Any) -> Settings:
    settings = settings_for(slack_api, tmp_path)
    model = model_settings(openai_server.base_url, openai_server.api_key, attempts=1)
    settings.worker_model = model
    settings.judge_model = model
    settings.planner.kind = "llm"
    if budget:
        policy = tmp_path / "policy.yaml"
        policy.write_text(json.dumps({"verification": {"budget": budget}}))
        settings.policy_file = policy
    return settings


def stored_status(server: BotServer) -> dict[str, Any]:
    store = server.product.store
    ((_, report),) = store.reports.items()  # type: ignore[union-attr]
    return dict(report.get("status") or {})


def test_slack_counts_worker_and_judge_against_one_budget(slack_api, openai_server, tmp_path):
    script_llm_attempt(openai_server, crash_rca(), tokens=500)
    script_judge_agrees(openai_server, tokens=400)
    settings = slack_settings(slack_api, openai_server, tmp_path)
    with BotServer(settings, demo_app(settings)) as server:
        server.deliver(mention("Ev0BUDGET", WORDS, ts=user_message(slack_api, WORDS)))
        row = server.wait_done("Ev0BUDGET", timeout=60)
        status = stored_status(server)

    assert row["steps"]["ticket_final"] == "verified", status
    roles = {r["role"]: r for r in status["spend"]["by_role"]}
    assert roles["worker"]["input_tokens"] == 1000
    assert roles["judge"]["input_tokens"] == 400
    assert status["spend"]["tokens"] == 1000 + 110 + 400 + 20


def test_slack_ends_budget_exhausted_when_the_budget_is_small(slack_api, openai_server, tmp_path):
    script_llm_attempt(openai_server, crash_rca(), tokens=900)
    settings = slack_settings(slack_api, openai_server, tmp_path, max_tokens=2000)
    with BotServer(settings, demo_app(settings)) as server:
        server.deliver(mention("Ev0SMALL", WORDS, ts=user_message(slack_api, WORDS)))
        row = server.wait_done("Ev0SMALL", timeout=60)
        status = stored_status(server)

    assert row["steps"]["ticket_final"] == "budget_exhausted"
    assert status["outcome"] == "budget_exhausted"
    assert not any("report_verdict" in str(r.get("tools")) for r in openai_server.requests)


@pytest.mark.cluster
def test_the_cli_counts_worker_and_judge_against_one_budget(
    reports, crashloop_namespace, openai_server, tmp_path
):
    script_llm_attempt(openai_server, crash_rca(), tokens=500)
    script_judge_agrees(openai_server, tokens=400)
    env = {
        "TRIAGE_STATE__DIR": str(tmp_path),
        "TRIAGE_PLANNER__KIND": "llm",
        **{
            f"TRIAGE_{role}_MODEL__{key}": value
            for role in ("WORKER", "JUDGE")
            for key, value in (
                ("NAME", "openai:triage-test-model"),
                ("BASE_URL", openai_server.base_url),
                ("API_KEY", openai_server.api_key),
                ("MAX_ATTEMPTS", "1"),
            )
        },
    }
    words = WORDS.replace("scn-crashloop-bad-env", crashloop_namespace)
    args = ["investigate", words, "--kubeconfig", str(reports.reader_kubeconfig), "-o", "json"]
    result = CliRunner().invoke(app, [*args, "-q"], env=env)

    out = json.loads(result.stdout)
    spend = out["verification"]["spend"]
    roles = {r["role"]: r for r in spend["by_role"]}
    assert out["verification"]["outcome"] == "verified", out["verification"]
    assert roles["worker"]["input_tokens"] == 1000
    assert roles["judge"]["input_tokens"] == 400
    assert spend["tokens"] == 1000 + 110 + 400 + 20
