"""The symptom, measured again by the judge before it accepts "no fault".

Two checks, both on the judge's own reads:

- `rose`: whatever the words say, the server-error ratio of the namespace's request counters
  and the mean latency of its timed series must not have risen well above where the window
  started, nor (errors) stand above the floor now. A chronic fault that was failing before
  the window opened is as much a fault as one that began in it.
- `reported`: what the user (or the alert they pasted) says is wrong, typed into the outcomes
  the judge can measure — failing requests, slowness, failed connections — and each measured:
  present (the answer contradicts what was measured), absent (agrees), or not measurable (no
  such series, no log read). "No fault" to "checkout returns 503s" is verified only when the
  judge saw the requests succeed; where it cannot see them, the answer is not confirmed.

The vocabulary is of outcomes, not of incidents: a handful of words for each kind of thing a
user or an alert name reports, matched on word boundaries (alert names split at their capitals:
`ApiHighLatency` reads "Api High Latency"). A request that reports nothing measurable ("is
anything wrong with X?") gets only the first check.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from judge.reads import Json, Reads
from tools.results import ToolStatus
from triage.core import cron
from triage.core.signals import (
    ERROR_MATCHERS,
    ERROR_RATIO_FLOOR,
    NOT_FOUND_MATCHERS,
    REQUEST_COUNTER_SELECTOR,
    rate,
    timed,
    timed_histograms,
)

WINDOW_S = 3 * 3600.0
NOT_FOUND_FLOOR = 0.05  # a 404 share that doubled to above this is more than scanners and typos
LOG_PODS = 6  # pods whose logs a 'no fault' to a report of failed connections reads
LOG_CONTAINERS = 3


class Reported(StrEnum):
    ERRORS = "failing requests"
    SLOW = "slowness"
    UNREACHABLE = "failed connections"
    NOT_RUN = "scheduled work that did not run"
    NOT_FOUND = "requests answered not found"


# What follows a status code when it is one ("getting 502 from the gateway"), not a count
# ("serving 500 rps", "500 new users").
_AFTER_CODE = (
    r"(?=\s*($|[.,;:!?)]|(errors?|from|on|for|when|at|in|back|to|responses?|status|codes?)\b))"
)
# A number that went down is not a service that is down.
_DOWN = (
    r"\b(is|are|was|were|went|goes|go|been)\b"
    r"(?:(?!\b(up|not|never|no|memory|cpu|costs?|count|usage|replicas?|latency|errors?|traffic|"
    r"load|price|bill|spend|lag)\b)[^.?!,;]){0,30}"
    r"(?<!slow )(?<!shut )(?<!wind )(?<!wound )(?<!turn )(?<!cool )(?<!step )(?<!calm )"
    r"(?<!scale )(?<!broke )(?<!break )\bdown\b(?!\s+(to|by|from|after)\b)"
)
_REPORTS: dict[Reported, re.Pattern[str]] = {
    Reported.ERRORS: re.compile(
        r"(?<![\w.-])5\d\d('?s|\s*(errors?|responses?|status|codes?))\b"
        r"|\b(return\w*|get\w*|got|see\w*|seen|throw\w*|http|status|code|answer\w*)"
        rf"\s+(\w+\s+)?5\d\d\b{_AFTER_CODE}|(?<![\w.-])5xx|\berror[ -]?rate|\bhigh ?errors?\b"
        r"|\berrors? (are |is )?(spik\w*|up\b|climb\w*|high|through the roof|ratio)"
        r"|\berroring\b|\bflak(y|iness)\b|\bdegraded\b|\bdead\b|\bunresponsive\b"
        r"|\bbad gateway\b|\bservice unavailable\b|\binternal server error\b"
        r"|\b(return|throw|serv|giv|respond|answer|get|got|see|seen)\w*\s+(\w+\s+){0,2}"
        r"(errors?|failures?)\b"
        r"|\brequests?\s+(are\s+|keep\s+)?fail|\bfailing requests|\boutage\b|\bunavailable\b"
        r"|\bnot (working|responding|serving)\b|\bdown\s*\?"
        r"|(\b(stopped|stops|not|never|no longer)|n'?t) respond\w*\b"
        rf"|{_DOWN}",
        re.I,
    ),
    Reported.SLOW: re.compile(
        r"\bs+l+o+w+(ly|ness|er)?\b(?!\s+down\b)|\blatenc|\bp9\d\b|\bttfb\b|\blagg(y|ing)\b"
        r"|\btak\w* (so |too |very )?long\b|\btak\w* (forever|ages)\b|\bsluggish\b"
        r"|(?<!connect )(?<!connection )(?<!connecting )"
        r"\btim(e|es|ing|ed)[ -]?outs?\b(?!\s+(setting|config\w*|value|is set|of|for)\b)"
        r"|\bhangs?\b|\bhanging\b(?!\s+(on|onto)\b)",
        re.I,
    ),
    Reported.UNREACHABLE: re.compile(
        r"\b(can'?t|cannot|can not|unable to|fails? to|failing to|could ?n[o']t) "
        r"(reach|connect|resolve|talk to|access|get to)\b|\bnot reachable\b"
        r"|\bconn(ection)?s? (\w+ )?(refused|reset|errors?|fail\w*|timed? ?out)\b|\bunreachable\b"
        r"|\bconnect(ion|ing)? tim(e|es|ed)[ -]?outs?\b"
        r"|\bECONNREFUSED\b|\bno route\b|\bNXDOMAIN\b|\bno such host\b"
        # a dropped packet is a connection that did not get through (Hubble, Cilium, iptables)
        r"|\b(dropped|dropping|drops?)\b[^.?!]{0,25}\b(packets?|connections?|traffic|SYNs?|flows?)\b"
        r"|\bpackets?\b[^.?!]{0,25}\bdrop"
        r"|\b(dns|name resolution|lookups?)\b[^.?!]{0,20}\b(fail\w*|errors?|issues?|problems?|"
        r"broken|timeouts?|not work\w*)|\b(fail\w*|errors?|issues?|problems?)\b[^.?!]{0,20}"
        r"\b(dns|name resolution)\b",
        re.I,
    ),
    # requests (not an object: "configmap not found" is the kubelet's, not a user's report)
    Reported.NOT_FOUND: re.compile(
        r"(?<![\w.-])404s?(?![\w.-])(?!\s*(rows|bytes|ms|items)\b)|\b(come|coming|comes|came|get\w*|got|return\w*"
        r"|answer\w*|respond\w*|see\w*)\b[^.?!]{0,20}\bnot[ -]found\b|\bpage not found\b",
        re.I,
    ),
    Reported.NOT_RUN: re.compile(
        r"\b(has|have|had|did|does|do|is|are|was|were)\s*(n'?t|not|never)\s+(\w+\s+)?"
        r"(run|ran|running|fire[sd]?|firing|go(ne)? out|went out|sen[dt]|trigger\w*|execut\w*"
        r"|happen\w*|kick\w* off)\b"
        r"|\b(never|no longer|stopped)\s+(runs?|ran|running|fires?|firing|trigger\w*|goes out)\b"
        r"|\bnot (being )?(run|sent|triggered|scheduled)\b|\bno (new )?(jobs?|runs?) (since|for)\b",
        re.I,
    ),
}
# In an alert's name a single word says what fires: TargetDown, HTTP5xxRate, ErrorBudgetBurn.
_ALERT_ERRORS = re.compile(
    r"(?<!scale )\b(down|errors?|fail\w*|5xx|burn\w*|unavailable|slo)\b", re.I
)

# A log line that says a connection failed, in the words of the common runtimes and clients.
_CONNECTION_FAILED = re.compile(
    r"connection refused|ECONNREFUSED|ECONNRESET|connection reset|no route to host"
    r"|i/o timeout|dial tcp|connect(ion)? timed? ?out|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND"
    r"|no such host|could not resolve|NXDOMAIN|name or service not known|temporary failure in"
    r" name resolution|getaddrinfo|UnknownHostException|ConnectException|upstream connect error"
    r"|503 Service Unavailable|StatusCode\.UNAVAILABLE|code = Unavailable",
    re.I,
)
# Alert names split into words: at a lower-to-upper step, before the last capital of a run
# (APILatency: API Latency), between letters and digits (HTTP5xx: HTTP 5xx), at _ and -.
# A log line that says a call the program made failed: a connection, its credentials or rights
# (401/403 from an API, the cloud's AccessDenied, EACCES), or a resource it ran out of (disk,
# file descriptors). Whatever the workload, a current log saying so stands against "no fault".
_CALL_FAILED = re.compile(
    _CONNECTION_FAILED.pattern
    + r"|\b(401|403)\b[^\n]{0,40}\b(unauthori[sz]ed|forbidden)|\bforbidden: User\b"
    r"|permission denied|access ?denied|AccessDenied|ExpiredToken|InvalidClientTokenId"
    r"|is not authorized to perform|ENOSPC|no space left on device|read-only file system"
    r"|too many open files|EMFILE|EACCES",
    re.I,
)
_CAPITAL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=\d)|[_-]+")
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_NEGATED = re.compile(
    r"\b(no|not|never|without|zero|nor|nothing|none|nobody|neither)\s+(\w+\s+)?$|n't\s+(\w+\s+)?$",
    re.I,
)


# The requester's own word that what they can see is healthy ("pods are up", "0 restarts",
# "logs look clean"): said beside a reported failure, it is what they already checked.
_SAYS_HEALTHY = re.compile(
    r"\b(pods?|it|they|service|deployment|everything|containers?)\s+"
    r"(are|is|look\w*|seems?|shows?|showing)\s+(all\s+)?"
    r"(up|fine|ok|okay|healthy|green|ready|running|normal)\b"
    r"|\b(0|zero|no) restarts\b|\blogs?\s+(are|is|look\w*|seems?)\s+(clean|fine|normal)\b"
    r"|\blogs?\s+(have|has|show\w*)\s+(zero|no|nothing)\b[^.?!]{0,12}\b(errors?|warnings?)?",
    re.I,
)


def says_healthy(words: str) -> str | None:
    """Where the request says what it sees is healthy, in its words; None when it does not."""
    m = _SAYS_HEALTHY.search(words.translate(_QUOTES))
    return m.group(0) if m else None


def reported(words: str, alert: str | None) -> list[Reported]:
    """The measurable outcomes the request reports, in a fixed order; a negated mention
    ("no timeouts", "it isn't slow", "nothing returns 500s") reports nothing."""
    name = _CAPITAL.sub(" ", alert or "")
    text = f"{words} {name}".translate(_QUOTES)
    kinds = [
        kind
        for kind, pattern in _REPORTS.items()
        if any(
            not _NEGATED.search(text[max(0, m.start() - 24) : m.start()])
            for m in pattern.finditer(text)
        )
    ]
    if Reported.ERRORS not in kinds and _ALERT_ERRORS.search(name):
        kinds.insert(0, Reported.ERRORS)
    return kinds


@dataclass(frozen=True)
class Series:
    """One measured signal over the window: None when nothing could be read."""

    base: float
    peak: float  # the highest point after the first third
    last: float

    def rose(self, floor: float, factor: float) -> bool:
        return self.peak > max(floor, self.base * factor)


def _series(reads: Reads, query: str, end: float) -> Series | None:
    result = reads.get("prom.range", query=query, start=end - WINDOW_S, end=end)
    if result.status is not ToolStatus.OK or not isinstance(result.data, list) or not result.data:
        return None
    points = [
        float(v)
        for _, v in (result.data[0].get("values") or [])
        if isinstance(v, int | float | str) and str(v) not in ("NaN", "nan")
    ]
    if len(points) < 6:
        return None
    third = points[: len(points) // 3]
    return Series(sorted(third)[len(third) // 2], max(points[len(points) // 3 :]), points[-1])


def _share(reads: Reads, ns: str, end: float, matchers: tuple[str, ...]) -> Series | None:
    """The share of the namespace's counted requests that `matchers` select, over the window:
    its own counters, or where it has none, what a proxy elsewhere counts for its objects."""
    own = _share_of(reads, f'namespace="{ns}"', end, matchers)
    return own if own is not None else edge_share(reads, ns, end, matchers)


def edge_share(
    reads: Reads, ns: str, end: float, matchers: tuple[str, ...] = ERROR_MATCHERS
) -> Series | None:
    """The share a proxy in another namespace counts for this one's objects (scraped there,
    their namespace is kept as `exported_namespace`: the ingress controller's counter)."""
    return _share_of(reads, f'exported_namespace="{ns}"', end, matchers)


