"""Where the secrets are in a text: spans to mask, found in time linear in the text's length.

Why a scanner of our own rather than a detector library: `detect-secrets` (1.5.0, evaluated
against tests/corpus/secrets) looks at one line at a time (a PEM block, a key wrapped over two
log lines or a CRI partial record are out of its reach by design), its high-entropy plugin
flags `budget_left=12000` and `prompt_tokens=1532` as secrets (58 of the 69 benign entries
have a value it flags), it finds 262 of the 385 development secrets, and it takes ~1.9 s for
a 1,000,000-char line. Its entropy limits (4.5 bits for base64, 3 for hex) inform ours.

Linear time is a property of every pattern here, not of a timeout: each one starts only at
the beginning of a run of its own alphabet (a negative lookbehind on that alphabet) and eats
the run with a possessive quantifier, so no position is scanned more than a constant number
of times whatever the input (`bench/redaction.py` prints the curve to 10^6 chars). What a
pattern cannot decide (is this name secret-looking, is this value a placeholder, is this
token random) is decided in Python on the match, in time linear in the match.

Detectors, each yielding (start, end) spans of secret material (context such as `NAME=`,
`Bearer ` or a URL's user and host stays readable):
- PEM private-key blocks, across lines (masked line by line, so a log keeps its line count);
- known token formats (cloud, VCS, chat, payment, model-provider, Vault, JWT …);
- `NAME=value`, `NAME: value`, `"NAME": "value"` where NAME is secret-looking;
- a secret-looking word followed by its value (`password is …`, `Bearer …`, `-p…` flags);
- passwords in URLs (`scheme://user:password@host`);
- high-entropy tokens, and base64 that decodes to text holding any of the above;
- tokens split over two lines (a key wrapped at a fixed width, a CRI partial record).
"""

from __future__ import annotations

import base64
import binascii
import functools
import itertools
import math
import re
from collections import Counter
from collections.abc import Iterator

Span = tuple[int, int]

# -- PEM -------------------------------------------------------------------------------------

