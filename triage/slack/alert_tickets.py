"""The worker's side of Alertmanager notifications: a ticket per alert group, in its channel.

Three kinds of inbox request come from the receiver (triage/web/alerts.py), each with its
`data["event"]`:

- `firing`: a new episode of a group. The ticket is posted as a new message in the mapped
  channel (there is no one's message to answer), then the investigation runs exactly like a
  mention's (the product's one checked run, its steps recorded, crash-safe), its progress and
  answer in the ticket's thread. The run is asked as `alertmanager:<receiver>`, not a person:
  it commands and offers nothing (intake is told the words are an alert's).
- `resolved`: the group's episode ended. The ticket of its investigation is edited in place
  to say so (from the view the investigation saved), and one line is added to its thread.
- `storm`: a summary of the groups a storm did not investigate, posted once when its window
  has closed (the request waits for it in the inbox, `Paused`).

A top-level post is crash-safe the same way thread posts are (triage/slack/ticket.py): intent,
post with a marker, recorded ts; a worker that finds an intent without a ts looks the marker
up in the channel's history first.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import asdict, replace
from datetime import UTC, datetime
from typing import Any

from triage.app import Request, Requester
from triage.core.models import Alert
from triage.slack import blocks
from triage.slack import messages as m
from triage.slack.alert_groups import AlertGroups, Group, GroupState
from triage.slack.escape import escape
from triage.slack.inbox import Claimed
from triage.slack.ticket import Messages, Progress, Ticket
from triage.slack.worker import Paused, Worker
from triage.verification.loop import Outcome


def _clock(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M")


class AlertTickets:
    """The `alert` hook of the Worker (triage/slack/worker.py)."""

    def __init__(self, groups: AlertGroups) -> None:
        self.groups = groups

    async def __call__(self, worker: Worker, claimed: Claimed, messages: Messages) -> None:
        event = claimed.inbound.data.get("event")
        if event == "firing":
            await self.firing(worker, claimed, messages)
        elif event == "resolved":
            await self.resolved(worker, claimed, messages)
        elif event == "storm":
            await self.storm(worker, claimed, messages)

    # -- posting at the top of the channel -----------------------------------------------------

    async def _top(self, messages: Messages, name: str, text: str, blks: Any = None) -> str:
        """Post the message called `name` at the top of the channel, once."""
        steps = messages.steps
        ts = steps.get(f"{name}_ts")
        if ts:
            return str(ts)
        inbound = messages.claimed.inbound
        if steps.get(f"{name}_posting"):
            since = str(int(float(inbound.ts)) - 60)  # posted after the request arrived
            found = await messages.slack.find_top(
                inbound.channel, messages.marker(name), oldest=since
            )
            if found:
                steps[f"{name}_ts"] = found
                await messages.save()
                return found
        steps[f"{name}_posting"] = True
        await messages.save()
        ts = await messages.slack.post(
            inbound.channel, text, blocks=blks, marker=messages.marker(name)
        )
        steps[f"{name}_ts"] = ts
        await messages.save()
        return str(ts)

    # -- firing ----------------------------------------------------------------------------------

    async def _group(self, data: dict[str, Any]) -> Group | None:
        """The group as the store has it now (on the inbox's threads, off the event loop)."""
        return await self.groups.inbox.call(self.groups.get, str(data["group_id"]))

    def _alert_line(self, data: dict[str, Any], alert: Alert, group: Group | None) -> str:
        resolved = group is not None and group.state is GroupState.RESOLVED
        at = group.resolved_at if group is not None and group.resolved_at else 0.0
        return escape(
            m.alert_line(
                alert.name,
                "resolved" if resolved else "firing",
                _clock(float(data.get("received_at") or time.time())),
                alert.labels.get("severity"),
                int(data.get("alerts") or 1),
                resolved=_clock(at) if resolved else "",
            )
        )

    async def _show(self, ticket: Ticket, messages: Messages, data: dict[str, Any]) -> None:
        """Save the view (a resolved notification re-renders it), then edit the ticket."""
        view = ticket.view
        messages.steps["ticket_view"] = {
            k: v for k, v in asdict(view).items() if k not in ("alert",)
        }
        await messages.save()
        await ticket.show()
        alert = Alert.model_validate(data["alert"])
        line = self._alert_line(data, alert, await self._group(data))
        if line != view.alert:  # resolved while we worked: say so too
            view.alert = line
            await ticket.show()

    async def firing(self, worker: Worker, claimed: Claimed, messages: Messages) -> None:
        inbound = claimed.inbound
        data = inbound.data
        alert = Alert.model_validate(data["alert"])
        view = blocks.TicketView(title=escape(inbound.text.split(". ")[0][:140]), owner="")
        view.alert = self._alert_line(data, alert, await self._group(data))
        ticket_ts = await self._top(messages, "ticket", view.text(), view.blocks())
        # from here on the ticket is the thread: progress and answer go under it
        claimed.inbound = replace(inbound, thread_ts=ticket_ts)
        ticket = Ticket(messages, view)
        ticket.ts = ticket_ts
        request = Request(
            words=inbound.text,
            default_namespace=worker.settings.channel_namespaces.get(inbound.channel)
            or worker.product.context_namespace,
            run_id=str(data.get("run_id") or inbound.id),
            now=float(data.get("received_at") or time.time()),
            requester=Requester(
                who=f"alertmanager:{data.get('receiver') or 'default'}",
                where=f"slack:{inbound.team}/{inbound.channel}/{ticket_ts}",
                person=False,
            ),
            alert=alert,
        )
        goal = await asyncio.to_thread(worker.product.intake, request)
        if goal.scope.namespace is None:
            view.status = m.STATUS_ANSWERED
            await self._show(ticket, messages, data)
            await messages.once("reply", m.ALERT_NO_NAMESPACE)
            return
        progress = Progress(messages, worker.settings.progress_interval_s)
        await progress.open(m.ALERT_ON_IT)
        checked = await worker._run(claimed, request, goal, progress)
        if checked.outcome is Outcome.AWAITING_APPROVAL:  # an alert commands nothing
            raise RuntimeError("an alert's run waits for an approval it cannot have asked for")
        worker._fill(view, checked)
        messages.steps["ticket_final"] = checked.outcome.value
        await self._show(ticket, messages, data)
        await worker._answer(messages, checked)
        await progress.set(m.PROGRESS_DONE, force=True)

    # -- resolved --------------------------------------------------------------------------------

    async def resolved(self, worker: Worker, claimed: Claimed, messages: Messages) -> None:
        data = claimed.inbound.data
        row = await asyncio.to_thread(worker.inbox.get, str(data["investigation"]))
        steps = (row or {}).get("steps") or {}
        ticket_ts = steps.get("ticket_ts")
        if not ticket_ts:
            return  # not posted yet: the investigation shows the resolution when it does
        saved = dict(steps.get("ticket_view") or {})
        report = saved.get("report")
        saved["report"] = tuple(report) if report else None
        view = blocks.TicketView(**saved) if saved else blocks.TicketView(title="", owner="")
        investigation = {**data, "alerts": data.get("alerts") or 1}
        group = await self._group(data)
        view.alert = self._alert_line(investigation, Alert.model_validate(data["alert"]), group)
        inbound = claimed.inbound
        await worker.slack.update(
            inbound.channel, str(ticket_ts), view.text(), blocks=view.blocks()
        )
        claimed.inbound = replace(inbound, thread_ts=str(ticket_ts))
        at = group.resolved_at if group is not None and group.resolved_at else time.time()
        await messages.once("resolved", m.alert_resolved(escape(str(data["name"])), _clock(at)))

    # -- storm -----------------------------------------------------------------------------------

    async def storm(self, worker: Worker, claimed: Claimed, messages: Messages) -> None:
        data = claimed.inbound.data
        window_end = float(data["window_end"])
        if time.time() < window_end:
            raise Paused(window_end)  # the summary counts the whole window
        storm = await self.groups.inbox.call(
            self.groups.storm, claimed.inbound.channel, float(data["window_start"])
        )
        if storm is None or not storm.suppressed:
            return
        names = sorted(storm.names.items(), key=lambda kv: (-kv[1], kv[0]))
        text = m.storm_summary(storm.suppressed, storm.started, self.groups.window_s, names)
        await self._top(messages, "summary", escape(text))


__all__ = ["AlertTickets"]
