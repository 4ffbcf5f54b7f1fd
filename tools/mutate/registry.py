"""The mutate registry: the only door to a change, and every change goes through the ledger.

A request (run, step, action, target, arguments) is checked against the policy before any API
call; refused requests never reach the cluster. Otherwise:

1. the operation ID is derived from the request; an existing record with that ID is continued,
   never duplicated (and refused when its arguments differ);
2. the target is read and the plan pinned (the precondition the write will be conditional on);
3. the intent is claimed in the ledger — `AwaitingApproval` when policy wants a human,
   otherwise `Pending` — before any write;
4. the write, carrying the operation ID and conditional on the plan;
5. `Succeeded` / `Failed` / `Superseded` with before and after snapshots.

A write whose answer was lost (timeout, reset, 5xx) is `Unknown`, and nothing is retried
before the target is read again: the effect there → `Succeeded`; the precondition still
holding → the same write again under the same ID (at most `max_attempts` in all); otherwise
`Superseded`, reported and never forced. A process holds an operation for `lease_s` at a time
(renewed before each write), so a second process working on the same ID stands back while the
first is alive and takes over, state check first, once it is not.
"""

from __future__ import annotations

import contextlib
import os
import socket
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from policies.model import MutationAction, MutationPolicy
from tools.errors import (
    ToolError,
)
from tools.mutate.actions import (
    DeletePod,
    MutationArgs,
    MutationSpec,
    PlanError,
    Rollback,
    RolloutRestart,
    Scale,
)
from tools.mutate.alertmanager import AlertmanagerMutator
from tools.mutate.engine import (
    Engine,
    MutationRequest,
    Outcome,
    _error,
    _invalid,
    _plain,
    _refused,
    _result,
)
from tools.mutate.kube import KubeMutator
from tools.mutate.ledger import (
    Ledger,
    Operation,
    Phase,
    Target,
    args_digest,
    operation_id,
    utcnow,
)
from tools.mutate.silences import SilenceCreate, SilenceExpire
from tools.results import ErrorKind, ToolResult

__all__ = ["MutateRegistry", "MutationRequest", "Outcome"]


