"""The `triage` command: investigate a live cluster, record a bundle, replay it (or the demo),
serve.

Every command builds the product through the composition root (triage/app.py) and runs the
one checked run; this module only parses options and prints. Exit statuses are those of
triage/core/errors.py: 0 verified (the only "done"), 1 inconclusive, 2 usage or
configuration, 3 the apiserver cannot be used, 4 something named does not exist, 5 rejected,
6 budget_exhausted, 7 evaluator_unavailable, 8 unchecked, 9 a change waits for approval.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from triage.app import App, Request, planner_for
from triage.cli.common import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    Output,
    OutputOpt,
    exit_for,
    fail,
    plain_errors,
    settings_with,
)
from triage.cli.ops import ops_app
from triage.cli.reports import reports_app
from triage.core.bundles import Bundle, RecordingTools, demo_dir, demo_names
from triage.core.errors import EXIT_OK, EXIT_USAGE, UsageError
from triage.reports import render
from triage.verification.loop import CheckedRun, Outcome

app = typer.Typer(
    name="triage",
    help="Incident triage for Kubernetes: evidence-backed root-cause analyses.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

PromOpt = Annotated[
    str | None, typer.Option("--prometheus-url", help="Prometheus base URL (optional).")
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No live progress.")]
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


def _short_args(args: dict[str, Any]) -> str:
    text = " ".join(f"{k}={v}" for k, v in args.items() if k not in ("start", "end"))
    return text if len(text) < 90 else text[:89] + "…"


def _run(
    product: App, request: Request, *, quiet: bool, approval_wait_s: float = 0.0
) -> CheckedRun:
    """The checked run with live progress on a terminal, waiting for approvals if asked."""
    console = Console(stderr=True)
    goal = product.resolve_namespace(product.intake(request))
    product.preflight(goal)  # fail plainly before any work
    live = not quiet and console.is_terminal
    status = console.status("starting…")

    def on_progress(event: dict[str, Any]) -> None:
        if "tool" in event:
            status.update(f"running {event['tool']} {_short_args(event.get('args', {}))}")
        elif event.get("node"):
            status.update(f"{event['node']}…")

    def on_wait(awaiting: list[dict[str, Any]]) -> None:
        for op in awaiting:
            console.print(
                f"waiting for approval of {op['action']} {op['target']} "
                f"(operation {op['operation']}): an approver runs `triage ops approve "
                f"{op['operation']}`",
                highlight=False,
            )

    progress = on_progress if live else None
    if live:
        status.start()
    try:
        run = product.checked_run(request, goal, on_progress=progress)
        if run.outcome is Outcome.AWAITING_APPROVAL and approval_wait_s > 0:
            status.stop()
            if product.wait_for_approval(run, timeout_s=approval_wait_s, on_wait=on_wait):
                if live:
                    status.start()
                run = product.checked_run(request, goal, on_progress=progress)
    finally:
        status.stop()
    return run


def _emit(run: CheckedRun, output: Output, extra: dict[str, Any] | None = None) -> int:
    result = run.best
    draft = result.draft
    verification = run.summary()
    if output is Output.json:
        sys.stdout.write(
            render.as_json(
                draft,
                result.evidence,
                thread_id=result.thread_id,
                verification=verification,
                mutations=result.mutations,
                awaiting=result.awaiting,
                offers=[o.sentence() for o in result.goal.offers],
                **(extra or {}),
            )
            + "\n"
        )
    elif draft is None:
        sys.stdout.write("Nothing to investigate in that message.\n")
    elif output is Output.markdown:
        sys.stdout.write(render.markdown(draft, result.evidence))
        sys.stdout.write(render.verification_markdown(verification))
    else:
        render.terminal(Console(), draft, result.evidence)
        render.verification_terminal(Console(), verification)
    if output is not Output.json:
        for offer in result.goal.offers:  # mentioned, not commanded: said, never done
            Console(stderr=True).print(
                f"Not changed: you mentioned “{offer.sentence()}” without commanding it. To "
                f'do it, run: triage investigate "{offer.sentence()}"',
                highlight=False,
            )
    return exit_for(run)


@app.command()
@plain_errors
def investigate(
    question: Annotated[str, typer.Argument(help="What is wrong, in your own words.")],
    namespace: NamespaceOpt = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    prometheus_url: PromOpt = None,
    output: OutputOpt = Output.text,
    quiet: QuietOpt = False,
    planner: PlannerOpt = None,
    approval_wait: WaitOpt = 0.0,
) -> None:
    """Investigate a live cluster (read-only unless you command a change), write the RCA when
    asked, have it checked by the judge, and print it with its outcome."""
    settings = settings_with(kubeconfig)
    planner_for(settings, planner)  # a planner that cannot be built fails before any work
    product = App.live(settings, context=context, prometheus_url=prometheus_url)
    request = Request(words=question, namespace=namespace, planner=planner)
    run = _run(product, request, quiet=quiet, approval_wait_s=approval_wait)
    raise typer.Exit(_emit(run, output))


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
    planner: PlannerOpt = None,
) -> None:
    """Investigate live (read-only) and write the evidence to a replayable incident bundle."""
    settings = settings_with(kubeconfig)
    planner_for(settings, planner)
    product = App.live(settings, context=context, prometheus_url=prometheus_url, changes=False)
    recorder = RecordingTools(product.tools)
    product.tools = recorder
    now = time.time()
    request = Request(words=question, namespace=namespace, now=now, planner=planner)
    run = _run(product, request, quiet=quiet)
    bundle = recorder.bundle(
        name=name or out.stem,
        question=product.redactor.text(question),
        namespace=run.best.goal.scope.namespace,
        now=now,
        source=product.source,
    )
    bundle.write(out)
    Console(stderr=True).print(f"wrote {out} ({len(bundle.calls)} calls)", highlight=False)
    raise typer.Exit(_emit(run, output))


def _bundle(name: str) -> Bundle:
    names = demo_names()
    if name not in names:
        hint = f" To replay a recorded file, run `triage replay {name}`." if "." in name else ""
        choices = ", ".join(names) or "none"
        raise UsageError(f"no demo bundle {name!r}; choose one of: {choices}.{hint}")
    return Bundle.read(demo_dir() / f"{name}.json")


def _replay(
    bundle: Bundle, output: Output, quiet: bool, planner: str, label: str, key: str = "replayed"
) -> int:
    """A recorded bundle through the product's checked run, offline; the exit status."""
    settings = settings_with(None)
    product, replay = App.replay(settings, bundle)
    request = Request(
        words=bundle.question, default_namespace=bundle.namespace, now=bundle.now, planner=planner
    )
    run = product.checked_run(request)
    if output is not Output.json and not quiet:
        Console(stderr=True).print(
            f"[dim]Replaying {label}: {len(bundle.calls)} tool results recorded "
            f"{bundle.recorded_at} from {bundle.source}.[/]\n[bold]Question:[/] {bundle.question}",
            highlight=False,
        )
    if replay.misses and not quiet:
        Console(stderr=True).print(
            f"[yellow]{len(replay.misses)} call(s) were not in the bundle and were answered "
            "as errors[/] (the RCA says so).",
            highlight=False,
        )
    return _emit(run, output, {key: label, "replay_misses": replay.misses})


