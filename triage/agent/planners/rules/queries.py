"""The Prometheus reads of the rules planner: which series a namespace has (discovery), then
the signals every cluster exports (restarts, memory, throttling, volumes, pools), the request
counters found by name shape with every common server-error label, the latency of any timed
histogram or summary, and the same for each dependency the chain reached.
"""

from __future__ import annotations

import itertools
import re

from triage.agent.planners.base import ToolCall
from triage.agent.planners.rules.facts import Facts, series_values
from triage.agent.planners.rules.reads import call, window
from triage.core.models import Goal
from triage.core.signals import (
    CLIENT_ERROR_MATCHERS,
    ERROR_MATCHERS,
    NOT_FOUND_MATCHERS,
    REQUEST_COUNTER,
    STATUS_LABELS,
    rate,
    timed,
)


def metric_discovery(goal: Goal, ns: str, now: float) -> list[ToolCall]:
    """The namespace's own series, and those a proxy or exporter elsewhere writes about its
    objects: scraped from another namespace, the object's namespace is kept as
    `exported_namespace` (the ingress controller's per-Ingress request counter)."""
    start, end = window(goal, now)
    return [
        call("prom.metric_names", selector=f'{{{label}="{ns}"}}', start=start, end=end)
        for label in ("namespace", "exported_namespace")
    ]


_REQUEST_COUNTERS = (
    "http_requests_total",
    "http_server_requests_seconds_count",
    "http_server_requests_total",
    "http_server_duration_milliseconds_count",
    "nginx_ingress_controller_requests",
    "grpc_server_handled_total",
)


SIGNALS = {
    "restarts": "kube_pod_container_status_restarts_total",
    "memory": "container_memory_working_set_bytes",
    "memory_limit": "kube_pod_container_resource_limits",
    "memory_rss": "container_memory_rss",
    "memory_cache": "container_memory_cache",
    "throttled": "container_cpu_cfs_throttled_periods_total",
    "cfs_periods": "container_cpu_cfs_periods_total",
    "volume_used": "kubelet_volume_stats_used_bytes",
    "volume_capacity": "kubelet_volume_stats_capacity_bytes",
    "inodes_used": "kubelet_volume_stats_inodes_used",
    "inodes": "kubelet_volume_stats_inodes",
    "pool_pending": "hikaricp_connections_pending",
    "db_connections": "pg_stat_activity_count",
    "db_max_connections": "pg_settings_max_connections",
    "generation": "kube_deployment_metadata_generation",
    "hpa_max": "kube_horizontalpodautoscaler_spec_max_replicas",
}


# Exporters every cluster has (kube-state-metrics, cAdvisor, the kubelet, HTTP middleware):
# the rest of a namespace's series are the application's own.
_HOLDS = re.compile(
    r"(threads|goroutines|sessions|listeners|handles|open_fds|connections_open|"
    r"entries|cache_size|queue_size|"
    # a runtime's memory outside its heap: the JVM's direct and mapped buffer pools
    r"buffer_memory_used|direct_memory|native_memory)[a-z_]*$"
)
_DROPS = re.compile(r"^(hubble_drop_total|cilium_drop_count_total)$")
# the labels that say where a series was scraped from, not what it measures
SCRAPE_LABELS = ("namespace", "pod", "instance", "job", "container", "endpoint", "service")
_COUNTER_SUFFIXES = ("_total", "_count", "_sum", "_bucket", "_created")
_STANDARD_PREFIXES = (
    "kube_",
    "container_",
    "kubelet_",
    "node_",
    "http_",
    "process_",
    "go_",
    "up",
    "scrape_",
    "grpc_",
)


def request_counters(names: set[str]) -> list[str]:
    """The request counters a namespace has: the well-known names first, then any counter
    whose name says it counts requests or responses (`*_requests_total`,
    `*_request_duration_seconds_count`, `*_responses_total`, …)."""
    known = [n for n in _REQUEST_COUNTERS if n in names]
    generic = sorted(
        n
        for n in names
        if n not in known
        and n.endswith(("_total", "_count"))
        and REQUEST_COUNTER.search(n)
        and not n.startswith(("kube_", "container_", "kubelet_", "apiserver_", "prometheus_"))
    )
    return (known + generic)[:3]


_CONNECTIONS = re.compile(
    r"stat_activity_count$|threads_connected$|connected_clients$|_connections_(current|active)$"
    # memcached_exporter's, and the (current|active|open)_connections many exporters write
    r"|(?:^|_)(current|active|open)_connections$"
)


