"""Questions, log lines and statuses name the namespace and times relative to now."""

from __future__ import annotations

import pytest

from tests.support.scenario_format import render_obj, render_text

NOW = 1_800_000_000.25  # 2027-01-15T08:00:00.250Z


def test_namespace_pod_clock_and_timestamp() -> None:
    text = "{namespace}/{pod} since {clock:-25m} at {ts:-90s}"
    out = render_text(text, namespace="scn-x", pod="web-1", now=NOW)
    assert out == "scn-x/web-1 since 07:35 at 2027-01-15T07:58:30.250Z"


def test_json_braces_are_left_alone() -> None:
    line = '{"ts":"{ts:0}","msg":"ok","ctx":{"a":1}}'
    out = render_text(line, namespace="n", pod="p", now=NOW)
    assert out == '{"ts":"2027-01-15T08:00:00.250Z","msg":"ok","ctx":{"a":1}}'


def test_pod_is_only_known_in_log_lines() -> None:
    with pytest.raises(ValueError, match="pod"):
        render_text("{pod} is down", namespace="n", now=NOW)


def test_bad_offset_is_refused() -> None:
    with pytest.raises(ValueError, match="not a duration"):
        render_text("since {clock:yesterday}", namespace="n", now=NOW)


def test_nested_status_strings_are_rendered() -> None:
    status = {"conditions": [{"lastTransitionTime": "{ts:-45m}", "status": "True"}], "n": 3}
    out = render_obj(status, namespace="n")
    assert out["n"] == 3
    assert out["conditions"][0]["status"] == "True"
    assert out["conditions"][0]["lastTransitionTime"].endswith("Z")
