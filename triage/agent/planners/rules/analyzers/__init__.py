"""The analyzers, by area: one table, so adding a failure class is one function in its area's
file plus one entry here (and, if the judge can see its signature, one in judge/gates.py).

Each analyzer reads the shared context (triage/agent/planners/rules/context.py) and returns
the causal chains it can decide from `ok` evidence; none of them reads anything itself.
"""

from __future__ import annotations

from collections.abc import Callable

from triage.agent.planners.rules.analyzers import (
    access,
    autoscaling,
    containers,
    dependencies,
    memory,
    metrics,
    network,
    nodes,
    readiness,
    references,
    scheduling,
    storage,
    workloads,
)
from triage.agent.planners.rules.chain import Finding
from triage.agent.planners.rules.context import Ctx

Analyzer = Callable[[Ctx], list[Finding]]

ANALYZERS: tuple[tuple[str, Analyzer], ...] = (
    ("references.image_pull", references.image_pull),
    ("references.config_reference", references.config_reference),
    ("references.init_containers", references.init_containers),
    ("containers.crashes", containers.crashes),
    ("readiness.readiness", readiness.readiness),
    ("memory.oom", memory.oom),
    ("scheduling.pending", scheduling.pending),
    ("scheduling.create_failures", scheduling.create_failures),
    ("workloads.jobs", workloads.jobs),
    ("workloads.cronjobs", workloads.cronjobs),
    ("workloads.statefulsets", workloads.statefulsets),
    ("workloads.pdbs", workloads.pdbs),
    ("network.services", network.services),
    ("network.ingresses", network.ingresses),
    ("network.ingress_in_other_namespace", network.ingress_in_other_namespace),
    ("network.idle_connection_race", network.idle_connection_race),
    ("network.edge_refusals", network.edge_refusals),
    ("dependencies.dependencies", dependencies.dependencies),
    ("dependencies.addresses_dropped", dependencies.addresses_dropped),
    ("dependencies.scrapes", dependencies.scrapes),
    ("dependencies.callers_dropped", dependencies.callers_dropped),
    ("dependencies.edge_dropped", dependencies.edge_dropped),
    ("dependencies.dependency_released", dependencies.dependency_released),
    ("autoscaling.hpas", autoscaling.hpas),
    ("nodes.nodes", nodes.nodes),
    ("access.rbac", access.rbac),
    ("access.cloud_refusals", access.cloud_refusals),
    ("storage.pvc_pending", storage.pvc_pending),
    ("storage.volume_full", storage.volume_full),
    ("storage.own_storage_limit", storage.own_storage_limit),
    ("metrics.regression", metrics.regression),
    ("metrics.throttling", metrics.throttling),
    ("metrics.dependency_throttled", metrics.dependency_throttled),
    ("metrics.saturation", metrics.saturation),
)


def analyze(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    for _name, analyzer in ANALYZERS:
        out.extend(f for f in analyzer(ctx) if f.chain)
    return out
