"""A PromQL range query returns the backfilled series with the values the scenario wrote."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import httpx
import pytest
from prometheus_api_client import PrometheusConnect

from tests.support.observability import PrometheusFactory, PrometheusServer, Series

pytestmark = pytest.mark.prometheus


def _client(server: PrometheusServer) -> PrometheusConnect:
    return PrometheusConnect(url=server.url, disable_ssl=True, timeout=5)


def test_prometheus_connect_range_query_returns_every_backfilled_sample(
    prometheus: PrometheusServer,
) -> None:
    assert prometheus.now is not None
    end = datetime.fromtimestamp(prometheus.now, UTC)
    start = datetime.fromtimestamp(prometheus.now - 3 * 3600, UTC)

    result = _client(prometheus).custom_query_range(
        "triage_test_queue_depth", start_time=start, end_time=end, step="60"
    )

    assert len(result) == 1
    assert result[0]["metric"] == {"__name__": "triage_test_queue_depth", "queue": "orders"}
    values = [float(v) for _, v in result[0]["values"]]
    # The gauge equals "minutes ago": 180 three hours back, 0 at "now".
    assert values == [float(m) for m in range(180, -1, -1)]


def test_raw_http_range_query_returns_both_counter_series(prometheus: PrometheusServer) -> None:
    assert prometheus.now is not None
    response = httpx.get(
        f"{prometheus.url}/api/v1/query_range",
        params={
            "query": 'triage_test_requests_total{service="checkout-api"}',
            "start": prometheus.now - 3600,
            "end": prometheus.now,
            "step": 600,
        },
        timeout=5,
    )
    response.raise_for_status()
    body = response.json()

    assert body["status"] == "success"
    by_code = {
        r["metric"]["code"]: [float(v) for _, v in r["values"]] for r in body["data"]["result"]
    }
    assert set(by_code) == {"200", "503"}
    # Minutes ago at each step: 60, 50, ..., 0; the 200s grow 6/min from 3 h ago.
    assert by_code["200"] == [6.0 * (180 - m) for m in range(60, -1, -10)]
    # The 503s are flat at 0 until 30 minutes ago, then grow 60/min.
    assert by_code["503"] == [60.0 * max(0, 30 - m) for m in range(60, -1, -10)]


def test_the_last_minutes_up_to_the_wall_clock_are_queryable(
    prometheus_factory: PrometheusFactory,
) -> None:
    series = Series(
        name="triage_test_fresh",
        type="gauge",
        labels={"pod": "p-1"},
        samples=[(-60.0 * m, float(m)) for m in range(120, -1, -1)],
    )
    server = prometheus_factory([series], name="prom-fresh")
    end = datetime.now(UTC)
    start = datetime.fromtimestamp(time.time() - 3600, UTC)

    result = _client(server).custom_query_range(
        "triage_test_fresh", start_time=start, end_time=end, step="30"
    )

    assert len(result) == 1
    stamps = [float(t) for t, _ in result[0]["values"]]
    values = [float(v) for _, v in result[0]["values"]]
    # The newest point is at the query's end (within Prometheus' 5 min lookback of the last
    # sample, which was written at "now"), and it carries the newest sample's value.
    assert stamps[-1] == pytest.approx(end.timestamp(), abs=1)
    assert values[-1] == 0.0
    assert max(values) == pytest.approx(60.0, abs=1)
