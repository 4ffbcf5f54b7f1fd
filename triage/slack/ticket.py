"""The ticket and the progress message: posted once, then only ever edited in place.

Posting is the one Slack call that cannot be repeated safely, so it is done in three durable
steps kept in the inbox row (`steps`): the intent (`<name>_posting`), the post (carrying a
metadata marker), the recorded `ts`. A worker that takes over after a crash and finds an intent
without a `ts` looks the message up in the thread by its marker before posting, so a restart
never posts a second ticket. Everything after that is `chat.update` on the recorded `ts`.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from triage.slack.blocks import TicketView
from triage.slack.client import Slack
from triage.slack.inbox import Claimed

Save = Callable[[], Awaitable[None]]


class Messages:
    """Crash-safe posts for one request: each named message exists at most once."""

    def __init__(self, slack: Slack, claimed: Claimed, save: Save) -> None:
        self.slack = slack
        self.claimed = claimed
        self.save = save

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
        self.steps[f"{name}_posting"] = True
        await self.save()
        ts = await self.slack.post(
            inbound.channel,
            text,
            thread_ts=inbound.thread_ts,
            blocks=blocks,
            marker=self.marker(name),
        )
        self.steps[f"{name}_ts"] = ts
        await self.save()
        return ts


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
