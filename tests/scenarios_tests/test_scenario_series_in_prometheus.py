"""The scenarios' series, backfilled into a real Prometheus, answer PromQL as the stories say."""

from __future__ import annotations

import httpx
import pytest

from tests.support.observability import PrometheusServer

pytestmark = pytest.mark.prometheus


def instant(prom: PrometheusServer, query: str, offset_s: float = 0) -> dict[str, float]:
    assert prom.now is not None
    resp = httpx.get(
        f"{prom.url}/api/v1/query",
        params={"query": query, "time": prom.now + offset_s},
        timeout=10,
    )
    resp.raise_for_status()
    return {
        r["metric"].get("namespace", ""): float(r["value"][1])
        for r in resp.json()["data"]["result"]
    }


def test_5xx_rate_rises_right_after_the_deploy(scenario_prometheus: PrometheusServer) -> None:
    query = 'sum by (namespace) (rate(http_requests_total{code=~"5.."}[5m]))'
    before = instant(scenario_prometheus, query, offset_s=-30 * 60)
    now = instant(scenario_prometheus, query)
    ns = "scn-error-rate-after-deploy"
    assert before[ns] < 0.1
    assert now[ns] == pytest.approx(14)
    generation = instant(scenario_prometheus, "kube_deployment_metadata_generation", -25 * 60)
    assert generation[ns] == 1
    assert instant(scenario_prometheus, "kube_deployment_metadata_generation")[ns] == 2


def test_oom_working_set_reaches_the_memory_limit(scenario_prometheus: PrometheusServer) -> None:
    ratio = instant(
        scenario_prometheus,
        "max by (namespace) (container_memory_working_set_bytes"
        ' / on (namespace, pod, container) kube_pod_container_resource_limits{resource="memory"})',
    )
    assert ratio["scn-oomkilled"] > 0.95
    assert ratio["scn-healthy"] < 0.5


def test_healthy_error_rate_is_flat(scenario_prometheus: PrometheusServer) -> None:
    query = (
        'sum by (namespace) (rate(http_requests_total{code=~"5.."}[5m]))'
        " / sum by (namespace) (rate(http_requests_total[5m]))"
    )
    assert instant(scenario_prometheus, query)["scn-healthy"] < 0.001
    assert instant(scenario_prometheus, query, -2 * 3600)["scn-healthy"] < 0.001


def test_hpa_cpu_is_above_the_target(scenario_prometheus: PrometheusServer) -> None:
    cpu = instant(
        scenario_prometheus,
        "sum by (namespace) (rate(container_cpu_usage_seconds_total[5m]))",
    )
    # 3 pods requesting 200m each, target 70%: 0.42 cores would be on target
    assert cpu["scn-hpa-maxed"] > 0.6