_PEM_BEGIN = re.compile(r"-----BEGIN (?:[A-Z0-9]++ ){0,4}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END = "-----END "


_PEM_BODY = re.compile(r"[ \t]*+[A-Za-z0-9+/=]++[ \t]*+")


def pem_blocks(text: str) -> Iterator[Span]:
    """The body of every private-key block, one span per line (BEGIN/END lines stay). Without
    an END (a block cut by a tail or a dropped line), the body is the run of base64 lines
    after BEGIN: the first line that is not one (a log line again) ends it, so a cut key does
    not mask the rest of the log."""
    pos = 0
    while True:
        m = _PEM_BEGIN.search(text, pos)
        if m is None:
            return
        end = text.find(_PEM_END, m.end())
        stop = len(text) if end < 0 else end
        start = m.end()
        while start < stop:
            nl = text.find("\n", start, stop)
            line_end = stop if nl < 0 else nl
            line = text[start:line_end]
            if end < 0 and start > m.end() and line and not _PEM_BODY.fullmatch(line):
                stop = start  # a cut block ends where the base64 does
                break
            if line_end > start:
                yield start, line_end
            start = line_end + 1
        pos = max(stop, m.end()) if end < 0 else end + len(_PEM_END)


# -- known formats -----------------------------------------------------------------------------

# Each pattern opens with its literal prefix, so the engine skips to candidates by a fast
# substring search; a match counts only where a token starts (no token character before it).
# A match eats its whole run, so a prefix repeated inside one token is looked at once.
_KNOWN = [
    # JWT; the lookbehind keeps a failed attempt (no dot after the run) from being repeated
    # at every `eyJ` inside the same run
    re.compile(
        r"eyJ(?<![A-Za-z0-9_-]eyJ)[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+\.[A-Za-z0-9_-]{8,}+"
    ),
    re.compile(r"A(?:KIA|SIA|GPA|IDA|ROA|NPA)[A-Z0-9]{16}(?![A-Z0-9])"),  # AWS key id
    re.compile(r"AIza[0-9A-Za-z_-]{35}"),  # Google API key
    re.compile(r"xox[abposre]-[A-Za-z0-9-]{10,}+"),  # Slack tokens
    re.compile(r"xapp-[A-Za-z0-9-]{10,}+"),
    re.compile(r"gh[pousr]_[A-Za-z0-9]{20,}+"),  # GitHub
    re.compile(r"github_pat_[A-Za-z0-9_]{20,}+"),
    re.compile(r"gl(?:pat|rt|cbt|ptt|dt|ft|imt|oas|soat)-[A-Za-z0-9_-]{20,}+"),  # GitLab
    re.compile(r"npm_[A-Za-z0-9]{30,}+"),
    re.compile(r"pypi-AgE[A-Za-z0-9_-]{20,}+"),
    re.compile(r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+"),  # Stripe
    re.compile(r"whsec_[A-Za-z0-9+/=]{20,}+"),
    re.compile(r"sk-[A-Za-z0-9_-]{16,}+"),  # OpenAI, Anthropic
    re.compile(r"hv[sbr]\.[A-Za-z0-9_-]{20,}+"),  # Vault
    re.compile(r"s\.[A-Za-z0-9]{24}(?![A-Za-z0-9_.\-])"),  # Vault before 1.10
    re.compile(r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64}"),  # SendGrid
    re.compile(r"SK[0-9a-fA-F]{32}(?![A-Za-z0-9])"),  # Twilio API key
    re.compile(r"LS0tLS1CRUdJTi[A-Za-z0-9+/=]++"),  # base64 of "-----BEGIN"
]
_SLACK_HOOK = re.compile(r"hooks\.slack\.com/services/([A-Za-z0-9/_-]++)")
# Found from the dot in their middle (no prefix): Terraform Cloud and kubeadm bootstrap tokens.
_TERRAFORM = re.compile(r"\.atlasv1\.[A-Za-z0-9_-]{60,}+")
_BOOTSTRAP = re.compile(r"\.[a-z0-9]{16}(?![a-z0-9.])")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


def _starts_token(text: str, at: int) -> bool:
    return at == 0 or text[at - 1] not in _TOKEN_CHARS


def _run_before(text: str, at: int, length: int, alphabet: str) -> bool:
    """`length` characters of `alphabet` end at `at`, and a token starts there."""
    start = at - length
    return start >= 0 and all(c in alphabet for c in text[start:at]) and _starts_token(text, start)


_ALNUM = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"


def known(text: str) -> Iterator[Span]:
    for pattern in _KNOWN:
        for m in pattern.finditer(text):
            if _starts_token(text, m.start()):
                yield m.span()
    for m in _SLACK_HOOK.finditer(text):
        yield m.span(1)
    for m in _TERRAFORM.finditer(text):
        if _run_before(text, m.start(), 14, _ALNUM):
            yield m.start() - 14, m.end()
    for m in _BOOTSTRAP.finditer(text):
        if _run_before(text, m.start(), 6, _ALNUM[26:]):
            yield m.start() - 6, m.end()


def is_known(token: str) -> bool:
    longest = max((e - s for s, e in known(token)), default=0)
    return longest >= len(token) // 2


# -- names that say "secret" ---------------------------------------------------------------------

_SEGMENT = re.compile(r"[A-Z]?[a-z]++|[A-Z]++(?![a-z])|[0-9]++")
_SECRET_SEGMENTS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pw",
        "pass",
        "passphrase",
        "secret",
        "token",
        "auth",
        "authorization",
        "credential",
        "credentials",
        "apikey",
        "sig",
        "signature",
        "accountkey",
        "accesskey",
    }
)
_SECRET_PAIRS = frozenset(
    {
        ("api", "key"),
        ("access", "key"),
        ("private", "key"),
        ("account", "key"),
        ("subscription", "key"),
        ("session", "key"),
        ("signing", "key"),
        ("encryption", "key"),
        ("master", "key"),
        ("client", "key"),
        ("shared", "key"),
        ("app", "key"),
        ("license", "key"),
    }
)
_SECRET_INSIDE = ("password", "passwd", "secret", "token", "apikey")
# A name ending in one of these holds something about a secret, never the secret itself.
_ABOUT_A_SECRET = frozenset(
    {
        "file",
        "path",
        "dir",
        "ttl",
        "days",
        "length",
        "len",
        "enabled",
        "name",
        "names",
        "ref",
        "endpoint",
        "url",
        "uri",
        "type",
        "kind",
        "count",
        "expiry",
        "expires",
        "expiration",
        "lifetime",
        "timeout",
        "rotation",
        "hash",
        "min",
        "max",
        "policy",
        "mode",
        "header",
        "format",
        "source",
        "stdin",
        "version",
        "id",
        "tokens",
        "exception",
        "error",
    }
)
MAX_NAME_CHARS = 120


