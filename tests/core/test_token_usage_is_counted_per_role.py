"""Token usage of the worker and the judge shows in the metrics, per role, as the provider
reported it — over HTTP through ChatOpenAI and in-process."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from prometheus_client import REGISTRY, generate_latest

from tests.agent.llm.support import (
    HONEST_RCA,
    TURN_1,
    TURN_2,
    CannedTools,
    calls,
    done,
    http_settings,
    investigate,
    scripted_planner,
    submit,
)
from tests.support.fake_openai import ToolCall as WireCall
from tools.redact import Redactor
from triage.agent.planners.llm.planner import LLMPlanner
from triage.core.llm import ModelClient


def tokens(role: str, direction: str) -> float:
    value = REGISTRY.get_sample_value(
        "triage_llm_tokens_total", {"role": role, "direction": direction}
    )
    return value or 0.0


def requests(role: str, outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "triage_llm_requests_total", {"role": role, "outcome": outcome}
    )
    return value or 0.0


def test_worker_tokens_over_http_are_the_providers_figures(openai_server) -> None:
    figures = [(1200, 40), (2300, 55), (3100, 9), (3500, 400)]
    script = [calls(*TURN_1), calls(*TURN_2), done(), submit(HONEST_RCA)]
    for item, (prompt, completion) in zip(script, figures, strict=True):
        openai_server.reply(
            item.content or None,
            tool_calls=[WireCall(c["name"], c["args"]) for c in item.tool_calls],
            prompt_tokens=prompt,
            completion_tokens=completion,
        )
    before_in, before_out = tokens("worker", "input"), tokens("worker", "output")
    before_ok, judge_before = requests("worker", "ok"), tokens("judge", "input")

    planner = LLMPlanner.from_settings(http_settings(openai_server))
    result = investigate(planner, CannedTools(secrets=False, injections=False))

    assert tokens("worker", "input") - before_in == sum(p for p, _ in figures)
    assert tokens("worker", "output") - before_out == sum(c for _, c in figures)
    assert requests("worker", "ok") - before_ok == 4
    assert tokens("judge", "input") == judge_before  # the worker's use is not the judge's
    assert result.draft is not None
    assert result.draft.notes[-1].endswith("4 model request(s), 10100 input and 504 output tokens")


def test_judge_tokens_are_counted_under_the_judge_role(openai_server) -> None:
    """The judge builds its client from its own settings group with the same code."""
    openai_server.reply("verified", prompt_tokens=700, completion_tokens=3)
    settings = http_settings(openai_server)
    client = ModelClient.from_settings(settings.judge_model, "judge", Redactor())
    before_in, before_out = tokens("judge", "input"), tokens("judge", "output")
    worker_before = tokens("worker", "input")

    answer = client.invoke([HumanMessage(content="Is the RCA backed by evidence?")], lambda m: m)

    assert isinstance(answer, AIMessage)
    assert answer.content == "verified"
    assert tokens("judge", "input") - before_in == 700
    assert tokens("judge", "output") - before_out == 3
    assert tokens("worker", "input") == worker_before
    exposition = generate_latest(REGISTRY).decode()
    for role in ("worker", "judge"):
        assert f'triage_llm_tokens_total{{direction="input",role="{role}"}}' in exposition


def test_failed_and_invalid_requests_are_counted_by_outcome() -> None:
    invalid = AIMessage(
        content="",
        invalid_tool_calls=[
            {"type": "invalid_tool_call", "name": "k8s_pods", "args": "{", "id": "1", "error": "x"}
        ],
    )
    before = {o: requests("worker", o) for o in ("error", "timeout", "invalid")}
    planner, _ = scripted_planner([ConnectionError("reset"), TimeoutError("slow"), invalid])
    investigate(planner, CannedTools(secrets=False, injections=False))
    assert requests("worker", "error") - before["error"] == 1
    assert requests("worker", "timeout") - before["timeout"] == 1
    assert requests("worker", "invalid") - before["invalid"] == 1
