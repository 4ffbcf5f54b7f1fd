"""The rules planner: deterministic playbooks, no model, the honest baseline.

It investigates the way a senior SRE does, in two passes. First a survey of the namespace
(pods with container states, deployments, warning events, services, claims, autoscalers,
jobs). Then follow-ups chosen by what the survey showed: the crashed container's previous log,
the rollout history of a deployment, endpoints behind services, node capacity for pending
pods, ConfigMap names for a missing reference, StorageClasses for a pending claim, and
PromQL for restarts, error ratio, latency, memory against limit and CPU. Diagnosis
(`diagnosis.py`) then names a root cause only when evidence decides it, or says what it
checked and that nothing did.
"""

from __future__ import annotations

from typing import Any

from tools.redact import DEFAULT
from triage.agent.planners.base import ToolCall
from triage.agent.planners.rules import diagnosis
from triage.agent.planners.rules.facts import Facts, focus_pods, pod_problem
from triage.core import quarantine
from triage.core.models import Evidence, Goal, RCADraft

MAX_LOG_PODS = 3
MAX_SERVICES = 6


def _call(name: str, **args: Any) -> ToolCall:
    return ToolCall(name=name, args={k: v for k, v in args.items() if v is not None})


def promql(goal: Goal, now: float) -> list[ToolCall]:
    """The PromQL a senior SRE runs first, scoped to the namespace and the request's window."""
    ns = goal.scope.namespace
    start = goal.scope.since or now - 3 * 3600
    end = goal.scope.until or now
    sel = f'namespace="{ns}"'
    return [
        _call(
            "prom.range",
            query=(
                f'sum(rate(http_requests_total{{{sel},code=~"5.."}}[5m])) '
                f"/ sum(rate(http_requests_total{{{sel}}}[5m]))"
            ),
            start=start,
            end=end,
        ),
        _call(
            "prom.query",
            query=f"sum by (pod) (increase(kube_pod_container_status_restarts_total{{{sel}}}[1h]))",
            at=end,
        ),
        _call(
            "prom.range",
            query=(
                f"max by (pod, container) (container_memory_working_set_bytes{{{sel}}}) "
                f"/ on (pod, container) max by (pod, container) "
                f'(kube_pod_container_resource_limits{{{sel},resource="memory"}})'
            ),
            start=start,
            end=end,
        ),
        _call(
            "prom.range",
            query=(
                "histogram_quantile(0.99, sum by (le) "
                f"(rate(http_request_duration_seconds_bucket{{{sel}}}[5m])))"
            ),
            start=start,
            end=end,
        ),
        _call(
            "prom.range",
            query=f"sum by (pod) (rate(container_cpu_usage_seconds_total{{{sel}}}[5m]))",
            start=start,
            end=end,
        ),
        _call(
            "prom.range",
            query=f"max by (deployment) (kube_deployment_metadata_generation{{{sel}}})",
            start=start,
            end=end,
        ),
    ]


def survey(ns: str) -> list[ToolCall]:
    return [
        _call("k8s.pods", namespace=ns),
        _call("k8s.deployments", namespace=ns),
        _call("k8s.events", namespace=ns, warnings_only=True),
        _call("k8s.services", namespace=ns),
        _call("k8s.pvcs", namespace=ns),
        _call("k8s.hpas", namespace=ns),
        _call("k8s.jobs", namespace=ns),
    ]


def follow_ups(goal: Goal, facts: Facts, now: float) -> list[ToolCall]:
    ns = goal.scope.namespace
    assert ns is not None
    pods, _ = facts.data("k8s.pods", namespace=ns)
    services, _ = facts.data("k8s.services", namespace=ns)
    deployments, _ = facts.data("k8s.deployments", namespace=ns)
    pvcs, _ = facts.data("k8s.pvcs", namespace=ns)
    calls: list[ToolCall] = []

    focus = focus_pods(goal, pods, services)
    owners_seen: set[str] = set()
    for pod in focus:
        problem = pod_problem(pod)
        owner = str((pod.get("owner") or {}).get("name") or pod["name"])
        if problem is None or owner in owners_seen or len(owners_seen) >= MAX_LOG_PODS:
            continue
        owners_seen.add(owner)
        for c in pod["containers"]:
            crashed = c["restarts"] > 0 or c["last_terminated"] is not None
            if crashed:
                calls.append(
                    _call(
                        "k8s.logs",
                        namespace=ns,
                        pod=pod["name"],
                        container=c["name"],
                        previous=True,
                    )
                )
            if crashed or pod["phase"] in ("Running", "Failed"):
                calls.append(_call("k8s.logs", namespace=ns, pod=pod["name"], container=c["name"]))
        if problem == "Pending":
            calls.append(_call("k8s.events", namespace=ns, object_name=pod["name"]))
            calls.append(_call("k8s.nodes"))
        if problem == "CreateContainerConfigError":
            calls.append(_call("k8s.configmap_names", namespace=ns))

    named = {w.name for w in goal.scope.workloads}
    for dep in deployments:
        unhealthy = dep["available"] < (dep["replicas"] or 0) or dep["updated"] < (
            dep["replicas"] or 0
        )
        if dep["name"] in named or unhealthy or len(deployments) <= 3:
            calls.append(_call("k8s.rollout_history", namespace=ns, deployment=dep["name"]))

    for svc in services[:MAX_SERVICES]:
        if svc["selector"]:
            calls.append(_call("k8s.endpoints", namespace=ns, service=svc["name"]))

    if any(p["phase"] == "Pending" for p in pvcs):
        calls.append(_call("k8s.storage_classes"))

    calls.extend(promql(goal, now))
    return calls


class RulesPlanner:
    """Deterministic playbooks; the same evidence always gives the same next step and RCA."""

    name = "rules"

    def plan(self, goal: Goal, evidence: list[Evidence], now: float) -> list[ToolCall]:
        ns = goal.scope.namespace
        if ns is None:
            return []
        facts = Facts(evidence)
        ns_ev = facts.get("k8s.namespace", namespace=ns)
        if ns_ev is None:
            return [_call("k8s.namespace", namespace=ns)]
        if not ns_ev.ok:
            return []  # unknown namespace or no apiserver: nothing else can be learned
        first = [c for c in survey(ns) if facts.get(c.name, **c.args) is None]
        if first:
            return first
        return follow_ups(goal, facts, now)

    def draft(self, goal: Goal, evidence: list[Evidence], now: float) -> RCADraft:
        draft = diagnosis.draft(goal, Facts(evidence), now, planner=self.name)
        # Instruction-like text in tool output is quoted for a human, never obeyed.
        return draft.model_copy(update={"suspicious_inputs": quarantine.scan(evidence, DEFAULT)})
