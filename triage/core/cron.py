"""Cron schedules as the CronJob controller reads them, and cadences as people say them.

A CronJob whose schedule is valid but not what its owner meant ("0 7 1 * *" for "every Monday at
07:00": the 1 landed in day-of-month) fails silently: no event, no failed Job, only runs that
never come. Telling it needs what the schedule means (`parse`, `describe`), when it fires
(`next_runs`, `period_s`), and how often the question expects it to (`stated_cadence`).

The grammar is the controller's (robfig/cron's standard parser): five fields (minute, hour,
day-of-month, month, day-of-week), each `*` or `?`, a number or name, a range `a-b`, a step
`/n` on either, or a list of those; the macros `@yearly`, `@annually`, `@monthly`, `@weekly`,
`@daily`, `@midnight`, `@hourly`; a leading `CRON_TZ=`/`TZ=` zone (ignored: the gaps between
runs do not depend on it; when a run's own time matters, spec.timeZone is passed to
`next_runs`). When day-of-month and day-of-week are both
restricted, a day matching either fires; when one is `*` or `?`, the other decides.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
import zoneinfo
from dataclasses import dataclass

DAY_S = 86_400.0
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTH_NAMES = [
    *("January", "February", "March", "April", "May", "June", "July"),
    *("August", "September", "October", "November", "December"),
]
_DAY_NAMES = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
_MONTHS = [m[:3].lower() for m in _MONTH_NAMES]
_DAYS = [d[:3].lower() for d in _DAY_NAMES]
# (name, lowest, highest, names)
_FIELDS = (
    ("minute", 0, 59, None),
    ("hour", 0, 23, None),
    ("day-of-month", 1, 31, None),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 7, _DAYS),
)
HORIZON_DAYS = 4 * 366  # the furthest `next_runs` looks (a "31 2 *" schedule never fires)


@dataclass(frozen=True)
class Cron:
    schedule: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool


def _value(text: str, low: int, names: list[str] | None) -> int:
    if names is not None and text.lower()[:3] in names and not text.isdigit():
        return names.index(text.lower()[:3]) + (1 if low == 1 else 0)
    if not text.isdigit():
        raise ValueError(text)
    return int(text)


def _field(text: str, low: int, high: int, names: list[str] | None) -> frozenset[int]:
    out: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        step = int(step_text) if step_text else 1
        if step < 1:
            raise ValueError(part)
        if body in ("*", "?"):
            start, end = low, high
        elif "-" in body:
            a, b = body.split("-", 1)
            start, end = _value(a, low, names), _value(b, low, names)
        else:
            start = _value(body, low, names)
            end = high if step_text else start
        if not low <= start <= end <= high:
            raise ValueError(part)
        out.update(range(start, end + 1, step))
    return frozenset(out)


def parse(schedule: str) -> Cron | None:
    """The schedule's meaning, or None when the controller would refuse it."""
    text = re.sub(r"^(CRON_TZ|TZ)=\S+\s+", "", schedule.strip())
    text = _MACROS.get(text.lower(), text)
    fields = text.split()
    if len(fields) != len(_FIELDS):
        return None
    try:
        sets = [
            _field(f, low, high, names)
            for f, (_, low, high, names) in zip(fields, _FIELDS, strict=True)
        ]
    except ValueError:
        return None
    weekdays = frozenset(d % 7 for d in sets[4])
    return Cron(
        schedule=schedule,
        minutes=sets[0],
        hours=sets[1],
        days=sets[2],
        months=sets[3],
        weekdays=weekdays,
        days_restricted=fields[2][0] not in "*?",
        weekdays_restricted=fields[4][0] not in "*?",
    )


def _day_fires(cron: Cron, day: dt.date) -> bool:
    if day.month not in cron.months:
        return False
    dom = day.day in cron.days
    dow = (day.isoweekday() % 7) in cron.weekdays
    if cron.days_restricted and cron.weekdays_restricted:
        return dom or dow
    return dom and dow


def _zone(name: str | None) -> dt.tzinfo:
    """A CronJob's spec.timeZone (an IANA name); UTC when unset or unknown here."""
    if not name:
        return dt.UTC
    try:
        return zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return dt.UTC


def next_runs(cron: Cron, after: float, count: int = 5, zone: str | None = None) -> list[float]:
    """The next `count` times (epoch seconds) the schedule fires after `after`, its fields
    read in `zone` (spec.timeZone; UTC when unset)."""
    tz = _zone(zone)
    start = dt.datetime.fromtimestamp(after, tz)
    out: list[float] = []
    day = start.date()
    for _ in range(HORIZON_DAYS):
        if _day_fires(cron, day):
            for hour in sorted(cron.hours):
                for minute in sorted(cron.minutes):
                    at = dt.datetime(day.year, day.month, day.day, hour, minute, tzinfo=tz)
                    if at.timestamp() > after:
                        out.append(at.timestamp())
                        if len(out) >= count:
                            return out
        day += dt.timedelta(days=1)
    return out


def previous_run(cron: Cron, before: float, zone: str | None = None) -> float | None:
    """The last time the schedule fired before `before` (within the week before it)."""
    runs = [t for t in next_runs(cron, before - 7 * DAY_S, 7 * 24 * 60, zone) if t < before]
    return runs[-1] if runs else None


def period_s(cron: Cron, after: float) -> float | None:
    """The longest gap between its next runs: how long the schedule can leave its work undone
    (None: it fires at most once in the horizon)."""
    runs = next_runs(cron, after, 6)
    gaps = [b - a for a, b in itertools.pairwise(runs)]
    return max(gaps) if gaps else None


