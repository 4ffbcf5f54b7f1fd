"""Approvals: who may decide an operation, what a decision is bound to, and when it is usable.

A decision (approve or refuse) is an `Approval` object of its own, never a field on the
Operation: the person creates it with their own identity, and the apiserver checks that
identity (RBAC: only approvers and the Slack approval recorder may create approvals, the
mutator may not; the `triage-approvals` ValidatingAdmissionPolicy: the `approver` it names is
the identity that creates it — or, for the recorder, a `slack:` user). What it is bound to is
the argument digest the approver was shown (the Slack button carries it, `triage ops approve`
computes it from the arguments it prints), and at execution that digest is compared with one
recomputed from the Operation's arguments, not with the digest stored beside them.

A decision counts only when, at the moment it is used, its approver is allowed by the policy
*then in force*, its digest equals the recomputed one, and (for an approval) it is younger than
`approval_ttl_s`. Any counting refusal wins over any approval.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from policies.model import MutationAction, MutationPolicy
from tools.errors import NotAnApprover, NotAwaitingApproval, NotFound, Refused
from tools.mutate.ledger import Decision, Ledger, Operation, Phase, args_digest


class StaleApproval(Refused):
    """The arguments on the card are not the operation's arguments (or the request expired)."""


def recomputed(op: Operation) -> str:
    """The digest of the operation's arguments, computed now (never read from the record)."""
    return args_digest(op.action, op.target, op.args)


def expires_at(decision: Decision, policy: MutationPolicy) -> datetime:
    return decision.created_at + timedelta(seconds=policy.approval_ttl_s)


@dataclass
class Verdict:
    """What the recorded decisions come to now: usable approval, refusal, or why neither."""

    approval: Decision | None = None
    refusal: Decision | None = None
    problem: str | None = None
    ignored: list[str] = field(default_factory=list)


def judge_decisions(
    op: Operation, decisions: list[Decision], policy: MutationPolicy, now: datetime
) -> Verdict:
    """Which of `decisions` count for `op` now, under `policy`."""
    digest = recomputed(op)
    action = MutationAction(op.action)
    verdict = Verdict()
    if digest != op.args_digest:
        verdict.problem = (
            f"{op.id}'s arguments do not match its recorded digest; it will not be applied. "
            "Ask again for a fresh operation"
        )
        return verdict
    for d in decisions:
        if d.operation != op.id:
            continue
        if not policy.may_approve(action, d.approver):
            verdict.ignored.append(f"{d.approver} may not decide on {op.action}")
        elif d.args_digest != digest:
            verdict.ignored.append(f"{d.approver} decided on different arguments")
        elif not d.approve:
            verdict.refusal = verdict.refusal or d
        elif now > expires_at(d, policy):
            verdict.ignored.append(
                f"the approval by {d.approver} expired at {expires_at(d, policy):%H:%M:%S} UTC"
            )
        elif verdict.approval is None:
            verdict.approval = d
    if verdict.refusal is None and verdict.approval is None:
        why = "; ".join(verdict.ignored) or "no approval yet"
        verdict.problem = f"{op.id} needs approval ({why}): run `triage ops approve {op.id}`"
    return verdict


def genuine(ledger: Ledger, op: Operation, policy: MutationPolicy) -> str | None:
    """Why the approval `op`'s execution used does not hold now (None: it does): the approval
    object must exist, approve these very arguments, and its approver still be allowed."""
    used = op.approval
    if used is None or not used.name:
        return f"{op.id} has no approval on record"
    decision = ledger.decision(used.name)
    if decision is None or decision.operation != op.id or not decision.approve:
        return f"the approval {used.name} recorded on {op.id} does not exist"
    if decision.args_digest != recomputed(op):
        return f"the approval {used.name} was for different arguments"
    if not policy.may_approve(MutationAction(op.action), decision.approver):
        return f"{decision.approver} may no longer approve {op.action}"
    return None


def _check(
    ledger: Ledger, policy: MutationPolicy, op_id: str, who: str, digest: str, now: datetime
) -> Operation:
    op = ledger.get(op_id)
    if op is None:
        msg = f"no operation {op_id}; list them with `triage ops list`"
        raise NotFound(msg)
    if op.phase is not Phase.AWAITING_APPROVAL:
        msg = f"{op_id} is {op.phase}, not waiting for approval; nothing to decide"
        raise NotAwaitingApproval(msg)
    action = MutationAction(op.action)
    if not policy.may_approve(action, who):
        allowed = ", ".join(policy.approvers_for(action)) or "none"
        msg = f"{who} may not decide on {op.action} (approvers: {allowed}); ask one of them"
        raise NotAnApprover(msg)
    if digest != recomputed(op):
        msg = (
            f"the arguments you were shown are not {op_id}'s arguments; nothing was recorded. "
            "Look again with `triage ops show`"
        )
        raise StaleApproval(msg)
    if now > op.created_at + timedelta(seconds=policy.approval_ttl_s):
        msg = f"the approval request for {op_id} has expired; ask again for a fresh one"
        raise StaleApproval(msg)
    return op


def record_decision(
    ledger: Ledger,
    policy: MutationPolicy,
    op_id: str,
    who: str,
    *,
    approve: bool,
    digest: str,
    via: str,
    now: datetime,
) -> Decision:
    """Record `who`'s decision on exactly the arguments with `digest` (what they were shown).

    `ledger` must act as `who` (their own kubeconfig) or, for a Slack user, as the approval
    recorder: the apiserver refuses any other writer. Raises a `Refused` (not an approver,
    nothing waiting, stale arguments or request) or `NotFound` before anything is written.
    """
    op = _check(ledger, policy, op_id, who, digest, now)
    decision = Decision(
        name=Decision.name_for(op.id, approve, who),
        operation=op.id,
        approve=approve,
        args_digest=digest,
        approver=who,
        via=via,
    )
    stored, _ = ledger.decide(decision)
    return stored
