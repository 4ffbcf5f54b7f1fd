"""The target and argument grammar of each action: what may follow the verb.

    deployment  := [the] KIND NAME | KIND/NAME | [the] NAME KIND | NAME
    pod         := [the] (pod|pods) NAME | pod/NAME
    alert       := [the] [alert|alerts] ALERTNAME [alert]
    namespace   := in namespace NS | in the NS namespace | in NS namespace | in NS
                 | -n NS | --namespace NS | --namespace=NS | namespace NS
    count       := to N [replicas|pods|instances] | --replicas N | --replicas=N
    revision    := to (revision|rev|version) [#] N | to the (previous|prior|last) [revision]
    duration    := for [the next] (1h30m | N unit | an hour | half an hour)

KIND is `deployment` or `deploy` (a typo of up to two letters in the long word is tolerated:
"deplyment"); NAME is a Kubernetes name exactly as written (never corrected, never
lower-cased) that is not a pronoun, a bulk word or any other listed word; N is digits or a
number word ("three"); ALERTNAME is an alert's name as Prometheus writes them (CamelCase, or
with `_`/`:`), or any identifier in inline code. A name that does not fit is no target, and a
command without its target, or a `scale` without an absolute count, is no command.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from triage.agent.intent.lexicon import (
    ALERT_WORDS,
    DEPLOYMENT_WORDS,
    NOT_NAMES,
    NUMBER_WORDS,
    POD_WORDS,
    UNIT_SECONDS,
)
from triage.agent.intent.markup import Kind, Token

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
_ALERT = re.compile(r"^[A-Za-z_][A-Za-z0-9_:]*$")
_COMPACT_DURATION = re.compile(r"^(?:\d{1,4}[smhd])+$")
_DURATION_PART = re.compile(r"(\d{1,4})([smhd])")
_NOT_NAMESPACES = frozenset(
    [
        "advance",
        "time",
        "general",
        "progress",
        "place",
        "case",
        "front",
        "order",
        "parallel",
        "particular",
        "short",
        "total",
        "fact",
        "addition",
        "detail",
        "public",
        "private",
        "future",
        "past",
        "meantime",
        "meanwhile",
        "morning",
        "evening",
        "night",
        "afternoon",
        "minutes",
        "hours",
        "seconds",
        "production",
    ]
)
MAX_COUNT = 1_000_000
_FUZZY_KINDS = {"deployment": "deployment", "replicas": "replicas", "namespace": "namespace"}


def _distance(a: str, b: str) -> int:
    """Damerau-Levenshtein (optimal string alignment) distance."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def filler(word: str, meant: str) -> bool:
    """`word` is the filler `meant` ("deployment", "replicas", "namespace"), or a typo of it:
    the same first two letters and at most two edits. Verbs, names and numbers are never
    read this way: only these three fillers carry no meaning of their own."""
    word = word.lower()
    if word == meant or (meant == "replicas" and word == "replica"):
        return True
    if meant == "deployment" and word in DEPLOYMENT_WORDS:
        return True
    return len(word) >= len(meant) - 2 and word[:2] == meant[:2] and _distance(word, meant) <= 2


def _word(tokens: Sequence[Token], i: int) -> Token | None:
    return tokens[i] if i < len(tokens) and tokens[i].kind is Kind.WORD else None


def is_low(tokens: Sequence[Token], i: int, *words: str) -> bool:
    t = _word(tokens, i)
    return t is not None and t.low in words


def _kind_word(token: Token | None) -> bool:
    return token is not None and not token.code and filler(token.text, "deployment")


def name(token: Token | None, *, subdomain: bool = False) -> str | None:
    """A Kubernetes name as written, or None when the word cannot be one here."""
    if token is None or token.kind is not Kind.WORD:
        return None
    text = token.text
    pattern = _DNS_SUBDOMAIN if subdomain else _DNS_LABEL
    limit = 253 if subdomain else 63
    if not pattern.match(text) or len(text) > limit or text.isdigit():
        return None
    if not token.code and (text in NOT_NAMES or _kind_word(token)):
        return None
    return text


def deployment(tokens: Sequence[Token], i: int) -> tuple[str, int] | None:
    """`deployment x`, `deploy/x`, `the x deployment`, `x deployment`, `x`."""
    the = is_low(tokens, i, "the")
    j = i + 1 if the else i
    t = _word(tokens, j)
    if t is None:
        return None
    if "/" in t.text and not t.code:
        kind, _, rest = t.text.partition("/")
        found = name(Token(Kind.WORD, rest)) if filler(kind, "deployment") else None
        return (found, j + 1) if found and not the else None
    if _kind_word(t):
        found = name(_word(tokens, j + 1))
        return (found, j + 2) if found else None
    found = name(t)
    if found is None:
        return None
    if _kind_word(_word(tokens, j + 1)):
        return found, j + 2
    return (found, j + 1) if not the else None


def pod(tokens: Sequence[Token], i: int, *, bare: bool = False) -> tuple[str, int] | None:
    """`pod x`, `the pod x`, `pod/x`; `bare`: also a plain name (after "pods a and …")."""
    j = i + 1 if is_low(tokens, i, "the") else i
    t = _word(tokens, j)
    if t is None:
        return None
    if "/" in t.text and not t.code:
        kind, _, rest = t.text.partition("/")
        found = name(Token(Kind.WORD, rest), subdomain=True) if kind.lower() in POD_WORDS else None
        return (found, j + 1) if found else None
    if t.low in POD_WORDS:
        found = name(_word(tokens, j + 1), subdomain=True)
        return (found, j + 2) if found else None
    if bare and j == i:
        found = name(t, subdomain=True)
        return (found, j + 1) if found else None
    return None


