"""Model down, slow, or talking garbage → bounded retries, then the rules planner's RCA, with
the fallback said in the RCA. Over HTTP (the real OpenAI client against the scripted server)
and in-process."""

from __future__ import annotations

import time

import pytest

from tests.agent.llm.support import (
    TURN_1,
    TURN_2,
    CannedTools,
    calls,
    done,
    http_settings,
    investigate,
    scripted_planner,
)
from tests.support.fake_openai import ToolCall as WireCall
from triage.agent.planners.llm.planner import LLMPlanner
from triage.agent.planners.rules.planner import RulesPlanner
from triage.core import metrics

ATTEMPTS = 3


def _rules_draft():
    return investigate(RulesPlanner(), CannedTools(secrets=False, injections=False)).draft


def _fallbacks() -> float:
    return metrics.LLM_FALLBACKS.labels(role="worker")._value.get()


def _assert_rules_rca_with_fallback_said(draft) -> None:
    rules = _rules_draft()
    assert draft is not None
    assert rules is not None
    assert draft.planner == "rules (llm fallback)"
    assert draft.root_cause_class == rules.root_cause_class == "bad_config"
    # the same finding (evidence ids differ when the model gathered some of it first)
    assert [c.text for c in draft.root_cause] == [c.text for c in rules.root_cause]
    assert draft.remediation == rules.remediation
    said = [u for u in draft.unavailable if u.startswith("LLM planner")]
    assert len(said) == 1
    assert "rules planner's" in said[0]
    assert any(n.startswith("fell back to the rules planner") for n in draft.notes)


def _script_failures(server, kind: str) -> None:
    for _ in range(ATTEMPTS):
        if kind == "http-500":
            server.fail(500)
        elif kind == "http-429":
            server.fail(429, message="rate limited")
        elif kind == "garbage":
            server.garbage()
        elif kind == "wrong-shape":
            server.garbage(b'{"id": "x", "choices": "nope"}')
        elif kind == "slow":
            server.reply("too late", delay=3.0)
        elif kind == "malformed-tool-call":
            server.reply(tool_calls=[WireCall("k8s_pods", "{not json")])
        elif kind == "invalid-arguments":
            server.reply(tool_calls=[WireCall("k8s_logs", {"namespace": "shop"})])  # no pod


@pytest.mark.parametrize(
    "kind",
    [
        "http-500",
        "http-429",
        "garbage",
        "wrong-shape",
        "slow",
        "malformed-tool-call",
        "invalid-arguments",
    ],
)
def test_model_failing_while_planning_gives_the_rules_rca(openai_server, kind: str) -> None:
    _script_failures(openai_server, kind)
    planner = LLMPlanner.from_settings(http_settings(openai_server, timeout_s=0.5))
    before = _fallbacks()
    started = time.monotonic()
    result = investigate(planner, CannedTools(secrets=False, injections=False))

    assert len(openai_server.requests) == ATTEMPTS  # bounded: then never asked again
    assert openai_server.unexpected == 0
    assert time.monotonic() - started < 30
    _assert_rules_rca_with_fallback_said(result.draft)
    assert _fallbacks() == before + 1


def test_a_bad_key_is_not_retried(openai_server) -> None:
    planner = LLMPlanner.from_settings(http_settings(openai_server, api_key="sk-wrong-key-000"))
    result = investigate(planner, CannedTools(secrets=False, injections=False))
    assert planner.client.usage.requests == 1  # 401: a retry cannot fix it
    _assert_rules_rca_with_fallback_said(result.draft)
    assert "sk-wrong-key-000" not in " ".join(result.draft.notes + result.draft.unavailable)


