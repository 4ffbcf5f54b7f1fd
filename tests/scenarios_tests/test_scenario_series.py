"""Scenario metrics become backfill-ready Series, each labelled with its scenario namespace."""

from __future__ import annotations

from tests.support.observability import openmetrics_from_series
from tests.support.scenarios import load_scenarios, scenario_series


def test_every_series_carries_its_scenario_namespace() -> None:
    scenarios = load_scenarios()
    series = scenario_series(scenarios)
    namespaces = {ns for s in scenarios for ns in s.all_namespaces}
    assert series
    assert all(s.labels["namespace"] in namespaces for s in series)


def test_series_render_as_one_openmetrics_document() -> None:
    text = openmetrics_from_series(scenario_series(load_scenarios()), now=1_800_000_000)
    assert text.endswith("# EOF\n")
    assert 'namespace="scn-oomkilled"' in text


def test_metric_names_are_the_real_exporters_names() -> None:
    names = {s.name for s in scenario_series(load_scenarios())}
    assert {
        "kube_pod_container_status_restarts_total",
        "container_memory_working_set_bytes",
        "kube_pod_container_resource_limits",
        "container_cpu_usage_seconds_total",
        "http_requests_total",
        "http_request_duration_seconds_bucket",
        "kube_deployment_status_replicas_available",
    } <= names


def test_oom_memory_reaches_the_limit_now() -> None:
    (oom,) = [s for s in load_scenarios() if s.name == "oomkilled"]
    series = [s for s in scenario_series([oom]) if s.name == "container_memory_working_set_bytes"]
    assert series
    for s in series:
        assert s.samples[-1][0] == 0
        assert s.samples[-1][1] > 0.95 * 256 * 2**20
