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

Crash safety. A run is finished when its last node, `finish`, has written `finished` into the
state, never because the latest checkpoint has a draft and no next step: with LangGraph's
default "async" durability a checkpoint is written while the next step already runs, so a
SIGKILL can leave a thread whose latest stored state looks complete but is not (the answer was
sent with no RCA), or a thread with no input at all (`KeyError: 'goal'`). Durability, step by
step, is "sync" for every step (each checkpoint is on disk before the next step starts), for
these reasons: `tools` (reads) could be redone, but its evidence ids are cited by the draft,
so a draft must never outlive the evidence it cites; `draft` is the answer (and a model's
cost); `approve` is a pause that a click resumes on another process; `mutate` records what
was written to the cluster; `finish` is what "done" is decided on. `investigate` alone could
be lost harmlessly, and it costs one SQLite commit (about a millisecond) to keep it too, so
one mode for the whole run is the deliberate choice, not the default.
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

from langchain_core.runnables import RunnableConfig
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
from triage.agent.state import TriageState, draft_of, evidence_of, goal_of, records_of
from triage.core.database import setup_lock
from triage.core.errors import ConfigError
from triage.core.evidence_store import (
    POSTGRES_SCHEMA,
    EvidenceStore,
    MemoryEvidence,
    PostgresEvidence,
    SqliteEvidence,
)
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
    evidence_store: EvidenceStore | None = None,
) -> CompiledStateGraph[TriageState, None, TriageState, TriageState]:
    """`changes` given: changes the user commanded go draft → approve → mutate (ledgered).
    `evidence_store` given: the payloads of the evidence live there, not in the checkpoints."""
    built: dict[str, dict[str, Evidence]] = {}  # per thread: the evidence built so far

    def thread_of(config: RunnableConfig) -> str:
        return str((config.get("configurable") or {}).get("thread_id") or "")

    def load(state: TriageState, config: RunnableConfig) -> list[Evidence]:
        thread = thread_of(config)
        return evidence_of(state, evidence_store, thread, built.setdefault(thread, {}))

    def investigate_node(state: TriageState, config: RunnableConfig) -> TriageState:
        evidence = load(state, config)
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

    def tools_node(state: TriageState, config: RunnableConfig) -> TriageState:
        write = get_stream_writer()
        calls = [ToolCall.model_validate(c) for c in state.get("pending") or []]
        first = len(state.get("evidence") or []) + 1
        for call in calls:
            write({"tool": call.name, "args": call.args})
        with ThreadPoolExecutor(max_workers=MAX_PARALLEL_CALLS) as pool:
            results = list(pool.map(lambda c: tools.call(c.name, c.args), calls))
        evidence = [
            Evidence.from_result(f"E{first + i}", r, args=c.args, purpose=c.purpose)
            for i, (c, r) in enumerate(zip(calls, results, strict=True))
        ]
        for ev in evidence:
            write({"done": ev.tool, "status": ev.status.value, "id": ev.id})
        thread = thread_of(config)
        built.setdefault(thread, {}).update((e.id, e) for e in evidence)  # not read back
        return {
            "evidence": records_of(evidence, evidence_store, thread),
            "pending": [],
            "tool_calls": state.get("tool_calls", 0) + len(calls),
        }

    def draft_node(state: TriageState, config: RunnableConfig) -> TriageState:
        draft = planner.draft(goal_of(state), load(state, config), state["now"])
        return {"draft": draft.model_dump(mode="json")}

    def finish_node(state: TriageState) -> TriageState:
        return {"finished": True}

    graph = StateGraph(TriageState)

    def after_draft(state: TriageState) -> Literal["approve", "finish"]:
        return "approve" if changes is not None and wants_changes(state) else "finish"

    graph.add_node("investigate", investigate_node, retry_policy=NO_RETRY)
    graph.add_node("tools", tools_node, retry_policy=NO_RETRY)
    graph.add_node("draft", draft_node, retry_policy=NO_RETRY)
    graph.add_node("finish", finish_node, retry_policy=NO_RETRY)
    graph.add_edge("finish", END)
    graph.add_edge(START, "investigate")
    graph.add_conditional_edges("investigate", after_investigate)
    graph.add_edge("tools", "investigate")
    if changes is None:
        graph.add_edge("draft", "finish")
    else:
        graph.add_conditional_edges("draft", after_draft)
        graph.add_node("approve", changes.approve, retry_policy=NO_RETRY)
        graph.add_node("mutate", changes.mutate, retry_policy=NO_RETRY)
        graph.add_edge("approve", "mutate")
        graph.add_edge("mutate", "finish")
    return graph.compile(checkpointer=checkpointer)


@contextmanager
def checkpointer_for(
    settings: StateSettings, pool: Any = None
) -> Iterator[tuple[BaseCheckpointSaver[Any], EvidenceStore]]:
    """The checkpointer and the evidence store beside it: SQLite in the state directory by
    default (survives restarts); Postgres over `pool` (the shared database of several
    replicas, triage/core/database.py); memory for tests."""
    if settings.checkpointer == "memory":
        yield InMemorySaver(), MemoryEvidence()
        return
    if settings.checkpointer == "postgres":
        if pool is None:
            raise ConfigError("the postgres checkpointer needs the shared database's pool")
        from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415

        yield PostgresSaver(pool), PostgresEvidence(pool)
        return
    Path(settings.dir).mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(Path(settings.dir) / "checkpoints.sqlite", check_same_thread=False)
    try:
        saver = SqliteSaver(conn)
        yield saver, SqliteEvidence(conn, saver.lock)
    finally:
        conn.close()


def setup_postgres_checkpointer(pool: Any) -> None:
    """Create or migrate the checkpointer's tables once per process, under the schema lock
    (replicas starting together would otherwise race on `CREATE TABLE IF NOT EXISTS`)."""
    from langgraph.checkpoint.postgres import PostgresSaver  # noqa: PLC0415

    with setup_lock(pool) as conn:
        PostgresSaver(conn).setup()
        conn.execute(POSTGRES_SCHEMA)


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
    evidence_store: EvidenceStore | None = None,
) -> RunResult:
    """Run `graph` on `thread_id` to its end or its next pause, and return what it found.

    A thread with a checkpoint continues where it stopped (a crash, an approval pause) instead
    of starting over; a thread whose `finish` step ran returns its result as it is; anything
    else (no checkpoint, or one without the goal) starts from the input.
    """
    start = time.perf_counter()
    config: Any = {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit}
    snapshot = graph.get_state(config)
    values = snapshot.values or {}
    run = True
    stream_input: Any = inputs
    if values.get("finished"):
        run = False  # finished: nothing to run
    elif snapshot.next and "goal" in values:
        paused = any(task.interrupts for task in snapshot.tasks)
        stream_input = Command(resume={"decided": True}) if paused else None
    if run:
        stream = graph.stream(
            stream_input, config, stream_mode=["custom", "updates"], durability="sync"
        )
        for mode, chunk in stream:
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
        evidence=evidence_of(values, evidence_store, thread_id),
        draft=draft_of(values),
        seconds=time.perf_counter() - start,
        mutations=list(values.get("mutations") or []),
        awaiting=awaiting,
    )