def _share_of(reads: Reads, where: str, end: float, matchers: tuple[str, ...]) -> Series | None:
    sel = f"{REQUEST_COUNTER_SELECTOR},{where}"
    picked = " or ".join(rate(f"{{{sel},{m}}}") for m in matchers)
    found = _series(reads, f"sum({picked}) / sum({rate('{' + sel + '}')})", end)
    if found is not None:
        return found
    # none of them at all in the window: the share is 0 wherever requests were counted
    total = _series(reads, f"sum({rate('{' + sel + '}')})", end)
    return Series(0.0, 0.0, 0.0) if total is not None else None


def error_ratio(reads: Reads, ns: str, end: float) -> Series | None:
    return _share(reads, ns, end, ERROR_MATCHERS)


def not_found_ratio(reads: Reads, ns: str, end: float) -> Series | None:
    """The share of the namespace's requests answered 404, over the window."""
    return _share(reads, ns, end, NOT_FOUND_MATCHERS)


def latencies(reads: Reads, ns: str, end: float) -> dict[str, Series]:
    names = reads.get(
        "prom.metric_names", selector=f'{{namespace="{ns}"}}', start=end - WINDOW_S, end=end
    )
    listed = {str(n) for n in names.data or []} if names.status is ToolStatus.OK else set()
    out = {}
    sel = f'{{namespace="{ns}"}}'
    for base in timed(listed)[:2]:
        q = f"sum({rate(base + '_sum' + sel)}) / sum({rate(base + '_count' + sel)})"
        found = _series(reads, q, end)
        if found is not None:
            out[base] = found
    # a histogram exported without _sum/_count (or whose mean hides a tail): its p99
    for base in timed_histograms(listed)[:2]:
        if base in out:
            continue
        q = f"histogram_quantile(0.99, sum by (le) ({rate(base + '_bucket' + sel)}))"
        found = _series(reads, q, end)
        if found is not None:
            out[base] = found
    return out


