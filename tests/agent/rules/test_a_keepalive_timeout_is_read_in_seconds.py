"""A server's keep-alive (idle connection) timeout is read from the shapes programs log and take
it in, and converted to seconds: Node's keepAliveTimeout in milliseconds, gunicorn's
--keep-alive and nginx's keepalive_timeout in seconds unless a unit says otherwise. Other
timeouts on the same line are not taken for it."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from triage.agent.planners.rules.analyzers.network import keepalive_seconds

ms = st.integers(1000, 600_000)
secs = st.integers(1, 900)


@given(value=ms, other=ms)
def test_node_logs_milliseconds(value: int, other: int) -> None:
    line = json.dumps(
        {"msg": "bootstrap", "http": {"headersTimeout": other, "keepAliveTimeout": value}}
    )
    found = keepalive_seconds(line)
    assert found is not None
    assert found[1] == value / 1000


@given(
    value=secs,
    shape=st.sampled_from(
        ["--keep-alive {}", "--keep-alive={}", "keepalive_timeout {}s;", "idle_timeout: {}s"]
    ),
)
def test_seconds_as_flags_and_config_take_them(value: int, shape: str) -> None:
    found = keepalive_seconds(f"gunicorn app:app --workers 4 --timeout 30 {shape.format(value)}")
    assert found is not None
    assert found[1] == value


@given(value=secs)
def test_a_unit_is_honoured(value: int) -> None:
    assert keepalive_seconds(f"keepalive_timeout={value}m")[1] == value * 60  # type: ignore[index]
    assert keepalive_seconds(f"keep-alive timeout: {value * 1000} ms")[1] == value  # type: ignore[index]


@given(value=secs)
def test_other_timeouts_are_not_a_keepalive(value: int) -> None:
    for line in (
        f"--timeout {value} --graceful-timeout {value}",
        f'{{"requestTimeout": {value * 1000}, "headersTimeout": {value * 1000}}}',
        f"read timeout {value}s; connect timeout {value}s",
    ):
        assert keepalive_seconds(line) is None
