"""Secrets never leave a tool: every excerpt and every string in `data` passes through here.

Known formats are matched (bearer and JWT tokens, cloud access keys, PEM blocks, passwords in
URLs, Slack tokens, `NAME=value` where NAME looks secret); operators add their own patterns
through policies. Redaction keeps the shape ("DATABASE_URL=postgres://app:[REDACTED]@db") so
an engineer can still see *which* setting is wrong without seeing its secret part.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MASK = "[REDACTED]"

_BUILTIN: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)", re.S
        ),
        MASK,
    ),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), MASK),
    (re.compile(r"(?i)\b(bearer|token)\s+[A-Za-z0-9._~+/=-]{12,}"), r"\1 " + MASK),
    (re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"), MASK),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), MASK),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), MASK),
    # scheme://user:password@host -> keep user and host
    (re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)"), r"\1" + MASK + r"\2"),
    # NAME=value / NAME: value where NAME says it is secret
    (
        re.compile(
            r"(?i)\b([A-Z0-9_.-]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|"
            r"PRIVATE_?KEY|CREDENTIALS?)[A-Z0-9_.-]*\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;]+)"
        ),
        r"\1" + MASK,
    ),
]


class Redactor:
    """Applies the built-in patterns plus an operator's extra regular expressions."""

    def __init__(self, extra_patterns: Iterable[str] = ()) -> None:
        self._rules = list(_BUILTIN) + [(re.compile(p), MASK) for p in extra_patterns]

    def text(self, value: str) -> str:
        for pattern, repl in self._rules:
            value = pattern.sub(repl, value)
        return value

    def data(self, value: Any) -> Any:
        """Redact every string inside nested dicts and lists."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


DEFAULT = Redactor()
