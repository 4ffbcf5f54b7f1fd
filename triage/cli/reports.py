"""`triage reports`: the RCA reports in the cluster, read back with their outcome.

Only `verified` was checked by the judge; every other outcome is an unverified draft, and the
listing says which is which. Reads only; the identity needs get/list on rcareports.
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from tools.errors import NotFound, ToolError
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
from triage.core.errors import EXIT_CLUSTER, EXIT_NOT_FOUND, EXIT_USAGE
from triage.core.settings import Settings
from triage.reports import views as reports_view
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
        sys.stdout.write(json.dumps([r.__dict__ for r in rows], indent=2) + "\n")
        raise typer.Exit(0)
    table = Table(expand=True)
    for col in ("namespace", "name", "outcome", "root cause", "created"):
        table.add_column(col, overflow="fold")
    for r in sorted(rows, key=lambda r: r.created, reverse=True):
        table.add_row(r.namespace, r.name, r.outcome, r.root_cause, r.created)
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
    """Show one RCA report with its outcome and the judge's met / missing / not-found lists."""
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
        sys.stdout.write(json.dumps(obj, indent=2) + "\n")
    else:
        sys.stdout.write(reports_view.markdown(obj))
    raise typer.Exit(0)
