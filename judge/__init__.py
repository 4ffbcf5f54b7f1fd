"""The judge: decides, separately from the worker, whether a deliverable really went through.

It holds only the read registry (an import-linter contract forbids the mutate tools and the
ledger). Its gates and verdicts are specified in ../shared/DESIGN.md, "The judge":
`input.py` bounds what it sees, `gates.py` decides from fields, `model_pass.py` asks its own
model, `activation.py` says which check a request gets, `verdict.py` is the answer.
"""

from judge.activation import Activation, decide, delivers
from judge.input import Delivery, JudgeInput, PerformedMutation, ToolOutcome
from judge.judge import EvaluatorUnavailable, Judge
from judge.verdict import Decision, ModelPass, Verdict

__all__ = [
    "Activation",
    "Decision",
    "Delivery",
    "EvaluatorUnavailable",
    "Judge",
    "JudgeInput",
    "ModelPass",
    "PerformedMutation",
    "ToolOutcome",
    "Verdict",
    "decide",
    "delivers",
]
