"""What every gate shares: the three lists it adds to, and the judge's read registry with a
per-judgement cache (each read is made once, unless a gate asks to read it again)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tools.read.registry import ReadTools, canonical_args
from tools.results import ToolResult, ToolStatus

Json = dict[str, Any]


@dataclass
class Findings:
    met: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    nonexistent: list[str] = field(default_factory=list)
    failed_gates: list[str] = field(default_factory=list)  # which gates added to `missing`
    # what the request is about, as the cluster resolved it (named_things_exist): the names
    # that exist, and the request's other words that are the exact name of a listed object
    asked: list[str] = field(default_factory=list)


class Reads:
    """The judge's read registry with a per-judgement cache: each read is made once."""

    def __init__(self, tools: ReadTools) -> None:
        self._tools = tools
        self._cache: dict[str, ToolResult] = {}
        self.calls = 0

    def get(self, tool: str, **args: Any) -> ToolResult:
        key = f"{tool} {canonical_args(args)}"
        if key not in self._cache:
            self.calls += 1
            self._cache[key] = self._tools.call(tool, args)
        return self._cache[key]

    def forget(self, tool: str, **args: Any) -> None:
        """Drop a cached read, so the next `get` reads the cluster again."""
        self._cache.pop(f"{tool} {canonical_args(args)}", None)

    def items(self, tool: str, **args: Any) -> list[Json] | None:
        """The listed objects (empty when none exist), or None when the read failed."""
        result = self.get(tool, **args)
        if result.status is ToolStatus.NO_DATA:
            return []
        if result.status is ToolStatus.OK and isinstance(result.data, list):
            return [x for x in result.data if isinstance(x, dict)]
        return None


def selects_any(selector: dict[str, Any], pods: list[Json]) -> bool:
    """A label selector (equality only, as the payloads carry it) selects one of `pods`."""
    return any(all((p.get("labels") or {}).get(k) == v for k, v in selector.items()) for p in pods)


def failed(result: ToolResult) -> str:
    return f"{result.tool} {result.status.value}: {result.excerpt}"
