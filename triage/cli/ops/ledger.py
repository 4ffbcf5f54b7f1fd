"""The bodies of `triage ops` (its options are in triage/cli/ops/__init__.py): the ledger from
a terminal — list, show, approve, refuse, undo.

Reading and deciding use your own kubeconfig identity (`--as USER` impersonates, as kubectl
does): the apiserver says who you are (a SelfSubjectReview), and that name is what the policy's
approvers list is checked against. A decision is an `Approval` object you create yourself, so
the apiserver checks it too: only approvers may create one, and only in their own name. It is
bound to the arguments `approve` prints (or to `--digest`, the one `show` printed). Applying an
approved operation or an undo goes, like every write, through the mutator ServiceAccount by
impersonation and through the ledger, which checks the policy and the approval again first.

Exit statuses: 0 done (the operation is Succeeded, or the command only read); 1 not done (waiting
for approval, superseded, failed, unknown — the message says what next); 2 usage or
configuration error; 3 the apiserver is unreachable or refused us; 4 no such operation;
5 refused (by policy, or you may not approve it).
"""

from __future__ import annotations

import copy
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import typer
from kubernetes import client as k8s
from pydantic import BaseModel, ConfigDict, Field
from rich.table import Table

from policies.model import MutationPolicy
from tools.errors import NotFound, Refused, ToolError
from tools.mutate.ledger import KubeLedger, Operation, Phase
from tools.mutate.registry import MutateRegistry, Outcome
from tools.results import ErrorKind, ToolStatus
from triage.agent import changes
from triage.app import App, kube_client, mutate_registry
from triage.cli import documents
from triage.cli.common import Output, console, fail, settings_with
from triage.core.errors import EXIT_CLUSTER, EXIT_NOT_FOUND, EXIT_OK

EXIT_NOT_DONE = 1
EXIT_REFUSED = 5


