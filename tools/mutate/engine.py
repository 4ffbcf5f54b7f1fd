"""The ledger engine behind the mutate registry: claim, apply, recover, finish.

Split from tools/mutate/registry.py (the entry points and the checks before anything is
sent): this is the state machine every operation goes through once it is recorded —
`Pending` (held by one process for `lease_s` at a time) → the write → `Succeeded` / `Failed`
/ `Superseded`, with `Unknown` for a write whose answer was lost, which is never retried
before the target is read again. `MutateRegistry` inherits it; nothing else uses it.

Before every write — the first, a retry after a lost answer, a takeover after a crash, a run
resumed after an approval — the operation is checked again as if it were new: the policy in
force now (action, namespace, bounds), the digest recomputed from its arguments, and, when the
policy wants approval, that the approval it used is a genuine `Approval` object for exactly
these arguments by someone the policy still allows. Any failure refuses the operation with
nothing written (`Refused`, by "policy").
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

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
from tools.mutate.actions import MutationSpec
from tools.mutate.approvals import expires_at, genuine, judge_decisions, recomputed
from tools.mutate.ledger import Approval, Holder, Ledger, Operation, Phase, Target
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
    requested_by: str = Field(min_length=1, max_length=300, description="slack:T/U, kube:alice")
    requested_via: str = Field(min_length=1, max_length=300, description="a Slack thread, cli")
    operation_id: str | None = None


@dataclass(frozen=True)
class Outcome:
    """The envelope (status for callers to gate on) and the ledger record, when there is one."""

    result: ToolResult
    operation: Operation | None

    @property
    def phase(self) -> Phase | None:
        return self.operation.phase if self.operation else None


class Engine:
    """The operation state machine; `MutateRegistry` provides the policy, ledger and clock."""

    policy: MutationPolicy
    ledger: Ledger
    lease_s: float
    max_attempts: int
    clock: Callable[[], datetime]
    holder_id: str

    def _link_undo(self, undo_op: Operation) -> None:
        """Mark the operation an undo undoes (the registry knows how)."""
        raise NotImplementedError

    def _policy_problem(self, op: Operation) -> str | None:
        """Why the policy in force refuses `op` as recorded (the registry knows how)."""
        raise NotImplementedError

    def _recheck(self, op: Operation) -> str | None:
        """Everything a write depends on, checked now (None: write)."""
        problem = self._policy_problem(op)
        if problem is not None:
            return problem
        if recomputed(op) != op.args_digest:
            return "its arguments do not match its recorded digest"
        if self.policy.needs_approval(MutationAction(op.action)):
            return genuine(self.ledger, op, self.policy)
        return None

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
            return self._take_approval(spec, op, now)
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

    def _take_approval(self, spec: MutationSpec, op: Operation, now: datetime) -> Outcome:
        """Use a counting approval (or record a counting refusal) of a waiting operation."""
        try:
            decisions = self.ledger.decisions(op.id)
        except ToolError as e:
            return Outcome(_result(op, f"could not read its approvals: {e}"), op)
        verdict = judge_decisions(op, decisions, self.policy, now)
        if verdict.refusal is not None:
            who = verdict.refusal.approver
            moved = op.moved(
                phase=Phase.REFUSED, refused_by=who, message=f"refused by {who}", holder=None
            )
            try:
                stored = self._cas(moved)
            except Conflict:
                return self._elsewhere(op)
            except ToolError as e:
                return Outcome(_result(op, f"could not record the refusal: {e}"), op)
            return Outcome(_result(stored), stored)
        if verdict.approval is None:
            return Outcome(_result(op, verdict.problem), op)
        d = verdict.approval
        taken = op.moved(
            phase=Phase.PENDING,
            holder=self._hold(),
            approval=Approval(
                name=d.name,
                approver=d.approver,
                approved_at=d.created_at,
                args_digest=d.args_digest,
                expires_at=expires_at(d, self.policy),
                used_at=now,
            ),
            message=f"approved by {d.approver}",
        )
        try:
            stored = self._cas(taken)
        except Conflict:
            return self._elsewhere(op)
        except ToolError as e:
            return Outcome(_result(op, f"could not take the approval: {e}"), op)
        return self._apply(spec, stored)

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
        problem = self._recheck(op)
        if problem is not None:
            return self._refuse_now(op, problem)
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

    def _refuse_now(self, op: Operation, problem: str) -> Outcome:
        """Refused at execution (the policy or the approval no longer holds): nothing written."""
        done = op.moved(
            phase=Phase.REFUSED,
            refused_by="policy",
            message=truncate(f"refused at execution, nothing written: {problem}", 300),
            holder=None,
        )
        try:
            stored = self._cas(done)
        except ToolError as e:
            msg = f"{op.id} refused at execution ({problem}); nothing was written ({e})"
            return Outcome(_error(f"mutate.{op.action}", op.args, msg, ErrorKind.DENIED), op)
        return Outcome(_result(stored), stored)

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
