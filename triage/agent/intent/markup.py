"""Slack text → the user's own words, as lines of tokens; everything else is set aside.

A command must be in the user's own words. Slack's markup says which words are not: a block
quote (`&gt; …`), a code block, inline code that holds more than one identifier, text in
quotation marks, a struck-through retraction (`~…~`), a link's label. Pasted machine text is
recognised by its shape: an alert (Alertmanager's `[FIRING:1]`, PagerDuty, Opsgenie, Grafana,
Sentry, Datadog) opens a block that lasts until the next blank line, and single lines that read
like logs, events, `kubectl` tables or `key=value` labels are dropped. What is set aside becomes
one `QUOTED` token, so it still separates what stands around it.

Mentions are kept as tokens: the bot's own (`BOT`) is a vocative and changes nothing; anyone
else's (`PERSON`, also `<!here>` and group mentions) names another addressee.

The reading also says whether the user's words are wholly in English (`foreign`): a letter
outside ASCII, a script other than Latin, or a common word of another language (lexicon.py)
means they are not, and then nothing in the message is a command.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass, field
from enum import StrEnum

from triage.agent.intent.lexicon import FOREIGN


class Kind(StrEnum):
    WORD = "word"
    PUNCT = "punct"
    BOT = "bot"  # the bot's own mention
    PERSON = "person"  # another person's (or a group's) mention
    QUOTED = "quoted"  # not the user's own words (quote, code, link label, paste)
    LINK = "link"
    CHANNEL = "channel"


@dataclass(frozen=True)
class Token:
    kind: Kind
    text: str
    code: bool = False  # an identifier the user wrapped in inline code

    @property
    def low(self) -> str:
        return self.text.lower()

    def is_word(self, *words: str) -> bool:
        return self.kind is Kind.WORD and self.low in words

    def is_punct(self, *marks: str) -> bool:
        return self.kind is Kind.PUNCT and self.text in marks


@dataclass
class Reading:
    """The user's own words, line by line, and what the markup said about the rest."""

    lines: list[list[Token]] = field(default_factory=list)
    foreign: bool = False


_CODE_BLOCK = re.compile(r"```.*?(```|$)", re.S)
_CONTROL = re.compile(r"<([@#!])?([^<>|\s]*)(\|[^<>]*)?>")
_INLINE_CODE = re.compile(r"`([^`\n]*)`")
_IDENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/-]*$")
_STRIKE = re.compile(r"(?<![\w~])~[^~\n]+~(?![\w~])")
_DOUBLE_QUOTED = re.compile(r"\"[^\"\n]*\"|«[^»\n]*»")
_SINGLE_QUOTED = re.compile(r"(?<![\w'])'[^'\n]*?'(?![\w'])")
_EMOJI = re.compile(r"(?<![\w:]):[a-z0-9_+'-]+:(?![\w:])")
_ITALIC = re.compile(r"(?<!\w)_([^_\n]+)_(?!\w)")
_BULLET = re.compile(r"^\s*(?:[•◦▪*+-]|\d{1,2}[.)])\s+")
_TOKEN = re.compile(
    r"(?P<flag>(?<![\w-])--?[A-Za-z][A-Za-z0-9-]*(?:=[A-Za-z0-9._/:-]+)?)"
    r"|(?P<word>[^\W_](?:[\w'./:#-]*[^\W_])?)"
    r"|(?P<placeholder>\x00(?P<slot>\d+)\x00)"
    r"|(?P<punct>\.\.\.|[^\w\s])"
)
# Pasted machine text: a header opens a block until the next blank line; a line pattern drops
# one line. Matched on the line with emoji and markup removed, lower-cased.
_PASTE_HEADER = re.compile(
    r"^(\[(firing|resolved)(:\d+)?\]|\[#\d+\]|\[(triggered|recovered|warn|warning|alert|"
    r"p[1-5])\]|(triggered|resolved|acknowledged|firing)\b\s*(:|$)|opsgenie alert\b|"
    r"sentry\s*:|kube-events:|(labels|annotations)\s*:?\s*$)"
)
_PASTE_LINE = re.compile(
    r"(^[\w.-]+\s*=\s*\S|(?<![-\w])[a-z_][\w.]*=\S+.*(?<![-\w])[a-z_][\w.]*=\S+|"
    r"^\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}|"
    r"^(normal|warning)\s+[a-z]+\s|^name\s+ready\s|^\$\s|"
    r"^(value|source|tags|urgency|runbook|runbook_url|description|summary|severity)\s*[:=])"
)
_ALLOWED_NON_ASCII = set("—–…•◦▪«»“”‘’")  # noqa: RUF001


