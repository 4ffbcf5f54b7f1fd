"""Work on what the inbox holds: one request at a time per task, a few tasks per replica.

A request is claimed with a lease (renewed while the run goes on), worked through in steps that
are recorded as they happen (triage/slack/ticket.py), and finished; any failure gives it back to
the inbox to be picked up again, by this replica or another, up to `max_attempts`. The
investigation is the product's one checked run (`App.checked_run`, triage/app.py) in a thread,
with the Slack thread id as its run id, so a run cut short by a crash resumes from its last
checkpoint instead of starting over. A run that pauses for a person's approval parks the
request (`Inbox.wait`); the click that decides wakes it (`Inbox.resume`) and the same run goes
on from its checkpoint: the change is applied inside the run, before the judge, never after.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from triage.app import App, Request, Requester
from triage.core.models import Deliverable, Goal, RequestKind
from triage.core.settings import POST_MARGIN_S, SlackSettings
from triage.reports import render
from triage.slack import blocks, metrics
from triage.slack import messages as m
from triage.slack.client import Slack, SlackError
from triage.slack.escape import escape, unescape
from triage.slack.inbox import Claimed, Inbound, Inbox, InboxError, Kind, State
from triage.slack.ticket import Messages, Progress, Ticket
from triage.verification.loop import CheckedRun, Outcome

log = logging.getLogger("triage.slack")

_MENTION = re.compile(r"<@([A-Z0-9]+)(\|[^>]*)?>")
POLL_S = 1.0
MAX_BACKOFF_S = 30.0


def words_of(text: str, bot_user_id: str | None = None) -> str:
    """The user's words without the bot's own mention (others' mentions stay: a command
    addressed to someone else is not one to the bot). Lines stay lines: quotes, code blocks
    and pasted alerts are recognised by them. Without the bot's id, a message that mentions
    one user only is taken to mention the bot. Slack's escaping (&lt; &gt; &amp;) is undone
    once, so the words are stored as typed."""
    ids = {m.group(1) for m in _MENTION.finditer(text)}
    bot = bot_user_id or (next(iter(ids)) if len(ids) == 1 else None)
    if bot is not None:
        text = re.sub(rf"<@{re.escape(bot)}(\|[^>]*)?>", " ", text)
    lines = [" ".join(line.split()) for line in text.strip().splitlines()]
    return unescape("\n".join(lines).strip())


def thread_id(inbound: Inbound) -> str:
    """`slack:{team}:{channel}:{thread_ts}`; a later mention in the same thread gets its own."""
    if inbound.ts == inbound.thread_ts:
        return inbound.thread_id
    return f"{inbound.thread_id}:{inbound.ts}"


def requester(inbound: Inbound) -> Requester:
    """Who asked: a person, unless Slack says a bot or an app wrote the message."""
    data = inbound.data
    bot = bool(data.get("bot_id") or data.get("app_id")) or data.get("subtype") == "bot_message"
    who = inbound.user or str(data.get("bot_id") or data.get("app_id") or "")
    return Requester(
        who=f"slack:{inbound.team}/{who}" if who else "",
        where=f"slack:{inbound.team}/{inbound.channel}/{inbound.thread_ts}",
        person=not bot and bool(inbound.user),
    )


class Paused(Exception):
    """The run waits for a person's approval until `until` (unix seconds)."""

    def __init__(self, until: float) -> None:
        super().__init__(f"waiting for approval until {until:.0f}")
        self.until = until


def _progress_text(event: dict[str, Any], state: dict[str, Any]) -> str | None:
    if "done" in event:
        state["checks"] = state.get("checks", 0) + 1
        return m.progress_checks(state["checks"], str(event["done"]))
    if "attempt" in event and "feedback" in event:
        return m.progress_attempt(int(event["attempt"]))
    if "submitted" in event:
        return m.PROGRESS_SUBMITTED
    if event.get("node") == "judge":
        return m.PROGRESS_JUDGING
    return None


