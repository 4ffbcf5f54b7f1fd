"""Secrets never leave a tool: every excerpt and every string in `data` passes through here.

Known formats are matched (bearer and JWT tokens, cloud access keys, PEM blocks, passwords in
URLs, Slack tokens, `NAME=value` where NAME looks secret); operators add their own patterns
through policies. In structured data a string under a secret-looking key (`{"password": …}`,
`{"name": "DB_PASSWORD", "value": …}`) is masked whole, whatever its format. Redaction keeps
the shape ("DATABASE_URL=postgres://app:[REDACTED]@db") so an engineer can still see *which*
setting is wrong without seeing its secret part.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MASK = "[REDACTED]"
MIN_LITERAL = 6  # shorter literal secrets would mask ordinary words

_SENSITIVE_NAME = (
    r"[A-Z0-9_.-]*(?:PASSWORD|PASSWD|PASSPHRASE|_PWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|"
    r"PRIVATE_?KEY|ACCOUNT_?KEY|SHARED_?ACCESS_?KEY|CREDENTIALS?|AUTH_?KEY|SESSION_?KEY|"
    r"SIGNING_?KEY|ENCRYPTION_?KEY)[A-Z0-9_.-]*"
)
# A mapping key is secret-looking when the keyword appears anywhere in it ("vault.io/token").
_SENSITIVE_KEY = re.compile(
    r"(?i)(PASSWORD|PASSWD|PASSPHRASE|_PWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|"
    r"ACCOUNT_?KEY|CREDENTIALS?|AUTH_?KEY|SESSION_?KEY|SIGNING_?KEY|ENCRYPTION_?KEY)"
)

_BUILTIN: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(
            r"-----BEGIN [A-Z ]*PRIVATE KEY[A-Z ]*-----.*?"
            r"(-----END [A-Z ]*PRIVATE KEY[A-Z ]*-----|$)",
            re.S,
        ),
        MASK,
    ),
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), MASK),
    (re.compile(r"(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{12,}"), r"\1 " + MASK),
    (re.compile(r"\b(AKIA|ASIA)[A-Z0-9]{16}\b"), MASK),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), MASK),  # Google API key
    (re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}"), MASK),  # Slack bot/user/refresh tokens
    (re.compile(r"\bxapp-[A-Za-z0-9-]{10,}"), MASK),  # Slack app-level token
    (re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+"), MASK),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}"), MASK),
    (re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}"), MASK),
    (re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), MASK),  # GitLab
    (re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), MASK),
    (re.compile(r"\b[sr]k_(live|test)_[A-Za-z0-9]{16,}"), MASK),  # Stripe
    (re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), MASK),  # OpenAI-style keys
    # scheme://user:password@host (user may be empty: redis://:pw@host) -> keep user and host
    (re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*:)[^\s@/]+(@)"), r"\1" + MASK + r"\2"),
    # {"name": "DB_PASSWORD", "value": "..."}: an env entry as JSON text
    (
        re.compile(
            rf"(?i)(\"name\"\s*:\s*\"{_SENSITIVE_NAME}\"\s*,\s*\"value\"\s*:\s*\")[^\"]*(\")"
        ),
        r"\1" + MASK + r"\2",
    ),
    # NAME=value / NAME: value / "NAME": "value" (also JSON-in-JSON, \"NAME\": \"value\")
    # where NAME says it is secret
    (
        re.compile(
            rf"(?i)\b({_SENSITIVE_NAME}\\?[\"']?\s*[=:]\s*)"
            r"(\\\"[^\"\\]*\\\"|\"[^\"]*\"|'[^']*'|[^\s,;&\"'{}\[\]\\]+)"
        ),
        r"\1" + MASK,
    ),
]


class Redactor:
    """Applies the built-in patterns plus an operator's extra regular expressions."""

    def __init__(self, extra_patterns: Iterable[str] = (), literals: Iterable[str] = ()) -> None:
        self._extra = tuple(extra_patterns)
        self._rules = list(_BUILTIN) + [(re.compile(p), MASK) for p in self._extra]
        self._literals = tuple(sorted({x for x in literals if len(x) >= MIN_LITERAL}, key=len))[
            ::-1
        ]

    def text(self, value: str) -> str:
        for literal in self._literals:
            value = value.replace(literal, MASK)
        for pattern, repl in self._rules:
            value = pattern.sub(repl, value)
        return value

    def secrets_in(self, value: str) -> list[str]:
        """The secret parts the patterns would mask in `value` (not the kept context)."""
        found: list[str] = []
        for pattern, repl in self._rules:
            for m in pattern.finditer(value):
                before, _, after = m.expand(repl).partition(MASK)
                whole = m.group(0)
                secret = whole[len(before) : len(whole) - len(after)]
                if secret and secret != MASK:
                    found.append(secret)
            value = pattern.sub(repl, value)
        return found

    def with_literals(self, literals: Iterable[str]) -> Redactor:
        """A redactor that also masks these exact strings wherever they appear, e.g. a secret
        first seen in a recognised format (`DB_PASSWORD=x`) and later echoed bare (`x`)."""
        return Redactor(self._extra, (*self._literals, *literals))

    def data(self, value: Any) -> Any:
        """Redact every string inside nested dicts and lists."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return self._mapping(value)
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value

    def _mapping(self, value: dict[Any, Any]) -> dict[Any, Any]:
        """Walk a mapping; a string under a secret-looking key ({"password": ...}) or the
        value of a secret-looking env entry ({"name": "DB_PASSWORD", "value": ...}) is masked
        whole, whatever its format."""
        out: dict[Any, Any] = {}
        named_secret = isinstance(value.get("name"), str) and bool(
            _SENSITIVE_KEY.search(value["name"])
        )
        for k, v in value.items():
            secret_key = isinstance(k, str) and bool(_SENSITIVE_KEY.search(k))
            if isinstance(v, str) and v and (secret_key or (named_secret and k == "value")):
                out[k] = MASK
            else:
                out[k] = self.data(v)
        return out


DEFAULT = Redactor()
