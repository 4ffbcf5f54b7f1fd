"""The Prometheus read tool against a real Prometheus: ok, no_data, invalid and outage differ."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.observability import PrometheusFactory, Series
from tools.read.prometheus import PrometheusReader
from tools.read.registry import ReadRegistry
from tools.results import ErrorKind, ToolStatus

pytestmark = pytest.mark.prometheus

SERIES = [
    Series(
        name="http_requests_total",
        type="counter",
        labels={"namespace": "shop", "service": "cart", "code": code},
        samples=[(-3600 + i * 60, i * 60 * rate) for i in range(61)],
    )
    for code, rate in (("200", 10.0), ("503", 2.0))
]


@pytest.fixture(scope="module")
def prom(prometheus_factory: PrometheusFactory):
    return prometheus_factory(SERIES, name="prom-tool")


def test_range_query_returns_bounded_series(prom) -> None:
    reader = PrometheusReader(prom.url, max_points=30)
    now = prom.now
    result = reader.range(
        'sum(rate(http_requests_total{namespace="shop",code="503"}[5m])) '
        '/ sum(rate(http_requests_total{namespace="shop"}[5m]))',
        now - 1800,
        now,
    )
    assert result.status is ToolStatus.OK
    values = [v for _, v in result.data[0]["values"]]
    assert 0 < len(values) <= 30
    assert values[-1] == pytest.approx(2.0 / 12.0, rel=0.02)
    assert result.raw_digest.startswith("sha256:")


@settings(max_examples=25, deadline=None)
@given(span=st.floats(min_value=1.0, max_value=6 * 3600.0), points=st.integers(10, 500))
def test_a_range_over_any_window_is_answered(prom, span: float, points: int) -> None:
    """Any window ("since 09:41": 4,827.3 s) gets a step Prometheus accepts; a fractional one
    ("20.1195s") was refused as bad_data, and every such query came back an error."""
    reader = PrometheusReader(prom.url, max_points=points)
    result = reader.range('http_requests_total{namespace="shop"}', prom.now - span, prom.now)
    assert result.status is ToolStatus.OK, result.excerpt
    assert float(result.args["step_s"]).is_integer()


def test_a_query_matching_nothing_is_no_data_not_healthy(prom) -> None:
    reader = PrometheusReader(prom.url)
    result = reader.query('up{job="does-not-exist"}', at=prom.now)
    assert result.status is ToolStatus.NO_DATA
    assert result.error_kind is None


def test_bad_promql_is_an_invalid_error(prom) -> None:
    result = PrometheusReader(prom.url).query("sum(rate(http_requests_total[5m]")
    assert result.status is ToolStatus.ERROR
    assert result.error_kind is ErrorKind.INVALID


def test_an_outage_is_an_unreachable_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    result = PrometheusReader(f"http://127.0.0.1:{port}", timeout_s=2).query("up")
    assert result.status is ToolStatus.ERROR
    assert result.error_kind is ErrorKind.UNREACHABLE
    assert "unreachable" in result.excerpt


def test_registry_without_prometheus_says_so() -> None:
    class _NoKube:  # the registry needs a KubeReader only for k8s.* calls
        pass

    registry = ReadRegistry(_NoKube(), None)  # type: ignore[arg-type]
    result = registry.call("prom.query", {"query": "up"})
    assert result.status is ToolStatus.ERROR
    assert result.error_kind is ErrorKind.UNREACHABLE


def test_registry_validates_arguments_before_any_request() -> None:
    registry = ReadRegistry(None, None)  # type: ignore[arg-type]
    bad = registry.call("k8s.pods", {"namespace": "Not A Name!"})
    assert bad.status is ToolStatus.ERROR
    assert bad.error_kind is ErrorKind.INVALID
    unknown = registry.call("k8s.delete_everything", {})
    assert unknown.error_kind is ErrorKind.INVALID
