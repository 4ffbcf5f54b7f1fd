"""What every `triage` sub-command shares: one way to fail, the same options, one console.

Errors a user can fix are one plain line saying what to do and a distinct exit status
(triage/core/errors.py draws the tree and the statuses); `@plain_errors` on a command turns
any `TriageError` into that line and status, so no command prints a traceback for a
configuration mistake.

This module is imported by `triage --help`, so it imports nothing heavy at module level: the
settings, the error tree and rich load when a command runs (the CLI's start-up budget is
measured by bench/cli_start.py).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ParamSpec, TypeVar

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from triage.core.settings import Settings

P = ParamSpec("P")
R = TypeVar("R")


class Output(StrEnum):
    text = "text"
    json = "json"
    yaml = "yaml"
    markdown = "markdown"


class Trail(StrEnum):
    """How much of a run's steps are written to stderr while it goes."""

    quiet = "quiet"  # nothing but errors
    steps = "steps"  # one line per step of the graph
    calls = "calls"  # and every tool call with its status (-v)


KubeconfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="Path to a kubeconfig (default: $KUBECONFIG, whose ':'-separated files are "
        "merged as kubectl does, else ~/.kube/config).",
    ),
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace", "-n", help="Namespace to look in (default: the kubeconfig context's)."
    ),
]
AllNamespacesOpt = Annotated[
    bool, typer.Option("--all-namespaces", "-A", help="Every namespace you may read.")
]
ContextOpt = Annotated[
    str | None, typer.Option("--context", help="kubeconfig context (default: the current one).")
]
OutputOpt = Annotated[Output, typer.Option("--output", "-o", help="text, json, yaml or markdown.")]
VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Also list every tool call and its status.")
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No step trail on stderr.")]


def trail_of(verbose: bool, quiet: bool) -> Trail:
    return Trail.quiet if quiet else Trail.calls if verbose else Trail.steps


def console(*, stderr: bool = False, table: bool = False) -> Console:
    """A rich console that wraps lines only on a terminal: piped output (a log, `| less`, CI)
    keeps an error or a trail line on one line whatever its length (boxes and tables are
    still drawn to the width rich detects). `table`: for a table that is as wide as its cells
    (never expanded), which is then never cut when piped."""
    from rich.console import Console  # noqa: PLC0415 (rich loads when a command prints)

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    width = 10_000 if table else None
    return Console(stderr=stderr, soft_wrap=True, highlight=False, width=width)


def fail(message: str, code: int) -> typer.Exit:
    """Print one plain line saying what is wrong and what to do; return the Exit to raise."""
    from rich.markup import escape  # noqa: PLC0415

    # the message is text, never markup: "pip install 'triage[llm]'" keeps its brackets
    console(stderr=True).print(
        f"[bold red]error:[/] {escape(message)}", highlight=False, soft_wrap=True
    )
    return typer.Exit(code)


def plain_errors(command: Callable[P, R]) -> Callable[P, R]:
    """A command whose TriageErrors end as one line and their exit status."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        from triage.core.errors import TriageError  # noqa: PLC0415 (not needed for --help)

        try:
            return command(*args, **kwargs)
        except TriageError as e:
            raise fail(str(e), e.exit_status) from e

    return wrapper


def settings_with(kubeconfig: Path | None) -> Settings:
    """The settings root from the environment, with a --kubeconfig flag applied; a bad
    variable is a ConfigError naming it."""
    from pydantic import ValidationError  # noqa: PLC0415 (the settings load when a command runs)

    from triage.core.errors import ConfigError  # noqa: PLC0415
    from triage.core.settings import Settings  # noqa: PLC0415

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
