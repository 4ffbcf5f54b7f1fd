"""The `triage` command: investigate a live cluster, record a bundle, or replay the demo.

Errors a user can fix are one plain line saying what to do, with a distinct exit status:
0 verified: a root cause (or "no fault found") was established and the judge checked it,
1 inconclusive (the honest "don't know", never verified; or nothing to investigate),
2 usage or configuration error (no kubeconfig, no namespace, a bad policy file), 3 the
apiserver is unreachable or refused us, 4 the namespace does not exist. A run the judge did
not verify prints its best candidate marked unverified and exits with its outcome:
5 rejected, 6 budget_exhausted, 7 evaluator_unavailable, 8 unchecked (checking switched off
in the policy). Only 0 means done.
"""

from __future__ import annotations

import sys
import time
import uuid
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from judge import Judge
from policies import PolicyError, load_policy
from policies.verification import VerificationPolicy
from tools.k8s_read import KubeReader
from tools.mutate import MutateRegistry
from tools.prometheus import PrometheusReader
from tools.read import ReadRegistry, ReadTools
from tools.redact import Redactor
from tools.results import ErrorKind
from triage import render
from triage.budget import Budget
from triage.bundle import Bundle, RecordingTools, ReplayTools, demo_dir, demo_names
from triage.cli_common import (
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    Output,
    OutputOpt,
    api_client_from,
    fail,
    settings_with,
)
from triage.cli_ops import ops_app
from triage.cli_reports import reports_app
from triage.graph import RunResult, run_investigation
from triage.llm import ModelClient, ModelNotConfigured
from triage.loop import CheckedRun, Outcome, run_checked
from triage.planner import Planner, TakesFeedback
from triage.planner_llm import LLMPlanner
from triage.planner_rules import RulesPlanner
from triage.report import KubeReportStore, MemoryReportReads, MemoryReportStore, ReportStore
from triage.reports import KubeReports, MemoryReports
from triage.settings import Settings

EXIT_INCONCLUSIVE = 1
EXIT_REJECTED = 5
EXIT_BUDGET_EXHAUSTED = 6
EXIT_EVALUATOR_UNAVAILABLE = 7
EXIT_UNCHECKED = 8
OUTCOME_EXIT = {
    Outcome.REJECTED: EXIT_REJECTED,
    Outcome.BUDGET_EXHAUSTED: EXIT_BUDGET_EXHAUSTED,
    Outcome.EVALUATOR_UNAVAILABLE: EXIT_EVALUATOR_UNAVAILABLE,
    Outcome.UNCHECKED: EXIT_UNCHECKED,
}

