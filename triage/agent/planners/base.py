"""The planner interface: what the graph asks of any planner, rules-based or model-based.

A planner is pure with respect to the graph: given the goal and the evidence so far it says
which read tools to call next (nothing means "I have enough"), and later drafts the RCA from
the evidence. It holds no tools and cannot reach a mutation: it *proposes* remediations in the
draft, and the ledger decides what, if anything, is executed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict

from tools.read.registry import canonical_args
from triage.core.models import Evidence, Goal, RCADraft


class ToolCall(BaseModel):
    model_config = ConfigDict(frozen=True)
    name: str
    args: dict[str, Any]
    purpose: str | None = None  # what it is read for (a metric signal), kept on the Evidence

    @property
    def key(self) -> str:
        return f"{self.name} {canonical_args(self.args)}"


class Planner(Protocol):
    name: str

    def plan(self, goal: Goal, evidence: list[Evidence], now: float) -> list[ToolCall]:
        """The next read-tool calls; an empty list means the investigation is complete."""
        ...

    def draft(self, goal: Goal, evidence: list[Evidence], now: float) -> RCADraft:
        """The RCA, every claim citing evidence ids."""
        ...


@runtime_checkable
class TakesFeedback(Protocol):
    """A planner that can use the judge's `missing` list on a retry (triage/loop.py).

    The list is the judge's own words about what the last attempt lacked ("root cause
    'oom_killed' contradicts the cluster: …"); it is data about the work, never instructions
    that widen what the planner may do. Planners without it simply investigate afresh.
    """

    def take_feedback(self, missing: Sequence[str]) -> None: ...


def already_called(evidence: list[Evidence]) -> set[str]:
    return {ToolCall(name=e.tool, args=e.args).key for e in evidence}
