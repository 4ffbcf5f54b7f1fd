"""rate() over backfilled counters gives the figures the scenario implies."""

from __future__ import annotations

import pytest
from prometheus_api_client import PrometheusConnect

from tests.support.observability import PrometheusServer

pytestmark = pytest.mark.prometheus


def test_rate_of_5xx_is_one_per_second_now_and_zero_an_hour_ago(
    prometheus: PrometheusServer,
) -> None:
    assert prometheus.now is not None
    query = 'rate(triage_test_requests_total{code="503"}[5m])'

    now_result = prometheus.query(query, at=prometheus.now)
    before_result = prometheus.query(query, at=prometheus.now - 3600)

    assert [float(r["value"][1]) for r in now_result] == [pytest.approx(1.0)]
    assert [float(r["value"][1]) for r in before_result] == [pytest.approx(0.0)]


def test_the_incident_is_still_current_later_in_the_session(prometheus: PrometheusServer) -> None:
    # The factory continues series past "now", so a query at the wall clock half an hour into
    # a long session still sees the 5xx rate instead of "no data".
    assert prometheus.now is not None
    query = 'rate(triage_test_requests_total{code="503"}[5m])'

    later = prometheus.query(query, at=prometheus.now + 1800)

    assert [float(r["value"][1]) for r in later] == [pytest.approx(1.0)]


def test_error_ratio_through_prometheus_connect(prometheus: PrometheusServer) -> None:
    assert prometheus.now is not None
    client = PrometheusConnect(url=prometheus.url, disable_ssl=True, timeout=5)
    query = (
        'sum(rate(triage_test_requests_total{code=~"5.."}[5m]))'
        " / sum(rate(triage_test_requests_total[5m]))"
    )

    result = client.custom_query(query, params={"time": prometheus.now})

    # 1/s of 503s against 0.1/s of 200s.
    assert len(result) == 1
    assert float(result[0]["value"][1]) == pytest.approx(1.0 / 1.1)


def test_unknown_metric_is_an_empty_success_not_an_error(prometheus: PrometheusServer) -> None:
    assert prometheus.query("triage_test_no_such_metric", at=prometheus.now) == []
