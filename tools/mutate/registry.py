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
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policies.model import MutationAction, MutationPolicy
from tools.errors import (
    BackendError,
    Conflict,
    NotFound,
    Throttled,
    TimedOut,
    ToolError,
    Unreachable,
    truncate,
)
from tools.mutate.actions import (
    DeletePod,
    MutationArgs,
    MutationSpec,
    PlanError,
    Rollback,
    RolloutRestart,
    Scale,
    SilenceCreate,
    SilenceExpire,
)
from tools.mutate.alertmanager import AlertmanagerMutator
from tools.mutate.kube import KubeMutator
from tools.mutate.ledger import (
    Holder,
    Ledger,
    Operation,
    Phase,
    Target,
    approval_problem,
    args_digest,
    operation_id,
    utcnow,
)
from tools.results import ErrorKind, ToolResult, ToolStatus, clip

#: A write that failed like this may or may not have landed.
LOST = (TimedOut, Unreachable, BackendError)

Json = dict[str, Any]


class MutationRequest(BaseModel):
    """What someone asked to change. `operation_id` pins an existing record (approve, resume)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    run: str = Field(min_length=1, max_length=300)
    step: str = Field(min_length=1, max_length=100)
    action: str
    target: Target
    args: Json = Field(default_factory=dict)
    requested_by: str = ""
    operation_id: str | None = None


@dataclass(frozen=True)
class Outcome:
    """The envelope (status for callers to gate on) and the ledger record, when there is one."""

    result: ToolResult
    operation: Operation | None

    @property
    def phase(self) -> Phase | None:
        return self.operation.phase if self.operation else None


class MutateRegistry:
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
        tool = f"mutate.{req.action}"
        args = dict(req.args)
        try:
            action = MutationAction(req.action)
        except ValueError:
            known = ", ".join(a.value for a in MutationAction)
            return _refused(tool, args, f"unknown action {req.action!r}; known: {known}")
        if not self.policy.allows(action):
            return _refused(
                tool,
                args,
                f"{action} is not allowed by the policy; an operator can add it under "
                "mutations.actions",
            )
        if req.target.namespace not in self.policy.namespaces:
            allowed = ", ".join(self.policy.namespaces) or "none"
            return _refused(
                tool,
                args,
                f"namespace {req.target.namespace!r} is outside the policy (allowed: {allowed}); "
                "nothing was changed",
            )
        spec = self.specs.get(action)
        if spec is None:
            return _refused(
                tool, args, f"{action} is not configured here (no client for its backend)"
            )
        if req.target.kind != spec.kind:
            return _invalid(tool, args, f"{action} acts on a {spec.kind}, not a {req.target.kind}")
        try:
            parsed = spec.args_model.model_validate(args, context={"policy": self.policy})
        except ValidationError as e:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'args'}: {_plain(err['msg'])}"
                for err in e.errors()
            )
            return _refused(
                tool, args, f"{action} on {req.target} refused before any call: {problems}"
            )
        problem = spec.check(req.target, parsed)
        if problem:
            return _refused(tool, args, f"{action} on {req.target} refused: {problem}")
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

    def undo(self, op_id: str, *, requested_by: str = "") -> Outcome:
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

    # -- the engine ----------------------------------------------------------------------------

    def _hold(self) -> Holder:
        return Holder(id=self.holder_id, until=self.clock() + timedelta(seconds=self.lease_s))

    def _claim(self, op: Operation) -> tuple[Operation, bool]:
        """Create the record; after a lost answer, read it back to learn whether we hold it."""
        last: ToolError | None = None
        for _ in range(2):
            try:
                return self.ledger.claim(op)
            except LOST as e:
                last = e
                existing = self.ledger.get(op.id)
                if existing is None:
                    continue
                ours = existing.holder is not None and existing.holder.id == self.holder_id
                if ours or (existing.phase is Phase.AWAITING_APPROVAL and op.holder is None):
                    return existing, True
                return existing, False
        assert last is not None
        raise last

    def _continue(self, spec: MutationSpec, op: Operation, *, apply: bool = True) -> Outcome:
        now = self.clock()
        if op.phase.terminal or not apply:
            return Outcome(_result(op), op)
        if op.phase is Phase.AWAITING_APPROVAL:
            problem = approval_problem(op, self.policy, now)
            if problem is not None:
                return Outcome(_result(op, problem), op)
            assert op.approval is not None
            taken = op.moved(
                phase=Phase.PENDING,
                holder=self._hold(),
                approval=op.approval.model_copy(update={"used_at": now}),
                message=f"approved by {op.approval.approver}",
            )
            try:
                stored = self._cas(taken)
            except Conflict:
                return self._elsewhere(op)
            except ToolError as e:
                return Outcome(_result(op, f"could not take the approval: {e}"), op)
            return self._apply(spec, stored)
        # Pending or Unknown: in someone's hands, or abandoned by a process that died.
        if op.holder is not None and op.holder.id != self.holder_id and op.holder.until > now:
            return self._elsewhere(op)
        try:
            stored = self._cas(op.moved(holder=self._hold()))
        except Conflict:
            return self._elsewhere(op)
        except ToolError as e:
            return Outcome(_result(op, f"could not take over {op.id}: {e}"), op)
        return self._recover(spec, stored)

    def _elsewhere(self, op: Operation) -> Outcome:
        current = self.ledger.get(op.id) or op
        if current.phase.terminal:
            return Outcome(_result(current), current)
        holder = current.holder.id if current.holder else "someone"
        until = f" until {current.holder.until:%H:%M:%S} UTC" if current.holder else ""
        msg = (
            f"{op.id} is being applied by {holder}{until}; nothing was written here. "
            f"Check with `triage ops show {op.id}`"
        )
        result = _error(f"mutate.{op.action}", op.args, msg, ErrorKind.CONFLICT)
        data = {"operation": op.id, "phase": current.phase.value, "target": str(op.target)}
        return Outcome(result.model_copy(update={"data": data}), current)

    def _apply(self, spec: MutationSpec, op: Operation) -> Outcome:
        """The write, for an operation this process holds in Pending."""
        if op.attempts >= self.max_attempts:
            return self._finish(
                spec, op, Phase.FAILED, None, {}, f"gave up after {op.attempts} attempts"
            )
        try:
            # Fence: renew our hold and count the attempt. If someone took over, stop here.
            op = self._cas(
                op.moved(phase=Phase.PENDING, holder=self._hold(), attempts=op.attempts + 1)
            )
        except Conflict:
            return self._elsewhere(op)
        except ToolError as e:
            return Outcome(_result(op, f"could not renew the claim, nothing written: {e}"), op)
        try:
            facts = spec.write(op)
        except LOST as e:
            op = self._mark_unknown(op, e)
            return self._recover(spec, op)
        except ToolError as e:
            return self._refused_by_server(spec, op, e)
        try:
            observed = spec.observe(op.target, op.id)
        except ToolError:
            observed = None
        return self._finish(spec, op, Phase.SUCCEEDED, observed, facts, "applied")

    def _mark_unknown(self, op: Operation, e: ToolError) -> Operation:
        try:
            return self._cas(
                op.moved(phase=Phase.UNKNOWN, message=truncate(f"answer lost: {e}", 200))
            )
        except ToolError:
            return op  # the ledger is unreachable too; the state check below decides

    def _recover(self, spec: MutationSpec, op: Operation) -> Outcome:
        """State check before any retry."""
        try:
            observed = spec.observe(op.target, op.id)
        except ToolError as e:
            msg = (
                f"outcome of {op.id} unknown and {op.target} cannot be read ({e}); nothing "
                f"will be retried before it is. Check with `triage ops show {op.id}`"
            )
            return Outcome(_error(f"mutate.{op.action}", op.args, msg, e.kind), op)
        if spec.effect_present(op, observed):
            return self._finish(spec, op, Phase.SUCCEEDED, observed, {}, "found applied")
        if spec.precondition_holds(op, observed):
            return self._apply(spec, op)
        return self._finish(
            spec,
            op,
            Phase.SUPERSEDED,
            observed,
            {},
            f"{op.target} changed since the plan; nothing was forced",
        )

    def _refused_by_server(self, spec: MutationSpec, op: Operation, e: ToolError) -> Outcome:
        """The server said no. A failed precondition is `Superseded`; a PDB 429 is a refusal."""
        readable = True
        try:
            observed = spec.observe(op.target, op.id)
        except ToolError:
            observed, readable = None, False
        if readable:
            if spec.effect_present(op, observed):
                return self._finish(spec, op, Phase.SUCCEEDED, observed, {}, "found applied")
            if not spec.precondition_holds(op, observed):
                return self._finish(
                    spec,
                    op,
                    Phase.SUPERSEDED,
                    observed,
                    {},
                    f"{op.target} changed since the plan; nothing was forced",
                )
        if isinstance(e, Throttled) and op.action == MutationAction.DELETE_POD:
            msg = f"eviction refused by a PodDisruptionBudget: {e}"
        elif isinstance(e, NotFound):
            msg = f"{op.target} does not exist: {e}"
        else:
            msg = f"refused by the server: {e}"
        return self._finish(spec, op, Phase.FAILED, observed, {}, msg)

    def _finish(
        self,
        spec: MutationSpec,
        op: Operation,
        phase: Phase,
        observed: Json | None,
        facts: Json,
        message: str,
    ) -> Outcome:
        inverse = None
        if phase is Phase.SUCCEEDED:
            try:
                spec.settle(op, observed)
            except ToolError as e:
                message += f" (stamp not written: {e})"
            inverse = spec.inverse(op, {**facts, **(observed or {})})
        done = op.moved(
            phase=phase,
            message=truncate(message, 300),
            after=spec.snapshot(observed) if observed is not None or spec.kind == "Pod" else None,
            inverse=inverse,
            holder=None,
        )
        try:
            stored = self._cas(done)
        except Conflict:
            current = self.ledger.get(op.id)
            if current is None or current.phase.terminal:
                return Outcome(_result(current or done), current or done)
            return self._elsewhere(current)
        except ToolError:
            pass
        else:
            if phase is Phase.SUCCEEDED:
                self._link_undo(stored)
            return Outcome(_result(stored), stored)
        msg = (
            f"{op.id}: {message}, but the ledger could not be updated ({phase} not recorded). "
            f"Nothing will be written again before the target is read: run "
            f"`triage ops show {op.id}`"
        )
        return Outcome(_error(f"mutate.{op.action}", op.args, msg, ErrorKind.BACKEND), op)

    def _cas(self, op: Operation) -> Operation:
        """`ledger.update`, surviving our own lost answers.

        An update whose answer was lost may have landed: the record then moved on and the
        retry gets a conflict. If we still hold the record (or just finished it), the move was
        ours, so ours goes on top of it; anyone else's move is theirs (`Conflict`).
        """
        last: ToolError | None = None
        for _ in range(3):
            try:
                return self.ledger.update(op)
            except (Conflict, *LOST) as e:
                last = e
            current = self.ledger.get(op.id)
            if current is None:
                raise NotFound(f"operation {op.id} is gone from the ledger", http_status=404)
            ours = current.holder is not None and current.holder.id == self.holder_id
            if current.phase is op.phase and op.phase.terminal and current.holder is None:
                return current  # our own final update landed
            if not ours:
                raise Conflict(f"operation {op.id} is held by someone else", http_status=409)
            op = op.model_copy(update={"version": current.version})
        assert last is not None
        raise last


def _refused(tool: str, args: Json, message: str) -> ToolResult:
    return ToolResult(
        tool=tool,
        args=args,
        status=ToolStatus.DENIED,
        excerpt=clip(message),
        error_kind=ErrorKind.DENIED,
    )


def _invalid(tool: str, args: Json, message: str) -> ToolResult:
    return ToolResult(
        tool=tool,
        args=args,
        status=ToolStatus.ERROR,
        excerpt=clip(message),
        error_kind=ErrorKind.INVALID,
    )


def _error(tool: str, args: Json, message: str, kind: ErrorKind) -> ToolResult:
    status = ToolStatus.DENIED if kind is ErrorKind.DENIED else ToolStatus.ERROR
    return ToolResult(tool=tool, args=args, status=status, excerpt=clip(message), error_kind=kind)


_STATUS = {
    Phase.SUCCEEDED: ToolStatus.OK,
    Phase.AWAITING_APPROVAL: ToolStatus.APPROVAL_REQUIRED,
    Phase.REFUSED: ToolStatus.DENIED,
}


def _result(op: Operation, note: str | None = None) -> ToolResult:
    """The envelope for an operation's recorded state."""
    status = _STATUS.get(op.phase, ToolStatus.ERROR)
    kind = None
    if status is ToolStatus.ERROR:
        kind = ErrorKind.CONFLICT if op.phase is Phase.SUPERSEDED else ErrorKind.BACKEND
    elif status is ToolStatus.DENIED:
        kind = ErrorKind.DENIED
    text = f"{op.id} {op.phase}: {note or op.message} ({op.action} {op.target})"
    if op.phase is Phase.AWAITING_APPROVAL and note is None:
        text += f". Approve with `triage ops approve {op.id}`"
    return ToolResult(
        tool=f"mutate.{op.action}",
        args=op.args,
        status=status,
        excerpt=clip(text),
        data={"operation": op.id, "phase": op.phase.value, "target": str(op.target)},
        error_kind=kind,
    )


def _plain(message: str) -> str:
    """pydantic's 'Value error, …' prefix is noise to a user."""
    return message.removeprefix("Value error, ")
