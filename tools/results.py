"""The one envelope every tool call returns.

A tool that ran and came back with an error, a refusal or nothing at all did not succeed:
`status` says which, and nothing downstream (planner, judge, Slack) is allowed to read a
result's `data` as a fact unless `status` is `ok`. An empty answer is `no_data`, never
"healthy".
"""

from __future__ import annotations

import hashlib
import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

EXCERPT_CHARS = 400


class ToolStatus(StrEnum):
    OK = "ok"
    NO_DATA = "no_data"
    ERROR = "error"
    DENIED = "denied"
    APPROVAL_REQUIRED = "approval_required"


class ErrorKind(StrEnum):
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    DENIED = "denied"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    INVALID = "invalid"
    THROTTLED = "throttled"
    BACKEND = "backend"
    REFUSED = "refused"


class ToolResult(BaseModel):
    """What one tool call produced. `data` is structured and already redacted."""

    model_config = ConfigDict(frozen=True)

    tool: str
    args: dict[str, Any]
    status: ToolStatus
    excerpt: str = Field(description="Short, redacted, human-readable summary of the output.")
    data: Any = None
    raw_digest: str = Field(default="", description="sha256 of the raw output, for provenance.")
    error_kind: ErrorKind | None = None
    truncated: bool = Field(
        default=False, description="A list cut at its item cap: incomplete, never 'all'."
    )
    duration_ms: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.OK


def digest(raw: bytes | str | Any) -> str:
    """sha256 of raw output (bytes as they came, or canonical JSON of structured data)."""
    if isinstance(raw, str):
        raw = raw.encode()
    elif not isinstance(raw, bytes):
        raw = json.dumps(raw, sort_keys=True, default=str).encode()
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def clip(text: str, limit: int = EXCERPT_CHARS) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"
