"""The plumbing every Kubernetes read shares: one request with its timeout and error mapping,
paginated lists with a hard cap that says when it capped, and the result envelope.

Reads go by API path through the client's `ApiClient` (tools/kube_call.get_raw), never
through its generated API classes, and responses are shaped by tools/read/shapes*.py: cheaper
than building client models for every object (and than building the classes at all), and the
bytes digested are the bytes the apiserver sent. Responses are asked for gzip. A list cut at
`max_items` is `truncated` in its result and says so in its excerpt: a truncated read never
supports "no fault" (the judge checks).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from tools.errors import ToolError, Unreachable
from tools.kube_call import JSON, get_raw
from tools.redact import DEFAULT, Redactor
from tools.results import ToolResult, ToolStatus, clip, digest

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

READ_ATTEMPTS = 2  # a read whose connection failed is tried once more
READ_RETRY_PAUSE_S = 0.2

Json = dict[str, Any]
T = TypeVar("T")

# The query parameters the reads use, by their Python names (the API's are camelCase).
QUERY_NAMES = {
    "label_selector": "labelSelector",
    "field_selector": "fieldSelector",
    "tail_lines": "tailLines",
    "limit_bytes": "limitBytes",
    "limit": "limit",
    "_continue": "continue",
    "container": "container",
    "previous": "previous",
}


def decode(raw: bytes) -> Any:
    """An apiserver answer, parsed in C; what orjson refuses (a lone surrogate escaped in a
    string, which Go never writes) goes to json, which takes it, so no answer is lost."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return json.loads(raw)


@dataclass
class RequestStats:
    """Requests sent and bytes received (as decoded, and as they crossed the wire, compressed),
    for benchmarks and the `/metrics` page."""

    requests: int = 0
    bytes: int = 0
    wire_bytes: int = 0


@dataclass
class Listed:
    items: list[Json]
    digest: str
    truncated: bool


class KubeBase:
    """The reader's clients and settings, and the request/list/result plumbing."""

    def __init__(
        self,
        api_client: ApiClient,
        *,
        timeout_s: float = 10.0,
        page_size: int = 250,
        max_items: int = 2000,
        log_tail_lines: int = 200,
        log_limit_bytes: int = 256_000,
        redactor: Redactor = DEFAULT,
    ) -> None:
        self.api_client = api_client  # the identity's client: reads by path, its report writes
        self.timeout_s = timeout_s
        self.page_size = page_size
        self.max_items = max_items
        self.log_tail_lines = log_tail_lines
        self.log_limit_bytes = log_limit_bytes
        self.redactor = redactor
        self.stats = RequestStats()
        self._truncated = False

    def _raw(self, path: str, *, accept: str = JSON, **params: Any) -> bytes:
        """One GET of `path` (a template: the `{name}`s among `params` fill it, the others
        are the query); raises a ToolError subclass on any failure. A connection that failed
        before an answer (refused, reset) is tried once more after a short pause — reads only,
        explicitly here, since the client itself never retries; a timeout is not retried (the
        configured timeout is the most a read waits)."""
        path_params = {k: str(v) for k, v in params.items() if "{" + k + "}" in path}
        query = {QUERY_NAMES[k]: v for k, v in params.items() if k not in path_params}
        for attempt in range(READ_ATTEMPTS):
            self.stats.requests += 1
            try:
                fetched = get_raw(
                    self.api_client,
                    path,
                    path_params=path_params,
                    query=query,
                    timeout_s=self.timeout_s,
                    accept=accept,
                )
                break
            except Unreachable:
                if attempt + 1 >= READ_ATTEMPTS:
                    raise
                time.sleep(READ_RETRY_PAUSE_S)
        self.stats.bytes += len(fetched.body)
        self.stats.wire_bytes += fetched.wire_bytes
        return fetched.body

    def _json(self, path: str, **params: Any) -> Json:
        loaded: Json = decode(self._raw(path, **params))
        return loaded

    def _list(self, path: str, *, accept: str = JSON, **params: Any) -> Listed:
        """Paginated list with a hard cap; the items, a digest of all pages, and whether the
        cap cut it (`truncated`)."""
        items: list[Json] = []
        pages: list[str] = []
        cont: str | None = None
        while True:
            page = dict(params, limit=self.page_size)
            if cont:
                page["_continue"] = cont
            raw = self._raw(path, accept=accept, **page)
            data: Json = decode(raw)
            items.extend(data.get("items") or [])
            pages.append(digest(raw))  # the bytes as they came: not serialised again
            cont = (data.get("metadata") or {}).get("continue")
            if not cont or len(items) >= self.max_items:
                break
        truncated = len(items) > self.max_items or bool(cont)
        return Listed(items[: self.max_items], digest("".join(pages)), truncated)

    def _result(
        self, tool: str, args: Json, produce: Callable[[], tuple[Any, str, str]]
    ) -> ToolResult:
        """Run `produce` -> (data, excerpt, raw_digest) and wrap it in the envelope."""
        start = time.perf_counter()
        self._truncated = False
        try:
            data, excerpt, raw_digest = produce()
        except ToolError as e:
            return ToolResult(
                tool=tool,
                args=args,
                status=e.status,
                excerpt=clip(self.redactor.text(str(e))),
                error_kind=e.kind,
                duration_ms=(time.perf_counter() - start) * 1000,
            )
        empty = data is None or (isinstance(data, list | dict) and not data)
        if self._truncated:
            excerpt = f"(capped at {self.max_items} items: the list is incomplete) {excerpt}"
        return ToolResult(
            tool=tool,
            args=args,
            status=ToolStatus.NO_DATA if empty else ToolStatus.OK,
            excerpt=clip(self.redactor.text(excerpt or "nothing found")),
            data=self.redactor.data(data),
            raw_digest=raw_digest,
            truncated=self._truncated,
            duration_ms=(time.perf_counter() - start) * 1000,
        )

    def _kinds(
        self,
        tool: str,
        args: Json,
        path: str,
        shape: Callable[[Json], T],
        line: Callable[[T], str],
        **params: Any,
    ) -> ToolResult:
        """A list tool: list `path`, shape each item, excerpt one `line` per item."""

        def produce() -> tuple[Any, str, str]:
            listed = self._list(path, **params)
            self._truncated = self._truncated or listed.truncated
            shaped = [shape(i) for i in listed.items]
            return shaped, excerpt_of(shaped, line), listed.digest

        return self._result(tool, args, produce)


def excerpt_of(items: Iterable[T], line: Callable[[T], str], limit: int = 8) -> str:
    items = list(items)
    shown = "; ".join(line(i) for i in items[:limit])
    more = f" (+{len(items) - limit} more)" if len(items) > limit else ""
    return f"{len(items)} item(s): {shown}{more}" if items else ""
