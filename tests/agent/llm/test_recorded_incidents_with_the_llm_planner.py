"""The LLM planner on every recorded real investigation (triage/demo/*.json, replayed offline).

Two models: one that is down (every request fails) — the RCA must be the rules planner's, with
the scenario's expected root cause — and one that follows the hints the planner gives it (the
rules playbook's next calls, then its diagnosis with evidence ids) — the RCA must be the
model's, cite only ok evidence, and name the scenario's root cause. The second proves the
prompt really carries usable hints and ids, and that real tool output round-trips through the
model's tool calls without a replay miss.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from tests.agent.llm.support import scripted_planner
from tests.support.scenario_format import load_scenarios
from tools.redact import MASK, Redactor
from triage.agent import intake
from triage.agent.graph import build_graph, inputs_for, run_graph
from triage.agent.planners.llm.planner import LLMPlanner
from triage.core.bundles import Bundle, ReplayTools, demo_dir, demo_names
from triage.core.llm import ModelClient
from triage.core.settings import GraphSettings, PlannerSettings

EXPECTED = {s.name: s.expect for s in load_scenarios(split="dev")}
NAMES = demo_names()
_CALL = re.compile(r"^- (\w+) (\{.*\})$")
_CLAIM = re.compile(r"^- (.*) \[(E\d+(?:, E\d+)*)\]$")


class HintFollowingModel(BaseChatModel):
    """Calls what the hints say the playbook would call next; then writes the hinted diagnosis."""

    prompts: list[str] = Field(default_factory=list)
    mode: str = "plan"

    @property
    def _llm_type(self) -> str:
        return "hint-following"

    def bind_tools(self, tools, *, tool_choice=None, **kwargs):
        names = [t["function"]["name"] for t in tools]
        self.mode = "draft" if names == ["submit_rca"] else "plan"
        return self

    def _generate(self, messages: list[BaseMessage], stop=None, run_manager=None, **kw):
        prompt = next(str(m.content) for m in messages if "User request" in str(m.content))
        self.prompts.append(prompt)
        section = prompt.split("Evidence so far:", maxsplit=1)[0]
        lines = section.splitlines()
        usage = {"input_tokens": len(prompt) // 4, "output_tokens": 50, "total_tokens": 0}
        if self.mode == "plan":
            start = (
                lines.index("Calls its playbooks would make next:") + 1
                if ("Calls its playbooks would make next:" in lines)
                else len(lines)
            )
            calls: list[dict[str, Any]] = []
            for line in lines[start:]:
                m = _CALL.match(line)
                if not m:
                    break
                calls.append(
                    {
                        "name": m[1],
                        "args": json.loads(m[2]),
                        "id": f"c{len(calls)}",
                        "type": "tool_call",
                    }
                )
            message = AIMessage(
                content="" if calls else "done", tool_calls=calls, usage_metadata=usage
            )
            return ChatResult(generations=[ChatGeneration(message=message)])
        i = lines.index("Its diagnosis from the evidence so far:")
        cls, _, summary = lines[i + 1][2:].partition(": ")
        claims = []
        for line in lines[i + 2 :]:
            m = _CLAIM.match(line)
            if not m:
                break
            claims.append({"text": m[1], "evidence": m[2].split(", ")})
        rca: dict[str, Any] = {
            "title": f"RCA: {summary}",
            "summary": summary,
            "root_cause_class": cls,
            "impact": "As observed.",
            "root_cause": claims,
        }
        message = AIMessage(
            content="",
            tool_calls=[{"name": "submit_rca", "args": rca, "id": "rca", "type": "tool_call"}],
            usage_metadata=usage,
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def _replay(name: str, planner, tmp_path):
    bundle = Bundle.read(demo_dir() / f"{name}.json")
    replay = ReplayTools(bundle)
    goal = intake.parse(bundle.question, now=bundle.now, default_namespace=bundle.namespace)
    graph = build_graph(planner, replay, GraphSettings(), InMemorySaver())
    result = run_graph(
        graph, inputs_for(goal, run="test", now=bundle.now), thread_id="t", recursion_limit=80
    )
    return result, replay


def test_every_recording_is_a_dev_scenario() -> None:
    """The recordings are real runs of development scenarios (never held-out ones)."""
    assert NAMES
    assert set(NAMES) <= set(EXPECTED)


@pytest.mark.parametrize("name", NAMES)
def test_model_down_gives_the_rules_rca_on_a_real_incident(name: str, tmp_path) -> None:
    planner, model = scripted_planner([ConnectionError("connection refused")] * 3)
    result, replay = _replay(name, planner, tmp_path)
    assert replay.misses == []
    assert len(model.received) == 3  # bounded, then never asked again
    draft = result.draft
    assert draft is not None
    assert draft.planner == "rules (llm fallback)"
    assert draft.root_cause_class in {EXPECTED[name].root_cause_class, *EXPECTED[name].also_accept}
    assert any(u.startswith("LLM planner") for u in draft.unavailable)


@pytest.mark.parametrize("name", NAMES)
def test_a_model_following_the_hints_reaches_a_cited_rca(name: str, tmp_path) -> None:
    model = HintFollowingModel()
    client = ModelClient(model=model, role="worker", redactor=Redactor(), sleep=lambda _s: None)
    planner = LLMPlanner(client, settings=PlannerSettings(max_model_turns=8, max_calls_per_turn=20))
    result, replay = _replay(name, planner, tmp_path)

    assert replay.misses == []
    draft = result.draft
    assert draft is not None
    assert draft.planner == "llm", draft.notes
    assert draft.root_cause_class in {EXPECTED[name].root_cause_class, *EXPECTED[name].also_accept}
    assert draft.root_cause
    ok = {e.id for e in result.evidence if e.ok}
    assert draft.cited_ids() <= ok
    # what the model saw: untrusted blocks, ids, and nothing a redaction pattern would still mask
    for prompt in model.prompts:
        assert "<untrusted-data-" in prompt
        assert Redactor().secrets_in(prompt.replace(MASK, "")) == []
