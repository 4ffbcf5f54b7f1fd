"""Approval cards for changes a run commands, offers for changes it only mentions, and the
clicks that decide them.

No parallel mechanism: operations, digests, approvers, single use and expiry are the ledger's
(tools/mutate/, triage/agent/changes.py), and the change itself is applied by the run's own
mutate step, inside the checked run, before the judge. The Slack side only carries decisions:

- a run that pauses for approval (`awaiting_approval`) gets one card per operation: its exact
  arguments, its plan, and Approve / Refuse buttons whose value is the operation ID, the
  digest *recomputed from the arguments on the card*, and the request to wake;
- a click is checked (still waiting, the button's digest equal to the arguments' digest now,
  the clicker a policy approver as `slack:TEAM/USER`), then recorded as an `Approval` object by
  the approval recorder identity — the only identity besides the approvers themselves that the
  apiserver lets create one, and only for `slack:` users — and the parked request is woken
  (`Inbox.resume`): its run re-checks policy and digest and goes on from the checkpoint. A
  second click, a redelivery or a stale button finds the operation decided and changes nothing;
- a run whose words mention a change without commanding it ("can you restart X?") gets one
  "Plan: …" button per such change. A click creates nothing by itself: it becomes a new request
  by the clicker, in the same thread, worded as the plain command (`Command.sentence`), and that
  request goes through intake, the policy and the approval rules like any other.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from policies.model import MutationAction
from tools.errors import Refused, ToolError
from triage.agent import changes
from triage.agent.changes import Ledger, MutateRegistry, Operation, Phase
from triage.core.models import Command
from triage.slack import blocks
from triage.slack import messages as m
from triage.slack.blocks import TicketView
from triage.slack.inbox import Claimed, Inbound, Kind
from triage.slack.ticket import Messages
from triage.slack.worker import requester
from triage.verification.loop import CheckedRun

if TYPE_CHECKING:
    from triage.slack.worker import Worker

_LOCKS: dict[str, asyncio.Lock] = {}


def slack_user(inbound: Inbound) -> str:
    """How the ledger and the policy name a Slack user: `slack:TEAM/USER`."""
    return f"slack:{inbound.team}/{inbound.user}"


def thread_of(inbound: Inbound) -> str:
    return f"slack:{inbound.team}/{inbound.channel}/{inbound.thread_ts}"


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
        digest=changes.digest_of(op),  # of the arguments shown, never the stored digest
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


async def offer(worker: Worker, claimed: Claimed, messages: Messages, run: CheckedRun) -> None:
    """After the answer: a "Plan: …" button per change the words mentioned but did not
    command. Only for a person's request, and only where changes are configured."""
    goal = run.best.goal
    if worker.product.registry is None or not goal.offers:
        return
    if not requester(claimed.inbound).person:
        return
    for i, command in enumerate(goal.offers):
        namespace = command.namespace or goal.scope.namespace
        if namespace is None:
            continue
        planned = command.model_copy(update={"namespace": namespace})
        sentence = planned.sentence()
        text, card = blocks.offer(
            sentence=sentence,
            command=planned.model_dump(mode="json"),
            request_id=claimed.inbound.id,
        )
        await messages.once(f"offer-{i}", text, card)


async def decide(worker: Worker, claimed: Claimed, messages: Messages) -> None:
    """A click on Approve, Refuse or Plan."""
    inbound = claimed.inbound
    if inbound.data.get("action_id") == blocks.ACTION_PLAN:
        await _plan(worker, inbound)
        return
    registry = worker.product.registry
    slack = worker.slack

    async def tell(text: str) -> None:
        await slack.ephemeral(inbound.channel, inbound.user, text, inbound.thread_ts)

    if registry is None:
        await tell(m.CHANGES_NOT_CONFIGURED)
        return
    recorder = worker.product.approvals
    if recorder is None:
        await tell(m.APPROVALS_NOT_CONFIGURED)
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
            decided = await _decide(
                worker, registry, recorder, inbound, op_id, digest, request_id, tell
            )
    finally:
        if not lock.locked():
            _LOCKS.pop(op_id, None)
    if decided and request_id:
        # The paused run goes on (re-check, apply, check, verify) in the request that asked.
        await worker.inbox.call(worker.inbox.resume, request_id)
        worker.kick()


