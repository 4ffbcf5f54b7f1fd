"""A dependency's connection gauges are found by what their names say, whatever exporter
wrote them: the count open now (memcached's current_connections, Postgres' stat_activity,
MySQL's threads_connected, Redis' connected_clients, a generic *_connections_active) and the
most it allows — so that a server at its maximum is seen whatever its product."""

from __future__ import annotations

import pytest

from triage.agent.planners.rules.queries import _CONNECTIONS, _MAX_CONNECTIONS


@pytest.mark.parametrize(
    "name",
    [
        "memcached_current_connections",
        "pg_stat_activity_count",
        "mysql_global_status_threads_connected",
        "redis_connected_clients",
        "pgbouncer_connections_active",
        "envoy_open_connections",
        "nats_varz_active_connections",
    ],
)
def test_a_count_of_open_connections(name: str) -> None:
    assert _CONNECTIONS.search(name), name
    assert not _MAX_CONNECTIONS.search(name), name


@pytest.mark.parametrize(
    "name",
    [
        "memcached_max_connections",
        "pg_settings_max_connections",
        "mysql_global_variables_max_connections",
        "redis_config_maxclients",
    ],
)
def test_the_most_it_allows_is_not_a_count(name: str) -> None:
    assert _MAX_CONNECTIONS.search(name), name
    assert not _CONNECTIONS.search(name), name


@pytest.mark.parametrize(
    "name",
    ["memcached_connections_rejected_total", "memcached_total_connections", "process_open_fds"],
)
def test_other_connection_series_are_not_the_open_count(name: str) -> None:
    assert not _CONNECTIONS.search(name), name