# the most a server allows (Postgres', Redis') or a pooler (PgBouncer's max_client_conn)
_MAX_CONNECTIONS = re.compile(r"max_connections$|maxclients$|max_client_conn(ections)?$")
# a server's own memory cap (redis_exporter's used/max, memcached's bytes/limit_maxbytes) and
# what it evicted to stay under it
_MEMORY_USED = re.compile(r"_memory_used_bytes$|^memcached_current_bytes$")
_MEMORY_MAX = re.compile(r"_memory_max_bytes$|^memcached_limit_bytes$")
_EVICTED = re.compile(r"_evicted_keys_total$|^memcached_items_evicted_total$")
# connections counted per client (mysqld_exporter's processlist by user or host)
_HOLDERS = re.compile(r"processlist_by_(user|host)$|connections_by_(user|client|application)$")
# (what names the series, the purpose it is read for, the query over `{series}`)
_DEPENDENCY_SERIES = (
    (_HOLDERS, "connection_holders", "{series}"),
    (_CONNECTIONS, "connections", "{series}"),
    (_MAX_CONNECTIONS, "max_connections", "max({series})"),
    (_MEMORY_USED, "memory_used", "max({series})"),
    (_MEMORY_MAX, "memory_max", "max({series})"),
    (_EVICTED, "evicted", "sum(increase({series}[30m]))"),
)


def dependency_metrics(goal: Goal, facts: Facts, ns: str, now: float) -> list[ToolCall]:
    """For a dependency's namespace: who holds its connections, and how many it allows
    (the exporters' connection gauges, by every label they carry: user, application)."""
    names = facts.metric_names(f'{{namespace="{ns}"}}')
    start, end = window(goal, now)
    sel = f'namespace="{ns}"'
    out: list[ToolCall] = []

    def rng(purpose: str, query: str) -> None:
        out.append(call("prom.range", purpose=purpose, query=query, start=start, end=end))

    for name in sorted(names):
        # the first kind whose pattern names the series decides how it is read
        for pattern, purpose, query in _DEPENDENCY_SERIES:
            if pattern.search(name):
                rng(f"{purpose}:{ns}", query.format(series=f"{name}{{{sel}}}"))
                break
    if SIGNALS["throttled"] in names and SIGNALS["cfs_periods"] in names:
        # a dependency held back by its CPU limit answers slowly whatever its pods say
        rng(f"throttling:{ns}", throttling_query(sel))
    if SIGNALS["volume_used"] in names and SIGNALS["volume_capacity"] in names:
        rng(
            "volume_usage",
            f"max by (namespace, persistentvolumeclaim) ({SIGNALS['volume_used']}"
            f"{{{sel}}} / {SIGNALS['volume_capacity']}{{{sel}}})",
        )
    out = out[:6]
    if SIGNALS["generation"] in names:
        # when the dependency's own Deployments changed: a release of theirs before the
        # caller's failures began
        rng(f"generation:{ns}", f"max by (deployment) ({SIGNALS['generation']}{{{sel}}})")
    return out


# The shares of a request counter's requests that say something: server errors, client
# errors a release may start to cause, and requests no route matched (404).
_SHARES = (
    ("error_ratio", ERROR_MATCHERS),
    ("client_error_ratio", CLIENT_ERROR_MATCHERS),
    ("not_found_ratio", NOT_FOUND_MATCHERS),
)


# A gauge of how long a run took, as batch jobs push it (last_run_duration_seconds,
# export_duration_seconds): not a histogram's parts, which are request latencies.
_DURATION = re.compile(r"(duration|runtime|elapsed)(_seconds)?$|_seconds_(last|duration)$")


def throttling_query(sel: str) -> str:
    """The share of CFS periods each container of the selection was throttled in."""
    return (
        f"sum by (pod, container) ({rate(SIGNALS['throttled'] + '{' + sel + '}')}) / "
        f"sum by (pod, container) ({rate(SIGNALS['cfs_periods'] + '{' + sel + '}')})"
    )


def _broken_down(names: set[str], sel: str) -> list[tuple[str, str]]:
    """(purpose, query) for series read by every label they carry but where they were scraped
    from: a latency quantile per route (handler, route, uri, path — whatever the label is
    called: one route can set the whole p99), and the packets a CNI dropped (Hubble's,
    Cilium's) by sender, receiver and reason."""
    without = f"sum without ({','.join(SCRAPE_LABELS)})"
    out = [
        (
            f"latency_p99_by:{hist.removesuffix('_bucket')}",
            f"histogram_quantile(0.99, {without} ({rate(f'{hist}{{{sel}}}')}))",
        )
        for hist in sorted(n for n in names if n.endswith("_bucket"))[:2]
    ]
    out += [
        ("drops", f"{without} ({rate(f'{name}{{{sel}}}')})")
        for name in sorted(n for n in names if _DROPS.search(n))[:1]
    ]
    return out


