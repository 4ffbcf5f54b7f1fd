"""A stopped Prometheus is an outage (connection error), never "no data"; restart recovers."""

from __future__ import annotations

import httpx
import pytest
import requests
from prometheus_api_client import PrometheusConnect
from urllib3.util.retry import Retry

from tests.support.observability import BUILTIN_SERIES, PrometheusFactory

pytestmark = pytest.mark.prometheus


def test_killed_prometheus_fails_with_connection_error_then_restarts(
    prometheus_factory: PrometheusFactory,
) -> None:
    server = prometheus_factory(BUILTIN_SERIES, name="prom-outage")
    client = PrometheusConnect(url=server.url, disable_ssl=True, timeout=2, retry=Retry(total=0))
    query = "triage_test_queue_depth"
    assert len(client.custom_query(query)) == 1

    server.kill()

    assert not server.running
    with pytest.raises(requests.exceptions.ConnectionError):
        client.custom_query(query)
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/api/v1/query", params={"query": query}, timeout=2)

    server.restart()

    assert server.running
    assert len(client.custom_query(query)) == 1
