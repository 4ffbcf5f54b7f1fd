"""A setting whose value is a wait is read in seconds the way such settings are written (a
bare number is seconds unless the name says milliseconds), and a request's duration is read
from the access-log shapes that carry one; what is not a number of time is not read."""

from __future__ import annotations

import pytest

from triage.agent.planners.rules.reasons import _TOOK, _seconds_of


@pytest.mark.parametrize(
    ("name", "value", "seconds"),
    [
        ("POLL_TIMEOUT_SECONDS", "25", 25.0),
        ("LONGPOLL_WAIT_MS", "30000", 30.0),
        ("HOLD_TIMEOUT", "2m", 120.0),
        ("KEEPALIVE_TIMEOUT", "500ms", 0.5),
        ("POLL_TIMEOUT", "soon", None),
        ("POLL_TIMEOUT", "", None),
    ],
)
def test_a_wait_setting_in_seconds(name: str, value: str, seconds: float | None) -> None:
    assert _seconds_of(name, value) == seconds


@pytest.mark.parametrize(
    ("line", "number"),
    [
        ("request finished; method=GET; status=200; duration_ms=25002", "25002"),
        ('{"msg":"done","duration": 1.5, "status": 200}', "1.5"),
        ("res={statusCode:200}; responseTime=9", "9"),
        ("GET /poll 200 took 30001ms", "30001"),
    ],
)
def test_a_duration_is_read_where_logs_put_it(line: str, number: str) -> None:
    m = _TOOK.search(line)
    assert m is not None
    assert m.group("n") == number


def test_no_duration_in_a_line_without_one() -> None:
    assert _TOOK.search("GET /v1/items 200 bytes=512") is None
