"""triage/core/cron.py reads a CronJob's schedule as the controller does (robfig/cron's standard
five fields), checked against a brute-force walk over every minute, and reads the cadence an
engineer states ("the weekly digest", "every 15 minutes")."""

from __future__ import annotations

import datetime as dt
import zoneinfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from triage.core import cron

START = dt.datetime(2026, 12, 1, 18, 7, tzinfo=dt.UTC).timestamp()


def _brute(c: cron.Cron, after: float, minutes: int) -> list[float]:
    out = []
    first = (int(after) // 60 + 1) * 60
    for i in range(minutes):
        at = dt.datetime.fromtimestamp(first + 60 * i, dt.UTC)
        dom = at.day in c.days
        dow = at.isoweekday() % 7 in c.weekdays
        day = (dom or dow) if c.days_restricted and c.weekdays_restricted else (dom and dow)
        if at.minute in c.minutes and at.hour in c.hours and at.month in c.months and day:
            out.append(at.timestamp())
    return out


def _field(low: int, high: int) -> st.SearchStrategy[str]:
    number = st.integers(low, high).map(str)
    span = st.tuples(st.integers(low, high), st.integers(low, high)).map(
        lambda t: f"{min(t)}-{max(t)}"
    )
    step = st.tuples(st.sampled_from(["*", f"{low}-{high}"]), st.integers(1, 9)).map(
        lambda t: f"{t[0]}/{t[1]}"
    )
    part = st.one_of(st.just("*"), number, span, step)
    return st.lists(part, min_size=1, max_size=3).map(
        lambda parts: "*" if "*" in parts else ",".join(parts)
    )


SCHEDULES = st.tuples(_field(0, 59), _field(0, 23), _field(1, 31), _field(1, 12), _field(0, 6)).map(
    " ".join
)


@settings(max_examples=60, deadline=None)
@given(SCHEDULES)
def test_next_runs_are_the_minutes_that_match(schedule: str) -> None:
    c = cron.parse(schedule)
    assert c is not None, schedule
    window = 40 * 24 * 60  # forty days, minute by minute
    expected = _brute(c, START, window)[:5]
    got = [t for t in cron.next_runs(c, START, 5) if t <= START + window * 60]
    assert got == expected, schedule


@pytest.mark.parametrize(
    ("schedule", "words", "next_run"),
    [
        ("0 7 1 * *", "at 07:00 on day-of-month 1", "2027-01-01 07:00"),
        ("0 7 * * 1", "at 07:00 on Monday", "2026-12-07 07:00"),
        ("0 7 * * MON", "at 07:00 on Monday", "2026-12-07 07:00"),
        ("30 2 * * 7", "at 02:30 on Sunday", "2026-12-06 02:30"),
        ("@weekly", "at 00:00 on Sunday", "2026-12-06 00:00"),
        ("*/20 * * * *", "at minutes 0, 20, 40 of every hour every day", "2026-12-01 18:20"),
        ("0 0 1 jan *", "at 00:00 on day-of-month 1 in January", "2027-01-01 00:00"),
        ("CRON_TZ=UTC 5 4 * * *", "at 04:05 every day", "2026-12-02 04:05"),
    ],
)
def test_a_schedule_is_described_field_by_field(schedule: str, words: str, next_run: str) -> None:
    c = cron.parse(schedule)
    assert c is not None
    assert cron.describe(c) == words
    first = dt.datetime.fromtimestamp(cron.next_runs(c, START, 1)[0], dt.UTC)
    assert first.strftime("%Y-%m-%d %H:%M") == next_run


@pytest.mark.parametrize(
    "schedule", ["", "0 7 * *", "61 * * * *", "* * 0 * *", "x y z a b", "*/0 * * * *"]
)
def test_what_the_controller_refuses_is_not_a_schedule(schedule: str) -> None:
    assert cron.parse(schedule) is None


def test_a_date_that_never_comes_has_no_runs_and_no_period() -> None:
    c = cron.parse("0 0 30 2 *")
    assert c is not None
    assert cron.next_runs(c, START, 3) == []
    assert cron.period_s(c, START) is None


@pytest.mark.parametrize(
    ("schedule", "cadence"),
    [
        ("0 7 1 * *", "monthly"),
        ("0 7 * * 1", "weekly"),
        ("0 3 * * *", "daily"),
        ("0 * * * *", "hourly"),
        ("*/15 * * * *", "every 15 minutes"),
        ("* * * * *", "every minute"),
        ("0 */6 * * *", "every 6 hours"),
    ],
)
def test_the_period_is_said_as_people_say_it(schedule: str, cadence: str) -> None:
    c = cron.parse(schedule)
    assert c is not None
    period = cron.period_s(c, START)
    assert period is not None
    assert cron.cadence_words(period) == cadence


@pytest.mark.parametrize(
    ("words", "seconds"),
    [
        ("the weekly digest didn't go out", 7 * cron.DAY_S),
        ("our nightly backup", cron.DAY_S),
        ("it should run every 15 minutes", 900.0),
        ("each Monday morning the report goes out", 7 * cron.DAY_S),
        ("hourly sync", 3600.0),
        ("why did the export fail?", None),
        ("it should run every 0 minutes", None),
        ("the sync is supposed to refresh each quarter hour", 900.0),
        ("it runs every half an hour", 1800.0),
        ("half-hourly export", 1800.0),
        ("every 15m or so", 900.0),
        ("every fifteen minutes", 900.0),
        ("twice a day", cron.DAY_S / 2),
        ("4 times an hour", 900.0),
        ("once per week", 7 * cron.DAY_S),
        ("every other day", 2 * cron.DAY_S),
        ("every few minutes", None),
        ("every time it runs", None),
        ("retries every 15ms", None),
        ("each m", None),
    ],
)
def test_a_stated_cadence_is_read(words: str, seconds: float | None) -> None:
    assert cron.stated_cadence(words) == seconds


ZONES = ["Europe/Berlin", "America/New_York", "Asia/Kolkata", "Australia/Sydney", "UTC"]


@given(
    hour=st.integers(0, 23),
    minute=st.integers(0, 59),
    zone=st.sampled_from(ZONES),
    after=st.integers(1_700_000_000, 1_900_000_000),
)
def test_a_schedule_fires_at_its_wall_clock_time_in_its_zone(
    hour: int, minute: int, zone: str, after: int
) -> None:
    parsed = cron.parse(f"{minute} {hour} * * *")
    assert parsed is not None
    runs = cron.next_runs(parsed, float(after), 3, zone)
    assert runs == sorted(runs)
    assert all(t > after for t in runs)
    for t in runs:
        local = dt.datetime.fromtimestamp(t, zoneinfo.ZoneInfo(zone))
        # a wall-clock time a DST change skips is taken as the zone takes it
        if (local.hour, local.minute) != (hour, minute):
            assert zone not in ("UTC", "Asia/Kolkata")
    last = cron.previous_run(parsed, float(after), zone)
    assert last is not None
    assert last < after
    assert after - last <= 25 * 3600
    assert cron.next_runs(parsed, last - 1, 1, zone) == [last]  # it is a time the schedule fires


def test_an_unknown_zone_is_read_as_utc() -> None:
    parsed = cron.parse("15 2 * * *")
    assert parsed is not None
    assert cron.next_runs(parsed, 0.0, 1, "Mars/Olympus") == cron.next_runs(parsed, 0.0, 1)
    berlin = cron.next_runs(parsed, 1_796_500_000.0, 1, "Europe/Berlin")[0]
    assert dt.datetime.fromtimestamp(berlin, dt.UTC).hour == 1  # 02:15 CET is 01:15 UTC


@given(
    n=st.integers(min_value=1, max_value=500),
    unit=st.sampled_from([("minute", 60.0), ("hour", 3600.0), ("day", cron.DAY_S)]),
    lead=st.sampled_from(["every", "each", "Every"]),
    plural=st.booleans(),
    before=st.sampled_from(["", "it should run ", "supposed to sync "]),
)
def test_a_count_of_units_is_read_in_any_form(
    n: int, unit: tuple[str, float], lead: str, plural: bool, before: str
) -> None:
    words = f"{before}{lead} {n} {unit[0]}{'s' if plural else ''}, but it did not"
    assert cron.stated_cadence(words) == n * unit[1]
