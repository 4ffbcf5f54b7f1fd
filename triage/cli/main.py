"""The `triage` command: investigate a live cluster (or from a saved Alertmanager notification),
record a bundle, replay it (or the demo), serve; `version` and `completion`.

Every command builds the product through the composition root (triage/app.py) and runs the
one checked run; the bodies live in triage/cli/runs.py and are imported when a command runs,
so `triage --help`, `triage version` and shell completion load no client library (their cost
is measured by bench/cli_start.py). Exit statuses are those of triage/core/errors.py: 0
verified (the only "done"), 1 inconclusive, 2 usage or configuration, 3 the apiserver cannot
be used, 4 something named does not exist, 5 rejected, 6 budget_exhausted, 7
evaluator_unavailable, 8 unchecked, 9 a change waits for approval.

Options are spelled as kubectl spells them: `-n/--namespace` (default: the kubeconfig
context's), `-A/--all-namespaces`, `--context`, `--kubeconfig` (a `:`-separated $KUBECONFIG is
merged), `-o/--output`, `-h/--help`, `-v`.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from triage import __version__
from triage.cli.common import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    Output,
    OutputOpt,
    QuietOpt,
    VerboseOpt,
    plain_errors,
    trail_of,
)
from triage.cli.ops import ops_app
from triage.cli.reports import reports_app

HELP = {"help_option_names": ["-h", "--help"]}
COMPLETE_VAR = "_TRIAGE_COMPLETE"

app = typer.Typer(
    name="triage",
    help="Incident triage for Kubernetes: evidence-backed root-cause analyses.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings=HELP,
)

PromOpt = Annotated[
    str | None, typer.Option("--prometheus-url", help="Prometheus base URL (optional).")
]
PlannerOpt = Annotated[
    str | None,
    typer.Option(
        "--planner",
        help="rules (deterministic, no model) or llm (the model in TRIAGE_WORKER_MODEL__*, "
        "falling back to rules). Default: TRIAGE_PLANNER__KIND, else rules.",
    ),
]
WaitOpt = Annotated[
    float,
    typer.Option(
        "--approval-wait",
        help="Seconds to wait for a person to approve a change this run commands "
        "(`triage ops approve ID`); then exit 9 with the operation still waiting.",
    ),
]
AlertOpt = Annotated[
    Path | None,
    typer.Option(
        "--alert",
        help="Investigate from a saved Alertmanager webhook notification (JSON) instead of a "
        "question: scoped by its labels, its annotations read as data; it never commands a "
        "change.",
    ),
]


def _version(value: bool) -> None:
    if value:
        sys.stdout.write(f"triage {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Incident triage for Kubernetes: evidence-backed root-cause analyses."""


@app.command()
@plain_errors
def investigate(
    question: Annotated[
        str | None,
        typer.Argument(help="What is wrong, in your own words (or --alert FILE)."),
    ] = None,
    namespace: NamespaceOpt = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    prometheus_url: PromOpt = None,
    output: OutputOpt = Output.text,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    planner: PlannerOpt = None,
    approval_wait: WaitOpt = 0.0,
    alert: AlertOpt = None,
) -> None:
    """Investigate a live cluster (read-only unless you command a change), write the RCA when
    asked, have it checked by the judge, and print it with its outcome."""
    from triage.cli import runs  # noqa: PLC0415 (the product loads when a command runs)

    raise typer.Exit(
        runs.investigate(
            question,
            namespace=namespace,
            context=context,
            kubeconfig=kubeconfig,
            prometheus_url=prometheus_url,
            output=output,
            trail=trail_of(verbose, quiet),
            planner=planner,
            approval_wait_s=approval_wait,
            alert_file=alert,
        )
    )


@app.command()
@plain_errors
def record(
    question: Annotated[str, typer.Argument(help="What is wrong, in your own words.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the bundle (JSON).")],
    name: Annotated[str | None, typer.Option(help="Bundle name (default: file name).")] = None,
    namespace: NamespaceOpt = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    prometheus_url: PromOpt = None,
    output: OutputOpt = Output.text,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    planner: PlannerOpt = None,
) -> None:
    """Investigate live (read-only) and write the evidence to a replayable incident bundle."""
    from triage.cli import runs  # noqa: PLC0415

    raise typer.Exit(
        runs.record(
            question,
            out,
            name=name,
            namespace=namespace,
            context=context,
            kubeconfig=kubeconfig,
            prometheus_url=prometheus_url,
            output=output,
            trail=trail_of(verbose, quiet),
            planner=planner,
        )
    )


