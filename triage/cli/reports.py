"""`triage reports`: the RCA reports in the cluster, read back with their outcome, and reviewed.

Only `verified` was checked by the judge; every other outcome is an unverified draft, and the
listing says which is which. `list` and `show` read (get/list on rcareports); `review` records
your verdict on the cause as the user your kubeconfig authenticates (the apiserver says who,
by a SelfSubjectReview), which needs patch on rcareports/status in that namespace.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tools.errors import NotFound, ToolError
from tools.results import ErrorKind
from triage.agent.changes import whoami
from triage.app import kube_client
from triage.cli.common import (
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    Output,
    OutputOpt,
    fail,
    plain_errors,
    settings_with,
)
from triage.core.errors import EXIT_CLUSTER, EXIT_NOT_FOUND, EXIT_USAGE, ReportError
from triage.core.settings import Settings
from triage.reports import views as reports_view
from triage.reports.review import Review, Verdict, Via, record
from triage.reports.store import KubeReportStore
from triage.reports.views import KubeReports

_settings = settings_with


reports_app = typer.Typer(
    help="RCA reports in the cluster, with their verification outcome.", no_args_is_help=True
)


def _reports(settings: Settings, context: str | None) -> KubeReports:
    return KubeReports(kube_client(settings, context)[0], timeout_s=settings.kube.timeout_s)


def _reports_failed(e: ToolError) -> typer.Exit:
    if isinstance(e, NotFound):
        return fail(
            f"{e}. Is the RCAReport CRD installed? "
            "kubectl apply -f helm/triage/crds/rcareport.yaml",
            EXIT_NOT_FOUND,
        )
    return fail(f"cannot read RCA reports: {e}", EXIT_CLUSTER)


@reports_app.command("list")
@plain_errors
def reports_list(
    namespace: NamespaceOpt = None,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="Every namespace you may read.")
    ] = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """List RCA reports: outcome, root cause, age. Only `verified` was checked by the judge."""
    if not namespace and not all_namespaces:
        raise fail("pass --namespace NAME or --all-namespaces.", EXIT_USAGE)
    try:
        items = _reports(_settings(kubeconfig), context).list(None if all_namespaces else namespace)
    except ToolError as e:
        raise _reports_failed(e) from e
    rows = [reports_view.summary(i) for i in items]
    if output is Output.json:
        sys.stdout.write(json.dumps([r.as_dict() for r in rows], indent=2) + "\n")
        raise typer.Exit(0)
    table = Table(expand=True)
    for col in ("namespace", "name", "outcome", "review", "root cause", "created"):
        table.add_column(col, overflow="fold")
    for r in sorted(rows, key=lambda r: r.created, reverse=True):
        table.add_row(r.namespace, r.name, r.outcome, r.review, r.root_cause, r.created)
    Console().print(table if rows else "No RCA reports.")
    raise typer.Exit(0)


@reports_app.command("show")
@plain_errors
def reports_show(
    name: Annotated[str, typer.Argument(help="The report's name (see `triage reports list`).")],
    namespace: Annotated[str, typer.Option("--namespace", "-n", help="Its namespace.")],
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    output: OutputOpt = Output.markdown,
) -> None:
    """Show one RCA report whole: outcome and review, the cause, the RCA with every stored
    evidence record, the judge's lists, changes, attempts, spend by role, timings, reviews.
    `-o json` prints the stored object as it is."""
    try:
        obj = _reports(_settings(kubeconfig), context).get(namespace, name)
    except ToolError as e:
        raise _reports_failed(e) from e
    if obj is None:
        raise fail(
            f"no RCA report {name!r} in namespace {namespace!r}. "
            f"List them with `triage reports list -n {namespace}`.",
            EXIT_NOT_FOUND,
        )
    if output is Output.json:
        sys.stdout.write(reports_view.as_json(obj) + "\n")
    else:
        sys.stdout.write(reports_view.markdown(obj))
    raise typer.Exit(0)


@reports_app.command("review")
@plain_errors
def reports_review(
    name: Annotated[str, typer.Argument(help="The report's name (see `triage reports list`).")],
    note: Annotated[
        str | None, typer.Argument(help='Why, in a sentence (optional): `--dispute "note"`.')
    ] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", "-n", help="Its namespace.")
    ] = None,
    confirm: Annotated[bool, typer.Option("--confirm", help="The cause is right.")] = False,
    dispute: Annotated[bool, typer.Option("--dispute", help="The cause is wrong.")] = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Record your verdict on a report's cause: --confirm, or --dispute "why". Stored on the
    report's status with who you are (the apiserver's name for you) and when."""
    if confirm == dispute:
        raise fail("say --confirm or --dispute (one of them).", EXIT_USAGE)
    settings = _settings(kubeconfig)
    api, context_ns = kube_client(settings, context)
    ns = namespace or context_ns
    if not ns:
        raise fail("pass --namespace NAME (the report's namespace).", EXIT_USAGE)
    try:
        me = whoami(api, timeout_s=settings.kube.timeout_s)
    except ToolError as e:
        raise fail(f"the apiserver cannot say who you are: {e}", EXIT_CLUSTER) from e
    verdict = Verdict.CONFIRMED if confirm else Verdict.DISPUTED
    review = Review.new(verdict, f"kube:{me or 'unknown'}", Via.CLI, note or "")
    store = KubeReportStore(api, timeout_s=settings.kube.timeout_s)
    try:
        obj = record(store, ns, name, review)
    except ReportError as e:
        if e.kind is ErrorKind.NOT_FOUND:
            raise fail(
                f"no RCA report {name!r} in namespace {ns!r}. "
                f"List them with `triage reports list -n {ns}`.",
                EXIT_NOT_FOUND,
            ) from e
        if e.kind is ErrorKind.DENIED:
            raise fail(
                f"{me or 'you'} may not review reports in {ns}: reviewing needs patch on "
                f"rcareports/status there (the chart's reviewer ClusterRole). {e}",
                EXIT_CLUSTER,
            ) from e
        raise fail(f"the review was not recorded: {e}", EXIT_CLUSTER) from e
    if output is Output.json:
        sys.stdout.write(reports_view.as_json(obj) + "\n")
    else:
        s = reports_view.summary(obj)
        sys.stdout.write(
            f"Recorded: {verdict.value} by {review.by} on {ns}/{name} (outcome {s.outcome}).\n"
        )
    raise typer.Exit(0)