def edge_statuses(facts: Facts, ns: str, start: float, end: float) -> list[ToolCall]:
    """What a proxy in front counts for the namespace's objects, by status: what the users of
    an Ingress get, where they get it."""
    edge = f'exported_namespace="{ns}"'
    return [
        call(
            "prom.range",
            purpose=f"edge_statuses:{counter}",
            query=f"sum by ({', '.join(STATUS_LABELS)}) ({rate(f'{counter}{{{edge}}}')})",
            start=start,
            end=end,
        )
        for counter in request_counters(facts.metric_names(f"{{{edge}}}"))[:1]
    ]


def hpa_sources(facts: Facts, ns: str, names: set[str]) -> list[str]:
    """The source series of the HPAs' custom per-second metrics (the adapter's usual rule:
    <name>_total) that the series index lists. The index of a long window lists a series that
    stopped long ago; how many of it exist at each step of the window (0 when it stopped) says
    whether the workload still exports it."""
    out = []
    for h in facts.hpas(ns)[0]:
        for t in h["target_metrics"]:
            name = str(t.get("name") or "")
            source = name.removesuffix("_per_second") + "_total"
            if t.get("kind") != "Resource" and name.endswith("_per_second") and source in names:
                out.append(source)
    return sorted(set(out))


def hpa_history(facts: Facts, ns: str, names: set[str], start: float, end: float) -> list[ToolCall]:
    """What each HPA's maxReplicas was over the last week: a bound lowered by a values change
    shows as a step in kube-state-metrics' spec series."""
    if SIGNALS["hpa_max"] not in names or not facts.hpas(ns)[0]:
        return []
    return [
        call(
            "prom.range",
            purpose="hpa_max_history",
            query=f'max by (horizontalpodautoscaler) ({SIGNALS["hpa_max"]}{{namespace="{ns}"}})',
            start=min(start, end - 7 * 86400),
            end=end,
        )
    ]


