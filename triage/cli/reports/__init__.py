"""`triage reports`: the RCA reports in the cluster, read back with their outcome, and reviewed.

Only `verified` was checked by the judge; every other outcome is an unverified draft, and the
listing says which is which. `list` and `show` read (get/list on rcareports); `review` records
your verdict on the cause as the user your kubeconfig authenticates (the apiserver says who,
by a SelfSubjectReview), which needs patch on rcareports/status in that namespace. As with
kubectl, `-n` defaults to the kubeconfig context's namespace and `-A` lists every namespace.

This module holds the options only; the bodies (triage/cli/reports/reading.py) load the
clients when a command runs.
"""

from __future__ import annotations

from typing import Annotated

import typer

from triage.cli.common import (
    AllNamespacesOpt,
    ContextOpt,
    KubeconfigOpt,
    NamespaceOpt,
    Output,
    OutputOpt,
    plain_errors,
)

reports_app = typer.Typer(
    help="RCA reports in the cluster, with their verification outcome.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
NameArg = Annotated[str, typer.Argument(help="The report's name (see `triage reports list`).")]


@reports_app.command("list")
@plain_errors
def reports_list(
    namespace: NamespaceOpt = None,
    all_namespaces: AllNamespacesOpt = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """List RCA reports: outcome, root cause, age. Only `verified` was checked by the judge."""
    from triage.cli.reports import reading  # noqa: PLC0415 (the clients load when it runs)

    reading.reports_list(namespace, all_namespaces, context, kubeconfig, output)


@reports_app.command("show")
@plain_errors
def reports_show(
    name: NameArg,
    namespace: NamespaceOpt = None,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    output: OutputOpt = Output.markdown,
) -> None:
    """Show one RCA report whole: outcome and review, the cause, the RCA with every stored
    evidence record, the judge's lists, changes, attempts, spend by role, timings, reviews.
    `-o json` prints the stored object as it is (apiVersion triage.dev/v1alpha1, kind
    RCAReport)."""
    from triage.cli.reports import reading  # noqa: PLC0415

    reading.reports_show(name, namespace, context, kubeconfig, output)


@reports_app.command("review")
@plain_errors
def reports_review(
    name: NameArg,
    note: Annotated[
        str | None, typer.Argument(help='Why, in a sentence (optional): `--dispute "note"`.')
    ] = None,
    namespace: NamespaceOpt = None,
    confirm: Annotated[bool, typer.Option("--confirm", help="The cause is right.")] = False,
    dispute: Annotated[bool, typer.Option("--dispute", help="The cause is wrong.")] = False,
    context: ContextOpt = None,
    kubeconfig: KubeconfigOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Record your verdict on a report's cause: --confirm, or --dispute "why". Stored on the
    report's status with who you are (the apiserver's name for you) and when."""
    from triage.cli.reports import reading  # noqa: PLC0415

    reading.reports_review(name, note, namespace, confirm, dispute, context, kubeconfig, output)