def segments(name: str) -> list[str]:
    out: list[str] = []
    for part in re.split(r"[^A-Za-z0-9]+", name):
        out.extend(s.lower() for s in _SEGMENT.findall(part))
    return out


_ITEM_ON_THE_WAY = re.compile(r"\[[^\]]*\](?=\.)")


@functools.lru_cache(maxsize=16_384)
def secret_name(name: str) -> bool:
    """Does a key, variable, header or flag called `name` hold a secret? (Pure, and asked of
    the same few keys for every item of a list: cached.)"""
    if not name or len(name) > MAX_NAME_CHARS:
        return False
    # a flattened path names list items on its way (`volumes[aws-token].projected.sources`):
    # what the value is, is said by the field at its end, not by the item a user named
    segs = segments(_ITEM_ON_THE_WAY.sub("", name))
    if not segs or segs[-1] in _ABOUT_A_SECRET or "tokens" in segs:
        return False
    if any(s in _SECRET_SEGMENTS for s in segs):
        return True
    if any(pair in _SECRET_PAIRS for pair in itertools.pairwise(segs)):
        return True
    return any(word in s for s in segs for word in _SECRET_INSIDE if s != word + "s")


# -- values ------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(
    r"^(?:\$\{[^}]*\}|\$[A-Z_][A-Z0-9_]*|<[^>]*>|\*+|x{3,}|\[REDACTED\]|"
    r"true|false|yes|no|null|none|nil|changeme|redacted|hidden|masked|unset|empty|required)$",
    re.I,
)
_SYMBOLS = set("!#$%&*+=?@^~|;")


_PATH = re.compile(r"[a-z0-9_.-]++(?:/[a-z0-9_.-]++)++/?")


def placeholder(value: str) -> bool:
    """Empty, a placeholder (`${DB_PASSWORD}`, `****`, `<hidden>`) or a lower-case path
    (`secret/data/shop/db`, a Vault path): something that stands for a secret."""
    return not value or bool(_PLACEHOLDER.match(value)) or bool(_PATH.fullmatch(value))


def looks_secret(value: str, *, min_len: int = 6) -> bool:
    """A value with the make-up of a password or key, not of a word, number, path or host."""
    if len(value) < min_len or len(value) > 4096 or placeholder(value):
        return False
    if value.startswith(("/", "./", "http://", "https://")) or value.isdigit():
        return False
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    alpha = lower or upper
    symbol = any(c in _SYMBOLS for c in value)
    if re.fullmatch(r"[0-9]{1,5}(?::[0-9]{1,5})?", value):
        return False  # a port
    return (alpha and digit) or (alpha and symbol) or (lower and upper and len(value) >= 10)


# `NAME=value`, `NAME: value`, `"NAME": "value"`, `\"NAME\": \"value\"`: the name is the run
# of name characters before the separator; the value (read only after a secret-looking name,
# so a value never hides the names inside it: `dsn="host=db password=…"`) is quoted or runs
# to a separator.
_NAME = re.compile(r"(?<![A-Za-z0-9_.\-])([A-Za-z0-9_.\-]++)(?:\\?[\"'])?[ \t]*+[=:][ \t]*+")
_VALUE = re.compile(
    r"\\\"[^\"\\\n]*+\\\"|\"[^\"\n]*+\"|'[^'\n]*+'|`[^`\n]*+`|\$\{[^}\n]*+\}|"
    r"[^\s,;&\"'`{}\[\]\\<>()]++"
)
# A version tag as images carry it (`4.12.1-hotfix1`, `v2.3.0-rc.1`, `1.27-alpine`): digits
# and dots first. Right after a name and a colon with no space it is `image:tag`.
_TAG = re.compile(r"v?[0-9]++(?:\.[0-9]++)++(?:[-+_][A-Za-z0-9.]++)*+")
_SCHEMES = frozenset({"bearer", "basic", "token", "digest", "apikey", "negotiate"})