def rose(reads: Reads, ns: str, now: float | None) -> list[str]:
    """What rose well above its start in the window, or (errors) stands above the floor now.
    Empty also when Prometheus cannot be read: this check speaks only to what it saw."""
    end = time.time() if now is None else now
    out = []
    ratio = error_ratio(reads, ns, end)
    if ratio is not None and ratio.rose(ERROR_RATIO_FLOOR, 3.0):
        out.append(f"the server-error ratio rose to {ratio.peak:.1%}")
    elif ratio is not None and ratio.last > ERROR_RATIO_FLOOR:
        out.append(f"the server-error ratio is {ratio.last:.1%}")
    for base, mean in latencies(reads, ns, end).items():
        if mean.rose(0.1, 2.0):
            out.append(f"the mean latency of {base} rose to {mean.peak:.2f}s")
    return out


def first_logged(
    reads: Reads,
    ns: str,
    pods: list[Json],
    pattern: re.Pattern[str] = _CONNECTION_FAILED,
    *,
    previous: bool = True,
) -> tuple[bool | None, str]:
    """Whether the logs of these pods have a line `pattern` matches (a failed connection by
    default), and that line: the current log of each container and, with `previous`, after a
    restart the previous one too; pods that are not ready or have restarted first. None when
    no log with a line in it could be read (an empty log, a pod that just restarted, measures
    nothing)."""
    read_any = False
    ordered = sorted(pods, key=lambda p: bool(p.get("ready")) and not _restarted(p))
    for pod in ordered[:LOG_PODS]:
        for c in (pod.get("containers") or [])[:LOG_CONTAINERS]:
            restarted = previous and int(c.get("restarts") or 0) > 0
            for before in (False, True) if restarted else (False,):
                args = {"namespace": ns, "pod": pod.get("name"), "container": c.get("name")}
                result = reads.get("k8s.logs", **args, **({"previous": True} if before else {}))
                lines = [x for x in result.data or [] if isinstance(x, str)]
                if result.status is not ToolStatus.OK or not lines:
                    continue
                read_any = True
                line = next((x for x in lines if pattern.search(x)), None)
                if line is not None:
                    return True, f'{pod.get("name")} logs "{line.strip()[:120]}"'
    return (False, "") if read_any else (None, "no log of the pods asked about has a line")


