"""A person's verdict on an RCA, from the ticket: "Confirm cause" and "Dispute" (with a note).

The buttons sit on the final ticket (triage/slack/blocks.py, `review_actions`), next to "Open
report" when the review page's URL is configured. A Confirm click goes into the inbox like any
click; a Dispute click opens a modal for an optional note (Slack's trigger id lasts three
seconds, so the modal is opened by the listener itself, right after the ack) and the modal's
submission goes into the inbox. The worker then records the review on the RCAReport's status
through the same path as the page and the CLI (`triage.reports.review.record`: reviewer
`slack:<team>/<user>`, time, verdict, note, the outcome it reviewed) and shows it on the ticket.
Steps are kept in the inbox row, so a retried request records once and edits the ticket once.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.errors import SlackApiError, SlackClientError

from triage.core.errors import ReportError
from triage.reports.review import Review, Verdict, Via, record
from triage.slack import blocks
from triage.slack import messages as m
from triage.slack.inbox import Claimed, Inbound, Kind
from triage.slack.ticket import Messages

if TYPE_CHECKING:
    from triage.slack.worker import Worker

log = logging.getLogger("triage.slack")
Accept = Callable[[Inbound], Awaitable[None]]


def _json(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(str(text or "{}"))
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def listen(app: AsyncApp, on_click: Callable[..., Awaitable[None]], accept: Accept) -> None:
    """Register the review listeners on the bolt app (triage/slack/app.py)."""

    async def on_dispute(
        body: dict[str, Any], action: dict[str, Any], ack: Any, client: Any
    ) -> None:
        await ack()
        container = body.get("container") or {}
        message = body.get("message") or {}
        ts = str(container.get("message_ts") or message.get("ts") or "")
        channel = (body.get("channel") or {}).get("id") or container.get("channel_id") or ""
        private = json.dumps(
            {
                **_json(action.get("value")),
                "channel": str(channel),
                "ts": ts,
                "thread_ts": str(message.get("thread_ts") or ts),
            },
            separators=(",", ":"),
        )
        try:
            await client.views_open(
                trigger_id=body.get("trigger_id"), view=blocks.dispute_modal(private)
            )
        except (SlackApiError, SlackClientError, OSError, TimeoutError) as e:
            log.warning("could not open the dispute form: %s", e)

    async def on_dispute_note(body: dict[str, Any], view: dict[str, Any], ack: Any) -> None:
        about = _json(view.get("private_metadata"))
        values = (view.get("state") or {}).get("values") or {}
        note = str(((values.get("note") or {}).get("note") or {}).get("value") or "")
        user = str((body.get("user") or {}).get("id") or "")
        ts = str(about.get("ts") or "")
        inbound = Inbound(
            id=f"view:{view.get('id') or ts}:{user}",
            kind=Kind.ACTION,
            team=str((body.get("team") or {}).get("id") or ""),
            channel=str(about.get("channel") or ""),
            thread_ts=str(about.get("thread_ts") or ts),
            ts=ts,
            user=user,
            data={
                "action_id": blocks.ACTION_REVIEW_DISPUTE,
                "value": blocks.review_value(str(about.get("ns")), str(about.get("name"))),
                "note": note[:1000],
            },
        )
        await accept(inbound)  # stored before Slack closes the modal
        await ack()

    async def on_open_report(ack: Any) -> None:
        await ack()  # a link button: Slack opens the URL; the click only needs its ack

    app.action(blocks.ACTION_REVIEW_CONFIRM)(on_click)
    app.action(blocks.ACTION_REVIEW_DISPUTE)(on_dispute)
    app.view(blocks.VIEW_DISPUTE)(on_dispute_note)
    app.action(blocks.ACTION_OPEN_REPORT)(on_open_report)


async def decide(worker: Worker, claimed: Claimed, messages: Messages) -> None:
    """A Confirm cause click or a submitted Dispute: record it, show it on the ticket."""
    inbound = claimed.inbound
    slack = worker.slack
    steps = messages.steps

    async def tell(text: str) -> None:
        await slack.ephemeral(inbound.channel, inbound.user, text, inbound.thread_ts)

    store = worker.product.store
    if store is None:
        await tell(m.REVIEW_NO_STORE)
        return
    reviewers = worker.product.settings.review.slack_reviewers
    if reviewers and inbound.user not in reviewers:
        await tell(m.NOT_A_REVIEWER)
        return
    about = _json(inbound.data.get("value"))
    ns, name = str(about.get("ns") or ""), str(about.get("name") or "")
    if not ns or not name:
        await tell(m.review_failed("this report", "the button named no report"))
        return
    confirmed = inbound.data.get("action_id") == blocks.ACTION_REVIEW_CONFIRM
    verdict = Verdict.CONFIRMED if confirmed else Verdict.DISPUTED
    note = str(inbound.data.get("note") or "")
    if not steps.get("review_recorded"):
        review = Review.new(
            verdict, f"slack:{inbound.team}/{inbound.user}", Via.SLACK, note, slack.redactor
        )
        try:
            await asyncio.to_thread(record, store, ns, name, review)
        except ReportError as e:
            await tell(m.review_failed(name, str(e)))
            return
        steps["review_recorded"] = True
        await messages.save()
    if not steps.get("review_shown") and inbound.ts:
        ticket = await slack.message(inbound.channel, inbound.thread_ts, inbound.ts)
        if ticket is not None:
            line = m.review_line(verdict.value, inbound.user, slack.redactor.text(note))
            shown = blocks.with_review_line(list(ticket.get("blocks") or []), line)
            await slack.update(
                inbound.channel, inbound.ts, str(ticket.get("text") or ""), blocks=shown
            )
        steps["review_shown"] = True
        await messages.save()
    await tell(m.review_recorded(verdict.value, ns, name))
