"""The Slack Web API as the bot uses it: every call redacted, timed out and rate-limit aware.

Why a gateway: three rules hold for every call and are easiest to keep in one place.
1. Nothing reaches Slack without passing the Redactor (text, blocks, file contents).
2. Every call has a timeout, and a 429 is retried after its `Retry-After`, a bounded number of
   times (slack_sdk's retry handler, capped so one huge Retry-After cannot stall a worker).
3. Nothing that posts is retried blindly: a post whose answer was lost may have landed, so the
   caller (triage/slack/worker.py) looks for it in the thread by its metadata before posting
   again. That is why connection errors and 5xx are *not* retried here.
"""

from __future__ import annotations

from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.async_handler import AsyncRetryHandler
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState
from slack_sdk.web.async_client import AsyncWebClient

from tools.redact import Redactor
from triage.core.settings import SlackSettings

METADATA_EVENT = "triage_message"
#: Every Web API method the bot calls, and the bot token scopes it needs (Slack's method
#: documentation). The Slack app manifest (helm/slack-app-manifest.yaml) asks for exactly the
#: union of these and `EVENT_SCOPES`, and a test holds the three together with this module.
METHOD_SCOPES: dict[str, tuple[str, ...]] = {
    "auth.test": (),
    "chat.postMessage": ("chat:write",),
    "chat.update": ("chat:write",),
    "chat.postEphemeral": ("chat:write",),
    "chat.getPermalink": (),
    "reactions.add": ("reactions:write",),
    # crash recovery and the review buttons read the thread; alert tickets read the channel
    "conversations.replies": ("channels:history", "groups:history"),
    "conversations.history": ("channels:history", "groups:history"),
    "files.getUploadURLExternal": ("files:write",),
    "files.completeUploadExternal": ("files:write",),
    "views.open": (),
}
#: The events the bolt app listens to (triage/slack/app.py), and the scopes they need.
EVENT_SCOPES: dict[str, tuple[str, ...]] = {"app_mention": ("app_mentions:read",)}

_READS = frozenset({"conversations.replies", "conversations.history", "chat.getPermalink"})


class SlackError(Exception):
    """A Web API call failed (after its bounded retries); `error` is Slack's error string."""

    def __init__(self, method: str, error: str) -> None:
        super().__init__(f"{method}: {error}")
        self.method = method
        self.error = error


class BoundedRateLimitHandler(AsyncRateLimitErrorRetryHandler):
    """slack_sdk's 429 handler (waits Retry-After), refusing waits longer than `max_wait_s`."""

    def __init__(self, max_retry_count: int, max_wait_s: float) -> None:
        super().__init__(max_retry_count=max_retry_count)
        self.max_wait_s = max_wait_s

    async def _can_retry_async(
        self,
        *,
        state: RetryState,
        request: HttpRequest,
        response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        if response is None or response.status_code != 429:
            return False
        for name, values in response.headers.items():
            if name.lower() == "retry-after" and values:
                try:
                    return float(values[0]) <= self.max_wait_s
                except ValueError:
                    return True
        return True


def rate_limit_handlers(settings: SlackSettings) -> list[AsyncRetryHandler]:
    """The only retries a Web API call gets: 429s, after their Retry-After, bounded."""
    if not settings.max_rate_limit_retries:
        return []
    return [BoundedRateLimitHandler(settings.max_rate_limit_retries, settings.max_retry_after_s)]


def web_client(settings: SlackSettings) -> AsyncWebClient:
    """The bot's client: its token, the configured base URL, a timeout, bounded 429 retries."""
    token = settings.bot_token.get_secret_value() if settings.bot_token else None
    return AsyncWebClient(
        token=token,
        base_url=settings.api_base_url,
        timeout=max(1, round(settings.api_timeout_s)),
        retry_handlers=rate_limit_handlers(settings),
    )


def open_session(settings: SlackSettings) -> aiohttp.ClientSession:
    """One HTTP session for every Web API call of the process: connections are kept alive and
    reused (slack_sdk otherwise opens, and closes, a session per call). Opened inside the
    running event loop, as aiohttp requires; `triage serve` closes it when it stops."""
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=settings.api_timeout_s),
        connector=aiohttp.TCPConnector(limit=32, keepalive_timeout=30),
    )


def _metadata(marker: str) -> dict[str, Any]:
    return {"event_type": METADATA_EVENT, "event_payload": {"marker": marker}}