def assignments(text: str) -> Iterator[Span]:
    masked_to = 0
    for m in _NAME.finditer(text):
        if m.start() < masked_to:
            continue  # inside a value already masked (`a_token=a_token=…`)
        if not secret_name(m.group(1)) or text.endswith("://", 0, m.start()):
            continue  # `https://user:password@host` is the URL rule's
        v = _VALUE.match(text, m.end())
        if v is None:
            continue
        start, end = v.span()
        value = v.group(0)
        if value[:1] in "\"'`" or value.startswith('\\"'):
            q = 2 if value.startswith('\\"') else 1
            start, end, value = start + q, end - q, value[q:-q]
        if placeholder(value.strip()) or value.strip().lower() in _SCHEMES:
            continue
        if value.isdigit() and len(value) < 4:
            continue
        named = segments(m.group(1))
        if (
            m.group(0).endswith(":")
            and _TAG.fullmatch(value)
            and named
            and named[-1] not in _SECRET_SEGMENTS
        ):
            # `boarding-pass-api:4.12.1-hotfix1`: an image named for something else, and its
            # tag (`db-pass:4.12.1` still reads as a password)
            continue
        masked_to = end
        yield start, end


# {"name": "DB_PASSWORD", "value": "…"}: an env entry as JSON text (or JSON inside JSON).
_ENV_ENTRY = re.compile(
    r'"name\\?"[ \t]*+:[ \t]*+\\?"([A-Za-z0-9_.\-]{1,120})\\?"[ \t]*+,[ \t]*+'
    r'\\?"value\\?"[ \t]*+:[ \t]*+\\?"([^"\\\n]*+)'
)


def env_entries(text: str) -> Iterator[Span]:
    for m in _ENV_ENTRY.finditer(text):
        if secret_name(m.group(1)) and not placeholder(m.group(2)):
            yield m.span(2)


# A secret-looking word, then (after a few words and "is", "to", ":") its value.
_SAID = re.compile(
    r"(?i)(?<![A-Za-z0-9\-])(?:password|passwd|passphrase|pwd|pw|secret|token|"
    r"credential|api[ _-]?key|access[ _-]?key|bearer|basic)s?\b"
    r"(?:[ \t]++(?:[a-z0-9_-]{1,20}[ \t]++){0,4}?(?:is|was|to|=|:|of|now)\b)?[ \t]*+"
    r"(?:(['\"`])([^'\"`\n]{1,300})\1|([^\s'\"`]{1,300}))"
)
# Command-line flags: -p PASS / -pPASS / -a PASS (redis-cli) / --password X / -u user:pass.
_FLAG = re.compile(
    r"-(?<![A-Za-z0-9_\-]-)(?:p|-password|-passwd|-pass|-token|-secret|-api-key|"
    r"-auth-token|-client-secret|-access-key|-secret-key)(?:=|[ \t]++)?"
    r"(?:(['\"])([^'\"\n]{1,300})\1|([^\s'\"]{1,300}))"
)
_REDIS_A = re.compile(r"redis-cli\b[^\n]{0,200}?[ \t]-a[ \t]++([^\s'\"]{1,300})")
_USER_PASS = re.compile(
    r"-(?<![A-Za-z0-9_\-]-)(?:u|-user)[ \t]++['\"]?[^\s:'\"]{1,100}:([^\s'\"]{1,300})"
)
_TRAILING = ".,;:!?)]}"


_KUBE_NAME = re.compile(r"[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?")


def _value_span(m: re.Match[str], quoted: int, bare: int) -> Span | None:
    if m.group(quoted) is not None:
        start, end = m.span(quoted)
        value = m.group(quoted)
        if any(c.isspace() for c in value):
            return None  # a quoted phrase, not a quoted password
        if m.group(0)[:6].lower() == "secret" and _KUBE_NAME.fullmatch(value):
            return None  # `secret "db-creds"`: a Secret object's name
    else:
        start, end = m.span(bare)
        value = m.group(bare)
        stripped = value.rstrip(_TRAILING)
        end -= len(value) - len(stripped)
        value = stripped
        if "=" in value.rstrip("=") or ":" in value:
            return None
        if value.endswith("=") and value.rstrip("=").isalpha():
            return None  # `Basic realm="registry"`: a parameter, not a credential
    if not looks_secret(value):
        return None
    return start, end


_SAID_WORDS = ("pass", "pw", "secret", "token", "credential", "api", "access", "bearer", "basic")


