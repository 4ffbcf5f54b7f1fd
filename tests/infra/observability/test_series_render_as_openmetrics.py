"""Scenario series render as the OpenMetrics text promtool backfills (no servers needed)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from tests.support.observability import Series, openmetrics_from_series


def test_series_sharing_a_name_form_one_family_with_absolute_timestamps() -> None:
    series = [
        Series(
            name="req_total", type="counter", labels={"code": "200"}, samples=[(-60, 1), (0, 2)]
        ),
        Series(name="req_total", type="counter", labels={"code": "500"}, samples=[(0, 5)]),
        Series(name="depth", type="gauge", samples=[(-0.5, 1.5)]),
    ]

    text = openmetrics_from_series(series, now=1000.0)

    assert text.splitlines() == [
        "# TYPE req_total counter",
        'req_total{code="200"} 1.0 940',
        'req_total{code="200"} 2.0 1000',
        'req_total{code="500"} 5.0 1000',
        "# TYPE depth gauge",
        "depth 1.5 999.5",
        "# EOF",
    ]


def test_label_values_are_escaped_and_samples_sorted() -> None:
    series = Series(
        name="g", type="gauge", labels={"msg": 'a"b\\c\nd'}, samples=[(0, 2), (-10, float("nan"))]
    )

    text = openmetrics_from_series([series], now=100.0)

    assert text.splitlines()[1:3] == [
        'g{msg="a\\"b\\\\c\\nd"} NaN 90',
        'g{msg="a\\"b\\\\c\\nd"} 2.0 100',
    ]


def test_series_load_from_plain_data() -> None:
    series = Series.model_validate(
        {"name": "x_total", "type": "counter", "labels": {"a": "b"}, "samples": [[-30, 3]]}
    )

    assert series.samples == [(-30.0, 3.0)]


@pytest.mark.parametrize(
    "fields",
    [
        {"name": "bad-name", "type": "gauge", "samples": [(0, 1)]},
        {"name": "g", "type": "gauge", "labels": {"__x": "y"}, "samples": [(0, 1)]},
        {"name": "g", "type": "gauge", "samples": [(60, 1)]},
        {"name": "g", "type": "gauge", "samples": [(0, 1), (0, 2)]},
        {"name": "g", "type": "gauge", "samples": []},
        {"name": "g", "type": "histogram", "samples": [(0, 1)]},
        {"name": "c_total", "type": "counter", "samples": [(0, -1)]},
    ],
)
def test_invalid_series_are_refused(fields: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        Series.model_validate(fields)


def test_one_name_with_two_types_is_refused() -> None:
    series = [
        Series(name="m", type="gauge", samples=[(0, 1)]),
        Series(name="m", type="counter", labels={"a": "b"}, samples=[(0, 1)]),
    ]

    with pytest.raises(ValueError, match="both gauge and counter"):
        openmetrics_from_series(series, now=0.0)


def test_extension_continues_counters_at_their_rate_and_holds_gauges() -> None:
    series = [
        Series(name="c_total", type="counter", samples=[(-60, 10), (0, 16)]),
        Series(name="g", type="gauge", samples=[(-60, 3), (0, 5)]),
        Series(name="one", type="gauge", samples=[(-30, 7)]),
    ]

    lines = openmetrics_from_series(series, now=1000.0, extend_for=120).splitlines()

    assert [line for line in lines if line.startswith("c_total")][-2:] == [
        "c_total 22.0 1060",
        "c_total 28.0 1120",
    ]
    assert [line for line in lines if line.startswith("g ")][-2:] == ["g 5.0 1060", "g 5.0 1120"]
    assert [line for line in lines if line.startswith("one")] == [
        "one 7.0 970",
        "one 7.0 1030",
        "one 7.0 1090",
    ]


def test_a_counter_that_just_reset_is_extended_flat() -> None:
    series = Series(name="c_total", type="counter", samples=[(-60, 10), (0, 2)])

    lines = openmetrics_from_series([series], now=0.0, extend_for=60).splitlines()

    assert lines[-2] == "c_total 2.0 60"


def test_a_series_that_ended_before_now_is_not_revived() -> None:
    # a metric renamed at -20 min: the old name's samples stop there, and extending it would
    # make the old name look exported still
    gone = Series(name="old_total", type="counter", samples=[(-1260, 0), (-1200, 90)])
    live = Series(name="new_total", type="counter", samples=[(-60, 0), (0, 90)])

    lines = openmetrics_from_series([gone, live], now=2000.0, extend_for=120).splitlines()

    assert [line for line in lines if line.startswith("old_total")] == [
        "old_total 0.0 740",
        "old_total 90.0 800",
    ]
    assert [line for line in lines if line.startswith("new_total")][-1] == "new_total 270.0 2120"