class MutateRegistry(Engine):
    """Mutations by name, executed through a ledger. One instance is one 'process' holder."""

    def __init__(
        self,
        policy: MutationPolicy,
        ledger: Ledger,
        *,
        kube: KubeMutator | None = None,
        alertmanager: AlertmanagerMutator | None = None,
        lease_s: float = 30.0,
        max_attempts: int = 3,
        clock: Callable[[], datetime] = utcnow,
        holder_id: str | None = None,
    ) -> None:
        self.policy = policy
        self.ledger = ledger
        self.lease_s = lease_s
        self.max_attempts = max_attempts
        self.clock = clock
        self.holder_id = holder_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.specs: dict[str, MutationSpec] = {}
        if kube is not None:
            for spec in (RolloutRestart(kube), Scale(kube), Rollback(kube), DeletePod(kube)):
                self.specs[spec.action] = spec
        if alertmanager is not None:
            for am_spec in (SilenceCreate(alertmanager), SilenceExpire(alertmanager)):
                self.specs[am_spec.action] = am_spec

    # -- checks before anything is sent --------------------------------------------------------

    def validate(self, req: MutationRequest) -> MutationArgs | ToolResult:
        """The arguments model, or a `denied`/`invalid` result saying what to do instead."""
        return self.check(req.action, req.target, req.args)

    def _policy_problem(self, op: Operation) -> str | None:
        checked = self.check(op.action, op.target, op.args)
        return checked.excerpt if isinstance(checked, ToolResult) else None

    def check(
        self, action_name: str, target: Target, given: dict[str, Any]
    ) -> MutationArgs | ToolResult:
        """`validate` for an action, target and arguments (also an operation already recorded:
        the policy is checked again before every write)."""
        tool = f"mutate.{action_name}"
        args = dict(given)
        try:
            action = MutationAction(action_name)
        except ValueError:
            known = ", ".join(a.value for a in MutationAction)
            return _refused(tool, args, f"unknown action {action_name!r}; known: {known}")
        if not self.policy.allows(action):
            return _refused(
                tool,
                args,
                f"{action} is not allowed by the policy; an operator can add it under "
                "mutations.actions",
            )
        if target.namespace not in self.policy.namespaces:
            allowed = ", ".join(self.policy.namespaces) or "none"
            return _refused(
                tool,
                args,
                f"namespace {target.namespace!r} is outside the policy (allowed: {allowed}); "
                "nothing was changed",
            )
        spec = self.specs.get(action)
        if spec is None:
            return _refused(
                tool, args, f"{action} is not configured here (no client for its backend)"
            )
        if target.kind != spec.kind:
            return _invalid(tool, args, f"{action} acts on a {spec.kind}, not a {target.kind}")
        try:
            parsed = spec.args_model.model_validate(args, context={"policy": self.policy})
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'args'}: {_plain(err['msg'])}"
                for err in e.errors()
            )
            return _refused(tool, args, f"{action} on {target} refused before any call: {problems}")
        problem = spec.check(target, parsed)
        if problem:
            return _refused(tool, args, f"{action} on {target} refused: {problem}")
        return parsed

    # -- entry points ---------------------------------------------------------------------------

    def submit(
        self, req: MutationRequest, *, undoes: str | None = None, apply: bool = True
    ) -> Outcome:
        """Plan, claim and (unless approval is needed) apply; or continue the existing record.

        `apply=False` stops short of any write: it records an operation that needs approval
        (so a human can approve it) and reports the state of an existing one.
        """
        tool = f"mutate.{req.action}"
        parsed = self.validate(req)
        if isinstance(parsed, ToolResult):
            return Outcome(parsed, None)
        spec = self.specs[req.action]
        args = parsed.model_dump(mode="json", exclude_none=True)
        digest = args_digest(req.action, req.target, args)
        op_id = req.operation_id or operation_id(req.run, req.step, req.action, req.target, args)
        try:
            existing = self.ledger.get(op_id)
            if existing is not None:
                if existing.args_digest != digest:
                    return Outcome(
                        _refused(
                            tool,
                            args,
                            f"operation {op_id} was planned with different arguments "
                            f"({existing.action} {existing.target} {existing.args}); "
                            "nothing was changed",
                        ),
                        existing,
                    )
                return self._continue(spec, existing, apply=apply)
            observed = spec.observe(req.target, op_id)
        except ToolError as e:
            return Outcome(_error(tool, args, f"nothing was changed: {e}", e.kind), None)
        if observed is None:
            return Outcome(
                _error(tool, args, f"{req.target} does not exist", ErrorKind.NOT_FOUND), None
            )
        try:
            plan = spec.plan(req.target, parsed, observed)
        except PlanError as e:
            return Outcome(_error(tool, args, str(e), ErrorKind.INVALID), None)
        except ToolError as e:
            return Outcome(_error(tool, args, f"nothing was changed: {e}", e.kind), None)
        needs_approval = self.policy.needs_approval(MutationAction(req.action))
        if not needs_approval and not apply:
            return Outcome(
                _error(
                    tool, args, f"{req.action} on {req.target} not applied yet", ErrorKind.CONFLICT
                ),
                None,
            )
        op = Operation(
            id=op_id,
            run=req.run,
            step=req.step,
            action=req.action,
            target=req.target,
            args=args,
            args_digest=digest,
            plan=plan,
            requested_by=req.requested_by,
            requested_via=req.requested_via,
            undoes=undoes,
            phase=Phase.AWAITING_APPROVAL if needs_approval else Phase.PENDING,
            holder=None if needs_approval else self._hold(),
            before=spec.snapshot(observed),
            message="waiting for approval" if needs_approval else "intent recorded",
        )
        try:
            stored, won = self._claim(op)
        except ToolError as e:
            return Outcome(
                _error(
                    tool, args, f"could not record the intent, nothing was changed: {e}", e.kind
                ),
                None,
            )
        if not won:
            return self._continue(spec, stored, apply=apply)
        if needs_approval:
            return Outcome(_result(stored), stored)
        return self._apply(spec, stored)

    def resume(self, op_id: str) -> Outcome:
        """Continue an operation by ID (after approval, or after a crash)."""
        try:
            op = self.ledger.get(op_id)
        except ToolError as e:
            return Outcome(_error("mutate", {"id": op_id}, str(e), e.kind), None)
        if op is None:
            return Outcome(
                _error("mutate", {"id": op_id}, f"no operation {op_id}", ErrorKind.NOT_FOUND),
                None,
            )
        spec = self.specs.get(op.action)
        if spec is None:
            hint = "set the Alertmanager URL" if op.target.kind == "Silence" else "no client"
            return Outcome(
                _refused(
                    f"mutate.{op.action}", op.args, f"{op.action} is not configured here ({hint})"
                ),
                op,
            )
        return self._continue(spec, op)

    def undo(self, op_id: str, *, requested_by: str, requested_via: str = "cli") -> Outcome:
        """Apply the recorded inverse of a succeeded operation, as an operation of its own."""
        tool = "mutate.undo"
        op = self.ledger.get(op_id)
        if op is None:
            return Outcome(
                _error(tool, {"id": op_id}, f"no operation {op_id}", ErrorKind.NOT_FOUND), None
            )
        if op.phase is not Phase.SUCCEEDED:
            return Outcome(
                _refused(
                    tool,
                    {"id": op_id},
                    f"only a Succeeded operation can be undone; {op_id} is {op.phase}",
                ),
                op,
            )
        if op.inverse is None:
            return Outcome(
                _refused(
                    tool,
                    {"id": op_id},
                    f"{op.action} has no inverse ({op_id}); a restart or a pod deletion "
                    "cannot be taken back",
                ),
                op,
            )
        inv = op.inverse
        spec = self.specs.get(op.action)
        if op.undone_by is None and spec is not None:
            try:
                observed = spec.observe(op.target, op.id)
            except ToolError as e:
                return Outcome(_error(tool, {"id": op_id}, f"nothing was changed: {e}", e.kind), op)
            if not spec.still_as_left(op, observed):
                return Outcome(
                    _refused(
                        tool,
                        {"id": op_id},
                        f"{op.target} changed after {op_id}; undoing it now would overwrite "
                        "that change, so nothing was changed. Look with `triage ops show "
                        f"{op_id}` and change it by hand if you still want to",
                    ),
                    op,
                )
        outcome = self.submit(
            MutationRequest(
                run=f"undo:{op.id}",
                step="0",
                action=inv.action,
                target=inv.target,
                args=inv.args,
                requested_by=requested_by,
                requested_via=requested_via,
            ),
            undoes=op.id,
        )
        return outcome

    def _link_undo(self, undo_op: Operation) -> None:
        """Mark the undone operation (best effort: the undo's own `undoes` links them too)."""
        if undo_op.undoes is None:
            return
        with contextlib.suppress(ToolError):
            original = self.ledger.get(undo_op.undoes)
            if original is not None and original.undone_by is None:
                self.ledger.update(original.moved(undone_by=undo_op.id))
