"""The ticket and the progress message: posted once, then only ever edited in place.

Posting is the one Slack call that cannot be repeated safely, so it is done in three durable
steps kept in the inbox row (`steps`): the intent (`<name>_posting`, the time it was made), the
post (carrying a metadata marker), the recorded `ts`. A worker that takes over after a crash and
finds an intent without a `ts` looks the message up in the thread by its marker before posting,
so a restart never posts a second ticket. Everything after that is `chat.update` on the `ts`.

Looking up only works once the first worker's post can no longer be on its way, so the intent
is written together with a lease that outlives a try of the post (`SlackSettings.post_window_s`:
its timeout and a margin), renewed while the post is in flight (a Retry-After wait included): no
other replica can claim the request while the post may still land, even if this worker's event
loop stalls past its ordinary lease. The ts is written with the ordinary lease again. A worker
killed mid-post is taken over once the hold runs out; one stopped mid-post hands the request
back due only then (`hold_until`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from triage.core.settings import POST_MARGIN_S
from triage.slack.blocks import TicketView
from triage.slack.client import Slack
from triage.slack.inbox import Claimed

#: Records the steps if this worker still holds the request (else raises); with `hold_s`, the
#: lease runs at least that long from now; with 0, the ordinary lease again.
Save = Callable[[float | None], Awaitable[None]]

#: Times the intent is written again when the loop was too slow to send right after it.
INTENT_TRIES = 3


class Messages:
    """Crash-safe posts for one request: each named message exists at most once."""

    def __init__(self, slack: Slack, claimed: Claimed, save: Save, post_window_s: float) -> None:
        self.slack = slack
        self.claimed = claimed
        self._save = save
        self.post_window_s = post_window_s
        #: Wall time until which a post of ours may still land (0: none in flight).
        self.hold_until = 0.0

    async def save(self) -> None:
        """Record the steps (what was said in Slack so far); LostLease if another holds it."""
        await self._save(None)

    @property
    def steps(self) -> dict[str, Any]:
        return self.claimed.steps

    def marker(self, name: str) -> str:
        return f"{self.claimed.inbound.id}:{name}"

    async def once(self, name: str, text: str, blocks: list[dict[str, Any]] | None = None) -> str:
        """Post the message called `name` in the thread unless it already exists; its ts."""
        ts = self.steps.get(f"{name}_ts")
        if ts:
            return str(ts)
        inbound = self.claimed.inbound
        if self.steps.get(f"{name}_posting"):
            found = await self.slack.find(inbound.channel, inbound.thread_ts, self.marker(name))
            if found:
                self.steps[f"{name}_ts"] = found
                await self.save()
                return found
        await self._intend(name)
        # Failed or cancelled, the post may still land until hold_until (left set): whoever
        # hands the request back makes it due no sooner than that.
        holding = asyncio.create_task(self._hold())
        try:
            ts = await self.slack.post(
                inbound.channel,
                text,
                thread_ts=inbound.thread_ts,
                blocks=blocks,
                marker=self.marker(name),
            )
        finally:
            holding.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await holding
        self.steps[f"{name}_ts"] = ts
        await self._save(0.0)  # the ordinary lease again
        self.hold_until = 0.0
        return ts

    async def _hold(self) -> None:
        """Renew the hold while the post is in flight (slow answers, Retry-After waits)."""
        while True:
            await asyncio.sleep(self.post_window_s / 3)
            self.hold_until = time.time() + self.post_window_s
            await self._save(self.post_window_s)

    async def _intend(self, name: str) -> None:
        """Write the intent with a lease that outlives the post, then send at once: if the
        loop kept us longer than the margin between the write and here, write it again (a few
        times; then send on the hold just written — a busy loop is no reason to fail)."""
        for _ in range(INTENT_TRIES):
            started = time.time()
            self.steps[f"{name}_posting"] = started
            self.hold_until = started + self.post_window_s
            await self._save(self.post_window_s)
            if time.time() - started <= POST_MARGIN_S:
                return


class Ticket:
    """The ticket message: title, status, owner, links; the outcome only after the verdict."""

    def __init__(self, messages: Messages, view: TicketView) -> None:
        self.messages = messages
        self.view = view
        self.ts: str | None = None

    async def open(self) -> str:
        self.ts = await self.messages.once("ticket", self.view.text(), self.view.blocks())
        return self.ts

    async def show(self) -> None:
        """Edit the ticket in place to show `view` as it is now."""
        assert self.ts is not None, "open() first"
        inbound = self.messages.claimed.inbound
        await self.messages.slack.update(
            inbound.channel, self.ts, self.view.text(), blocks=self.view.blocks()
        )


class Progress:
    """One progress message in the thread, edited at most every `interval_s` (no spam)."""

    def __init__(self, messages: Messages, interval_s: float) -> None:
        self.messages = messages
        self.interval_s = interval_s
        self.ts: str | None = None
        self._last_text = ""
        self._last_at = 0.0

    async def open(self, text: str) -> str:
        self.ts = await self.messages.once("progress", text)
        self._last_text = text
        self._last_at = time.monotonic()
        return self.ts

    async def set(self, text: str, *, force: bool = False) -> None:
        if self.ts is None or text == self._last_text:
            return
        if not force and time.monotonic() - self._last_at < self.interval_s:
            return
        inbound = self.messages.claimed.inbound
        self._last_text = text
        self._last_at = time.monotonic()
        await self.messages.slack.update(inbound.channel, self.ts, text)