class Worker:
    """Claims requests from the inbox and answers them in Slack."""

    def __init__(
        self,
        inbox: Inbox,
        slack: Slack,
        product: App,
        settings: SlackSettings,
        *,
        decide: Callable[[Worker, Claimed, Messages], Awaitable[None]] | None = None,
        ask: Callable[[Worker, Claimed, Messages, CheckedRun, blocks.TicketView], Awaitable[None]]
        | None = None,
        review: Callable[[Worker, Claimed, Messages], Awaitable[None]] | None = None,
        offer: Callable[[Worker, Claimed, Messages, CheckedRun], Awaitable[None]] | None = None,
        alert: Callable[[Worker, Claimed, Messages], Awaitable[None]] | None = None,
    ) -> None:
        self.inbox = inbox
        self.slack = slack
        self.product = product
        self.settings = settings
        self.decide = decide
        self.ask = ask
        self.review = review
        self.offer = offer
        self.alert = alert
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._wake = asyncio.Event()
        self._slots = asyncio.Semaphore(settings.workers)
        # The investigations' own threads, one per slot: a full pool never delays an ack
        # (the inbox has its own writer) and the loop's default executor stays free.
        self._runs = ThreadPoolExecutor(max_workers=settings.workers, thread_name_prefix="run")
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = False

    # -- the loop --------------------------------------------------------------------------------

    def kick(self) -> None:
        """Something new is in the inbox: look now rather than at the next poll."""
        self._wake.set()

    async def run(self) -> None:
        while not self._stopping:
            await self._slots.acquire()
            self._wake.clear()  # a kick from now on is seen by the wait below
            try:
                claimed = await self.inbox.call(
                    self.inbox.claim, self.holder, lease_s=self.settings.lease_s
                )
            except Exception:
                self._slots.release()
                log.exception("inbox unreadable; retrying in %.0f s", POLL_S)
                await asyncio.sleep(POLL_S)
                continue
            if claimed is None:
                self._slots.release()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), POLL_S)
                continue
            task = asyncio.create_task(self._process(claimed))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        self._stopping = True
        self._wake.set()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._runs.shutdown(wait=False, cancel_futures=True)

    async def _process(self, claimed: Claimed) -> None:
        try:
            await self.process(claimed)
        finally:
            self._slots.release()

    async def process(self, claimed: Claimed) -> None:
        """Answer one request; on failure give it back to the inbox (bounded)."""
        messages = Messages(
            self.slack,
            claimed,
            lambda hold_s: self._save(claimed, hold_s),
            self.settings.post_window_s,
        )
        if claimed.attempts > self.settings.max_attempts:
            # Picked up more often than allowed: earlier attempts died without a word (the
            # process was killed mid-request, e.g. by its liveness probe). A crash counts
            # like any failure: tell the user, stop.
            await self._give_up(claimed, messages, m.CRASHED)
            return
        try:
            if claimed.inbound.kind is Kind.ALERT:
                if self.alert is not None:
                    await self.alert(self, claimed, messages)
            elif claimed.inbound.kind is Kind.ACTION:
                reviewing = claimed.inbound.data.get("action_id") in blocks.REVIEW_ACTIONS
                handler = self.review if reviewing else self.decide
                if handler is not None:
                    await handler(self, claimed, messages)
            else:
                await self.mention(claimed, messages)
        except Paused as p:
            await self.inbox.call(self.inbox.wait, claimed, until=p.until)
            return
        except asyncio.CancelledError:
            # Shutting down: hand the request straight back so a restart or another replica
            # carries on now instead of after the lease (its steps say where it was). Not a
            # failure: the attempt is given back (a rolling restart of every replica must not
            # use up a request's attempts).
            with contextlib.suppress(Exception):
                self.inbox.release(claimed, retry_in_s=self._in_flight_s(messages), counted=False)
            raise
        except (SlackError, InboxError) as e:  # the outside world: one line, then retried
            log.warning(
                "request %s failed (attempt %d): %s", claimed.inbound.id, claimed.attempts, e
            )
            metrics.REQUESTS_FAILED.labels(kind=claimed.inbound.kind.value).inc()
            await self._failed(claimed, messages, e)
            return
        except Exception as e:  # a worker must survive anything one request does; recorded
            log.exception("request %s failed (attempt %d)", claimed.inbound.id, claimed.attempts)
            metrics.REQUESTS_FAILED.labels(kind=claimed.inbound.kind.value).inc()
            await self._failed(claimed, messages, e)
            return
        await self.inbox.call(self.inbox.finish, claimed, State.DONE)
        metrics.REQUESTS_DONE.labels(kind=claimed.inbound.kind.value).inc()

    async def _save(self, claimed: Claimed, hold_s: float | None = None) -> None:
        lease_s = None if hold_s is None else max(hold_s, self.settings.lease_s)
        ok = await self.inbox.call(self.inbox.save, claimed, lease_s=lease_s)
        if not ok:
            raise LostLease(claimed.inbound.id)

    def _in_flight_s(self, messages: Messages) -> float:
        """Seconds a post of this request that failed or was cut short may still take to land
        in Slack: no more retries follow it, so at most one try's timeout (and the margin)."""
        if not messages.hold_until:
            return 0.0
        left = min(messages.hold_until, time.time() + self.settings.api_timeout_s + POST_MARGIN_S)
        return max(0.0, left - time.time())

    async def _failed(self, claimed: Claimed, messages: Messages, error: Exception) -> None:
        if isinstance(error, LostLease):
            return  # someone else holds it now
        if claimed.attempts < self.settings.max_attempts:
            backoff = max(min(2.0**claimed.attempts, MAX_BACKOFF_S), self._in_flight_s(messages))
            await self.inbox.call(self.inbox.release, claimed, retry_in_s=backoff)
            self.kick()
            return
        reason = str(error) if isinstance(error, SlackError) else type(error).__name__
        await self._give_up(claimed, messages, escape(reason))

    async def _give_up(self, claimed: Claimed, messages: Messages, reason: str) -> None:
        metrics.REQUESTS_GAVE_UP.labels(kind=claimed.inbound.kind.value).inc()
        try:
            attempts = min(claimed.attempts, self.settings.max_attempts)
            await messages.once("gave_up", m.gave_up(attempts, reason))
        except SlackError as e:  # Slack itself is the problem; the row records the failure
            log.warning("could not tell the user that %s failed: %s", claimed.inbound.id, e)
        await self.inbox.call(self.inbox.finish, claimed, State.FAILED)

    # -- a mention -------------------------------------------------------------------------------

    def request_for(self, inbound: Inbound, words: str) -> Request:
        product = self.product
        return Request(
            words=words,
            default_namespace=self.settings.channel_namespaces.get(inbound.channel)
            or product.context_namespace,
            run_id=thread_id(inbound),
            now=float(inbound.ts),
            requester=requester(inbound),
        )

    async def mention(self, claimed: Claimed, messages: Messages) -> None:
        inbound = claimed.inbound
        steps = claimed.steps
        if not steps.get("reacted"):
            try:
                await self.slack.react(inbound.channel, inbound.ts, "eyes")
            except SlackError as e:  # 👀 is a courtesy; the reply below is what matters
                log.warning("could not react to %s: %s", inbound.id, e)
            steps["reacted"] = True
            await messages.save()
        words = words_of(inbound.text, str(inbound.data.get("bot_user_id") or "") or None)
        if not words:
            await messages.once("reply", m.EMPTY_MENTION)
            return
        request = self.request_for(inbound, words)
        # once per request, off the event loop (it redacts and parses the whole message)
        loop = asyncio.get_running_loop()
        goal = await loop.run_in_executor(self._runs, self.product.intake, request)
        if goal.kind is RequestKind.CASUAL:
            await messages.once("reply", m.CASUAL_REPLY)
            return
        if goal.scope.namespace is None:
            await messages.once("reply", m.NEED_NAMESPACE)
            return
        progress = Progress(messages, self.settings.progress_interval_s)
        await progress.open(m.ON_IT)
        link = steps.get("link")
        if link is None:
            link = await self.slack.permalink(inbound.channel, inbound.ts) or ""
            steps["link"] = link
            await messages.save()
        view = blocks.TicketView(
            title=escape(_title(words)), owner=inbound.user, request_link=link or None
        )
        ticket = Ticket(messages, view)
        await ticket.open()

        checked = await self._run(claimed, request, goal, progress)

        if checked.outcome is Outcome.AWAITING_APPROVAL:
            view.status = m.STATUS_AWAITING_APPROVAL
            if self.ask is not None:
                await self.ask(self, claimed, messages, checked, view)
            await ticket.show()
            await progress.set(m.PROGRESS_AWAITING_APPROVAL, force=True)
            raise Paused(max(float(a.get("expires_at") or 0) for a in checked.awaiting) + 1)
        # The verdict is in: only now does the ticket change.
        self._fill(view, checked)
        await ticket.show()
        steps["ticket_final"] = checked.outcome.value
        await messages.save()
        await self._answer(messages, checked)
        if self.offer is not None:
            await self.offer(self, claimed, messages, checked)
        await progress.set(m.PROGRESS_DONE, force=True)

    async def _run(
        self, claimed: Claimed, request: Request, goal: Goal, progress: Progress
    ) -> CheckedRun:
        latest: dict[str, Any] = {"text": None}
        counts: dict[str, Any] = {}

        def on_progress(event: dict[str, Any]) -> None:  # called from the run's thread
            text = _progress_text(event, counts)
            if text:
                latest["text"] = text

        loop = asyncio.get_running_loop()
        run = loop.run_in_executor(
            self._runs, lambda: self.product.checked_run(request, goal, on_progress=on_progress)
        )
        renew_every = max(self.settings.lease_s / 3, 0.2)
        tick = min(renew_every, max(self.settings.progress_interval_s, 0.2))
        last_renew = time.monotonic()
        while not run.done():
            await asyncio.wait({run}, timeout=tick)
            if time.monotonic() - last_renew >= renew_every:
                held = await self.inbox.call(
                    self.inbox.renew, claimed, lease_s=self.settings.lease_s
                )
                last_renew = time.monotonic()
                if not held:
                    log.warning("lost the lease on %s; another replica took it", claimed.inbound.id)
            if latest["text"] and not run.done():
                try:
                    await progress.set(str(latest["text"]))
                except SlackError as e:  # progress is a courtesy: the answer still comes
                    log.warning("progress update failed: %s", e)
        return run.result()

    def _fill(self, view: blocks.TicketView, checked: CheckedRun) -> None:
        draft = checked.best.draft
        view.status = m.STATUS_ANSWERED
        view.outcome = checked.outcome.value
        if draft is not None:  # the draft is built from tool output: escaped like it
            view.title = escape(draft.title)
            view.root_cause = escape(draft.cause_line())
        if checked.report is not None:
            view.report = (checked.report.namespace, checked.report.name)
            base = self.product.settings.review.external_url
            if base:
                ns, name = view.report
                view.report_url = f"{base.rstrip('/')}/reports/{ns}/{name}"
        elif Deliverable.RCA in checked.best.goal.deliverables:
            view.no_report = m.REPORT_NOT_WRITTEN
        if checked.verdict is not None:
            view.missing = [escape(x) for x in checked.verdict.missing]
            view.nonexistent = [escape(x) for x in checked.verdict.nonexistent]
        for done in checked.best.mutations:
            view.changes.append(
                escape(
                    m.change_result(
                        str(done.get("action") or "change"),
                        str(done.get("target") or ""),
                        str(done.get("excerpt") or ""),
                    )
                )
            )

    async def _answer(self, messages: Messages, checked: CheckedRun) -> None:
        if messages.steps.get("answered"):
            return
        draft = checked.best.draft
        text = render.verification_markdown(checked.summary())
        if draft is not None:
            text = render.markdown(draft, checked.best.evidence) + "\n" + text
        text = escape(text)  # quotes logs, events and the user's words: never Slack markup
        prefix = None if checked.done else m.ANSWER_UNVERIFIED_PREFIX
        answer = blocks.answer(
            text,
            prefix=prefix,
            max_chars=self.settings.max_message_chars,
            max_messages=self.settings.max_messages,
        )
        for i, (fallback, blks) in enumerate(answer.messages):
            await messages.once(f"answer{i}", fallback, blks or None)
        if answer.file is not None and not messages.steps.get("answer_file"):
            inbound = messages.claimed.inbound
            await self.slack.upload(
                inbound.channel,
                inbound.thread_ts,
                content=unescape(answer.file),  # a file is shown as it is, no markup
                filename="rca.md",
                title=m.RCA_FILE_TITLE,
                comment="",
            )
            messages.steps["answer_file"] = True
        messages.steps["answered"] = True
        await messages.save()


class LostLease(Exception):
    """Another replica took the request over (our lease ran out): stop, say nothing more."""


def _title(words: str) -> str:
    first = next((line for line in words.splitlines() if line.strip()), "")
    return first if len(first) <= 140 else first[:139] + "…"