def alert(tokens: Sequence[Token], i: int) -> tuple[str, int] | None:
    """`HighErrorRate`, `the HighErrorRate alert`, `alert TargetDown`, `` `my_alert` ``."""
    j = i + 1 if is_low(tokens, i, "the") else i
    if is_low(tokens, j, *ALERT_WORDS):
        j += 1
    t = _word(tokens, j)
    if t is None or not _ALERT.match(t.text) or (t.low in NOT_NAMES and not t.code):
        return None
    looks_like_alert = t.code or any(c.isupper() for c in t.text) or "_" in t.text
    if not looks_like_alert:
        return None
    j += 1
    if is_low(tokens, j, *ALERT_WORDS):
        j += 1
    return t.text, j


def number(token: Token | None) -> int | None:
    if token is None:
        return None
    if token.text.isdigit() and len(token.text) <= 7:
        value = int(token.text)
        return value if value <= MAX_COUNT else None
    return NUMBER_WORDS.get(token.low)


def namespace(tokens: Sequence[Token], i: int) -> tuple[str, int] | None:
    """One of the namespace forms at `i`."""
    t = _word(tokens, i)
    if t is None:
        return None
    if t.text in ("-n", "--namespace"):
        ns = _namespace_name(_word(tokens, i + 1))
        return (ns, i + 2) if ns else None
    if t.text.startswith("--namespace="):
        ns = _namespace_name(Token(Kind.WORD, t.text.partition("=")[2]))
        return (ns, i + 1) if ns else None
    if filler(t.text, "namespace") or t.low == "ns":
        ns = _namespace_name(_word(tokens, i + 1))
        return (ns, i + 2) if ns else None
    if t.low not in ("in", "on"):
        return None
    nxt = _word(tokens, i + 1)
    if nxt is not None and (filler(nxt.text, "namespace") or nxt.low == "ns"):
        ns = _namespace_name(_word(tokens, i + 2))
        return (ns, i + 3) if ns else None
    if nxt is not None and nxt.low == "the":
        ns = _namespace_name(_word(tokens, i + 2))
        after = _word(tokens, i + 3)
        ok = ns and after is not None and filler(after.text, "namespace")
        return (ns, i + 4) if ok and ns else None
    if t.low == "on":
        return None
    after = _word(tokens, i + 2)
    if after is not None and filler(after.text, "namespace"):
        ns = _namespace_name(nxt)
        return (ns, i + 3) if ns else None
    ns = _namespace_name(nxt, bare=True)
    return (ns, i + 2) if ns else None


def _namespace_name(token: Token | None, *, bare: bool = False) -> str | None:
    """A namespace's name; after a bare "in", not a word that reads as English ("in time")."""
    found = name(token)
    if found is None or (
        bare and token is not None and not token.code and found in _NOT_NAMESPACES
    ):
        return None
    return found


def count(tokens: Sequence[Token], i: int) -> tuple[int, int] | None:
    """`to 5`, `to three replicas`, `--replicas 5`, `--replicas=5`."""
    t = _word(tokens, i)
    if t is None:
        return None
    if t.text.startswith("--replicas="):
        n = number(Token(Kind.WORD, t.text.partition("=")[2]))
        return (n, i + 1) if n is not None else None
    if t.text == "--replicas":
        n = number(_word(tokens, i + 1))
        return (n, i + 2) if n is not None else None
    if t.low != "to":
        return None
    n = number(_word(tokens, i + 1))
    if n is None:
        return None
    unit = _word(tokens, i + 2)
    if unit is not None and (filler(unit.text, "replicas") or unit.low in ("pods", "instances")):
        return n, i + 3
    return n, i + 2


def revision(tokens: Sequence[Token], i: int) -> tuple[int | None, int] | None:
    """`to revision 3`, `to rev #3`, `to the previous revision` (None: the previous one)."""
    if not is_low(tokens, i, "to"):
        return None
    j = i + 1
    if is_low(tokens, j, "revision", "rev", "version"):
        j += 1
        if j < len(tokens) and tokens[j].is_punct("#"):
            j += 1
        n = number(_word(tokens, j))
        return (n, j + 1) if n is not None and n >= 1 else None
    if is_low(tokens, j, "the") and is_low(tokens, j + 1, "previous", "prior", "last"):
        j += 2
        if is_low(tokens, j, "revision", "version", "release", "rollout", "one"):
            j += 1
        return None, j
    return None


def duration(tokens: Sequence[Token], i: int) -> tuple[int, int] | None:
    """`for 2h`, `for 1h30m`, `for 45 minutes`, `for an hour`, `for the next 30m`."""
    if not is_low(tokens, i, "for"):
        return None
    j = i + 1
    if is_low(tokens, j, "the") and is_low(tokens, j + 1, "next"):
        j += 2
    t = _word(tokens, j)
    if t is None:
        return None
    if _COMPACT_DURATION.match(t.low):
        seconds = sum(int(n) * UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(t.low))
        return (seconds, j + 1) if seconds > 0 else None
    if t.low == "half" and is_low(tokens, j + 1, "an") and is_low(tokens, j + 2, "hour"):
        return 1800, j + 3
    n = 1 if t.low in ("a", "an") else number(t)
    unit = _word(tokens, j + 1)
    if n is None or n <= 0 or unit is None or unit.low not in UNIT_SECONDS:
        return None
    if t.low in ("a", "an") and unit.low not in ("hour", "day", "minute", "second"):
        return None
    return n * UNIT_SECONDS[unit.low], j + 2