def metrics(goal: Goal, facts: Facts, ns: str, now: float) -> list[ToolCall]:
    """PromQL for the signals this Prometheus holds for the namespace (discovered names)."""
    names = facts.metric_names(f'{{namespace="{ns}"}}')
    start, end = window(goal, now)
    sel = f'namespace="{ns}"'
    out = edge_statuses(facts, ns, start, end)

    def rng(purpose: str, query: str) -> None:
        out.append(call("prom.range", purpose=purpose, query=query, start=start, end=end))

    if not names:
        return out

    for counter in request_counters(names):
        for share, matchers in _SHARES:
            picked = " or ".join(rate(f"{counter}{{{sel},{m}}}") for m in matchers)
            rng(f"{share}:{counter}", f"sum({picked}) / sum({rate(f'{counter}{{{sel}}}')})")
    # the p99, and the median: when most requests turn slower than the largest finite bucket,
    # the p99 is pinned at that bound before and after, and only the median shows the rise
    for hist, (q, name) in itertools.product(
        sorted(n for n in names if n.endswith("_bucket"))[:2], ((0.99, "p99"), (0.5, "p50"))
    ):
        rng(
            f"latency_{name}:{hist.removesuffix('_bucket')}",
            f"histogram_quantile({q}, sum by (le) ({rate(f'{hist}{{{sel}}}')}))",
        )

    # mean latency from any histogram's or summary's _sum/_count pair whose name says time:
    # works whatever the buckets and whatever the library names it
    for base in timed(names)[:2]:
        rng(
            f"latency_mean:{base}",
            f"sum({rate(f'{base}_sum{{{sel}}}')}) / sum({rate(f'{base}_count{{{sel}}}')})",
        )
    for purpose, query in _broken_down(names, sel):
        rng(purpose, query)
    if SIGNALS["restarts"] in names:
        rng("restarts", f"sum by (pod) (increase({SIGNALS['restarts']}{{{sel}}}[10m]))")
    if SIGNALS["memory"] in names:
        rng("memory", f"max by (pod, container) ({SIGNALS['memory']}{{{sel}}})")
        # what the working set is made of: the process's own (RSS) and the page cache the
        # kernel reclaims before it OOM-kills (a near-limit working set that is mostly cache
        # is not a leak)
        for part in ("memory_rss", "memory_cache"):
            if SIGNALS[part] in names:
                rng(part, f"max by (pod, container) ({SIGNALS[part]}{{{sel}}})")
    if SIGNALS["throttled"] in names and SIGNALS["cfs_periods"] in names:
        rng("throttling", throttling_query(sel))
    for purpose, used, total in (
        ("volume_usage", "volume_used", "volume_capacity"),
        # a filesystem is full when its inodes are, whatever its bytes say
        ("inode_usage", "inodes_used", "inodes"),
    ):
        if SIGNALS[used] in names and SIGNALS[total] in names:
            rng(
                purpose,
                f"max by (persistentvolumeclaim) ({SIGNALS[used]}{{{sel}}} / "
                f"{SIGNALS[total]}{{{sel}}})",
            )
    if SIGNALS["pool_pending"] in names:
        rng("pool_pending", f"max by (pod, pool) ({SIGNALS['pool_pending']}{{{sel}}})")
    if SIGNALS["db_connections"] in names:
        rng("db_connections", f"sum({SIGNALS['db_connections']}{{{sel}}})")
    if SIGNALS["db_max_connections"] in names:
        rng("db_max_connections", f"max({SIGNALS['db_max_connections']}{{{sel}}})")
    # a container OOM-killed: the gauges of what a process holds (threads, goroutines,
    # sessions, listeners...) that grow with its memory say what leaks
    killed = any(
        (c["last_terminated"] or {}).get("reason") == "OOMKilled"
        for x in facts.pods(ns)[0]
        for c in x["containers"]
    )
    if killed:
        for name in sorted(n for n in names if _HOLDS.search(n))[:3]:
            # by pool too: the JVM's buffer gauge has one series per pool (id=direct, mapped)
            rng(f"held:{name}", f"max by (pod, id) ({name}{{{sel}}})")
        if "scrape_samples_scraped" in names:
            # the series a process exports live in its own metrics registry: a count that
            # grows with its memory is a label with unbounded values (a URL, an id)
            rng("held:scrape_samples_scraped", f"max by (pod) (scrape_samples_scraped{{{sel}}})")
    # a Job its deadline stopped: how long the work takes, by its own duration series (a
    # batch job pushes its run time: <job>_duration_seconds, job="<name>")
    stopped = [
        j["name"]
        for j in facts.jobs(ns)[0]
        if any(c.get("reason") == "DeadlineExceeded" for c in j["conditions"])
    ]
    if stopped:
        for name in sorted(n for n in names if _DURATION.search(n))[:2]:
            rng(f"run_duration:{name}", f"max({name}{{{sel}}})")
    rising = any(
        e.ok
        and (e.purpose or "").startswith(
            ("error_ratio:", "latency_p99:", "latency_p50:", "latency_mean:")
        )
        for e in facts.evidence
    )
    own_names = sorted(n for n in names if not n.startswith(_STANDARD_PREFIXES))[:12]
    gauges = [n for n in own_names if not n.endswith(_COUNTER_SUFFIXES)]
    counters = [n for n in own_names if n.endswith(_COUNTER_SUFFIXES)][:4]
    if rising and gauges:
        # the application's own series: one that steps at a deploy says what the release does
        rng("stepped", f'{{__name__=~"{"|".join(gauges)}",{sel}}}')
    for name in counters if rising else []:
        # a counter steps in its rate (rate() drops the name: one query per counter)
        rng(f"stepped:{name}", f"rate({name}{{{sel}}}[5m])")
    full = [
        v
        for ev in facts.purpose("volume_usage")
        for series in ev.data or []
        if (v := series_values(series)) and v[-1] >= 0.9
    ]
    own = sorted(n for n in names if not n.startswith(_STANDARD_PREFIXES))[:12]
    if full and own:
        # a volume filling up: the application's own series that moved with it
        # over two days: a volume fills over days, not within the incident's window
        out.append(
            call(
                "prom.range",
                purpose="comoving",
                query=f'{{__name__=~"{"|".join(own)}",{sel}}}',
                start=min(start, end - 2 * 86400),
                end=end,
            )
        )
    if SIGNALS["generation"] in names:
        rng("generation", f"max by (deployment) ({SIGNALS['generation']}{{{sel}}})")
    return (
        out
        + hpa_history(facts, ns, names, start, end)
        + [
            call(
                "prom.range",
                purpose=f"hpa_source:{source}",
                query=f"count({source}{{{sel}}}) or vector(0)",
                start=start,
                end=end,
            )
            for source in hpa_sources(facts, ns, names)
        ]
    )
