"""Reading what programs say: log lines, settings, quantities.

The rules planner reads logs the way an SRE does: find the line that says why a process
died or what it failed to reach, recognise which *family* of failure it is (a bad setting, a
connection refused, a name that does not resolve, a 403 from the apiserver, a full disk, a
crash), and pull out the things the next step follows: the host and port it tried, the
setting it names, the ServiceAccount that was refused. The families are a small taxonomy of
how failures are worded across runtimes (Go, JVM, Node, Python, libpq, kubelet), not one
pattern per incident; `family()` is the one place they are decided.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from dataclasses import dataclass
from enum import StrEnum

MAX_LINE = 1000


class Family(StrEnum):
    CONFIG = "config"  # a setting missing, empty or malformed
    COMMAND = "command"  # the command itself is wrong (not found, bad flag)
    CONNECTION = "connection"  # refused, timed out, reset, no route
    DNS = "dns"  # a name that does not resolve
    K8S_FORBIDDEN = "k8s_forbidden"  # the apiserver refused the workload's ServiceAccount
    ACCESS_DENIED = "access_denied"  # an external service refused the credentials
    DISK_FULL = "disk_full"
    RUNTIME_OOM = "runtime_oom"  # the runtime's own out-of-memory (heap), not the kernel's
    SCHEMA = "schema"  # a migration or a missing table/column
    CREDENTIALS = "credentials"  # a password/user refused by a database
    CRASH = "crash"  # panic, unhandled exception, segfault
    PROBE = "probe"  # kubelet probe wording
    RESPONSE = "response"  # a dependency's answer the caller cannot decode (its contract)


# Order matters: the first family whose pattern matches decides (specific before generic).
_FAMILIES: tuple[tuple[Family, re.Pattern[str]], ...] = (
    (
        Family.K8S_FORBIDDEN,
        re.compile(
            r"forbidden:\s+User \\?\"system:serviceaccount:|cannot \w+ resource \\?\"", re.I
        ),
    ),
    (
        Family.DISK_FULL,
        re.compile(
            r"no space left on device|ENOSPC|disk (is )?full|DiskFull|"
            # a server that reserves room before it writes (ClickHouse's NOT_ENOUGH_SPACE)
            r"not enough (disk |free )?space|NOT_ENOUGH_SPACE",
            re.I,
        ),
    ),
    (
        Family.RUNTIME_OOM,
        re.compile(
            r"(?<![a-z])OutOfMemoryError|JavaScript heap out of memory|runtime: out of memory|"
            r"Cannot allocate memory|(?<![a-z])MemoryError\b|out of memory",
            re.I,
        ),
    ),
    (
        Family.DNS,
        re.compile(
            r"no such host|Name or service not known|Temporary failure in name resolution|"
            r"NXDOMAIN|could not resolve|getaddrinfo|UnknownHostException|"
            # nginx resolves every proxy_pass host when it loads its config
            r"host not found in upstream|(?:couldn't|could not|unable to|failed to) look ?up host|"
            r"lookup \S+( on \S+)?: .*?(i/o timeout|server misbehaving|no such host|refused)",
            re.I,
        ),
    ),
    (
        Family.CREDENTIALS,
        re.compile(
            r"password authentication failed|Access denied for user|authentication failed for|"
            r"invalid username or password|WRONGPASS|NOAUTH",
            re.I,
        ),
    ),
    (
        Family.ACCESS_DENIED,
        re.compile(
            r"AccessDenied|Access Denied|InvalidAccessKeyId|SignatureDoesNotMatch|"
            r"ExpiredToken|not authorized to perform|403 Forbidden|status code:? 403|"
            r"PERMISSION_DENIED|AuthorizationFailed|Forbidden: 403\b|"
            r"does not have [\w.]+ access to|Permission '[\w.]+' denied|"
            r"does not have authorization to perform action|"
            # STS refusing a web identity token (IRSA and its look-alikes): who it was issued
            # for (its audience) or by (its issuer) is not what the role trusts
            r"InvalidIdentityToken|Incorrect token audience|AssumeRoleWithWebIdentity.*denied",
            re.I,
        ),
    ),
    (
        Family.COMMAND,
        re.compile(
            r"executable file not found|command not found|exec format error|: not found$|"
            r"can't execute|Permission denied.*exec|"
            r"exec: \"[^\"]+\": |unknown (flag|shorthand flag|command)|flag provided but not "
            r"defined|unrecognized (option|arguments?)|No such file or directory.*(exec|start)|"
            # the JVM refusing its own options (from the command line or JAVA_TOOL_OPTIONS)
            r"Unrecognized VM option|Improperly specified VM option|"
            r"Could not create the Java Virtual Machine",
            re.I,
        ),
    ),
    (
        Family.SCHEMA,
        re.compile(
            # what a migration tool says when it fails, not its name: Flyway's banner
            # ("Flyway OSS Edition 10.17.3 by Redgate") is printed on every start
            r"migrations? .*fail|failed migration|checksum mismatch|migration lock|"
            r"cannot run migrations|PendingMigrationError|Dirty database version|"
            r"relation \S+ does not exist|column \S+ does not "
            r"exist|Table '\S+' doesn't exist|no such table|Unknown column",
            re.I,
        ),
    ),
    (
        Family.CONNECTION,
        re.compile(
            r"connection refused|ECONNREFUSED|connect: connection|no route to host|"
            # "timed out", "timeout" — not a setting named so ("service-dns-timeout: 5")
            r"EHOSTUNREACH|connection reset|ECONNRESET|i/o timeout|timed out|"
            r"(?<![\w-])time ?out\b(?![-_]|\s*[:=]\s*\d)|"
            r"Connection is not available|could not connect|failed to connect|unable to connect|"
            r"dial tcp|Connection to \S+ refused|upstream connect error|ETIMEDOUT|"
            r"context deadline exceeded|SocketTimeoutException|ConnectException|"
            # gRPC's transport failing under a call (grpc-go: "code = Unavailable desc =
            # connection error"; the HTTP/2 preface a server that is not gRPC does not send)
            r"code = Unavailable desc = connection error|error reading server preface|"
            # the Kafka client's word for a broker it could not keep a connection to
            r"(?:Bootstrap )?broker \S+ \(id: [^)]*\) disconnected|"
            # the server refused the connection for want of slots (MySQL 1040, Postgres)
            r"too many (connections|clients)|remaining connection slots|"
            # memcached's refusal at maxconns (-c), and a server closing the connection under
            # the client: pymemcache's MemcacheUnexpectedCloseError, libpq's "server closed the
            # connection unexpectedly", a peer that hung up (EPIPE)
            r"too many open connections|unexpected ?close|closed the connection unexpectedly|"
            r"connection (?:was )?closed by (?:the )?(?:remote|peer|server)|broken pipe|EPIPE",
            re.I,
        ),
    ),
    (
        # an answer the caller cannot decode: a decoder's words (Go's encoding/json, Jackson,
        # Python's json, JavaScript's JSON.parse, protobuf) on a line about a response
        Family.RESPONSE,
        re.compile(
            r"(?=.*\b(response|reply|upstream|returned by|answer)\b)"
            r"(?=.*(cannot unmarshal|json: cannot|(failed|unable) to (decode|unmarshal|"
            r"deserialize)|could not (decode|deserialize)|MismatchedInputException|"
            r"Cannot deserialize|JSONDecodeError|Unexpected token .{0,20}in JSON|"
            r"invalid character .{0,20}looking for|proto: cannot parse))",
            re.I,
        ),
    ),
    (
        Family.CONFIG,
        re.compile(
            r"\bnot set\b|is required|must be set|missing (required|protocol|env|config)|"
            r"\b(is )?not configured\b|"
            r"required (env|environment|variable|setting|config)|invalid (value|url|port|"
            r"config|configuration|setting|format|syntax|duration|address)|"
            r"is not a valid|cannot parse|could not parse|failed to parse|parse error|"
            r"unmarshal|yaml: |json: cannot|unknown (field|option|key|setting)|"
            r"no such file or directory|undefined (variable|property)|KeyError|"
            r"missing protocol scheme|environment variable|bad (config|value)|"
            # loading the configuration failed (envconfig, viper, pydantic-settings, Spring's
            # binder), and Go's own parse errors for a value of the wrong shape
            r"(cannot|could not|failed to|unable to|error) (load|read|process|decod|bind)\w* "
            r"(the )?(config|configuration|settings|env|properties)|"
            r"missing unit in duration|unknown unit \S+ in duration|invalid syntax|"
            r"converting '[^']*' to type|Failed to bind properties|"
            r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b[^.]*\b(is )?(invalid|malformed|empty|missing)\b|"
            r"\bis (invalid|malformed)\b",
            re.I,
        ),
    ),
    (
        Family.CRASH,
        re.compile(
            r"^panic:|\bpanic\(|goroutine \d+ \[|Traceback \(most recent call last\)|"
            r"Exception in thread|NullPointerException|segmentation fault|SIGSEGV|"
            r"Unhandled( exception| rejection)?|uncaught|fatal error:|stack overflow|"
            r"IndexError|TypeError|AttributeError|assertion failed",
            re.I,
        ),
    ),
)

# A level word inside a hyphenated name ("scn-place-suggest-error-ratio", "job-failed-alerts")
# names something; it says nothing about the line.
_SEVERITY = (
    (
        3,
        re.compile(r"(?<![\w-])(fatal|panic|critical|crit|emerg)(?![\w-])|^panic:|Traceback", re.I),
    ),
    (
        2,
        re.compile(r"(?<![\w-])(error|err|exception|failed|failure|refused|denied)(?![\w-])", re.I),
    ),
    (
        1,
        re.compile(
            r"\b(warn|warning|timed out|retry|retrying)\b|(?<![\w-])timeout\b(?![-_]|\s*[:=]\s*\d)",
            re.I,
        ),
    ),
)
_TIMESTAMP = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+(Z|[+-]\d{2}:?\d{2})?\]?\s+")


@dataclass(frozen=True)
class Line:
    text: str  # without the leading timestamp, clipped
    severity: int  # 0 info … 3 fatal
    family: Family | None
    index: int  # position in the log


def family(text: str) -> Family | None:
    for fam, rx in _FAMILIES:
        if rx.search(text):
            return fam
    return None


# pino's and bunyan's numeric levels (10 trace … 30 info, 40 warn, 50 error, 60 fatal)
_NUMERIC_LEVEL = re.compile(r'"level"\s*:\s*(?P<n>[1-6]0)\b')


def severity(text: str) -> int:
    said = next((s for s, rx in _SEVERITY if rx.search(text)), 0)
    m = _NUMERIC_LEVEL.search(text)
    return max(said, {40: 1, 50: 2, 60: 3}.get(int(m.group("n")), 0)) if m else said


# Families whose wording is itself a failure, whatever the line's level says
# ("OSError: [Errno 28] No space left on device" has no "error" word of its own).
FAILING_FAMILIES = {
    Family.DISK_FULL,
    Family.RUNTIME_OOM,
    Family.K8S_FORBIDDEN,
    Family.CREDENTIALS,
    Family.ACCESS_DENIED,
    Family.SCHEMA,
    Family.DNS,
    Family.COMMAND,
}


def lines_of(log: list[str]) -> list[Line]:
    out = []
    for i, raw in enumerate(log):
        text = _TIMESTAMP.sub("", raw.strip())[:MAX_LINE]
        if text:
            fam = family(text)
            level = severity(text)
            if fam in FAILING_FAMILIES:
                level = max(level, 2)
            out.append(Line(text, level, fam, i))
    return out


def telling(log: list[str], window: int = 60) -> Line | None:
    """The line an SRE would quote: among the last `window` lines, those in a failure family
    other than a bare crash first, then any family, then the most severe; of those the
    *first* (the cause comes before its consequences: "upload failed: AccessDenied" before
    "export failed")."""
    tail = lines_of(log[-window:])
    if not tail:
        return None
    with_family = [ln for ln in tail if ln.family is not None and ln.severity >= 1]
    # A line that says *why* (a full disk, a refused connection) before one that only says
    # that it crashed: "Traceback (most recent call last):" is how, not why.
    specific = [ln for ln in with_family if ln.family is not Family.CRASH]
    pool = specific or with_family or [ln for ln in tail if ln.severity >= 2]
    if not pool:
        return None
    top = max(ln.severity for ln in pool)
    best = next(ln for ln in pool if ln.severity == top)
    raw = log[-window:]
    embedded = _embedded_exception(raw[best.index])
    if embedded is not None:
        # a structured line carrying its stack trace in a field (exc_info, stack_trace):
        # the exception the trace ends with says why, not the message around it
        return Line(embedded, max(best.severity, 2), family(embedded) or best.family, best.index)
    if best.family is Family.CRASH and _TRACE_HEADER.search(best.text):
        # "Traceback (most recent call last):" says how; the exception it ends with says why
        j = _exception_after(raw, best.index)
        if j is not None:
            text = _TIMESTAMP.sub("", raw[j].strip())[:MAX_LINE]
            return Line(text, 3, family(text) or Family.CRASH, j)
    if best.family in (None, Family.CRASH) and best.index + 1 < len(raw):
        # an error line that says only what failed ("Unhandled: POST /v1/redeem"), followed
        # at once by the exception it logged: the exception says why
        after = _TIMESTAMP.sub("", raw[best.index + 1].strip())
        if _THROWN.match(after):
            text = after[:MAX_LINE]
            return Line(text, best.severity, family(text) or Family.CRASH, best.index + 1)
    return best


# the first line of a logged exception: a class named for an exception or an error, and why
_THROWN = re.compile(
    r"^(?:Caused by: )?[A-Za-z_][\w.$]*(?:Exception|Error)\b(?: ?\([^)]{0,200}\))?: \S"
)


_TRACE_HEADER = re.compile(r"Traceback \(most recent call last\)|Exception in thread", re.I)
# the line a stack trace ends with: Python's `pkg.Name: message`, the JVM's `Caused by: …`
_EXC_LINE = re.compile(r"^(?:Caused by: )?[A-Za-z_][\w.$]*(?: ?\([^)]{0,200}\))?: \S")
_TRACE_GLUE = ("During handling", "The above exception", "Traceback")


def _embedded_exception(raw: str) -> str | None:
    """The exception line of a stack trace written inside one log line (a JSON field with
    escaped newlines: structlog's and python-json-logger's exc_info, logstash's stack_trace)."""
    if "\\n" not in raw or not _TRACE_HEADER.search(raw):
        return None
    parts = raw.replace('\\"', '"').replace("\\t", "    ").split("\\n")
    header = next((i for i, x in enumerate(parts) if _TRACE_HEADER.search(x)), None)
    if header is None:
        return None
    j = _exception_after(parts, header)
    return parts[j].strip()[:MAX_LINE] if j is not None else None


def _exception_after(raw: list[str], header: int) -> int | None:
    """The index of the last exception line of the stack trace starting at `header` (frames
    are indented; chained exceptions are joined by Python's "The above exception…")."""
    found = None
    # an exception line ends a run of frames, follows a blank line after another one (a
    # chained exception), or is a JVM "Caused by:"; a "key: value" line right after one is
    # its message's detail (a gRPC status's reason, domain, metadata)
    after_frame = False
    for i in range(header + 1, min(len(raw), header + 200)):
        line = raw[i]
        if not line.strip():
            after_frame = after_frame or found is not None
            continue
        if line[:1].isspace():
            after_frame = True
            continue
        text = _TIMESTAMP.sub("", line.strip())
        if _EXC_LINE.match(text) and (after_frame or text.startswith("Caused by: ")):
            found = i
        elif not text.startswith(_TRACE_GLUE) and found is not None:
            break  # the program (or its next instance) went on: what follows is not the trace
        after_frame = False
    return found


def last_step(log: list[str], line: Line) -> str | None:
    """What the program logged last before it failed: the nearest earlier line that is not
    part of the failure (no frame, no stack-trace header, no error) — e.g. "Running upgrade
    9c41 -> 3f7b, add orders.discount_code" before a migration's traceback."""
    prefix = line.text[:60]
    at = next((i for i in range(len(log) - 1, -1, -1) if prefix and prefix in log[i]), None)
    if at is None:
        return None
    for i in range(at - 1, max(at - 200, -1), -1):
        raw = log[i]
        if not raw.strip() or raw[:1].isspace():
            continue
        text = _TIMESTAMP.sub("", raw.strip())
        if _TRACE_HEADER.search(text) or _EXC_LINE.match(text) or text.startswith(_TRACE_GLUE):
            continue
        if severity(text) >= 2 or family(text) is not None:
            return None  # an earlier failure, not a step
        return text[:MAX_LINE]
    return None


def failures(log: list[str], window: int = 200) -> list[Line]:
    """Every line in a failure family, oldest first."""
    return [ln for ln in lines_of(log[-window:]) if ln.family is not None and ln.severity >= 1]


_JSON_MSG = re.compile(r'"(?:msg|message)"\s*:\s*"(?P<m>[^"]{1,160})"')
_LOGFMT_MSG = re.compile(r'\bmsg=(?:"(?P<q>[^"]{1,160})"|(?P<w>\S{1,80}))')
_VARYING = re.compile(r"\b[0-9a-f]{8,}\b|\d+(\.\d+)?")


def template(line: str) -> str:
    """What a line says, without what varies between its repetitions: the `msg` of a JSON or
    logfmt line, else the text with numbers and ids blanked ("unable to send # metrics")."""
    m = _JSON_MSG.search(line)
    if m:
        return m.group("m")
    m = _LOGFMT_MSG.search(line)
    if m:
        return m.group("q") or m.group("w")
    _, sep, message = line.partition(" : ")  # Spring/logback: "LEVEL pid --- [thread] logger : msg"
    return _VARYING.sub("#", message if sep else line)[:160]


_HANDLED = (
    ("it retries", re.compile(r"will retry|retrying|retry in|backing off", re.I)),
    (
        "it serves cached data or falls back",
        re.compile(r"serving cached|using cached|cached \w+|fall(ing)? ?back|degraded", re.I),
    ),
    (
        "it rejected a caller's input (a client error)",
        re.compile(
            r"rejected|invalid (request|input|code|coupon)|unknown (code|user|coupon)|"
            r"bad request|validation failed|\b4(00|01|03|04|09|22|29)\b",
            re.I,
        ),
    ),
    ("it skipped the item", re.compile(r"skipp(ed|ing)|ignor(ed|ing)", re.I)),
    (
        # the program names an optional feature it runs without (Hazelcast's "you won't be
        # able to use Smart Client from outside", "ZONE_AWARE feature is disabled")
        "it runs without an optional feature it names",
        re.compile(
            r"feature (is |will be )?(disabled|unavailable|off)|won'?t be able to use|"
            r"will not be able to use|(is|are) not (available|supported)[^.]{0,40}; continuing|"
            r"optional\b[^.]{0,40}\b(disabled|unavailable|not (found|available))",
            re.I,
        ),
    ),
)


def handled(line: str) -> str | None:
    """How the line says the program coped — it retries, serves from cache, falls back, or
    rejected a caller's input — or None: an error handled is not a failure of the service."""
    return next((why for why, rx in _HANDLED if rx.search(line)), None)


# "caller":"internal/stats/report.go:33" is a code location, not a field and its value
_SOURCE_FILE = re.compile(r"\.(go|py|java|kt|scala|js|ts|rb|rs|c|cc|cpp|cs|php|ex)$")
_PAIR = re.compile(r'(?P<k>[A-Za-z_][\w.]*)"?\s*[=:]\s*"?(?P<v>-?\d+(?:\.\d+)?)(?:[KMGT]i?B?)?\b')


@dataclass(frozen=True)
class Growth:
    what: str  # the line's message ("session store stats")
    key: str  # the field that grows ("entries")
    first: float
    last: float
    steady: dict[str, float]  # the fields of the same lines that do not move ("evicted": 0)
    reports: int = 2  # how many lines of that shape the growth runs through

    def __str__(self) -> str:
        still = ", ".join(f"{k}={v:g}" for k, v in list(self.steady.items())[:2])
        return f'"{self.what}": {self.key} grows {self.first:g} → {self.last:g}' + (
            f" while {still} stays" if still else ""
        )


def growing(log: list[str]) -> list[Growth]:
    """Fields of a repeated log line that only grow (what a leak holds on to: entries,
    listeners, handles), with those that stay put beside them (evicted=0, open connections)."""
    groups: dict[str, list[dict[str, float]]] = {}
    for raw in log[-400:]:
        pairs = {m.group("k"): float(m.group("v")) for m in _PAIR.finditer(raw)}
        pairs = {
            k: v
            for k, v in pairs.items()
            if k not in ("time", "ts", "level", "pid", "port") and not _SOURCE_FILE.search(k)
        }
        if pairs:
            groups.setdefault(template(raw), []).append(pairs)
    out = []
    for what, rows in groups.items():
        if len(rows) < 2:
            continue
        keys = set.intersection(*(set(r) for r in rows))
        for key in sorted(keys):
            values = [r[key] for r in rows]
            rising = (
                all(b >= a for a, b in itertools.pairwise(values))
                and values[-1] > max(values[0], 1) * 1.5
            )
            if rising:
                steady = {
                    k: rows[0][k] for k in sorted(keys - {key}) if len({r[k] for r in rows}) == 1
                }
                out.append(Growth(what, key, values[0], values[-1], steady, len(values)))
    return out


_PY_FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_PY_LIBRARY = re.compile(r"/(site|dist)-packages/|/lib/python\d[\d.]*/|^<frozen ")
_JAVA_FRAME = re.compile(r"^\s+at ([\w.$<>]+)\(([\w.]+:\d+)\)")
_GO_FILE = re.compile(r"^\s+(\S+\.go:\d+)")
_NODE_FRAME = re.compile(r"^\s+at (?:(\S+) )?\(?([^()\s]+:\d+:\d+)\)?")


def frame(log: list[str]) -> str | None:
    """Where in the code it failed: the innermost frame of the last stack trace (Python's
    last `File …, line N, in f`; the JVM's and Node's first `at …`; Go's first `file.go:N`
    after the goroutine header), skipping the runtime's own frames."""
    tail = log[-200:]
    py = [m for ln in tail if (m := _PY_FRAME.match(ln))]
    if py:
        # the application's own innermost frame, not the installed libraries' or Python's
        own = [m for m in py if not _PY_LIBRARY.search(m.group(1))]
        if not own:
            return None
        f = own[-1]
        return f"{f.group(1)}:{f.group(2)} in {f.group(3)}"
    for i, ln in enumerate(tail):
        if ln.startswith("goroutine ") and "[" in ln:
            for nxt in tail[i + 1 : i + 12]:
                m = _GO_FILE.match(nxt)
                if m and "/runtime/" not in m.group(1):
                    return m.group(1)
        m = _JAVA_FRAME.match(ln) or _NODE_FRAME.match(ln)
        if m and not re.match(r"(java\.|jdk\.|sun\.|node:internal)", m.group(1) or m.group(2)):
            return f"{m.group(1) or ''} ({m.group(2)})".strip()
    return None


def repeated(log: list[str], window: int = 60) -> tuple[str, int] | None:
    """The line said most often in a row of the last `window` lines, when it is said at least
    three times running (one query per item — the N+1 pattern — or one retry loop)."""
    best: tuple[str, int] | None = None
    run_of, run, first = "", 0, ""
    for raw in log[-window:]:
        line = _TIMESTAMP.sub("", raw.strip())
        said = template(line)
        if said != run_of:
            run_of, run, first = said, 0, line.partition(" : ")[2] or line
        run += 1
        if run >= 3 and (best is None or run > best[1]):
            best = (first, run)
    return best


def recurring_warning(log: list[str], window: int = 200) -> tuple[str, int] | None:
    """(the last line, how many times) of the warning the log repeats most (same message, the
    numbers aside), when it is said at least twice and no error is logged: what a slowed
    program says about itself ("event loop blocked", "slow query", "pool wait")."""
    counts: dict[str, tuple[str, int]] = {}
    for raw in log[-window:]:
        line = _TIMESTAMP.sub("", raw.strip())
        level = severity(line)
        if level >= 2:
            return None
        if level == 1:
            said = template(line)
            counts[said] = (line, counts.get(said, ("", 0))[1] + 1)
    best = max(counts.values(), key=lambda x: x[1], default=None)
    return best if best is not None and best[1] >= 2 else None


def heaviest_request(log: list[str]) -> str | None:
    """The request line with the largest duration field (duration=1792ms, took 2.1s)."""
    best: tuple[float, str] | None = None
    for raw in log[-200:]:
        m = re.search(r"\b(duration|took|elapsed|latency)[=: ]+(\d+(?:\.\d+)?)(ms|s)\b", raw)
        if m:
            seconds = float(m.group(2)) / (1000 if m.group(3) == "ms" else 1)
            if best is None or seconds > best[0]:
                best = (seconds, _TIMESTAMP.sub("", raw.strip()))
    return best[1] if best else None


# -- what a line names ----------

_URL = re.compile(
    r"(?:[a-z][a-z0-9+.-]*:)?(?:[a-z][a-z0-9+.-]*)://(?:[^\s:/@]*(?::[^\s/@]*)?@)?"
    r"(?P<host>[A-Za-z0-9._-]+)(?::(?P<port>\d{1,5}))?",
    re.I,
)
# Words a log writes before a number with a colon ("(pid:57)", "line:88"): never a host
_NUMBERED_FIELDS = frozenset(
    [
        "pid",
        "tid",
        "ppid",
        "uid",
        "gid",
        "line",
        "lineno",
        "col",
        "code",
        "status",
        "errno",
        "exit",
        "attempt",
        "retry",
        "retries",
        "try",
        "worker",
        "thread",
        "id",
        "count",
        "seq",
        "offset",
        "partition",
        "shard",
        "epoch",
        "gen",
        "generation",
        "version",
    ]
)
_HOSTPORT = re.compile(
    r"(?<![\w./:-])(?P<host>[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)"
    r":(?P<port>\d{2,5})\b",
    re.I,
)
_DNS_NAME = re.compile(
    r"\b(?P<svc>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.(?P<ns>[a-z0-9]([-a-z0-9]*[a-z0-9])?)"
    r"\.svc(\.cluster\.local)?\b",
    re.I,
)
# Resolver wordings that name the host looked up: Go, Node, the JVM, libpq, curl/Python.
_LOOKUP = re.compile(
    # Go: "lookup redis on 10.96.0.10:53: no such host", "lookup redis: i/o timeout" (not the
    # English "price lookup failed, …")
    r"\blookup (?P<a>[a-z][a-z0-9.-]*)(?= on |: )|ENOTFOUND (?P<b>[a-z][a-z0-9.-]*)|"
    r"UnknownHostException: (?P<c>[a-z][a-z0-9.-]*)|translate host name \\?\"(?P<d>[^\"\\]+)|"
    r"resolve host(?:name)?: '?(?P<e>[a-z][a-z0-9.-]*)|"
    # nginx: host not found in upstream "legacy-quotes:8080"; HAProxy: could not resolve
    # address 'db'
    r"host not found in upstream \\?\"(?P<f>[a-z][a-z0-9.-]*)|"
    r"could not resolve address '(?P<g>[a-z][a-z0-9.-]*)|"
    # Cassandra's seed provider: "couldn't lookup host cass-0.cass.db.svc.cluster.local"
    r"(?:couldn't|could not|cannot|can't|unable to|failed to) look ?up host "
    r"'?(?P<h>[a-z][a-z0-9.-]*)",
    re.I,
)
_ENV_NAME = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
_QUOTED = re.compile(r"[\"'`]([A-Za-z_][A-Za-z0-9_.-]{1,80})[\"'`]")
# (quotes may come escaped, \", when the message is a quoted field of a logfmt/JSON line)
_Q = r'\\?"'
_FORBIDDEN = re.compile(
    rf"User {_Q}system:serviceaccount:(?P<ns>[^:\"\\]+):(?P<sa>[^\"\\]+){_Q} cannot "
    rf"(?P<verb>\w+) resource {_Q}(?P<resource>[^\"\\]+){_Q}"
    rf"(?: in API group {_Q}(?P<group>[^\"\\]*){_Q})?"
    rf"(?: in the namespace {_Q}(?P<target>[^\"\\]+){_Q})?",
)


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int | None

    def __str__(self) -> str:
        return f"{self.host}:{self.port}" if self.port else self.host


def endpoints_in(text: str) -> list[Endpoint]:
    """Hosts (with ports) a line or a setting names: URLs, host:port, x.y.svc names."""
    found: dict[str, Endpoint] = {}
    for m in _URL.finditer(text):
        host, port = m.group("host").rstrip("."), m.group("port")
        found.setdefault(host, Endpoint(host, int(port) if port else None))
    for m in _HOSTPORT.finditer(text):
        host = m.group("host").rstrip(".")
        if not host[0].isalpha() or host.lower() in _NUMBERED_FIELDS:
            continue  # an IP, a timestamp ("2026-12-01T10:15"), "(pid:57)": not a host
        ep = Endpoint(host, int(m.group("port")))
        if host not in found or found[host].port is None:
            found[host] = ep
    for m in _DNS_NAME.finditer(text):
        host = m.group(0)
        found.setdefault(host, Endpoint(host, None))
    for m in _LOOKUP.finditer(text):
        host = next(g for g in m.groups() if g).rstrip(".")
        found.setdefault(host, Endpoint(host, None))
    return list(found.values())


_PORT = re.compile(
    r"(?:\d{1,3}(?:\.\d{1,3}){3}|\]):(?P<a>\d{2,5})\b|\bport:? (?P<b>\d{2,5})\b", re.I
)


# A server's own error reply quoted by its client, by product, with the port it listens on
# by default: the client reached it, and the server refused the work (Redis' MISCONF,
# MySQL's "Error 1040", Postgres' SQLSTATE) — the server's state is the next hop.
_SERVERS: tuple[tuple[str, int, re.Pattern[str]], ...] = (
    (
        "redis",
        6379,
        re.compile(
            r"\bRedis|MISCONF|READONLY You can't write|OOM command not allowed|\bLOADING\b", re.I
        ),
    ),
    ("postgres", 5432, re.compile(r"\bPG::|psycopg|\bpostgres|SQLSTATE|\bpq: ", re.I)),
    ("mysql", 3306, re.compile(r"\bMySQL|\bError \d{4} \(\w{5}\)", re.I)),
    ("kafka", 9092, re.compile(r"\bkafka", re.I)),
    ("rabbitmq", 5672, re.compile(r"\bAMQP|rabbitmq", re.I)),
    ("mongo", 27017, re.compile(r"\bMongo", re.I)),
    ("elasticsearch", 9200, re.compile(r"elasticsearch|opensearch", re.I)),
    # its server's exceptions ("Code: 202. DB::Exception: …"), as its drivers quote them
    # ("code: 243, message: …", "received ClickHouse error code 202"); 9000 is its native port
    ("clickhouse", 9000, re.compile(r"clickhouse|DB::Exception|\bcode: \d+, message: ", re.I)),
)


# A server's HTTP answer that it failed the request (5xx), as clients quote it: "Code: 503",
# "status 502", "HTTP/1.1 503", "503 Service Unavailable", "returned 500".
_SERVER_ERROR = re.compile(
    r"\b(?:code|status(?:[ _]?code)?|HTTP/\d(?:\.\d)?|returned|responded(?: with)?)"
    r"[\"':= ]{1,3}(?P<a>5\d\d)\b"
    r"|\b(?P<b>5\d\d)\s+(?:Service Unavailable|Bad Gateway|Internal Server Error|Gateway Timeout)",
    re.I,
)


def server_error(text: str) -> int | None:
    """The 5xx status a line quotes a server answering with, or None."""
    m = _SERVER_ERROR.search(text.replace("\\n", " "))  # a JSON log's escaped newlines
    return int(m.group("a") or m.group("b") or m.group("c")) if m else None


def server_in(text: str) -> tuple[str, int] | None:
    """(product, its default port) when the line quotes a server product's error reply."""
    for name, port, rx in _SERVERS:
        if rx.search(text):
            return name, port
    return None


def port_in(text: str) -> int | None:
    """The port a line says it tried when it names only an address ("10.96.41.17:5433",
    'at "10.96.41.17", port 5433')."""
    m = _PORT.search(text)
    return int(m.group("a") or m.group("b") or m.group("c")) if m else None


# a structured log field naming the peer a call went to ("upstream":"price-engine")
_PEER_FIELD = re.compile(
    r"""["']?\b(upstream|service|dependency|peer|target|backend|callee|remote_service)["']?"""
    r"""\s*[:=]\s*["']?(?P<name>[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)["'\s,}]""",
)


def peer_named(line: str) -> str | None:
    """The service a structured log line says the call went to, by a field of its own
    (upstream=, "service":, "dependency": …), as a bare name."""
    m = _PEER_FIELD.search(line)
    return m.group("name") if m else None


_ORDINAL = re.compile(r"[a-z0-9]-\d{1,4}$")


def pod_of(host: str) -> str | None:
    """The pod a host names when it is a StatefulSet pod's own name under its governing
    Service (pod.svc, pod.svc.ns, pod.svc.ns.svc[...]), else None."""
    parts = host.lower().split(".")
    if len(parts) >= 4 and parts[3] == "svc":
        return parts[0]
    if 2 <= len(parts) <= 3 and _ORDINAL.search(parts[0]) and service_of(host, "") is not None:
        return parts[0]
    return None


def service_of(host: str, namespace: str) -> tuple[str, str] | None:
    """(service, namespace) a cluster host name points at: svc, svc.ns, svc.ns.svc[...], and
    a StatefulSet pod's own name under its governing Service, pod.svc.ns.svc[...]. A first
    label that ends in an ordinal ("db-0.db", "kafka-2.kafka-headless.data") is such a pod,
    resolved by the search path like a Service: pod.svc (this namespace) and pod.svc.ns."""
    parts = host.lower().split(".")
    if len(parts) == 1:
        return parts[0], namespace
    tld = parts[-1] in ("com", "net", "org", "io", "local", "internal")
    if _ORDINAL.search(parts[0]) and not tld and "svc" not in parts[1:3]:
        if len(parts) == 2:
            return parts[1], namespace
        if len(parts) == 3:
            return parts[1], parts[2]
    if len(parts) == 2 and not tld:
        return parts[0], parts[1]
    if len(parts) >= 3 and parts[2] == "svc":
        return parts[0], parts[1]
    if len(parts) >= 4 and parts[3] == "svc":  # a pod under its Service: pod.svc.ns.svc[...]
        return parts[1], parts[2]
    return None


_HOST = re.compile(
    r"(?<![\w.@/-])(?:https?://)?((?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63})"
    r"(?![\w-]|\.\w)",
    re.I,
)
# what ends a file's name, not a host's
_FILE_ENDINGS = {"yaml", "yml", "json", "py", "go", "js", "ts", "log", "conf", "txt", "sh"}
_FILE_ENDINGS |= {"md", "toml", "ini", "env", "tgz", "gz", "zip", "jar", "war", "html", "java"}


def public_hosts(words: str) -> list[str]:
    """Host names the words name that are not the cluster's own (timesheets.corp.example.com
    in "timesheets.corp.example.com answers 503"), lower-cased: what an Ingress may route. A
    cluster name (svc.ns, svc.ns.svc.cluster.local) and a file's name are not among them."""
    out: list[str] = []
    for m in _HOST.finditer(words):
        host = m.group(1).lower()
        labels = host.split(".")
        # a cluster name ends in svc or svc.cluster.local (a public host may hold a label
        # svc: a0.svc.com)
        if labels[-1] in _FILE_ENDINGS or labels[-1] in ("local", "svc"):
            continue
        if len(labels) == 2 and service_of(host, "") is not None:
            continue  # svc.ns: two labels that are not a public domain
        if host not in out:
            out.append(host)
    return out


def env_names_in(text: str) -> list[str]:
    names = dict.fromkeys(_ENV_NAME.findall(text))
    for q in _QUOTED.findall(text):
        if q.isupper() and "_" in q:
            names.setdefault(q, None)
    return list(names)


def forbidden(text: str) -> dict[str, str] | None:
    m = _FORBIDDEN.search(text)
    return {k: v for k, v in m.groupdict().items() if v} if m else None


# -- exit codes ----------


EXIT_MEANING = {
    1: "a general error (the program exited on its own)",
    2: "a usage error (bad flags or arguments), or a Go panic",
    126: "a command that cannot be executed",
    127: "a command that was not found",
    137: "SIGKILL (killed: out of memory, or by the kubelet)",
    139: "SIGSEGV (a segmentation fault)",
    143: "SIGTERM (asked to stop, e.g. by a failing liveness probe)",
}


# Where cloud load balancers' health checks come from, as their providers document them: a
# connection from there that closes at once ("TLS handshake error ... EOF") is a probe.
HEALTH_CHECK_RANGES = (
    ("35.191.0.0/16", "Google Cloud load balancer health-check ranges"),
    ("130.211.0.0/22", "Google Cloud load balancer health-check ranges"),
    ("209.85.152.0/22", "Google Cloud load balancer health-check ranges"),
    ("209.85.204.0/22", "Google Cloud load balancer health-check ranges"),
    ("168.63.129.16/32", "Azure's load balancer health probe (168.63.129.16)"),
)
_IPV4 = re.compile(r"\b(\d{1,3}(?:\.\d{1,3}){3})(?::\d+)?\b")


def health_checkers(lines: list[str]) -> str | None:
    """What every one of these lines' client addresses is, when each names one and all fall
    in a load balancer's documented health-check ranges ("Google Cloud load balancer
    health-check ranges (35.191.0.0/16, 130.211.0.0/22)"); None otherwise."""
    networks = [(ipaddress.ip_network(cidr), what) for cidr, what in HEALTH_CHECK_RANGES]
    seen: dict[str, set[str]] = {}
    for line in lines:
        found = False
        for m in _IPV4.finditer(line):
            try:
                address = ipaddress.ip_address(m.group(1))
            except ValueError:
                continue
            hit = next(((net, what) for net, what in networks if address in net), None)
            if hit is None:
                return None  # a client from elsewhere: not (only) health checks
            seen.setdefault(hit[1], set()).add(str(hit[0]))
            found = True
        if not found:
            return None
    if not seen:
        return None
    return "; ".join(f"{what} ({', '.join(sorted(nets))})" for what, nets in seen.items())


# A cloud resource as the clouds' SDKs name it in an error: an AWS ARN, an Azure resource id,
# a Google Cloud resource path, an S3/GCS URL, or a service endpoint host.
_CLOUD_RESOURCE = re.compile(
    r"\barn:aws[\w-]*:[\w-]+:[\w-]*:\d*:[^\s\"',;)]+"
    r"|/subscriptions/[0-9a-f-]{36}/resourcegroups/[^\s\"',;)]+/providers/[^\s\"',;)]+"
    r"|\bprojects/[a-z][\w-]+/(?:secrets|buckets|topics|subscriptions|datasets|locations)"
    r"/[^\s\"',;)]+"
    r"|\b(?:s3|gs)://[^\s\"',;)]+"
    r"|\b[\w-]+\.(?:vault\.azure\.net|blob\.core\.windows\.net|s3[\w.-]*\.amazonaws\.com)\b",
    re.I,
)


def cloud_resource(log: list[str]) -> str | None:
    """The cloud resource a log names, the last one named (nearest the failure): an Azure
    resource id is shortened to its type and name (…/vaults/kv-prod)."""
    found = [m.group(0) for raw in log for m in _CLOUD_RESOURCE.finditer(str(raw))]
    if not found:
        return None
    last = found[-1].rstrip(".")
    if last.lower().startswith("/subscriptions/"):
        parts = last.split("/")
        return "/".join(parts[-2:]) + f" ({parts[-4]}/{parts[-3]})" if len(parts) >= 4 else last
    return last


# The permission a cloud API says the caller lacks, in each provider's words: AWS ("is not
# authorized to perform: s3:PutObject"), Google's REST ("Permission 'storage.objects.create'
# denied", "does not have storage.objects.get access") and gRPC error details (an ErrorInfo
# whose metadata key "permission" has the value), Azure ("does not have authorization to
# perform action 'Microsoft.KeyVault/vaults/secrets/getSecret/action'").
_CLOUD_PERMISSION = re.compile(
    r"not authorized to perform:? (?P<aws>[\w-]+:[\w*-]+)"
    r"|[Pp]ermission \\?['\"](?P<gcp>[a-z][\w]*(?:\.[\w]+){2,})\\?['\"] denied"
    r"|does not have (?P<gcp2>[a-z][\w]*(?:\.[\w]+){2,}) access"
    r"|key: \\?\"permission\\?\"(?:\\n|\s)*value: \\?\"(?P<grpc>[\w.]+)\\?\""
    r"|authorization to perform action \\?'(?P<azure>[\w./-]+)\\?'"
)


# A schema migration a program applied, as each migration tool logs it: Django ("Applying
# listings.0087_drop_unused_indexes... OK"), Alembic ("Running upgrade 9c41 -> 3f7b, add x"),
# Flyway ('Migrating schema "public" to version "42 - drop index"'), Rails and Sequelize
# ("== 20240101120000 DropIndex: migrating"), Liquibase ("ChangeSet db/x.xml::7::ann ran
# successfully"), Prisma ("Applying migration `20240101_drop_index`"), golang-migrate
# ("42/u drop_index (12ms)").
_MIGRATION = re.compile(
    r"Applying (?P<django>\w+\.\d{4}_\w+)\.\.\."
    r"|Running upgrade (?P<alembic>\w+ -> \w+(?:, [^\n]{1,80})?)"
    r"|Migrating schema \S+ to version \\?[\"`']?(?P<flyway>[^\"`'\n]{1,80})"
    r"|^== (?P<rails>\d{8,14}[-_ ]?\w+): migrat"
    r"|ChangeSet (?P<liquibase>\S+) ran successfully"
    r"|Applying migration `(?P<prisma>[^`]{1,80})`"
    r"|^(?P<gomigrate>\d+/u \w+) \(",
)


def migrations(log: list[str]) -> list[tuple[str, str]]:
    """(the migration, the line) for each schema migration the log says was applied."""
    out = []
    for raw in log:
        line = _TIMESTAMP.sub("", raw.strip())
        m = _MIGRATION.search(line)
        if m:
            out.append((next(v for v in m.groupdict().values() if v).strip(), line))
    return out


def cloud_permission(log: list[str]) -> str | None:
    """The permission a cloud API refused, as the last line naming one words it."""
    for raw in reversed(log):
        for m in _CLOUD_PERMISSION.finditer(str(raw)):
            return next(v for v in m.groupdict().values() if v)
    return None


# The kubelet's words for a key a ConfigMap does not hold: a volume's `items` ("configmap
# references non-existent config key: app.yml") or an env's configMapKeyRef ("couldn't find key
# LOG_LEVEL in ConfigMap shop/app-config").
_MISSING_KEY = re.compile(
    r"non-existent config key: (?P<key>[\w.-]+)"
    r"|couldn't find key (?P<key2>[\w.-]+) in ConfigMap (?:[\w.-]+/)?(?P<cm>[\w.-]+)",
    re.I,
)


# The scheduler's words for a pod whose bound volume may not attach where it could run, in
# its older ("had volume node affinity conflict") and newer wording.
VOLUME_PINNED = re.compile(r"volume node affinity conflict|PersistentVolume's node affinity")

# The kubelet's words for a Secret or ConfigMap that is not there: `secret "smtp" not found`,
# `configmaps "app-config" not found` (quotes escaped when the message is quoted again).
MISSING_OBJECT = re.compile(r'\b(secrets?|configmaps?)\s+\\?"([\w.-]+)\\?"\s+not found', re.I)


def missing_config_key(message: str) -> tuple[str, str | None] | None:
    """(the key, the ConfigMap when the message names it) for a missing-key message."""
    m = _MISSING_KEY.search(message)
    if m is None:
        return None
    return (m.group("key") or m.group("key2")), m.group("cm")


# The status an access-log line says the server answered with: a JSON field (status, code,
# statusCode, status_code, response_code, nested res.statusCode), logfmt (status=404), the
# common log format's `"GET /x HTTP/1.1" 404`, or the method, path and status that dev servers
# and middlewares print in a row (Next.js `POST /v2/quotes 404 in 6ms`, morgan's `GET /x 404
# 1.2 ms - 9`, `GET /x 200 12ms`).
_METHOD = r"(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)"
_ANSWERED = re.compile(
    r"[\"']?(?:status(?:_?code)?|statusCode|response_code|code)[\"']?\s*[:=]\s*[\"']?"
    r"(?P<a>[1-5]\d\d)\b(?![.\d])"
    r"|\"[A-Z]+ \S+ HTTP/\d(?:\.\d)?\" (?P<b>[1-5]\d\d)\b"
    rf"|(?<![\w-])(?-i:{_METHOD}) /\S* (?P<c>[1-5]\d\d)(?![\w.:/-])",
    re.I,
)


def answered(line: str) -> int | None:
    """The HTTP status a server's access-log line says it answered a request with, or None."""
    m = _ANSWERED.search(line)
    return int(m.group("a") or m.group("b") or m.group("c")) if m else None