class OperationDoc(Operation):
    """`triage ops show`: one Operation of the ledger, as the ledger records it."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)
    api_version: Literal["cli.triage.dev/v1"] = Field(
        default=documents.API_VERSION, alias="apiVersion"
    )
    kind: Literal["Operation"] = "Operation"
    digest: str = Field(default="", description="The digest an approval binds to.")


class OperationList(documents.Document):
    """`triage ops list`: the ledger, oldest first."""

    kind: Literal["OperationList"] = "OperationList"
    items: list[Operation]


class OperationOutcome(documents.Document):
    """`triage ops approve|refuse|undo`: what the command did and the operation it left."""

    kind: Literal["OperationOutcome"] = "OperationOutcome"
    result: dict[str, Any] = Field(description="The tool envelope: status, excerpt, error kind.")
    operation: Operation | None
    decision: Literal["approved", "refused"] | None = None
    by: str | None = Field(default=None, description="Who decided (the apiserver's name).")


MODELS: dict[str, type[BaseModel]] = {
    "Operation": OperationDoc,
    "OperationList": OperationList,
    "OperationOutcome": OperationOutcome,
}

_fail = fail


class _Session:
    """The clients and policy one `triage ops` command works with."""

    def __init__(
        self,
        kubeconfig: Path | None,
        context: str | None,
        as_user: str | None,
        policy_file: Path | None,
    ) -> None:
        self.settings = settings_with(kubeconfig)
        if policy_file is not None:
            self.settings.policy_file = policy_file
        self.base, _ = kube_client(self.settings, context)
        self.me: k8s.ApiClient = self.base
        if as_user:
            cfg = copy.deepcopy(self.base.configuration)
            self.me = k8s.ApiClient(cfg)
            self.me.set_default_header("Impersonate-User", as_user)  # type: ignore[no-untyped-call]
        m = self.settings.mutations
        self.ledger = KubeLedger(self.me, namespace=m.ledger_namespace, timeout_s=m.timeout_s)

    def policy(self) -> MutationPolicy:
        return App.load_policy(self.settings).mutations

    def whoami(self) -> str:
        try:
            return changes.whoami(self.me, timeout_s=self.settings.mutations.timeout_s)
        except ToolError as e:
            raise _fail(f"cannot tell who you are: {e}", EXIT_CLUSTER) from e

    def registry(self) -> MutateRegistry:
        """Writes as the mutator ServiceAccount, impersonated from your own credentials."""
        registry = mutate_registry(
            self.settings, App.load_policy(self.settings), self.base, always=True
        )
        assert registry is not None
        return registry

    def get(self, op_id: str) -> Operation:
        try:
            op = self.ledger.get(op_id)
        except ToolError as e:
            raise _ledger_error(e) from e
        if op is None:
            raise _fail(f"no operation {op_id}; list them with `triage ops list`", EXIT_NOT_FOUND)
        return op


def _ledger_error(e: ToolError) -> typer.Exit:
    if e.kind is ErrorKind.NOT_FOUND:
        return _fail(
            "the ledger is not installed (no operations.triage.dev CRD); apply "
            "helm/triage/crds/operation.yaml",
            EXIT_NOT_FOUND,
        )
    return _fail(
        f"cannot read the ledger: {e}. Check the kubeconfig context and your rights on "
        "operations.triage.dev",
        EXIT_CLUSTER,
    )


def _age(op: Operation) -> str:
    seconds = int((datetime.now(UTC) - op.created_at).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _machine(output: Output) -> bool:
    return output in (Output.json, Output.yaml)


def _emit_outcome(outcome: Outcome, output: Output, **extra: Any) -> int:
    op = outcome.operation
    if _machine(output):
        doc = OperationOutcome(result=outcome.result.model_dump(mode="json"), operation=op, **extra)
        sys.stdout.write(documents.text(doc, output.value))
    else:
        sys.stdout.write(outcome.result.excerpt + "\n")
    if outcome.result.status is ToolStatus.OK:
        return int(EXIT_OK)
    if outcome.result.status is ToolStatus.DENIED:
        return EXIT_REFUSED
    if op is None and outcome.result.error_kind is ErrorKind.NOT_FOUND:
        return EXIT_NOT_FOUND
    if op is None and outcome.result.error_kind in (ErrorKind.UNREACHABLE, ErrorKind.TIMEOUT):
        return EXIT_CLUSTER
    return EXIT_NOT_DONE


def list_(
    phase: str | None,
    kubeconfig: Path | None,
    context: str | None,
    as_user: str | None,
    output: Output,
) -> None:
    s = _Session(kubeconfig, context, as_user, None)
    try:
        ops = s.ledger.list()
    except ToolError as e:
        raise _ledger_error(e) from e
    if phase:
        ops = [o for o in ops if o.phase.value.lower() == phase.lower()]
    if _machine(output):
        sys.stdout.write(documents.text(OperationList(items=ops), output.value))
        raise typer.Exit(EXIT_OK)
    if not ops:
        sys.stdout.write("No operations.\n")
        raise typer.Exit(EXIT_OK)
    columns = ("ID", "ACTION", "TARGET", "PHASE", "APPROVER", "AGE")
    rows = [
        (
            o.id,
            o.action,
            str(o.target),
            o.phase.value,
            o.approval.approver if o.approval else (o.refused_by or ""),
            _age(o),
        )
        for o in ops
    ]
    if output is Output.markdown:
        lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        sys.stdout.write("\n".join(lines) + "\n")
        raise typer.Exit(EXIT_OK)
    table = Table(box=None, header_style="bold")
    for col in columns:
        table.add_column(col, no_wrap=True)
    for r in rows:
        table.add_row(*r)
    console(table=True).print(table)
    raise typer.Exit(EXIT_OK)


def show(
    op_id: str,
    kubeconfig: Path | None,
    context: str | None,
    as_user: str | None,
    output: Output,
) -> None:
    s = _Session(kubeconfig, context, as_user, None)
    op = s.get(op_id)
    if _machine(output):
        doc = OperationDoc(**op.model_dump(), digest=changes.digest_of(op))
        sys.stdout.write(documents.text(doc, output.value))
        raise typer.Exit(EXIT_OK)
    plan = {k: v for k, v in op.plan.items() if k != "template"}
    lines = [
        f"{op.id}: {op.action} {op.target} — {op.phase.value}",
        f"  message:    {op.message}",
        f"  arguments:  {json.dumps(op.args, sort_keys=True)}",
        f"  plan:       {json.dumps(plan, sort_keys=True)}",
        f"  run/step:   {op.run} / {op.step}",
        f"  attempts:   {op.attempts}",
        f"  before:     {json.dumps(op.before, sort_keys=True)}",
        f"  after:      {json.dumps(op.after, sort_keys=True)}",
    ]
    lines.append(f"  digest:     {changes.digest_of(op)}")
    lines.append(f"  asked by:   {op.requested_by or '?'} via {op.requested_via or '?'}")
    lines += _decision_lines(s, op)
    if op.refused_by:
        lines.append(f"  refused by: {op.refused_by}")
    if op.inverse:
        lines.append(
            f"  undo:       {op.inverse.action} {json.dumps(op.inverse.args)} "
            f"(`triage ops undo {op.id}`)"
        )
    if op.undoes:
        lines.append(f"  undoes:     {op.undoes}")
    if op.undone_by:
        lines.append(f"  undone by:  {op.undone_by}")
    if op.phase is Phase.AWAITING_APPROVAL:
        lines.append(f"  next:       `triage ops approve {op.id}` or `triage ops refuse {op.id}`")
    sys.stdout.write("\n".join(lines) + "\n")
    raise typer.Exit(EXIT_OK)


def _decision_lines(s: _Session, op: Operation) -> list[str]:
    """The decisions on record, read from their `Approval` objects (which only their deciders
    could create); the copy on the Operation is shown only when its object backs it."""
    try:
        decisions = s.ledger.decisions(op.id)
    except ToolError as e:
        return [f"  approvals:  cannot be read ({e})"]
    digest = changes.digest_of(op)
    lines = []
    for d in decisions:
        verb = "approved" if d.approve else "refused"
        bound = "these arguments" if d.args_digest == digest else "OTHER arguments (not usable)"
        lines.append(
            f"  {verb}:   by {d.approver} at {d.created_at:%Y-%m-%d %H:%M:%S} UTC, for {bound}"
            f" ({d.name})"
        )
    used = op.approval
    if used is not None:
        real = next((d for d in decisions if d.name == used.name and d.approve), None)
        if real is None:
            lines.append(
                f"  approval:   the record names {used.approver}, but no such approval exists: "
                "NOT a genuine approval"
            )
        else:
            stamp = f"{used.used_at:%H:%M:%S}" if used.used_at else "?"
            lines.append(f"  approval:   {real.approver}'s, used at {stamp} UTC")
    return lines


def approve(
    op_id: str,
    apply: bool,
    kubeconfig: Path | None,
    context: str | None,
    as_user: str | None,
    policy_file: Path | None,
    output: Output,
    digest: str | None,
) -> None:
    s = _Session(kubeconfig, context, as_user, policy_file)
    op = s.get(op_id)
    me = s.whoami()
    shown = changes.digest_of(op)
    what = f"{op_id}: {op.action} {op.target} {json.dumps(op.args, sort_keys=True)} ({shown})"
    if _machine(output):
        console(stderr=True).print(what, highlight=False, markup=False)
    else:
        sys.stdout.write(what + "\n")
    try:
        changes.approve(s.ledger, s.policy(), op_id, me, digest=digest or shown, via="cli")
    except Refused as e:
        raise _fail(str(e), EXIT_REFUSED) from e
    except NotFound as e:
        raise _fail(f"no operation {op_id}", EXIT_NOT_FOUND) from e
    except ToolError as e:
        raise _fail(f"could not record the approval: {e}", EXIT_CLUSTER) from e
    if not apply:
        said = f"{op_id} approved by {me}; it will be applied when its run resumes."
        if _machine(output):
            ok = {"tool": "ops.approve", "args": {}, "status": "ok", "excerpt": said}
            doc = OperationOutcome(result=ok, operation=s.get(op_id), decision="approved", by=me)
            sys.stdout.write(documents.text(doc, output.value))
        else:
            sys.stdout.write(said + "\n")
        raise typer.Exit(EXIT_OK)
    outcome = s.registry().resume(op_id)
    raise typer.Exit(_emit_outcome(outcome, output, decision="approved", by=me))


def refuse(
    op_id: str,
    kubeconfig: Path | None,
    context: str | None,
    as_user: str | None,
    policy_file: Path | None,
    output: Output,
    digest: str | None,
) -> None:
    s = _Session(kubeconfig, context, as_user, policy_file)
    op = s.get(op_id)
    me = s.whoami()
    try:
        changes.refuse(
            s.ledger, s.policy(), op_id, me, digest=digest or changes.digest_of(op), via="cli"
        )
    except Refused as e:
        raise _fail(str(e), EXIT_REFUSED) from e
    except ToolError as e:
        raise _fail(f"could not record the refusal: {e}", EXIT_CLUSTER) from e
    said = f"{op_id} refused by {me}; nothing will be changed."
    try:  # close the operation now (the run that asked would close it when it resumes)
        closed: Outcome | None = s.registry().resume(op_id)
    except ToolError as e:
        closed = None
        said += f" (the operation is closed when its run resumes: {e})"
    if _machine(output):
        ok = {"tool": "ops.refuse", "args": {}, "status": "ok", "excerpt": said}
        op_now = closed.operation if closed is not None else s.get(op_id)
        doc = OperationOutcome(result=ok, operation=op_now, decision="refused", by=me)
        sys.stdout.write(documents.text(doc, output.value))
    else:
        sys.stdout.write(said + "\n")
    raise typer.Exit(EXIT_OK)


def undo(
    op_id: str,
    kubeconfig: Path | None,
    context: str | None,
    as_user: str | None,
    policy_file: Path | None,
    output: Output,
) -> None:
    s = _Session(kubeconfig, context, as_user, policy_file)
    s.get(op_id)
    me = s.whoami()
    try:
        outcome = s.registry().undo(op_id, requested_by=f"kube:{me}", requested_via="cli")
    except ToolError as e:
        raise _ledger_error(e) from e
    raise typer.Exit(_emit_outcome(outcome, output))
