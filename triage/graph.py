"""The investigation as a LangGraph graph: intake → investigate ⇄ tools → draft [→ approve →
mutate].

The planner decides, the graph executes: `investigate` asks the planner for the next read
calls, `tools` runs them through the read registry (the only tools this graph holds) and
records each outcome as Evidence with a stable id, `draft` asks the planner for the RCA.
Casual messages stop after intake. A tool budget and LangGraph's recursion limit bound the
loop; the tools node has no automatic retry policy (a failed call is evidence, not a crash).
"""

from __future__ import annotations

import logging
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from tools.mutate import MutateRegistry
from tools.read import ReadTools
from tools.redact import DEFAULT
from tools.results import ErrorKind, ToolResult, ToolStatus, clip
from triage import approvals, intake
from triage.models import Evidence, Goal, RCADraft, RequestKind
from triage.planner import Planner, ToolCall, already_called
from triage.settings import GraphSettings, StateSettings
from triage.state import TriageState, draft_of, evidence_of, goal_of

MAX_PARALLEL_CALLS = 4
log = logging.getLogger("triage.graph")

ProgressFn = Callable[[dict[str, Any]], None]


def build_graph(
    planner: Planner,
    tools: ReadTools,
    settings: GraphSettings,
    checkpointer: BaseCheckpointSaver[Any] | None = None,
    mutator: MutateRegistry | None = None,
) -> CompiledStateGraph[TriageState, None, TriageState, TriageState]:
    """`mutator` given: changes the user asked for go draft → approve → mutate (ledgered)."""

    def intake_node(state: TriageState) -> TriageState:
        goal = intake.parse(
            state["words"],
            now=state["now"],
            namespace=state.get("namespace"),
            default_window_s=settings.window_s,
        )
        return {"goal": goal.model_dump(mode="json"), "tool_calls": 0, "pending": []}

    def after_intake(state: TriageState) -> Literal["investigate", "__end__"]:
        return "__end__" if goal_of(state).kind is RequestKind.CASUAL else "investigate"

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
            results = list(pool.map(lambda c: _call_recorded(tools, c), calls))
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
    graph.add_node("intake", intake_node)
    graph.add_node("investigate", investigate_node)
    graph.add_node("tools", tools_node)
    graph.add_node("draft", draft_node)
    graph.add_edge(START, "intake")
    graph.add_conditional_edges("intake", after_intake)
    graph.add_conditional_edges("investigate", after_investigate)
    graph.add_edge("tools", "investigate")
    if mutator is None:
        graph.add_edge("draft", END)
    else:
        graph.add_node("approve", approvals.approve_node(mutator), retry_policy=approvals.NO_RETRY)
        graph.add_node("mutate", approvals.mutate_node(mutator), retry_policy=approvals.NO_RETRY)
        graph.add_conditional_edges("draft", approvals.after_draft)
        graph.add_edge("approve", "mutate")
        graph.add_edge("mutate", END)
    return graph.compile(checkpointer=checkpointer)


def _call_recorded(tools: ReadTools, call: ToolCall) -> ToolResult:
    """A tool call whose failure, of any kind, becomes evidence instead of ending the run.

    Tools map the failures they know (HTTP statuses, timeouts) themselves; anything else (an
    unparseable answer, a bug) is recorded here as `error` with its type, and logged.
    """
    try:
        return tools.call(call.name, call.args)
    except Exception as e:  # recorded as failed evidence: invoked is not succeeded
        log.warning("tool %s failed unexpectedly: %s", call.name, e, exc_info=True)
        return ToolResult(
            tool=call.name,
            args=call.args,
            status=ToolStatus.ERROR,
            excerpt=clip(DEFAULT.text(f"{type(e).__name__}: {e}")),
            error_kind=ErrorKind.BACKEND,
        )


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
    thread_id: str
    goal: Goal
    evidence: list[Evidence]
    draft: RCADraft | None
    seconds: float


def run_investigation(
    words: str,
    *,
    planner: Planner,
    tools: ReadTools,
    graph_settings: GraphSettings,
    state_settings: StateSettings,
    namespace: str | None = None,
    now: float | None = None,
    thread_id: str | None = None,
    on_progress: ProgressFn | None = None,
) -> RunResult:
    """Run the graph to the end and return what it found."""
    thread_id = thread_id or f"cli:{uuid.uuid4()}"
    start = time.perf_counter()
    config: Any = {
        "configurable": {"thread_id": thread_id},
        "recursion_limit": graph_settings.recursion_limit,
    }
    inputs: TriageState = {
        "words": words,
        "namespace": namespace,
        "now": time.time() if now is None else now,
        "evidence": [],
    }
    with checkpointer_for(state_settings) as saver:
        graph = build_graph(planner, tools, graph_settings, saver)
        for mode, chunk in graph.stream(inputs, config, stream_mode=["custom", "updates"]):
            if on_progress is not None:
                if mode == "custom" and isinstance(chunk, dict):
                    on_progress(chunk)
                elif isinstance(chunk, dict):
                    on_progress({"node": next(iter(chunk), "")})
        final = cast(TriageState, graph.get_state(config).values)
    return RunResult(
        thread_id=thread_id,
        goal=goal_of(final),
        evidence=evidence_of(final),
        draft=draft_of(final),
        seconds=time.perf_counter() - start,
    )