@app.command()
@plain_errors
def demo(
    scenario: Annotated[str | None, typer.Argument(help="Bundle to replay (see --list).")] = None,
    list_: Annotated[bool, typer.Option("--list", help="List the shipped bundles.")] = False,
    output: OutputOpt = Output.text,
    quiet: QuietOpt = False,
) -> None:
    """Replay a recorded incident offline: no cluster, Slack or model needed."""
    names = demo_names()
    if list_:
        for n in names:
            sys.stdout.write(f"{n}\n")
        raise typer.Exit(EXIT_OK)
    if not names:
        raise fail("no demo bundles are installed with this package.", EXIT_USAGE)
    chosen = scenario or ("crashloop-bad-env" if "crashloop-bad-env" in names else names[0])
    raise typer.Exit(_replay(_bundle(chosen), output, quiet, "rules", chosen, "demo"))


@app.command()
@plain_errors
def replay(
    file: Annotated[Path, typer.Argument(help="A bundle written by `triage record --out FILE`.")],
    output: OutputOpt = Output.text,
    quiet: QuietOpt = False,
    planner: PlannerOpt = None,
) -> None:
    """Replay a recorded investigation offline (no cluster, Slack or model): the same planner
    over the same tool results gives the same RCA and outcome as when it was recorded."""
    try:
        bundle = Bundle.read(file)
    except FileNotFoundError as e:
        raise UsageError(
            f"no bundle at {file}: write one with `triage record ... --out {file}`"
        ) from e
    except (ValueError, OSError) as e:
        raise UsageError(
            f"{file} is not a bundle written by `triage record` ({type(e).__name__})"
        ) from e
    raise typer.Exit(_replay(bundle, output, quiet, planner or "rules", str(file)))


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
    """Run the Slack bot: HTTP events on /slack/events (or Socket Mode with an app token),
    /healthz and /metrics; and the review page on its own port (TRIAGE_REVIEW__PORT, 8081).
    Configure them with TRIAGE_SLACK__* and TRIAGE_REVIEW__* (README: Slack, Reviewing)."""
    from triage.web import review, server  # noqa: PLC0415 (the server's dependencies load here)

    settings = settings_with(kubeconfig)
    if planner is not None:
        settings.planner.kind = "llm" if planner == "llm" else "rules"
    if demo_bundle is not None:
        product, _ = App.replay(settings, _bundle(demo_bundle))
    else:
        product = App.live(settings, context=context, prometheus_url=prometheus_url)
    bot = server.build_bot(settings, product)
    if role == "worker":  # started by `triage serve` itself (triage/web/workers.py)
        server.work(bot)
        return
    parts = review.build_review(settings, product)
    page = review.asgi(parts) if parts is not None else None
    server.serve(bot, host or settings.slack.host, port or settings.slack.port, page)


app.add_typer(ops_app, name="ops")
app.add_typer(reports_app, name="reports")


def main() -> None:
    app()