app = typer.Typer(
    name="triage",
    help="Incident triage for Kubernetes: evidence-backed root-cause analyses.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


_fail = fail


def live_tools(
    settings: Settings, context: str | None, prometheus_url: str | None
) -> tuple[ReadRegistry, str]:
    """The live read registry from the kubeconfig; raises typer.Exit with a plain message."""
    api_client = api_client_from(settings, context)
    redactor = Redactor(settings.redaction_patterns)
    kube = KubeReader(
        api_client,
        timeout_s=settings.kube.timeout_s,
        page_size=settings.kube.page_size,
        max_items=settings.kube.max_items,
        redactor=redactor,
    )
    url = prometheus_url or settings.prometheus.url
    prom = (
        PrometheusReader(
            url,
            timeout_s=settings.prometheus.timeout_s,
            max_points=settings.prometheus.max_points,
            redactor=redactor,
        )
        if url
        else None
    )
    source = f"apiserver {api_client.configuration.host}" + (f", prometheus {url}" if url else "")
    return ReadRegistry(kube, prom), source


def _progress(console: Console) -> Any:
    status = console.status("starting…")

    def on_progress(event: dict[str, Any]) -> None:
        if "tool" in event:
            status.update(f"running {event['tool']} {_short_args(event.get('args', {}))}")
        elif event.get("node"):
            status.update(f"{event['node']}…")

    return status, on_progress


def _short_args(args: dict[str, Any]) -> str:
    text = " ".join(f"{k}={v}" for k, v in args.items() if k not in ("start", "end"))
    return text if len(text) < 90 else text[:89] + "…"


class PlannerKind(StrEnum):
    rules = "rules"
    llm = "llm"


def _planner(settings: Settings, kind: PlannerKind | None) -> Planner:
    """A fresh planner for one run: the option, else TRIAGE_PLANNER__KIND, else rules."""
    chosen = kind.value if kind is not None else settings.planner.kind
    if chosen == "rules":
        return RulesPlanner()
    try:
        return LLMPlanner.from_settings(settings)
    except ModelNotConfigured as e:
        raise _fail(f"--planner llm: {e}", EXIT_USAGE) from e


def _run(
    words: str,
    *,
    planner: Planner,
    tools: ReadTools,
    settings: Settings,
    namespace: str | None,
    now: float | None,
    quiet: bool,
) -> RunResult:
    console = Console(stderr=True)
    status, on_progress = _progress(console)
    if quiet or not console.is_terminal:
        return run_investigation(
            words,
            planner=planner,
            tools=tools,
            graph_settings=settings.graph,
            state_settings=settings.state,
            namespace=namespace,
            now=now,
        )
    with status:
        return run_investigation(
            words,
            planner=planner,
            tools=tools,
            graph_settings=settings.graph,
            state_settings=settings.state,
            namespace=namespace,
            now=now,
            on_progress=on_progress,
        )


def _verification(settings: Settings) -> VerificationPolicy:
    try:
        return load_policy(settings.policy_file).verification
    except PolicyError as e:
        raise _fail(str(e), EXIT_USAGE) from e


def _judge_model(settings: Settings, redactor: Redactor) -> ModelClient | None:
    """The judge's own model (TRIAGE_JUDGE_MODEL__*), or None: gates only."""
    if not settings.judge_model.name:
        return None
    try:
        return ModelClient.from_settings(settings.judge_model, "judge", redactor)
    except ModelNotConfigured as e:
        raise _fail(f"judge model: {e}", EXIT_USAGE) from e


def _checked(
    words: str,
    *,
    first: Planner,
    again: PlannerKind | None,
    tools: ReadTools,
    store: ReportStore | None,
    settings: Settings,
    namespace: str | None,
    now: float | None,
    quiet: bool,
    check_scope: bool = True,
) -> CheckedRun:
    """investigate → submit → judge → (retry with the missing list | publish), bounded."""
    verification = _verification(settings)
    redactor = Redactor(settings.redaction_patterns)
    model = _judge_model(settings, redactor)
    budget = Budget(verification.budget, verification.pricing)
    if model is not None:
        budget.track("judge", settings.judge_model.name, model.usage)

    def worker(attempt: int, feedback: tuple[str, ...]) -> RunResult:
        planner = first if attempt == 1 else _planner(settings, again)
        if feedback and isinstance(planner, TakesFeedback):
            planner.take_feedback(feedback)  # back to the worker with the judge's missing list
        client = getattr(planner, "client", None)
        if isinstance(client, ModelClient):
            budget.track("worker", settings.worker_model.name, client.usage)
        result = _run(
            words,
            planner=planner,
            tools=tools,
            settings=settings,
            namespace=namespace,
            now=now,
            quiet=quiet,
        )
        if check_scope:
            _check_scope(result)  # could not even start: a plain error, no judging
        return result

    return run_checked(
        worker=worker,
        judge=Judge(tools, model, model_name=settings.judge_model.name),
        store=store,
        policy=verification,
        budget=budget,
        redactor=redactor,
        run_id=f"cli:{uuid.uuid4()}",
    )


def _check_scope(result: RunResult) -> None:
    """Turn the 'could not even start' cases into plain errors with their exit status."""
    ns = result.goal.scope.namespace
    if ns is None:
        raise _fail(
            "no namespace: pass --namespace NAME or say 'in namespace NAME' in the question.",
            EXIT_USAGE,
        )
    first = next((e for e in result.evidence if e.tool == "k8s.namespace"), None)
    if first is None or first.ok:
        return
    if first.error_kind is ErrorKind.NOT_FOUND:
        raise _fail(
            f"namespace {ns!r} does not exist. List namespaces with `kubectl get ns`.",
            EXIT_NOT_FOUND,
        )
    raise _fail(
        f"cannot read the cluster: {first.excerpt}. Check the kubeconfig context and that "
        "the apiserver is reachable.",
        EXIT_UNREACHABLE,
    )


def _emit(checked: CheckedRun, output: Output, extra: dict[str, Any] | None = None) -> int:
    result = checked.best
    draft = result.draft
    verification = checked.summary()
    if output is Output.json:
        sys.stdout.write(
            render.as_json(
                draft,
                result.evidence,
                thread_id=result.thread_id,
                verification=verification,
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
    if draft is None:
        return EXIT_INCONCLUSIVE
    missing = checked.verdict.missing if checked.verdict else ()
    if draft.inconclusive and checked.outcome is Outcome.REJECTED and len(missing) == 1:
        return EXIT_INCONCLUSIVE  # the judge's one objection is the missing cause: "don't know"
    if checked.outcome in OUTCOME_EXIT:
        return OUTCOME_EXIT[checked.outcome]
    return EXIT_OK


PromOpt = Annotated[
    str | None, typer.Option("--prometheus-url", help="Prometheus base URL (optional).")
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No live progress.")]
PlannerOpt = Annotated[
    PlannerKind | None,
    typer.Option(
        "--planner",
        help="rules (deterministic, no model) or llm (the model in TRIAGE_WORKER_MODEL__*, "
        "falling back to rules). Default: TRIAGE_PLANNER__KIND, else rules.",
    ),
]


_settings = settings_with


@app.command()
def investigate(
    question: Annotated[str, typer.Argument(help="What is wrong, in your own words.")],
    namespace: NamespaceOpt = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    prometheus_url: PromOpt = None,
    output: OutputOpt = Output.text,
    quiet: QuietOpt = False,
    planner: PlannerOpt = None,
) -> None:
    """Investigate a live cluster (read-only), write the RCA when asked, have it checked by
    the judge, and print it with its outcome."""
    settings = _settings(kubeconfig)
    chosen = _planner(settings, planner)
    tools, _ = live_tools(settings, context, prometheus_url)
    checked = _checked(
        question,
        first=chosen,
        again=planner,
        tools=tools,
        store=KubeReportStore(tools.kube.api_client, timeout_s=settings.kube.timeout_s),
        settings=settings,
        namespace=namespace,
        now=None,
        quiet=quiet,
    )
    raise typer.Exit(_emit(checked, output))


@app.command()
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
    """Investigate live and write the evidence to a replayable incident bundle."""
    settings = _settings(kubeconfig)
    chosen = _planner(settings, planner)
    live, source = live_tools(settings, context, prometheus_url)
    recorder = RecordingTools(live)
    now = time.time()
    checked = _checked(
        question,
        first=chosen,
        again=planner,
        tools=recorder,
        store=KubeReportStore(live.kube.api_client, timeout_s=settings.kube.timeout_s),
        settings=settings,
        namespace=namespace,
        now=now,
        quiet=quiet,
    )
    result = checked.best
    bundle = recorder.bundle(
        name=name or out.stem,
        question=Redactor(settings.redaction_patterns).text(question),
        namespace=result.goal.scope.namespace,
        now=now,
        source=source,
    )
    bundle.write(out)
    Console(stderr=True).print(f"wrote {out} ({len(bundle.calls)} calls)", highlight=False)
    raise typer.Exit(_emit(checked, output))


@app.command()
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
        raise _fail("no demo bundles are installed with this package.", EXIT_USAGE)
    chosen = scenario or ("crashloop-bad-env" if "crashloop-bad-env" in names else names[0])
    if chosen not in names:
        raise _fail(f"no demo bundle {chosen!r}; choose one of: {', '.join(names)}", EXIT_USAGE)
    bundle = Bundle.read(demo_dir() / f"{chosen}.json")
    replay = ReplayTools(bundle)
    settings = Settings()
    reports = MemoryReportStore()  # no cluster: the report is kept in memory and read back
    checked = _checked(
        bundle.question,
        first=RulesPlanner(),
        again=PlannerKind.rules,
        tools=MemoryReportReads(replay, reports),
        store=reports,
        settings=settings,
        namespace=bundle.namespace,
        now=bundle.now,
        quiet=quiet,
        check_scope=False,
    )
    if output is not Output.json:
        Console(stderr=True).print(
            f"[dim]Replaying {chosen}: {len(bundle.calls)} tool results recorded "
            f"{bundle.recorded_at} from {bundle.source}.[/]\n[bold]Question:[/] {bundle.question}",
            highlight=False,
        )
    code = _emit(checked, output, {"demo": chosen, "replay_misses": replay.misses})
    raise typer.Exit(code)


def _serve_registry(settings: Settings, api_client: Any) -> MutateRegistry | None:
    """The mutate registry for changes asked for in Slack, when the policy allows any (writes
    impersonate the mutator ServiceAccount, through the ledger); None otherwise."""
    from tools.alertmanager_mutate import AlertmanagerMutator  # noqa: PLC0415
    from tools.k8s_mutate import KubeMutator, impersonating  # noqa: PLC0415
    from tools.ledger import KubeLedger  # noqa: PLC0415

    try:
        policy = load_policy(settings.policy_file).mutations
    except PolicyError as e:
        raise _fail(str(e), EXIT_USAGE) from e
    if not policy.namespaces or not policy.actions:
        return None
    m = settings.mutations
    mutator = impersonating(api_client, m.mutator_service_account)
    am = (
        AlertmanagerMutator(m.alertmanager_url, timeout_s=m.timeout_s)
        if m.alertmanager_url
        else None
    )
    return MutateRegistry(
        policy,
        KubeLedger(mutator, namespace=m.ledger_namespace, timeout_s=m.timeout_s),
        kube=KubeMutator(mutator, timeout_s=m.timeout_s),
        alertmanager=am,
        lease_s=m.lease_s,
        max_attempts=m.max_attempts,
    )


@app.command()
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
) -> None:
    """Run the Slack bot: HTTP events on /slack/events (or Socket Mode with an app token),
    /healthz and /metrics. Configure it with TRIAGE_SLACK__* (see the README's Slack section)."""
    from triage import server  # noqa: PLC0415 (the server's dependencies load only here)
    from triage.slack.worker import Backend  # noqa: PLC0415

    settings = _settings(kubeconfig)
    verification = _verification(settings)
    redactor = Redactor(settings.redaction_patterns)
    tools: ReadTools
    store: ReportStore
    registry: MutateRegistry | None = None
    default_ns = None
    if demo_bundle is not None:
        if demo_bundle not in demo_names():
            raise _fail(
                f"no demo bundle {demo_bundle!r}; choose one of: {', '.join(demo_names())}",
                EXIT_USAGE,
            )
        bundle = Bundle.read(demo_dir() / f"{demo_bundle}.json")
        memory = MemoryReportStore()
        tools, store, default_ns = (
            MemoryReportReads(ReplayTools(bundle), memory),
            memory,
            (bundle.namespace),
        )
    else:
        live, _ = live_tools(settings, context, prometheus_url)
        tools = live
        store = KubeReportStore(live.kube.api_client, timeout_s=settings.kube.timeout_s)
        registry = _serve_registry(settings, live.kube.api_client)
    model = _judge_model(settings, redactor)
    backend = Backend(
        tools=tools,
        planner=lambda: _planner(settings, planner),
        judge=Judge(tools, model, model_name=settings.judge_model.name),
        store=store,
        verification=verification,
        redactor=redactor,
        graph=settings.graph,
        state=settings.state,
        default_namespace=default_ns,
        channel_namespaces=dict(settings.slack.channel_namespaces),
        registry=registry,
    )
    try:
        bot = server.build_bot(settings, backend)
    except server.ConfigError as e:
        raise _fail(str(e), EXIT_USAGE) from e
    reports = (
        MemoryReports(store)
        if isinstance(store, MemoryReportStore)
        else KubeReports(live.kube.api_client, timeout_s=settings.kube.timeout_s)
    )
    server.serve(bot, host or settings.slack.host, port or settings.slack.port, reports)


app.add_typer(ops_app, name="ops")

app.add_typer(reports_app, name="reports")


def main() -> None:
    app()
