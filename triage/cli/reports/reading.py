"""The bodies of `triage reports` (its options are in triage/cli/reports/__init__.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.table import Table

from tools.errors import NotFound, ToolError
from tools.results import ErrorKind
from triage.agent.changes import whoami
from triage.app import kube_client
from triage.cli import documents
from triage.cli.common import Output, console, fail, settings_with
from triage.core.errors import EXIT_CLUSTER, EXIT_NOT_FOUND, EXIT_USAGE, ReportError
from triage.reports import views as reports_view
from triage.reports.review import Review, Verdict, Via, record
from triage.reports.store import KubeReportStore
from triage.reports.views import Json, KubeReports


def _reports_failed(e: ToolError) -> typer.Exit:
    if isinstance(e, NotFound):
        return fail(
            f"{e}. Is the RCAReport CRD installed? "
            "kubectl apply -f helm/triage/crds/rcareport.yaml",
            EXIT_NOT_FOUND,
        )
    return fail(f"cannot read RCA reports: {e}", EXIT_CLUSTER)


def _machine(output: Output) -> bool:
    return output in (Output.json, Output.yaml)


def _stored(obj: Json, output: Output) -> None:
    """The RCAReport as the apiserver stores it (it names its own apiVersion and kind)."""
    if output is Output.json:
        sys.stdout.write(reports_view.as_json(obj) + "\n")
    else:
        sys.stdout.write(documents.text(obj, "yaml"))


def reports_list(
    namespace: str | None,
    all_namespaces: bool,
    context: str | None,
    kubeconfig: Path | None,
    output: Output,
) -> None:
    settings = settings_with(kubeconfig)
    api, context_ns = kube_client(settings, context)
    ns = None if all_namespaces else (namespace or context_ns)
    if ns is None and not all_namespaces:
        raise fail(
            "no namespace: pass --namespace NAME or --all-namespaces, or set one in the "
            "kubeconfig context.",
            EXIT_USAGE,
        )
    try:
        items = KubeReports(api, timeout_s=settings.kube.timeout_s).list(ns)
    except ToolError as e:
        raise _reports_failed(e) from e
    rows = sorted((reports_view.summary(i) for i in items), key=lambda r: r.created, reverse=True)
    if _machine(output):
        doc = documents.ReportList(
            items=[documents.ReportSummary.model_validate(r.as_dict()) for r in rows]
        )
        sys.stdout.write(documents.text(doc, output.value))
        raise typer.Exit(0)
    columns = ("namespace", "name", "outcome", "review", "root cause", "created")
    cells = [(r.namespace, r.name, r.outcome, r.review, r.root_cause, r.created) for r in rows]
    if output is Output.markdown:
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in cells]
        sys.stdout.write("\n".join(lines) + "\n" if rows else "No RCA reports.\n")
        raise typer.Exit(0)
    out = console(table=not sys.stdout.isatty())
    table = Table(expand=sys.stdout.isatty())
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in cells:
        table.add_row(*row)
    out.print(table if rows else "No RCA reports.")
    raise typer.Exit(0)


def reports_show(
    name: str,
    namespace: str | None,
    context: str | None,
    kubeconfig: Path | None,
    output: Output,
) -> None:
    settings = settings_with(kubeconfig)
    api, context_ns = kube_client(settings, context)
    ns = namespace or context_ns
    if not ns:
        raise fail("pass --namespace NAME (the report's namespace).", EXIT_USAGE)
    try:
        obj = KubeReports(api, timeout_s=settings.kube.timeout_s).get(ns, name)
    except ToolError as e:
        raise _reports_failed(e) from e
    if obj is None:
        raise fail(
            f"no RCA report {name!r} in namespace {ns!r}. "
            f"List them with `triage reports list -n {ns}`.",
            EXIT_NOT_FOUND,
        )
    if _machine(output):
        _stored(obj, output)
    else:
        sys.stdout.write(reports_view.markdown(obj))
    raise typer.Exit(0)


def reports_review(
    name: str,
    note: str | None,
    namespace: str | None,
    confirm: bool,
    dispute: bool,
    context: str | None,
    kubeconfig: Path | None,
    output: Output,
) -> None:
    if confirm == dispute:
        raise fail("say --confirm or --dispute (one of them).", EXIT_USAGE)
    settings = settings_with(kubeconfig)
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
    if _machine(output):
        _stored(obj, output)
    else:
        s = reports_view.summary(obj)
        sys.stdout.write(
            f"Recorded: {verdict.value} by {review.by} on {ns}/{name} (outcome {s.outcome}).\n"
        )
    raise typer.Exit(0)
