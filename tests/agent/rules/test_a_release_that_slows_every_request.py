"""A release that makes most requests slow without failing any: when most requests turn
slower than a histogram's largest finite bucket the p99 is pinned at that bound before and
after, so the median is read too; and what the new pods say about themselves is a warning
they repeat (pino's and bunyan's numeric levels read as levels), quoted as what the release
does."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from triage.agent.planners.rules import text


def pino(level: int, msg: str, **more: object) -> str:
    return json.dumps({"level": level, "time": "2026-12-06T03:44:43Z", "msg": msg, **more})


@given(level=st.sampled_from([10, 20, 30, 40, 50, 60]))
def test_a_numeric_level_is_read_as_its_level(level: int) -> None:
    assert text.severity(pino(level, "request completed")) == {40: 1, 50: 2, 60: 3}.get(level, 0)


def test_words_still_count_on_an_info_line() -> None:
    assert text.severity(pino(30, "upstream request failed")) == 2


def test_a_repeated_warning_is_what_the_pods_say() -> None:
    log = [
        pino(30, "signin-api 5.3.0 listening on :3000"),
        pino(40, "event loop blocked", lagMs=2870),
        pino(30, "request completed", responseTime=3912),
        pino(40, "event loop blocked", lagMs=4105),
        pino(40, "deprecated option ignored"),
    ]
    said = text.recurring_warning(log)
    assert said is not None
    assert "event loop blocked" in said[0]
    assert "4105" in said[0]  # the last one
    assert said[1] == 2


def test_one_warning_or_an_error_is_not_a_recurring_warning() -> None:
    assert text.recurring_warning([pino(40, "event loop blocked", lagMs=2870)]) is None
    log = [pino(40, "slow query", ms=900), pino(40, "slow query", ms=950), pino(50, "boom")]
    assert text.recurring_warning(log) is None  # the error speaks, not the warnings