def test_model_failing_while_drafting_gives_the_rules_rca(openai_server) -> None:
    for item in (calls(*TURN_1), calls(*TURN_2), done()):
        openai_server.reply(
            item.content or None,
            tool_calls=[WireCall(c["name"], c["args"]) for c in item.tool_calls],
        )
    openai_server.reply("Here is my RCA: it is probably the database.")  # no submit_rca
    openai_server.garbage()
    openai_server.reply(tool_calls=[WireCall("submit_rca", {"title": "missing fields"})])
    planner = LLMPlanner.from_settings(http_settings(openai_server))
    result = investigate(planner, CannedTools(secrets=False, injections=False))
    assert len(openai_server.requests) == 3 + ATTEMPTS
    _assert_rules_rca_with_fallback_said(result.draft)
    # the retry told the model what was wrong
    retry = openai_server.requests[4]["messages"][-1]["content"]
    assert "could not be used" in retry


def test_one_failure_then_an_answer_is_not_a_fallback(openai_server) -> None:
    openai_server.fail(503)
    for item in (calls(*TURN_1), calls(*TURN_2), done()):
        openai_server.reply(
            item.content or None,
            tool_calls=[WireCall(c["name"], c["args"]) for c in item.tool_calls],
        )
    openai_server.fail(500)
    openai_server.reply(
        tool_calls=[
            WireCall(
                "submit_rca",
                {
                    "title": "RCA",
                    "summary": "checkout-api crash-loops on a bad DATABASE_URL.",
                    "root_cause_class": "bad_config",
                    "impact": "503s",
                    "root_cause": [{"text": "FATAL: DATABASE_URL is invalid", "evidence": ["E5"]}],
                },
            )
        ]
    )
    planner = LLMPlanner.from_settings(http_settings(openai_server))
    result = investigate(planner, CannedTools(secrets=False, injections=False))
    assert len(openai_server.requests) == 6
    assert result.draft is not None
    assert result.draft.planner == "llm"
    assert not any(u.startswith("LLM planner") for u in result.draft.unavailable)


def test_in_process_exceptions_fall_back_after_the_bound() -> None:
    planner, model = scripted_planner([TimeoutError("read timed out")] * ATTEMPTS)
    result = investigate(planner, CannedTools(secrets=False, injections=False))
    assert len(model.received) == ATTEMPTS
    _assert_rules_rca_with_fallback_said(result.draft)
    assert "TimeoutError" in result.draft.unavailable[-1]


def test_a_slow_model_stops_at_the_model_time_budget(openai_server) -> None:
    """Each reply within the request timeout, but together past the investigation's budget."""
    first = calls(*TURN_1)
    openai_server.reply(
        tool_calls=[WireCall(c["name"], c["args"]) for c in first.tool_calls], delay=0.6
    )
    settings = http_settings(openai_server)
    settings.planner.max_model_seconds = 0.5
    planner = LLMPlanner.from_settings(settings)
    result = investigate(planner, CannedTools(secrets=False, injections=False))
    assert len(openai_server.requests) == 1  # asked once, then the budget was spent
    _assert_rules_rca_with_fallback_said(result.draft)
    assert "model-time budget of 0.5 s is spent" in result.draft.unavailable[-1]


def test_a_server_refusing_forced_tool_choice_is_asked_without_it(openai_server) -> None:
    for item in (calls(*TURN_1), calls(*TURN_2), done()):
        openai_server.reply(
            item.content or None,
            tool_calls=[WireCall(c["name"], c["args"]) for c in item.tool_calls],
        )
    openai_server.fail(400, message="tool_choice 'function' is not supported")
    openai_server.reply(
        tool_calls=[
            WireCall(
                "submit_rca",
                {
                    "title": "RCA",
                    "summary": "checkout-api crash-loops on a bad DATABASE_URL.",
                    "root_cause_class": "bad_config",
                    "impact": "503s",
                    "root_cause": [{"text": "FATAL: DATABASE_URL is invalid", "evidence": ["E5"]}],
                },
            )
        ]
    )
    planner = LLMPlanner.from_settings(http_settings(openai_server))
    result = investigate(planner, CannedTools(secrets=False, injections=False))
    forced = openai_server.requests[3].get("tool_choice")
    assert forced == {"type": "function", "function": {"name": "submit_rca"}}
    assert "tool_choice" not in openai_server.requests[4]
    assert result.draft is not None
    assert result.draft.planner == "llm"
