"""Changes asked for in Slack, and approval buttons bound to one operation's exact arguments.

No parallel mechanism: operations, digests, approvers, single use and expiry are the ledger's
(tools/mutate.py, triage/approvals.py). The Slack side only carries them:
- a change that policy lets run at once is submitted to the mutate registry after the verdict;
- a change that needs a human is recorded as `AwaitingApproval` (its plan pinned from a live
  read of the target) and shown with Approve / Refuse buttons whose value is the operation ID
  *and* the argument digest it was shown with;
- a click is checked against the ledger: still waiting, same digest, the clicker listed among
  the approvers (Slack user ids in the policy); then `triage.approvals.approve` records it and
  only the click that recorded the approval resumes the operation. A second click, a redelivery
  or a stale button finds the operation decided and changes nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from policies.model import MutationAction
from tools.errors import ToolError
from tools.ledger import Operation, Phase
from triage import approvals
from triage.loop import CheckedRun
from triage.slack import blocks
from triage.slack import messages as m
from triage.slack.blocks import TicketView
from triage.slack.inbox import Claimed, Inbound
from triage.slack.ticket import Messages

if TYPE_CHECKING:
    from triage.slack.worker import Worker

_LOCKS: dict[str, asyncio.Lock] = {}


def dry_run(op: Operation) -> dict[str, Any]:
    """What the server holds now and the precondition the write is pinned to."""
    plan = {k: v for k, v in op.plan.items() if k != "template"}
    return {"now": op.before or {}, "plan": plan}


def _card(op: Operation, worker: Worker, decided: str | None = None) -> tuple[str, list[Any]]:
    registry = worker.backend.registry
    assert registry is not None
    action = MutationAction(op.action)
    return blocks.approval(
        op_id=op.id,
        action=op.action,
        target=str(op.target),
        args=op.args,
        digest=op.args_digest,
        dry_run=dry_run(op),
        approvers=registry.policy.approvers_for(action),
        ttl_s=registry.policy.approval_ttl_s,
        decided=decided,
    )


async def propose(
    worker: Worker, claimed: Claimed, messages: Messages, checked: CheckedRun, view: TicketView
) -> None:
    """After the verdict: apply what may run at once, ask for approval of the rest."""
    from triage.slack.worker import thread_id  # noqa: PLC0415 (cycle: worker imports us lazily)

    goal = checked.best.goal
    if not goal.mutations_named:
        return
    registry = worker.backend.registry
    if registry is None:
        view.changes.append(m.CHANGES_NOT_CONFIGURED)
        return
    requests, problems = approvals.requests_from_goal(goal, thread_id(claimed.inbound))
    view.changes += problems
    for req in requests:
        action = MutationAction(req.action)
        ask = registry.policy.allows(action) and registry.policy.needs_approval(action)
        outcome = await asyncio.to_thread(registry.submit, req, apply=not ask)
        op = outcome.operation
        if ask and op is not None and op.phase is Phase.AWAITING_APPROVAL:
            text, card = _card(op, worker)
            await messages.once(f"approval-{op.id}", text, card)
            view.changes.append(m.approval_needed(op.action, str(op.target)))
        else:
            view.changes.append(
                m.change_result(req.action, str(req.target), outcome.result.excerpt)
            )


async def decide(worker: Worker, claimed: Claimed, messages: Messages) -> None:
    """A click on Approve or Refuse."""
    inbound = claimed.inbound
    registry = worker.backend.registry
    slack = worker.slack

    async def tell(text: str) -> None:
        await slack.ephemeral(inbound.channel, inbound.user, text, inbound.thread_ts)

    if registry is None:
        await tell(m.CHANGES_NOT_CONFIGURED)
        return
    try:
        value = json.loads(str(inbound.data.get("value") or "{}"))
        op_id, digest = str(value["op"]), str(value["digest"])
    except (ValueError, KeyError, TypeError):
        await tell(m.cannot_decide("this request", "the button carried no operation"))
        return
    lock = _LOCKS.setdefault(op_id, asyncio.Lock())
    try:
        async with lock:
            await _decide(worker, inbound, op_id, digest, tell, messages)
    finally:
        if not lock.locked():
            _LOCKS.pop(op_id, None)


async def _decide(
    worker: Worker,
    inbound: Inbound,
    op_id: str,
    digest: str,
    tell: Callable[[str], Awaitable[None]],
    messages: Messages,
) -> None:
    registry = worker.backend.registry
    slack = worker.slack
    assert registry is not None
    op = await asyncio.to_thread(registry.ledger.get, op_id)
    if op is None:
        await tell(m.cannot_decide(op_id, "no such operation"))
        return
    if op.phase is not Phase.AWAITING_APPROVAL:
        await tell(m.already_decided(op_id, op.phase.value))
        return
    age = registry.clock() - op.created_at
    if age > timedelta(seconds=registry.policy.approval_ttl_s):
        await tell(m.approval_expired(op_id))
        return
    if op.args_digest != digest:
        await tell(m.stale_button(op_id))
        return
    action = MutationAction(op.action)
    approvers = registry.policy.approvers_for(action)
    if inbound.user not in approvers:
        await tell(m.not_an_approver(op.action, approvers))
        return
    approve = inbound.data.get("action_id") == blocks.ACTION_APPROVE
    try:
        if approve:
            await asyncio.to_thread(
                approvals.approve, registry.ledger, registry.policy, op_id, inbound.user
            )
        else:
            await asyncio.to_thread(
                approvals.refuse, registry.ledger, registry.policy, op_id, inbound.user
            )
    except ValueError as e:
        await tell(m.cannot_decide(op_id, str(e)))
        return
    except ToolError as e:  # someone moved it first (409), or the ledger is unreachable
        current = await asyncio.to_thread(registry.ledger.get, op_id)
        phase = current.phase.value if current else "gone"
        await tell(m.already_decided(op_id, phase) if current else m.cannot_decide(op_id, str(e)))
        return
    if not approve:
        text, card = _card(op, worker, decided=m.refused_by(inbound.user, op_id))
        await slack.update(inbound.channel, inbound.ts, text, blocks=card)
        return
    # Only the click that recorded the approval applies it; once, through the ledger.
    text, card = _card(op, worker, decided=m.approved_by(inbound.user, op_id))
    await slack.update(inbound.channel, inbound.ts, text, blocks=card)
    outcome = await asyncio.to_thread(registry.resume, op_id)
    phase = outcome.phase.value if outcome.phase else "unknown"
    await messages.once(f"applied-{op_id}", m.applied(op_id, phase, outcome.result.excerpt))