def _said_at(text: str) -> list[int]:
    """Where `_SAID` can match: the keywords' places, found by substring search (much
    faster than letting a case-insensitive alternation try every position)."""
    lower = text.lower()
    places: set[int] = set()
    for word in _SAID_WORDS:
        pos = lower.find(word)
        while pos >= 0:
            places.add(pos)
            pos = lower.find(word, pos + 1)
    return sorted(places)


def said(text: str) -> Iterator[Span]:
    done_to = 0
    for at in _said_at(text):
        if at < done_to:
            continue
        m = _SAID.match(text, at)
        if m is None:
            continue
        done_to = m.end()
        span = _value_span(m, 2, 3)
        if span is not None:
            yield span
    for m in _FLAG.finditer(text):
        span = _value_span(m, 2, 3)
        if span is not None:
            yield span
    for rx in (_REDIS_A, _USER_PASS):
        for m in rx.finditer(text):
            if looks_secret(m.group(1), min_len=4) or len(m.group(1)) >= 8:
                yield m.span(1)


# -- URLs --------------------------------------------------------------------------------------

_URL_PASSWORD = re.compile(r"(?<=://)[^\s:/@]*+:([^\s@/]++)@")


def url_passwords(text: str) -> Iterator[Span]:
    for m in _URL_PASSWORD.finditer(text):
        yield m.span(1)


# -- high entropy ------------------------------------------------------------------------------

_TOKEN = re.compile(r"(?<![A-Za-z0-9+/_\-])[A-Za-z0-9+/_\-]{20,}+={0,2}(?![A-Za-z0-9+/=_\-])")
_HEX = re.compile(r"[0-9a-fA-F\-]++")
_NOT_SECRET_PREFIX = re.compile(
    r"(?:sha\d+-|(?:evt|cus|req|ch|pi|pm|in|sub|prod|price|acct|txn|po|re|src|seti|cs|ii|il)_)"
)
_NOT_SECRET_BEFORE = re.compile(
    r"(?i)(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-nistp\d+|sha\d+|integrity|checksum|digest|"
    r"x-amz-id-2|x-amz-request-id|etag|fingerprint|hash)[\s=:\"']*$"
)
ENTROPY_BITS = 3.6  # per character, for a 20-char token; random base62 of 20 gives ~4.0
MIN_TOKEN = 20
URL_LOOKBACK = 500  # how far back a token is looked at for the URL it sits in


def entropy(token: str) -> float:
    n = len(token)
    return -sum(c / n * math.log2(c / n) for c in Counter(token).values())


def random_looking(token: str) -> bool:
    """A token of 20+ base64/base62 characters with the mix and spread of random material."""
    core = token.rstrip("=")
    if len(core) < MIN_TOKEN or _HEX.fullmatch(core) or _NOT_SECRET_PREFIX.match(core):
        return False
    if not (
        any(c.islower() for c in core)
        and any(c.isupper() for c in core)
        and any(c.isdigit() for c in core)
    ):
        return False
    threshold = min(ENTROPY_BITS + (len(core) - MIN_TOKEN) * 0.02, 4.3)
    return entropy(core) >= threshold


def decoded_text(token: str) -> str | None:
    """The text a base64 token stands for, when it decodes to printable text."""
    core = token.strip()
    if len(core) < 16 or len(core) > 1_000_000:
        return None
    padded = core + "=" * (-len(core) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    printable = sum(c.isprintable() or c in "\n\r\t" for c in decoded)
    return decoded if printable >= 0.95 * len(decoded) else None


def tokens(text: str) -> Iterator[tuple[int, int, str]]:
    """Every candidate token (a run of base64 characters, 20 or more) with its place."""
    for m in _TOKEN.finditer(text):
        yield m.start(), m.end(), m.group(0)


def excused(text: str, start: int) -> bool:
    """Is the token at `start` a digest, public key or request id by what precedes it, or a
    part of a URL's path (credentials in URLs are found by their own rule)?"""
    if _NOT_SECRET_BEFORE.search(text, max(0, start - 40), start):
        return True
    window = max(0, start - URL_LOOKBACK)
    chunk = max(text.rfind(c, window, start) for c in " \n\t\"'<|") + 1
    return text.find("://", max(chunk, window), start) >= 0
