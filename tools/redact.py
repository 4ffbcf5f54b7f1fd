"""Secrets never leave a tool: every excerpt and every string in `data` passes through here.

What is found is tools/secrets.py (known formats, secret-looking names and the values they
hold, passwords in URLs, PEM blocks across lines, high-entropy tokens, base64 that decodes to
any of these, tokens wrapped over two lines); operators add their own patterns through the
settings, run under a timeout because their regular expressions are theirs. In structured
data a string under a secret-looking key (`{"password": …}`, `{"name": "DB_PASSWORD",
"value": …}`) is masked whole, whatever its format. Redaction keeps the shape
("DATABASE_URL=postgres://app:[REDACTED]@db") so an engineer can still see *which* setting is
wrong without seeing its secret part.

Everything here is linear in the length of the text (bench/redaction.py measures it), and
`cap` bounds what a caller hands in: a cut never leaves half a token behind.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import regex

from tools import secrets
from tools.secrets import Span

MASK = "[REDACTED]"
MIN_LITERAL = 6  # shorter literal secrets would mask ordinary words
OPERATOR_PATTERN_TIMEOUT_S = 0.25  # per text: an operator's pattern that backtracks fails closed
TIMED_OUT = "[REDACTED: an operator redaction pattern timed out on this text]"
MAX_DECODE_DEPTH = 2  # base64 of a file holding base64 (a .dockerconfigjson) is two levels
SPLIT_PIECE = 4  # the shortest piece of a token wrapped over two lines that is looked at
# Redaction is a pure function of the text (for one redactor), and a list of a thousand pods
# repeats most of its strings (images, label values, reasons, keys): each distinct short
# string is redacted once per redactor. Long texts (logs, messages) are not kept.
MEMO_MAX_CHARS = 512
MEMO_ENTRIES = 65_536

# What starts a log line before its message: a CRI record, a bracketed or bare timestamp.
_LINE_PREFIX = regex.compile(
    r"(?:\S{1,40} (?:stdout|stderr) [PF] )?(?:\[[^\]\n]{0,40}\])?[ \t]*+(?:\.\.\.)?"
)
_HEAD = regex.compile(r"[A-Za-z0-9+/_\-.]++={0,2}(?=[\s\"',)}]|$)")
# The end of a line that may be the first piece of a wrapped token.
_TAIL = regex.compile(r"(?<![A-Za-z0-9+/_\-.])[A-Za-z0-9+/_\-.]{4,}+(?=\n)")  # SPLIT_PIECE
_PLAIN_TOKEN = regex.compile(r"[A-Za-z0-9+/_\-]++={0,2}")


def _merge(spans: Iterable[Span]) -> list[Span]:
    out: list[Span] = []
    for start, end in sorted(s for s in spans if s[1] > s[0]):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def _apply(text: str, spans: list[Span]) -> str:
    if not spans:
        return text
    parts: list[str] = []
    pos = 0
    for start, end in spans:
        parts.append(text[pos:start])
        parts.append(MASK)
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def cap(text: str, limit: int, what: str = "chars") -> str:
    """At most `limit` characters, saying how many were cut. The cut backs off to the last
    separator so no fragment of a long token (possibly a secret) is left at the end."""
    if len(text) <= limit:
        return text
    head = text[:limit]
    cut = max(head.rfind(c) for c in " \n\t,;&\"'")
    if cut < limit - 200:
        cut = max(cut, 0)
    head = head[:cut] if cut > 0 else ""
    return f"{head}… [{len(text) - len(head)} more {what} cut]"


class Redactor:
    """The built-in detectors plus an operator's extra regular expressions and literals."""

    def __init__(self, extra_patterns: Iterable[str] = (), literals: Iterable[str] = ()) -> None:
        self._extra = tuple(extra_patterns)
        self._patterns = [regex.compile(p) for p in self._extra]
        self._literals = tuple(sorted({x for x in literals if len(x) >= MIN_LITERAL}, key=len))[
            ::-1
        ]
        self._memo: dict[str, str] = {}

    # -- finding -------------------------------------------------------------------------------

    def spans(self, text: str, depth: int = 0) -> list[Span]:
        """Where the secrets in `text` are, merged and sorted."""
        found: list[Span] = []
        for literal in self._literals:
            pos = text.find(literal)
            while pos >= 0:
                found.append((pos, pos + len(literal)))
                pos = text.find(literal, pos + len(literal))
        for detector in (
            secrets.pem_blocks,
            secrets.known,
            secrets.assignments,
            secrets.env_entries,
            secrets.said,
            secrets.url_passwords,
        ):
            found.extend(detector(text))
        for pattern in self._patterns:
            matches = pattern.finditer(text, timeout=OPERATOR_PATTERN_TIMEOUT_S)
            found.extend(m.span() for m in matches)
        merged = _merge(found)
        found.extend(self._tokens(text, merged, depth))
        merged = _merge(found)
        if "\n" in text:
            merged = _merge([*merged, *self._wrapped(text, merged)])
        return merged

    def _tokens(self, text: str, masked: list[Span], depth: int) -> Iterator[Span]:
        """High-entropy tokens, and base64 tokens whose decoded text holds a secret."""
        i = 0
        for start, end, token in secrets.tokens(text):
            while i < len(masked) and masked[i][1] <= start:
                i += 1
            if i < len(masked) and masked[i][0] <= start and masked[i][1] >= end:
                continue  # already masked
            if depth < MAX_DECODE_DEPTH:
                decoded = secrets.decoded_text(token)
                if decoded is not None:
                    if self.spans(decoded, depth + 1):
                        yield start, end
                    continue  # base64 of ordinary text is text, not a key
            if secrets.random_looking(token) and not secrets.excused(text, start):
                yield start, end

    def _wrapped(self, text: str, masked: list[Span]) -> Iterator[Span]:
        """A token cut by a line break (wrapped at a width, a CRI partial record): the piece
        before the break and the piece after it, when together they are a secret, or when one
        is already masked and the other has the make-up of random material."""
        ends = {e for _, e in masked}
        starts = {s for s, _ in masked}
        for tail_match in _TAIL.finditer(text):
            tail_start, nl = tail_match.span()
            prefix = _LINE_PREFIX.match(text, nl + 1)
            head_from = prefix.end() if prefix else nl + 1
            head = _HEAD.match(text, head_from)
            if head is None:
                continue
            tail, piece = tail_match.group(0), head.group(0)
            pieces = ((tail_start, nl), (head_from, head.end()))
            if nl in ends:
                if _random_piece(piece):
                    yield pieces[1]
            elif head_from in starts:
                if _random_piece(tail):
                    yield pieces[0]
            elif (
                len(piece) >= SPLIT_PIECE
                and len(tail) + len(piece) >= secrets.MIN_TOKEN
                # a wrapped key's pieces are random material themselves; a word on the next
                # line ("Traceback") after a host:port is not the rest of a key
                and (_random_piece(tail) or _random_piece(piece))
            ):
                joined = tail + piece
                if secrets.is_known(joined) or (
                    _PLAIN_TOKEN.fullmatch(joined) and secrets.random_looking(joined)
                ):
                    yield from pieces

    # -- masking -------------------------------------------------------------------------------

    def text(self, value: str) -> str:
        if len(value) > MEMO_MAX_CHARS:
            return self._redacted(value)
        done = self._memo.get(value)
        if done is None:
            done = self._redacted(value)
            if done is TIMED_OUT:
                return done  # a timeout depends on the machine's load: asked again next time
            if len(self._memo) >= MEMO_ENTRIES:
                self._memo.clear()
            self._memo[value] = done
        return done

    def _redacted(self, value: str) -> str:
        try:
            return _apply(value, self.spans(value))
        except TimeoutError:
            return TIMED_OUT

    def lines(self, lines: list[str]) -> list[str]:
        """Consecutive lines of one log, redacted together (a PEM block or a key wrapped over
        two lines is only visible across them); as many lines come back as went in."""
        joined = self.text("\n".join(lines))
        out = joined.split("\n")
        return out if len(out) == len(lines) else [self.text(line) for line in lines]

    def secrets_in(self, value: str) -> list[str]:
        """The secret parts the detectors would mask in `value` (not the kept context)."""
        try:
            return [value[s:e] for s, e in self.spans(value)]
        except TimeoutError:
            return [value]

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
        name = value.get("name")
        named_secret = isinstance(name, str) and secrets.secret_name(name)
        for k, v in value.items():
            secret_key = isinstance(k, str) and secrets.secret_name(k)
            if (
                isinstance(v, str)
                and v
                and (secret_key or (named_secret and k == "value"))
                and not secrets.placeholder(v)
            ):
                out[k] = MASK
            elif isinstance(v, str):
                out[k] = self.text(v)
            elif isinstance(v, dict | list | tuple):
                out[k] = self.data(v)
            else:
                out[k] = v  # a number, a bool, None: nothing to mask
        return out


def _random_piece(piece: str) -> bool:
    """A piece of a wrapped key: 8+ base64 characters mixing cases and digits."""
    core = piece.rstrip("=")
    return (
        len(core) >= 8
        and _PLAIN_TOKEN.fullmatch(piece) is not None
        and any(c.islower() for c in core)
        and any(c.isupper() for c in core)
        and any(c.isdigit() for c in core)
    )


DEFAULT = Redactor()