def cadence_words(seconds: float) -> str:
    """'every 15 minutes', 'hourly', 'daily', 'weekly', 'monthly', 'yearly'."""
    if seconds < 3_000.0:
        minutes = max(1, round(seconds / 60))
        return "every minute" if minutes == 1 else f"every {minutes} minutes"
    for low, high, word in (
        (3_000.0, 3_700.0, "hourly"),
        (DAY_S * 0.9, DAY_S * 1.1, "daily"),
        (DAY_S * 6.5, DAY_S * 7.5, "weekly"),
        (DAY_S * 27, DAY_S * 32, "monthly"),
        (DAY_S * 300, float("inf"), "yearly"),
    ):
        if low <= seconds < high:
            return word
    if seconds < DAY_S:
        return f"every {round(seconds / 3600)} hours"
    return f"every {round(seconds / DAY_S)} days"


def _listed(values: frozenset[int], names: list[str] | None = None) -> str:
    ordered = sorted(values)
    return ", ".join(names[v] if names else str(v) for v in ordered)


def describe(cron: Cron) -> str:
    """What the five fields say, in words: 'at 07:00 on day-of-month 1 (every month)'."""
    if len(cron.minutes) == 1 and len(cron.hours) == 1:
        at = f"at {min(cron.hours):02d}:{min(cron.minutes):02d}"
    else:
        minutes = "minute" + ("s" if len(cron.minutes) > 1 else "")
        hours = "every hour" if len(cron.hours) == 24 else f"hours {_listed(cron.hours)}"
        at = f"at {minutes} {_listed(cron.minutes)} of {hours}"
    days = []
    if cron.days_restricted:
        days.append(f"day-of-month {_listed(cron.days)}")
    if cron.weekdays_restricted:
        days.append(_listed(cron.weekdays, _DAY_NAMES))
    when = f" on {' or '.join(days)}" if days else " every day"
    months = (
        f" in {_listed(frozenset(m - 1 for m in cron.months), _MONTH_NAMES)}"
        if len(cron.months) < 12
        else ""
    )
    return at + when + months


_UNIT_S = {"minute": 60.0, "min": 60.0, "m": 60.0, "hour": 3600.0, "hr": 3600.0, "h": 3600.0}
_UNIT_S |= {"day": DAY_S, "night": DAY_S, "morning": DAY_S, "evening": DAY_S}
_UNIT_S |= {"week": 7 * DAY_S, "month": 30 * DAY_S, "year": 365 * DAY_S}
_UNIT_S |= {d.lower(): 7 * DAY_S for d in _DAY_NAMES}
_ADVERBS = {"hourly": 3600.0, "daily": DAY_S, "nightly": DAY_S, "weekly": 7 * DAY_S}
_ADVERBS |= {"monthly": 30 * DAY_S, "yearly": 365 * DAY_S, "annually": 365 * DAY_S}
_ADVERBS |= {"quarter-hourly": 900.0, "half-hourly": 1800.0}
_TIMES = {"once": 1, "twice": 2, "thrice": 3}
_WORD_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "ten": 10}
_WORD_NUMBERS |= {"twelve": 12, "fifteen": 15, "twenty": 20, "thirty": 30}
_NUMBER = r"(?:\d+|" + "|".join(_WORD_NUMBERS) + r")"
_UNIT = r"(?P<unit>" + "|".join(sorted(_UNIT_S, key=len, reverse=True)) + r")(?:s|es)?"
# How people say how often something runs: an adverb ("nightly", "half-hourly"); "every" or
# "each" with a count, "other", or a fraction of the unit ("every 15 minutes", "every 15m",
# "each quarter hour", "every half an hour", "every other day"); or a count per unit ("twice a
# day", "4 times an hour", "once per week").
_CADENCE = re.compile(
    r"\b(?P<adverb>" + "|".join(sorted(_ADVERBS, key=len, reverse=True)) + r")\b"
    r"|\b(?:every|each)\s+(?:(?P<other>other)\s+|(?P<n>" + _NUMBER + r")\s*|"
    r"(?P<part>quarter|half)(?:[\s-]+of)?(?:[\s-]+an?)?[\s-]+)?" + _UNIT + r"\b"
    r"|\b(?:(?P<times>once|twice|thrice)|(?P<k>" + _NUMBER + r")\s+times)\s+"
    r"(?:a|an|per|every|each)\s+" + _UNIT.replace("unit", "per") + r"\b",
    re.I,
)


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _WORD_NUMBERS[word.lower()]


def stated_cadence(words: str) -> float | None:
    """How often the words say something should run, in seconds ("the weekly digest",
    "every 15 minutes", "each quarter hour", "twice a day", "each Monday"), or None when
    they say no cadence."""
    m = _CADENCE.search(words)
    if m is None:
        return None
    if m.group("adverb"):
        return _ADVERBS[m.group("adverb").lower()]
    if m.group("per"):
        times = _TIMES[m.group("times").lower()] if m.group("times") else _count(m.group("k"))
        return _UNIT_S[m.group("per").lower()] / times if times > 0 else None
    unit = _UNIT_S[m.group("unit").lower()]
    if len(m.group("unit")) == 1 and (not m.group("n") or m.group(0)[-1] in "sS"):
        # a letter is a unit only right after a count ("every 15m"), and "15ms" is not one
        return None
    if m.group("part"):
        return unit * (0.25 if m.group("part").lower() == "quarter" else 0.5)
    if m.group("other"):
        return 2 * unit
    count = _count(m.group("n")) if m.group("n") else 1
    return unit * count if count > 0 else None  # "every 0 minutes"