@app.command()
@plain_errors
def demo(
    scenario: Annotated[str | None, typer.Argument(help="Bundle to replay (see --list).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the shipped bundles.")] = False,
    output: OutputOpt = Output.text,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
) -> None:
    """Replay a recorded incident offline: no cluster, Slack or model needed."""
    from triage.cli import runs  # noqa: PLC0415

    raise typer.Exit(runs.demo(scenario, list_, output, trail_of(verbose, quiet)))


@app.command()
@plain_errors
def replay(
    file: Annotated[Path, typer.Argument(help="A bundle written by `triage record --out FILE`.")],
    output: OutputOpt = Output.text,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    planner: PlannerOpt = None,
) -> None:
    """Replay a recorded investigation offline (no cluster, Slack or model): the same planner
    over the same tool results gives the same RCA and outcome as when it was recorded."""
    from triage.cli import runs  # noqa: PLC0415

    raise typer.Exit(runs.replay(file, output, trail_of(verbose, quiet), planner))


@app.command()
@plain_errors
def serve(
    demo_bundle: Annotated[
        str | None,
        typer.Option(
            "--demo",
            help="Answer every mention from this recorded bundle (see `triage demo --list`): "
            "try the bot without a cluster.",
        ),
    ] = None,
    host: Annotated[str | None, typer.Option(help="Listen address.")] = None,
    port: Annotated[int | None, typer.Option(help="Listen port.")] = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    prometheus_url: PromOpt = None,
    planner: PlannerOpt = None,
    role: Annotated[
        str,
        typer.Option(hidden=True, help="serve (default) or worker: the investigations' process."),
    ] = "serve",
) -> None:
    """Run the Slack bot: HTTP events on /slack/events (or Socket Mode with an app token), the
    Alertmanager receiver on /alertmanager (TRIAGE_ALERTS__*), /healthz, /readyz and /metrics;
    and the review page on its own port (TRIAGE_REVIEW__PORT, 8081). Configure them with
    TRIAGE_SLACK__*, TRIAGE_ALERTS__* and TRIAGE_REVIEW__* (README: Slack, Alerts, Reviewing)."""
    from triage.cli import runs  # noqa: PLC0415

    runs.serve(
        demo_bundle,
        host=host,
        port=port,
        context=context,
        kubeconfig=kubeconfig,
        prometheus_url=prometheus_url,
        planner=planner,
        role=role,
    )


@app.command()
def version(output: OutputOpt = Output.text) -> None:
    """Print the version of this build (and whether the model libraries are installed)."""
    from triage.cli import documents  # noqa: PLC0415

    doc = documents.Version(
        version=__version__, python=sys.version.split()[0], llm=_llm_installed()
    )
    if output in (Output.json, Output.yaml):
        sys.stdout.write(documents.text(doc, output.value))
    else:
        extra = "" if doc.llm else " (model libraries not installed: pip install 'triage[llm]')"
        sys.stdout.write(f"triage {doc.version}, python {doc.python}{extra}\n")


def _llm_installed() -> bool:
    from importlib.util import find_spec  # noqa: PLC0415

    return find_spec("langchain") is not None and find_spec("langchain_openai") is not None


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@app.command()
def completion(
    shell: Annotated[Shell, typer.Argument(help="bash, zsh or fish.")],
) -> None:
    """Print the shell completion script, e.g. `source <(triage completion bash)`, or
    `triage completion fish > ~/.config/fish/completions/triage.fish`."""
    from typer._completion_shared import get_completion_script  # noqa: PLC0415

    script = get_completion_script(prog_name="triage", complete_var=COMPLETE_VAR, shell=shell.value)
    sys.stdout.write(script.rstrip("\n") + "\n")


app.add_typer(ops_app, name="ops")
app.add_typer(reports_app, name="reports")


def main() -> None:
    if COMPLETE_VAR in os.environ:  # the shell asks for completions: Typer's own classes
        from typer._completion_classes import completion_init  # noqa: PLC0415

        completion_init()
    app()
