"""Approval cards for changes a run commands, and the clicks that decide them.

No parallel mechanism: operations, digests, approvers, single use and expiry are the ledger's
(tools/mutate/, triage/agent/changes.py), and the change itself is applied by the run's own
mutate step, inside the checked run, before the judge. The Slack side only carries decisions:
- a run that pauses for approval (`awaiting_approval`) gets one card per operation, with
  Approve / Refuse buttons whose value is the operation ID, the argument digest it was shown
  with, and the request to wake;
- a click is checked against the ledger: still waiting, same digest, the clicker listed among
  the approvers (Slack user ids in the policy); then `changes.approve` (or `refuse`) records
  it and the parked request is woken (`Inbox.resume`): its run goes on from the checkpoint.
  A second click, a redelivery or a stale button finds the operation decided and changes
  nothing.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from policies.model import MutationAction
from tools.errors import Refused, ToolError
from triage.agent import changes
from triage.agent.changes import MutateRegistry, Operation, Phase
from triage.slack import blocks
from triage.slack import messages as m
from triage.slack.blocks import TicketView
from triage.slack.inbox import Claimed, Inbound
from triage.slack.ticket import Messages
from triage.verification.loop import CheckedRun

if TYPE_CHECKING:
    from triage.slack.worker import Worker

_LOCKS: dict[str, asyncio.Lock] = {}


def dry_run(op: Operation) -> dict[str, Any]:
    """What the server holds now and the precondition the write is pinned to."""
    plan = {k: v for k, v in op.plan.items() if k != "template"}
    return {"now": op.before or {}, "plan": plan}


def _card(
    op: Operation, registry: MutateRegistry, request_id: str, decided: str | None = None
) -> tuple[str, list[Any]]:
    action = MutationAction(op.action)
    return blocks.approval(
        op_id=op.id,
        action=op.action,
        target=str(op.target),
        args=op.args,
        digest=op.args_digest,
        request_id=request_id,
        dry_run=dry_run(op),
        approvers=registry.policy.approvers_for(action),
        ttl_s=registry.policy.approval_ttl_s,
        decided=decided,
    )


async def ask(
    worker: Worker, claimed: Claimed, messages: Messages, run: CheckedRun, view: TicketView
) -> None:
    """The run paused: one approval card per waiting operation (posted once)."""
    registry = worker.product.registry
    if registry is None:  # cannot happen: only a registry pauses a run
        return
    for waiting in run.awaiting:
        op = await asyncio.to_thread(registry.ledger.get, str(waiting["operation"]))
        if op is None:
            continue
        text, card = _card(op, registry, claimed.inbound.id)
        await messages.once(f"approval-{op.id}", text, card)
        view.changes.append(m.approval_needed(op.action, str(op.target)))


async def decide(worker: Worker, claimed: Claimed, messages: Messages) -> None:
    """A click on Approve or Refuse."""
    inbound = claimed.inbound
    registry = worker.product.registry
    slack = worker.slack

    async def tell(text: str) -> None:
        await slack.ephemeral(inbound.channel, inbound.user, text, inbound.thread_ts)

    if registry is None:
        await tell(m.CHANGES_NOT_CONFIGURED)
        return
    try:
        value = json.loads(str(inbound.data.get("value") or "{}"))
        op_id, digest = str(value["op"]), str(value["digest"])
        request_id = str(value.get("req") or "")
    except (ValueError, KeyError, TypeError):
        await tell(m.cannot_decide("this request", "the button carried no operation"))
        return
    lock = _LOCKS.setdefault(op_id, asyncio.Lock())
    try:
        async with lock:
            decided = await _decide(worker, registry, inbound, op_id, digest, request_id, tell)
    finally:
        if not lock.locked():
            _LOCKS.pop(op_id, None)
    if decided and request_id:
        # The paused run goes on (apply, check, verify) in the request that asked for it.
        await asyncio.to_thread(worker.inbox.resume, request_id)
        worker.kick()


async def _decide(
    worker: Worker,
    registry: MutateRegistry,
    inbound: Inbound,
    op_id: str,
    digest: str,
    request_id: str,
    tell: Callable[[str], Awaitable[None]],
) -> bool:
    """Record the click's decision on the operation; True when one was recorded."""
    slack = worker.slack
    op = await asyncio.to_thread(registry.ledger.get, op_id)
    if op is None:
        await tell(m.cannot_decide(op_id, "no such operation"))
        return False
    if op.phase is not Phase.AWAITING_APPROVAL:
        await tell(m.already_decided(op_id, op.phase.value))
        return False
    if op.approval is not None and changes.usable_approval(registry, op):
        await tell(m.already_decided(op_id, f"approved by {op.approval.approver}"))
        return False
    age = registry.clock() - op.created_at
    if age > timedelta(seconds=registry.policy.approval_ttl_s):
        await tell(m.approval_expired(op_id))
        return False
    if op.args_digest != digest:
        await tell(m.stale_button(op_id))
        return False
    action = MutationAction(op.action)
    approvers = registry.policy.approvers_for(action)
    if inbound.user not in approvers:
        await tell(m.not_an_approver(op.action, approvers))
        return False
    approve = inbound.data.get("action_id") == blocks.ACTION_APPROVE
    decide_fn = changes.approve if approve else changes.refuse
    try:
        await asyncio.to_thread(decide_fn, registry.ledger, registry.policy, op_id, inbound.user)
    except Refused as e:
        await tell(m.cannot_decide(op_id, str(e)))
        return False
    except ToolError as e:  # someone moved it first (409), or the ledger is unreachable
        current = await asyncio.to_thread(registry.ledger.get, op_id)
        phase = current.phase.value if current else "gone"
        await tell(m.already_decided(op_id, phase) if current else m.cannot_decide(op_id, str(e)))
        return False
    said = m.approved_by(inbound.user, op_id) if approve else m.refused_by(inbound.user, op_id)
    text, card = _card(op, registry, request_id, decided=said)
    await slack.update(inbound.channel, inbound.ts, text, blocks=card)
    return True
