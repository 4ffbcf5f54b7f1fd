"""The metric value generators produce exactly the values tests/scenarios/README.md documents."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from tests.support.scenarios import MetricSpec, parse_duration, parse_quantity


def metric(values: Any, *, kind: str = "gauge", **points: Any) -> MetricSpec:
    spec = {"from": "-5m", "step": "60s", "values": values, **points}
    return MetricSpec.model_validate({"name": "m", "type": kind, "points": spec})


def test_durations_and_quantities() -> None:
    assert parse_duration("-3h") == -10800
    assert parse_duration("90s") == 90
    assert parse_duration("1.5m") == 90
    assert parse_duration("250ms") == 0.25
    assert parse_duration(0) == 0
    assert parse_quantity("256Mi") == 256 * 2**20
    assert parse_quantity("1.5G") == 1.5e9
    assert parse_quantity("250m") == 0.25
    assert parse_quantity(7) == 7
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration("soon")
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity("12 apples")


def test_points_run_from_from_to_now_every_step() -> None:
    out = metric({"constant": 2}).generate()
    assert out == [(-300, 2), (-240, 2), (-180, 2), (-120, 2), (-60, 2), (0, 2)]


def test_ramp_holds_start_before_and_end_after_its_window() -> None:
    out = metric({"ramp": {"start": 0, "end": 40, "from": "-4m", "to": "-2m"}}).generate()
    assert [v for _, v in out] == [0, 0, 20, 40, 40, 40]


def test_step_at_switches_at_the_offset_inclusive() -> None:
    out = metric({"step_at": "-2m", "before": 0.1, "after": 30}).generate()
    assert [v for _, v in out] == [0.1, 0.1, 0.1, 30, 30, 30]


def test_sawtooth_peaks_now_and_every_period_before() -> None:
    out = metric({"sawtooth": {"min": 0, "max": 100, "period": "4m"}}, step="60s").generate()
    assert [v for _, v in out] == [75, 100, 25, 50, 75, 100]


def test_explicit_list_holds_its_last_value() -> None:
    out = metric([1, 2, "1Ki"]).generate()
    assert [v for _, v in out] == [1, 2, 1024, 1024, 1024, 1024]


def test_counter_accumulates_rate_times_elapsed_time() -> None:
    out = metric({"step_at": "-2m", "before": 0.5, "after": 2}, kind="counter").generate()
    assert [v for _, v in out] == [0, 30, 60, 180, 300, 420]


def test_counter_start_and_integer_floor() -> None:
    spec = {
        "name": "restarts_total",
        "type": "counter",
        "start": 3,
        "integer": True,
        "points": {"from": "-5m", "step": "60s", "values": {"constant": 0.01}},
    }
    out = MetricSpec.model_validate(spec).generate()
    assert [v for _, v in out] == [3, 3, 4, 4, 5, 6]


@pytest.mark.parametrize(
    ("points", "labels", "match"),
    [
        ({"from": "5m", "values": {"constant": 1}}, {}, "from < to <= 0"),
        ({"from": "-5m", "to": "1m", "values": {"constant": 1}}, {}, "from < to <= 0"),
        ({"from": "-5m", "step": 0, "values": {"constant": 1}}, {}, "step must be positive"),
        ({"from": "-5m", "values": {"constant": 1}}, {"namespace": "x"}, "namespace"),
        ({"from": "-5m", "values": {"wobble": 1}}, {}, "wobble"),
        ({"from": "-5m", "values": {"constant": 1}}, {"__x": "y"}, "invalid label"),
    ],
)
def test_invalid_metric_specs_are_rejected(points: Any, labels: Any, match: str) -> None:
    with pytest.raises(ValidationError, match=match):
        MetricSpec.model_validate(
            {"name": "m", "type": "gauge", "labels": labels, "points": points}
        )


def test_label_values_become_text() -> None:
    spec = metric({"constant": 1})
    spec = MetricSpec.model_validate({**spec.model_dump(by_alias=True), "labels": {"code": 503}})
    assert spec.labels == {"code": "503"}