class Slack:
    """The calls the bot makes, each redacted on the way out."""

    def __init__(self, client: AsyncWebClient, redactor: Redactor) -> None:
        self.client = client
        self.redactor = redactor

    def _text(self, text: str) -> str:
        return self.redactor.text(text)

    def _blocks(self, blocks: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
        return None if blocks is None else list(self.redactor.data(blocks))

    async def _call(self, method: str, **kwargs: Any) -> dict[str, Any]:
        try:
            if method in _READS:  # read methods take query parameters, not JSON bodies
                params = {
                    k: str(v).lower() if isinstance(v, bool) else v for k, v in kwargs.items()
                }
                response = await self.client.api_call(method, http_verb="GET", params=params)
            else:
                response = await self.client.api_call(method, json=kwargs)
        except SlackApiError as e:
            raise SlackError(method, str(e.response.get("error") or "error")) from e
        except (SlackClientError, OSError, TimeoutError) as e:
            raise SlackError(method, type(e).__name__) from e
        return dict(response.data) if isinstance(response.data, dict) else {}

    async def post(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        marker: str | None = None,
    ) -> str:
        """Post a message; returns its ts. `marker` lets `find` recognise it after a crash."""
        args: dict[str, Any] = {"channel": channel, "text": self._text(text)}
        if thread_ts:
            args["thread_ts"] = thread_ts
        if blocks is not None:
            args["blocks"] = self._blocks(blocks)
        if marker:
            args["metadata"] = _metadata(marker)
        data = await self._call("chat.postMessage", **args)
        return str(data["ts"])

    async def update(
        self,
        channel: str,
        ts: str,
        text: str,
        *,
        blocks: list[dict[str, Any]] | None = None,
    ) -> None:
        args: dict[str, Any] = {"channel": channel, "ts": ts, "text": self._text(text)}
        args["blocks"] = self._blocks(blocks) if blocks is not None else []
        await self._call("chat.update", **args)

    async def react(self, channel: str, ts: str, name: str) -> None:
        try:
            await self._call("reactions.add", channel=channel, timestamp=ts, name=name)
        except SlackError as e:
            if e.error != "already_reacted":
                raise

    async def find(self, channel: str, thread_ts: str, marker: str) -> str | None:
        """The ts of our message carrying `marker` in the thread, if it was posted."""
        data = await self._call(
            "conversations.replies",
            channel=channel,
            ts=thread_ts,
            include_all_metadata=True,
            limit=200,
        )
        return _marked(data, marker)

    async def find_top(self, channel: str, marker: str, oldest: str) -> str | None:
        """The ts of our top-level message carrying `marker`, posted at or after `oldest`."""
        data = await self._call(
            "conversations.history",
            channel=channel,
            oldest=oldest,
            include_all_metadata=True,
            limit=200,
        )
        return _marked(data, marker)

    async def message(self, channel: str, thread_ts: str, ts: str) -> dict[str, Any] | None:
        """One message of a thread (its text and blocks), or None when it is not there."""
        data = await self._call("conversations.replies", channel=channel, ts=thread_ts, limit=200)
        for message in data.get("messages") or []:
            if str(message.get("ts")) == ts:
                return dict(message)
        return None

    async def permalink(self, channel: str, ts: str) -> str | None:
        try:
            data = await self._call("chat.getPermalink", channel=channel, message_ts=ts)
        except SlackError:
            return None  # a link is a convenience; the ticket works without it
        link = data.get("permalink")
        return str(link) if link else None

    async def ephemeral(self, channel: str, user: str, text: str, thread_ts: str = "") -> None:
        args: dict[str, Any] = {"channel": channel, "user": user, "text": self._text(text)}
        if thread_ts:
            args["thread_ts"] = thread_ts
        await self._call("chat.postEphemeral", **args)

    async def upload(
        self, channel: str, thread_ts: str, *, content: str, filename: str, title: str, comment: str
    ) -> None:
        try:
            await self.client.files_upload_v2(
                channel=channel,
                thread_ts=thread_ts,
                content=self._text(content),
                filename=filename,
                title=self._text(title),
                initial_comment=self._text(comment) if comment else None,
            )
        except SlackApiError as e:
            raise SlackError("files.upload", str(e.response.get("error") or "error")) from e
        except (SlackClientError, OSError, TimeoutError) as e:
            raise SlackError("files.upload", type(e).__name__) from e


def _marked(data: dict[str, Any], marker: str) -> str | None:
    """The ts of the listed message whose metadata carries `marker` (our own posts do)."""
    for message in data.get("messages") or []:
        payload = (message.get("metadata") or {}).get("event_payload") or {}
        if payload.get("marker") == marker:
            return str(message["ts"])
    return None
