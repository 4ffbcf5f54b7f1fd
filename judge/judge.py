"""The judge itself: deterministic gates first, then — when a model is configured and the
budget allows — the model pass, and a verdict with its three lists.

The judge is built with a `ReadTools` and, optionally, a judge-role `ModelClient`; it has no
way to write anything. It raises `EvaluatorUnavailable` (carrying what the gates found) when
its model was needed and did not answer: the loop turns that into the outcome
`evaluator_unavailable`, never into `verified`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from judge import gates, model_pass
from judge.input import JudgeInput
from judge.verdict import Decision, ModelPass, Verdict
from tools.read.registry import ReadTools
from triage.core.errors import ModelError
from triage.core.llm import ModelClient


class EvaluatorUnavailable(Exception):
    """The judge's model gave no usable answer; `gates` is what the gates alone decided."""

    def __init__(self, reason: str, gates_verdict: Verdict) -> None:
        super().__init__(reason)
        self.reason = reason
        self.gates_verdict = gates_verdict


def _always(_input_tokens: int, _output_tokens: int) -> bool:
    return True


class Judge:
    def __init__(
        self,
        tools: ReadTools,
        model: ModelClient | None = None,
        *,
        model_name: str | None = None,
        max_output_tokens: int = 1024,
    ) -> None:
        self.tools = tools
        self.model = model
        self.model_name = model_name
        self.max_output_tokens = max_output_tokens

    def judge(
        self,
        inp: JudgeInput,
        *,
        record: bool,
        afford: Callable[[int, int], bool] = _always,
    ) -> Verdict:
        start = time.perf_counter()
        reads = gates.Reads(self.tools)
        found = gates.run_all(inp, reads, record=record)

        def verdict(decision: Decision, model: ModelPass, extra: Sequence[str] = ()) -> Verdict:
            return Verdict(
                decision=decision,
                met=tuple(found.met),
                missing=tuple(dict.fromkeys([*found.missing, *extra])),
                nonexistent=tuple(dict.fromkeys(found.nonexistent)),
                model_pass=model,
                failed_gates=tuple(found.failed_gates),
                seconds=time.perf_counter() - start,
            )

        if found.missing or not _about_anything(inp, found):
            return verdict(Decision.REJECTED, ModelPass.SKIPPED)
        if self.model is None:
            return verdict(Decision.VERIFIED, ModelPass.NOT_CONFIGURED)
        try:
            answer = model_pass.ask(
                self.model,
                inp,
                found.met,
                max_output_tokens=self.max_output_tokens,
                afford=afford,
            )
        except ModelError as e:
            gates_only = verdict(Decision.VERIFIED, ModelPass.UNAVAILABLE)
            raise EvaluatorUnavailable(str(e), gates_only) from e
        if answer is None:
            return verdict(Decision.REJECTED, ModelPass.UNAFFORDABLE)
        if answer.missing:
            return verdict(
                Decision.REJECTED,
                ModelPass.OBJECTED,
                [f"judge model: {m}" for m in answer.missing],
            )
        return verdict(Decision.VERIFIED, ModelPass.AGREED)


def _about_anything(inp: JudgeInput, found: gates.Findings) -> bool:
    """False when every thing the request is about turned out not to exist."""
    if inp.namespace is None:
        return False
    if any(n.startswith("namespace ") for n in found.nonexistent):
        return False
    return not inp.named or len(found.nonexistent) < len(inp.named)
