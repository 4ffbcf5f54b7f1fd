"""The investigation as a LangGraph graph: investigate ⇄ tools → draft [→ approve → mutate].

The planner decides, the graph executes: `investigate` asks the planner for the next read
calls, `tools` runs them through the read registry (the only tools this graph holds) and
records each outcome as Evidence with a stable id, `draft` asks the planner for the RCA. When
the request commands a change and changes are configured, `approve` (a pause for a person's
approval, where the policy wants one) and `mutate` (through the ledger) follow the draft, so
the judge, which runs after the graph, sees what was executed. Intake happens before the
graph (once per request); the goal is part of the input. A tool budget and LangGraph's
recursion limit bound the loop; no node has an automatic retry policy (a failed call is
evidence, not a crash, and a write is retried only by the registry, after a state check).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from tools.read.registry import ReadTools
from triage.agent.changes import NO_RETRY, ChangeSteps, wants_changes
from triage.agent.planners.base import Planner, ToolCall, already_called
from triage.agent.state import TriageState, draft_of, evidence_of, goal_of
from triage.core.models import Evidence, Goal, RCADraft
from triage.core.settings import GraphSettings, StateSettings

MAX_PARALLEL_CALLS = 4
log = logging.getLogger("triage.graph")

ProgressFn = Callable[[dict[str, Any]], None]


def build_graph(
    planner: Planner,
    tools: ReadTools,
    settings: GraphSettings,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    changes: ChangeSteps | None = None,
) -> CompiledStateGraph[TriageState, None, TriageState, TriageState]:
    """`changes` given: changes the user commanded go draft → approve → mutate (ledgered)."""

    def investigate_node(state: TriageState) -> TriageState:
        evidence = evidence_of(state)
        budget = settings.max_tool_calls - state.get("tool_calls", 0)
        if budget <= 0:
            return {"pending": []}
        seen = already_called(evidence)
        calls: list[ToolCall] = []
        for call in planner.plan(goal_of(state), evidence, state["now"]):
            if call.key not in seen and call.key not in {c.key for c in calls}:
                calls.append(call)
        return {"pending": [c.model_dump(mode="json") for c in calls[:budget]]}

    def after_investigate(state: TriageState) -> Literal["tools", "draft"]:
        return "tools" if state.get("pending") else "draft"

    def tools_node(state: TriageState) -> TriageState:
        write = get_stream_writer()
        calls = [ToolCall.model_validate(c) for c in state.get("pending") or []]
        first = len(state.get("evidence") or []) + 1
        for call in calls:
            write({"tool": call.name, "args": call.args})
        with ThreadPoolExecutor(max_workers=MAX_PARALLEL_CALLS) as pool:
            results = list(pool.map(lambda c: tools.call(c.name, c.args), calls))
        evidence = [
            Evidence.from_result(f"E{first + i}", r, args=c.args)
            for i, (c, r) in enumerate(zip(calls, results, strict=True))
        ]
        for ev in evidence:
            write({"done": ev.tool, "status": ev.status.value, "id": ev.id})
        return {
            "evidence": [e.model_dump(mode="json") for e in evidence],
            "pending": [],
            "tool_calls": state.get("tool_calls", 0) + len(calls),
        }

    def draft_node(state: TriageState) -> TriageState:
        draft = planner.draft(goal_of(state), evidence_of(state), state["now"])
        return {"draft": draft.model_dump(mode="json")}

    graph = StateGraph(TriageState)

    def after_draft(state: TriageState) -> Literal["approve", "__end__"]:
        return "approve" if changes is not None and wants_changes(state) else "__end__"

    graph.add_node("investigate", investigate_node, retry_policy=NO_RETRY)
    graph.add_node("tools", tools_node, retry_policy=NO_RETRY)
    graph.add_node("draft", draft_node, retry_policy=NO_RETRY)
    graph.add_edge(START, "investigate")
    graph.add_conditional_edges("investigate", after_investigate)
    graph.add_edge("tools", "investigate")
    if changes is None:
        graph.add_edge("draft", END)
    else:
        graph.add_conditional_edges("draft", after_draft)
        graph.add_node("approve", changes.approve, retry_policy=NO_RETRY)
        graph.add_node("mutate", changes.mutate, retry_policy=NO_RETRY)
        graph.add_edge("approve", "mutate")
        graph.add_edge("mutate", END)
    return graph.compile(checkpointer=checkpointer)


@contextmanager
def checkpointer_for(settings: StateSettings) -> Iterator[BaseCheckpointSaver[Any]]:
    """SQLite in the state directory by default (survives restarts); memory for tests."""
    if settings.checkpointer == "memory":
        yield InMemorySaver()
        return
    Path(settings.dir).mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(Path(settings.dir) / "checkpoints.sqlite", check_same_thread=False)
    try:
        yield SqliteSaver(conn)
    finally:
        conn.close()


@dataclass(frozen=True)
class RunResult:
    """One attempt's result: what the graph found and, for a change, what came of it."""

    thread_id: str
    goal: Goal
    evidence: list[Evidence]
    draft: RCADraft | None
    seconds: float
    mutations: list[dict[str, Any]] = field(default_factory=list)
    awaiting: list[dict[str, Any]] = field(default_factory=list)


def inputs_for(
    goal: Goal, *, run: str, now: float, requested_by: str = "", requested_via: str = ""
) -> TriageState:
    """The graph's input for a fresh investigation of `goal`."""
    return {
        "goal": goal.model_dump(mode="json"),
        "run": run,
        "requested_by": requested_by,
        "requested_via": requested_via,
        "now": now,
        "evidence": [],
        "tool_calls": 0,
        "pending": [],
    }


def run_graph(
    graph: CompiledStateGraph[TriageState, None, TriageState, TriageState],
    inputs: TriageState,
    *,
    thread_id: str,
    recursion_limit: int,
    on_progress: ProgressFn | None = None,
) -> RunResult:
    """Run `graph` on `thread_id` to its end or its next pause, and return what it found.

    A thread with a checkpoint continues where it stopped (a crash, an approval pause) instead
    of starting over; a finished thread returns its result as it is.
    """
    start = time.perf_counter()
    config: Any = {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit}
    snapshot = graph.get_state(config)
    stream_input: Any = inputs
    if snapshot.next:
        paused = any(task.interrupts for task in snapshot.tasks)
        stream_input = Command(resume={"decided": True}) if paused else None
    elif snapshot.values and snapshot.values.get("draft") is not None:
        stream_input = None  # finished: nothing to run
    if stream_input is not None or snapshot.next:
        for mode, chunk in graph.stream(stream_input, config, stream_mode=["custom", "updates"]):
            if on_progress is None or not isinstance(chunk, dict):
                continue
            if mode == "custom":
                on_progress(chunk)
            elif "__interrupt__" not in chunk:
                on_progress({"node": next(iter(chunk), "")})
    final = graph.get_state(config)
    values = cast(TriageState, final.values)
    awaiting: list[dict[str, Any]] = []
    for task in final.tasks:
        for intr in task.interrupts:
            value = intr.value if isinstance(intr.value, dict) else {}
            awaiting.extend(value.get("awaiting_approval") or [])
    return RunResult(
        thread_id=thread_id,
        goal=goal_of(values),
        evidence=evidence_of(values),
        draft=draft_of(values),
        seconds=time.perf_counter() - start,
        mutations=list(values.get("mutations") or []),
        awaiting=awaiting,
    )
