"""Incident bundles: the evidence of a live investigation, recorded so it can be replayed.

`RecordingTools` wraps the live read registry and keeps every call with its (already
redacted) result; `ReplayTools` answers the same calls from a bundle, so the same graph and
planner run offline — that is how `triage demo` works with no cluster, Slack or model. A call
the bundle does not hold is answered as an error, never invented.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tools.read.registry import ReadTools, canonical_args
from tools.results import ErrorKind, ToolResult, ToolStatus

BUNDLE_VERSION = 1


class RecordedCall(BaseModel):
    tool: str
    args: dict[str, Any]
    result: ToolResult


class Bundle(BaseModel):
    version: int = BUNDLE_VERSION
    name: str
    question: str
    namespace: str | None
    now: float = Field(description="The investigation's reference time, unix seconds.")
    recorded_at: str
    source: str = Field(description="Where it was recorded (apiserver URL, Prometheus URL).")
    calls: list[RecordedCall]

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_dump_json() + "\n")

    @classmethod
    def read(cls, path: Path) -> Bundle:
        return cls.model_validate(json.loads(path.read_text()))


class RecordingTools:
    """Pass-through to live tools that remembers every call."""

    def __init__(self, inner: ReadTools) -> None:
        self.inner = inner
        self.calls: list[RecordedCall] = []

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        result = self.inner.call(name, args)
        self.calls.append(RecordedCall(tool=name, args=args, result=result))
        return result

    def bundle(
        self, *, name: str, question: str, namespace: str | None, now: float, source: str
    ) -> Bundle:
        return Bundle(
            name=name,
            question=question,
            namespace=namespace,
            now=now,
            recorded_at=datetime.now(UTC).isoformat(timespec="seconds"),
            source=source,
            calls=list(self.calls),
        )


class ReplayTools:
    """Answers read calls from a bundle."""

    def __init__(self, bundle: Bundle) -> None:
        self.bundle = bundle
        self._answers = {f"{c.tool} {canonical_args(c.args)}": c.result for c in bundle.calls}
        self.misses: list[str] = []

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        key = f"{name} {canonical_args(args)}"
        found = self._answers.get(key)
        if found is not None:
            return found
        self.misses.append(key)
        return ToolResult(
            tool=name,
            args=args,
            status=ToolStatus.ERROR,
            excerpt="not in the recorded bundle",
            error_kind=ErrorKind.BACKEND,
        )


def demo_dir() -> Path:
    return Path(__file__).resolve().parents[1] / "demo"


def demo_names() -> list[str]:
    return sorted(p.stem for p in demo_dir().glob("*.json"))
