"""What every `triage` sub-command shares: one way to fail, the same options, one exit mapping.

Errors a user can fix are one plain line saying what to do and a distinct exit status
(triage/core/errors.py draws the tree and the statuses); `@plain_errors` on a command turns
any `TriageError` into that line and status, so no command prints a traceback for a
configuration mistake.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, ParamSpec, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console

from triage.core.errors import (
    EXIT_AWAITING_APPROVAL,
    EXIT_BUDGET_EXHAUSTED,
    EXIT_EVALUATOR_UNAVAILABLE,
    EXIT_INCONCLUSIVE,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_UNCHECKED,
    ConfigError,
    TriageError,
)
from triage.core.settings import Settings
from triage.verification.loop import CheckedRun, Outcome

P = ParamSpec("P")
R = TypeVar("R")

OUTCOME_EXIT = {
    Outcome.VERIFIED: EXIT_OK,
    Outcome.REJECTED: EXIT_REJECTED,
    Outcome.BUDGET_EXHAUSTED: EXIT_BUDGET_EXHAUSTED,
    Outcome.EVALUATOR_UNAVAILABLE: EXIT_EVALUATOR_UNAVAILABLE,
    Outcome.UNCHECKED: EXIT_UNCHECKED,
    Outcome.AWAITING_APPROVAL: EXIT_AWAITING_APPROVAL,
}


class Output(StrEnum):
    text = "text"
    json = "json"
    markdown = "markdown"


KubeconfigOpt = Annotated[
    Path | None, typer.Option("--kubeconfig", help="Path to a kubeconfig (default: $KUBECONFIG).")
]
NamespaceOpt = Annotated[
    str | None, typer.Option("--namespace", "-n", help="Namespace to look in.")
]
ContextOpt = Annotated[str | None, typer.Option("--context", help="kubeconfig context.")]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="text, json or markdown.")]


def fail(message: str, code: int) -> typer.Exit:
    """Print one plain line saying what is wrong and what to do; return the Exit to raise."""
    Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {message}", highlight=False)
    return typer.Exit(code)


def plain_errors(command: Callable[P, R]) -> Callable[P, R]:
    """A command whose TriageErrors end as one line and their exit status."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return command(*args, **kwargs)
        except TriageError as e:
            raise fail(str(e), e.exit_status) from e

    return wrapper


def settings_with(kubeconfig: Path | None) -> Settings:
    """The settings root from the environment, with a --kubeconfig flag applied; a bad
    variable is a ConfigError naming it."""
    try:
        settings = Settings()
    except ValidationError as e:
        problems = "; ".join(
            f"TRIAGE_{'__'.join(str(p) for p in err['loc']).upper()}: {err['msg']}"
            for err in e.errors()
        )
        raise ConfigError(f"invalid setting: {problems}") from e
    if kubeconfig is not None:
        settings.kube.kubeconfig = kubeconfig
    return settings


def exit_for(run: CheckedRun) -> int:
    """The exit status of a checked run: 0 only when verified.

    An honest "inconclusive" is 1 whatever else the judge found missing; a rejection whose only
    findings are things the request names that do not exist is 4 ("you named something that is
    not there"), told apart from 5 ("the judge found the answer wrong")."""
    draft = run.best.draft
    if draft is None:
        return EXIT_INCONCLUSIVE
    if run.outcome is Outcome.REJECTED:
        verdict = run.verdict
        if draft.inconclusive:
            return EXIT_INCONCLUSIVE
        if verdict is not None and verdict.nonexistent and not verdict.missing:
            return EXIT_NOT_FOUND
    return OUTCOME_EXIT[run.outcome]