async def _decide(
    worker: Worker,
    registry: MutateRegistry,
    recorder: Ledger,
    inbound: Inbound,
    op_id: str,
    digest: str,
    request_id: str,
    tell: Callable[[str], Awaitable[None]],
) -> bool:
    """Record the click's decision on the operation; True when one was recorded."""
    op = await asyncio.to_thread(registry.ledger.get, op_id)
    if op is None:
        await tell(m.cannot_decide(op_id, "no such operation"))
        return False
    if op.phase is not Phase.AWAITING_APPROVAL:
        await tell(m.already_decided(op_id, op.phase.value))
        return False
    usable = await asyncio.to_thread(changes.usable_approval, registry, op)
    if usable is not None:
        await tell(m.already_decided(op_id, f"approved by {usable.approver}"))
        return False
    age = registry.clock() - op.created_at
    if age > timedelta(seconds=registry.policy.approval_ttl_s):
        await tell(m.approval_expired(op_id))
        return False
    if digest != changes.digest_of(op):
        await tell(m.stale_button(op_id))
        return False
    action = MutationAction(op.action)
    who = slack_user(inbound)
    if not registry.policy.may_approve(action, who):
        await tell(m.not_an_approver(op.action, registry.policy.approvers_for(action)))
        return False
    approve = inbound.data.get("action_id") == blocks.ACTION_APPROVE
    decide_fn = changes.approve if approve else changes.refuse
    try:
        await asyncio.to_thread(
            lambda: decide_fn(
                recorder, registry.policy, op_id, who, digest=digest, via=thread_of(inbound)
            )
        )
    except Refused as e:
        await tell(m.cannot_decide(op_id, str(e)))
        return False
    except ToolError as e:  # the apiserver refused the recorder, or the ledger is unreachable
        await tell(m.cannot_decide(op_id, str(e)))
        return False
    said = m.approved_by(inbound.user, op_id) if approve else m.refused_by(inbound.user, op_id)
    text, card = _card(op, registry, request_id, decided=said)
    await worker.slack.update(inbound.channel, inbound.ts, text, blocks=card)
    return True


async def _plan(worker: Worker, inbound: Inbound) -> None:
    """A click on "Plan: …": the change becomes a request of its own, by the clicker."""

    async def tell(text: str) -> None:
        await worker.slack.ephemeral(inbound.channel, inbound.user, text, inbound.thread_ts)

    if worker.product.registry is None:
        await tell(m.CHANGES_NOT_CONFIGURED)
        return
    try:
        value = json.loads(str(inbound.data.get("value") or "{}"))
        command = Command.model_validate(value["plan"])
    except (ValueError, KeyError, TypeError, ValidationError):
        await tell(m.cannot_plan("the button carried no change"))
        return
    if command.namespace is None:
        await tell(m.cannot_plan("the change names no namespace"))
        return
    sentence = command.sentence()
    planned = Inbound(
        id=f"plan:{inbound.ts}",  # one plan per offer, however many clicks
        kind=Kind.MENTION,
        team=inbound.team,
        channel=inbound.channel,
        thread_ts=inbound.thread_ts,
        ts=inbound.ts,
        user=inbound.user,
        text=sentence,
        data={"planned_from": str(value.get("req") or "")},
    )
    new = await worker.inbox.accept_async(planned)
    if not new:
        await tell(m.already_decided("this plan", "planned"))
        return
    worker.kick()
    await tell(m.plan_started(sentence))
    text, card = blocks.offer(
        sentence=sentence,
        command=command.model_dump(mode="json"),
        request_id="",
        decided=m.planned_by(inbound.user, sentence),
    )
    await worker.slack.update(inbound.channel, inbound.ts, text, blocks=card)