def _restarted(pod: Json) -> bool:
    return any(int(c.get("restarts") or 0) > 0 for c in pod.get("containers") or [])


def _not_run(reads: Reads, ns: str, words: str, end: float) -> list[str]:
    """CronJobs (those the request names, else all in `ns`) that have not run when due: never
    scheduled, or not within the cadence the words state (else their own period) and half again.
    Nothing when `ns` has none: the pods and conditions speak for other workloads."""
    crons = [c for c in reads.items("k8s.cronjobs", namespace=ns) or [] if c.get("name")]
    named = [c for c in crons if re.search(rf"\b{re.escape(str(c['name']))}\b", words)]
    stated = cron.stated_cadence(words)
    out = []
    for c in named or crons:
        last = _epoch(c.get("last_schedule"))
        parsed = cron.parse(str(c.get("schedule") or ""))
        period = cron.period_s(parsed, end) if parsed is not None else None
        due = stated or period or 0.0  # what the user expects first: they report it missing
        if last is None or end - last > due * 1.5:
            since = "has never been scheduled" if last is None else "has not run when due"
            out.append(f"the request reports {Reported.NOT_RUN}: CronJob {c['name']} {since}")
    return out


def _epoch(value: object) -> float | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def unconfirmed(
    kinds: Iterable[Reported],
    reads: Reads,
    ns: str,
    pods: list[Json],
    now: float | None,
    words: str = "",
) -> list[str]:
    """For each outcome the request reports: why 'no fault' does not answer it (measured
    there, or not measurable), or nothing when the judge measured it absent."""
    end = time.time() if now is None else now
    out = []
    for kind in kinds:
        if kind is Reported.ERRORS:
            ratio = error_ratio(reads, ns, end)
            # a spike over by now; a rise, or a ratio above the floor now, is `rose`'s to report
            spiked = (
                ratio is not None
                and ratio.peak > ERROR_RATIO_FLOOR >= ratio.last
                and not ratio.rose(ERROR_RATIO_FLOOR, 3.0)
            )
            if ratio is None:
                out.append(f"the request reports {kind}, and no request counter in {ns} counts it")
            elif spiked:
                out.append(
                    f"the request reports {kind}: the server-error ratio reached "
                    f"{ratio.peak:.1%} in the window"
                )
        elif kind is Reported.NOT_RUN:
            out += _not_run(reads, ns, words, end)
        elif kind is Reported.NOT_FOUND:
            missing = not_found_ratio(reads, ns, end)
            if missing is None:
                out.append(f"the request reports {kind}, and no request counter in {ns} counts it")
            elif missing.rose(NOT_FOUND_FLOOR, 2.0):
                out.append(
                    f"the request reports {kind}: the share of requests answered 404 rose from "
                    f"{missing.base:.1%} to {missing.peak:.1%} in the window"
                )
            elif missing.last > NOT_FOUND_FLOOR:  # it stood there all window: still what they see
                out.append(
                    f"the request reports {kind}: {missing.last:.1%} of requests are answered "
                    "404 now"
                )
        elif kind is Reported.SLOW:
            if not latencies(reads, ns, end):
                out.append(f"the request reports {kind}, and no latency series in {ns} measures it")
        else:
            seen, detail = first_logged(reads, ns, pods)
            if seen is None:
                out.append(f"the request reports {kind}, and {detail}")
            elif seen:
                out.append(f"the request reports {kind}: {detail}")
    return out


def failed_calls(reads: Reads, ns: str, pods: list[Json]) -> str | None:
    """The first line of the current logs of these pods that says a call failed, quoted with
    its pod; None when none does or none could be read (the other checks speak to that)."""
    seen, detail = first_logged(reads, ns, pods, _CALL_FAILED, previous=False)
    return detail if seen else None
