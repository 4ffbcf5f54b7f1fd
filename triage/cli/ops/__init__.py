"""`triage ops`: the ledger from a terminal — list, show, approve, refuse, undo.

Reading and deciding use your own kubeconfig identity (`--as USER` impersonates, as kubectl
does): the apiserver says who you are (a SelfSubjectReview), and that name is what the policy's
approvers list is checked against. A decision is an `Approval` object you create yourself, so
the apiserver checks it too: only approvers may create one, and only in their own name. It is
bound to the arguments `approve` prints (or to `--digest`, the one `show` printed). Applying an
approved operation or an undo goes, like every write, through the mutator ServiceAccount by
impersonation and through the ledger, which checks the policy and the approval again first.

This module holds the options only; the bodies (triage/cli/ops/ledger.py) load the clients
when a command runs.

Exit statuses: 0 done (the operation is Succeeded, or the command only read); 1 not done (waiting
for approval, superseded, failed, unknown — the message says what next); 2 usage or
configuration error; 3 the apiserver is unreachable or refused us; 4 no such operation;
5 refused (by policy, or you may not approve it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from triage.cli.common import ContextOpt, KubeconfigOpt, Output, OutputOpt, plain_errors

EXIT_NOT_DONE = 1
EXIT_REFUSED = 5

ops_app = typer.Typer(
    name="ops",
    help="The ledger of changes Triage made or was asked to make: list, show, approve, undo.",
    no_args_is_help=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)

AsOpt = Annotated[
    str | None, typer.Option("--as", help="Act as this user (impersonation, like kubectl --as).")
]
PolicyOpt = Annotated[
    Path | None, typer.Option("--policy", help="Policy file (default: TRIAGE_POLICY_FILE).")
]
IdArg = Annotated[str, typer.Argument(help="Operation ID (see `triage ops list`).")]
DigestOpt = Annotated[
    str | None,
    typer.Option(
        "--digest",
        help="The argument digest you checked (`triage ops show` prints it); default: the "
        "digest of the arguments printed now.",
    ),
]


@ops_app.command("list")
@plain_errors
def list_(
    phase: Annotated[
        str | None, typer.Option("--phase", help="Only this phase, e.g. AwaitingApproval.")
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Every operation in the ledger, oldest first."""
    from triage.cli.ops import ledger  # noqa: PLC0415 (the clients load when a command runs)

    ledger.list_(phase, kubeconfig, context, as_user, output)


@ops_app.command()
@plain_errors
def show(
    op_id: IdArg,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """One operation: what was asked, the plan, before and after, approval, inverse."""
    from triage.cli.ops import ledger  # noqa: PLC0415

    ledger.show(op_id, kubeconfig, context, as_user, output)


@ops_app.command()
@plain_errors
def approve(
    op_id: IdArg,
    apply: Annotated[
        bool, typer.Option("--apply/--no-apply", help="Apply it right after approving.")
    ] = True,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    policy_file: PolicyOpt = None,
    output: OutputOpt = Output.text,
    digest: DigestOpt = None,
) -> None:
    """Approve an operation as yourself: exactly its arguments, once, until it expires."""
    from triage.cli.ops import ledger  # noqa: PLC0415

    ledger.approve(op_id, apply, kubeconfig, context, as_user, policy_file, output, digest)


@ops_app.command()
@plain_errors
def refuse(
    op_id: IdArg,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    policy_file: PolicyOpt = None,
    output: OutputOpt = Output.text,
    digest: DigestOpt = None,
) -> None:
    """Refuse an operation that waits for approval; it will never be applied."""
    from triage.cli.ops import ledger  # noqa: PLC0415

    ledger.refuse(op_id, kubeconfig, context, as_user, policy_file, output, digest)


@ops_app.command()
@plain_errors
def undo(
    op_id: IdArg,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    as_user: AsOpt = None,
    policy_file: PolicyOpt = None,
    output: OutputOpt = Output.text,
) -> None:
    """Apply a succeeded operation's recorded inverse, as a new ledgered operation."""
    from triage.cli.ops import ledger  # noqa: PLC0415

    ledger.undo(op_id, kubeconfig, context, as_user, policy_file, output)