def _normalise(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')  # noqa: RUF001


class _Slots:
    """Tokens cut out of a line before it is split into words (mentions, quotes, code)."""

    def __init__(self) -> None:
        self.tokens: list[Token] = []

    def put(self, token: Token) -> str:
        self.tokens.append(token)
        return f" \x00{len(self.tokens) - 1}\x00 "


def _control(m: re.Match[str], slots: _Slots, bot: str | None) -> str:
    sigil, body = m.group(1), m.group(2)
    if sigil == "@":
        user = body
        return slots.put(Token(Kind.BOT if bot and user == bot else Kind.PERSON, user))
    if sigil == "#":
        return slots.put(Token(Kind.CHANNEL, body))
    if sigil == "!":
        return slots.put(Token(Kind.PERSON, body))  # <!here>, <!subteam^…>: other addressees
    return slots.put(Token(Kind.LINK, body))  # the label is someone else's words


def _code(m: re.Match[str], slots: _Slots) -> str:
    inner = m.group(1).strip()
    if _IDENT.match(inner):
        return slots.put(Token(Kind.WORD, inner, code=True))
    return slots.put(Token(Kind.QUOTED, inner))


_ABBREVIATIONS = re.compile(r"\b(e)\.(g)\.|\b(i)\.(e)\.", re.I)


def _tokens(line: str, bot: str | None) -> list[Token]:
    slots = _Slots()
    line = _ABBREVIATIONS.sub(lambda m: "".join(g for g in m.groups() if g), line)  # "e.g." -> eg
    line = _CONTROL.sub(lambda m: _control(m, slots, bot), line)
    line = _INLINE_CODE.sub(lambda m: _code(m, slots), line)
    line = _STRIKE.sub(lambda m: slots.put(Token(Kind.QUOTED, m.group(0))), line)
    line = html.unescape(line)
    line = _DOUBLE_QUOTED.sub(lambda m: slots.put(Token(Kind.QUOTED, m.group(0))), line)
    line = _SINGLE_QUOTED.sub(lambda m: slots.put(Token(Kind.QUOTED, m.group(0))), line)
    line = _EMOJI.sub(" ", line)
    line = _ITALIC.sub(r"\1", line).replace("*", " ")
    out: list[Token] = []
    for m in _TOKEN.finditer(line):
        if m.group("slot") is not None:
            out.append(slots.tokens[int(m.group("slot"))])
        elif m.group("flag") is not None or m.group("word") is not None:
            out.append(Token(Kind.WORD, m.group(0)))
        else:
            out.append(Token(Kind.PUNCT, m.group(0)))
    return out


def _plain(line: str) -> str:
    """The line as its shape is judged: no emoji, no emphasis, no bullet, lower-case."""
    line = _EMOJI.sub(" ", html.unescape(line)).replace("*", "")
    return _BULLET.sub("", line).strip().lower()


def _foreign(tokens: list[Token]) -> bool:
    for t in tokens:
        if t.kind not in (Kind.WORD, Kind.PUNCT) or t.code:
            continue
        if t.kind is Kind.WORD and t.low in FOREIGN:
            return True
        for ch in t.text:
            if ord(ch) < 128 or ch in _ALLOWED_NON_ASCII:
                continue
            if unicodedata.category(ch)[0] in "LMNP":
                return True
    return False


def read(text: str, *, bot_user_id: str | None = None) -> Reading:
    """The user's own words in `text` (as Slack sends it), line by line."""
    text = _CODE_BLOCK.sub("`\x01`", _normalise(text))
    reading = Reading()
    pasting = False
    for raw in text.split("\n"):
        plain = _plain(raw)
        if not plain:
            pasting = False
            continue
        if raw.lstrip().startswith(("&gt;", ">")):
            reading.lines.append([Token(Kind.QUOTED, raw)])
            continue
        if pasting or _PASTE_HEADER.match(plain):
            pasting = True
            reading.lines.append([Token(Kind.QUOTED, raw)])
            continue
        if _PASTE_LINE.search(plain):
            reading.lines.append([Token(Kind.QUOTED, raw)])
            continue
        tokens = _tokens(_BULLET.sub("", raw), bot_user_id)
        reading.foreign = reading.foreign or _foreign(tokens)
        reading.lines.append(tokens)
    return reading
