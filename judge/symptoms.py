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
from dataclasses import dataclass
from enum import StrEnum

from judge.reads import Json, Reads
from tools.results import ToolStatus
from triage.core.signals import ERROR_MATCHERS, REQUEST_COUNTER_SELECTOR, timed

WINDOW_S = 3 * 3600.0
ERROR_RATIO_FLOOR = 0.05
LOG_PODS = 3  # current logs read per 'no fault' that answers a report of failed connections


class Reported(StrEnum):
    ERRORS = "failing requests"
    SLOW = "slowness"
    UNREACHABLE = "failed connections"


_REPORTS: dict[Reported, re.Pattern[str]] = {
    Reported.ERRORS: re.compile(
        r"\b5\d\d(s|\s*(errors?|responses?|status|codes?))\b"
        r"|\b(return\w*|get\w*|got|see\w*|seen|throw\w*|http|status|code|serv\w*|answer\w*)"
        r"\s+(\w+\s+)?5\d\d\b|\b5xx|\berror[ -]?rate|\bhigh ?errors?\b|\berrors? (spike|ratio)"
        r"|\b(return|throw|serv|giv|respond|answer)\w*\s+(\w+\s+){0,2}(errors?|failures?)\b"
        r"|\brequests?\s+(are\s+|keep\s+)?fail|\bfailing requests|\boutage\b|\bunavailable\b"
        r"|\bnot (working|responding|serving)\b"
        r"|\b(is|are|was|were|went|goes|go|been)\b(?:(?!\bup\b)[^.?!,;]){0,30}\bdown\b",
        re.I,
    ),
    Reported.SLOW: re.compile(
        r"\bslow(ly|ness|er)?\b|\blatenc|\btak\w* (so |too |very )?long\b|\bsluggish\b"
        r"|\btim(e|es|ing|ed) ?out\b|\btimeouts?\b|\bhangs?\b|\bhanging\b",
        re.I,
    ),
    Reported.UNREACHABLE: re.compile(
        r"\b(can'?t|cannot|can not|unable to|fails? to|failing to|could ?n[o']t) "
        r"(reach|connect|resolve|talk to|access|get to)\b"
        r"|\bconnection (refused|reset|errors?|failures?|timed? ?out)\b|\bunreachable\b"
        r"|\bno route\b|\bdns\b|\bname resolution\b",
        re.I,
    ),
}

# A log line that says a connection failed, in the words of the common runtimes and clients.
_CONNECTION_FAILED = re.compile(
    r"connection refused|ECONNREFUSED|ECONNRESET|connection reset|no route to host"
    r"|i/o timeout|dial tcp|connect(ion)? timed? ?out|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND"
    r"|no such host|could not resolve|NXDOMAIN|name or service not known|temporary failure in"
    r" name resolution|getaddrinfo|UnknownHostException|ConnectException|upstream connect error"
    r"|503 Service Unavailable|StatusCode\.UNAVAILABLE|code = Unavailable",
    re.I,
)
_CAPITAL = re.compile(r"(?<=[a-z])(?=[A-Z])")


_NEGATED = re.compile(r"\b(no|not|never|without|zero|nor)\s+(\w+\s+)?$|n't\s+(\w+\s+)?$", re.I)


def reported(words: str, alert: str | None) -> list[Reported]:
    """The measurable outcomes the request reports, in a fixed order; a negated mention
    ("no timeouts", "it isn't slow") reports nothing."""
    text = f"{words} {_CAPITAL.sub(' ', alert or '')}"
    return [
        kind
        for kind, pattern in _REPORTS.items()
        if any(
            not _NEGATED.search(text[max(0, m.start() - 24) : m.start()])
            for m in pattern.finditer(text)
        )
    ]


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


def error_ratio(reads: Reads, ns: str, end: float) -> Series | None:
    sel = f'{REQUEST_COUNTER_SELECTOR},namespace="{ns}"'
    errors = " or ".join(f"rate({{{sel},{m}}}[5m])" for m in ERROR_MATCHERS)
    found = _series(reads, f"sum({errors}) / sum(rate({{{sel}}}[5m]))", end)
    if found is not None:
        return found
    # no server error at all in the window: the ratio is 0 wherever requests were counted
    total = _series(reads, f"sum(rate({{{sel}}}[5m]))", end)
    return Series(0.0, 0.0, 0.0) if total is not None else None


def latencies(reads: Reads, ns: str, end: float) -> dict[str, Series]:
    names = reads.get(
        "prom.metric_names", selector=f'{{namespace="{ns}"}}', start=end - WINDOW_S, end=end
    )
    listed = {str(n) for n in names.data or []} if names.status is ToolStatus.OK else set()
    out = {}
    sel = f'{{namespace="{ns}"}}'
    for base in timed(listed)[:2]:
        q = f"sum(rate({base}_sum{sel}[5m])) / sum(rate({base}_count{sel}[5m]))"
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


def _failed_connections(reads: Reads, ns: str, pods: list[Json]) -> tuple[bool | None, str]:
    """Whether the current logs of these pods show a failed connection (None: none read)."""
    read_any = False
    for pod in pods[:LOG_PODS]:
        for c in (pod.get("containers") or [])[:2]:
            result = reads.get("k8s.logs", namespace=ns, pod=pod.get("name"), container=c["name"])
            if result.status not in (ToolStatus.OK, ToolStatus.NO_DATA):
                continue
            read_any = True
            line = next(
                (
                    x
                    for x in result.data or []
                    if isinstance(x, str) and _CONNECTION_FAILED.search(x)
                ),
                None,
            )
            if line is not None:
                return True, f'{pod.get("name")} logs "{line.strip()[:120]}"'
    return (False, "") if read_any else (None, "no log of the pods asked about could be read")


def unconfirmed(
    words: str, alert: str | None, reads: Reads, ns: str, pods: list[Json], now: float | None
) -> list[str]:
    """For each outcome the request reports: why 'no fault' does not answer it (measured
    there, or not measurable), or nothing when the judge measured it absent."""
    end = time.time() if now is None else now
    out = []
    for kind in reported(words, alert):
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
        elif kind is Reported.SLOW:
            if not latencies(reads, ns, end):
                out.append(f"the request reports {kind}, and no latency series in {ns} measures it")
        else:
            seen, detail = _failed_connections(reads, ns, pods)
            if seen is None:
                out.append(f"the request reports {kind}, and {detail}")
            elif seen:
                out.append(f"the request reports {kind}: {detail}")
    return out
