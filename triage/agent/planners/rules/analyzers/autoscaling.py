"""Autoscalers: one that cannot compute its metric (containers without requests, no metrics
API) never scales; one held at maxReplicas while the load needs more is a capacity limit.
An HPA at its minimum with low load is by design, and said so (a reason for "no fault")."""

from __future__ import annotations

from tools.read import payloads as p
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.core.causes import CauseClass
from triage.core.models import LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _cond(hpa: p.HPA, kind: str) -> p.Condition | None:
    return next((c for c in hpa["conditions"] if c.get("type") == kind), None)


def hpas(ctx: Ctx) -> list[Finding]:
    hpas_, hid = ctx.facts.hpas(ctx.ns)
    out = []
    for h in hpas_:
        target = h["target"]["name"] or "?"
        ref = ctx.ref(str(h["target"]["kind"] or "Deployment"), target)
        hpa_ref = ctx.ref("HorizontalPodAutoscaler", h["name"])
        if not (ctx.in_focus(ref) or ctx.in_focus(hpa_ref)):
            continue
        active = _cond(h, "ScalingActive")
        if active and active.get("status") == "False":
            message = str(active.get("message") or "")
            missing_requests = "missing request" in message
            cause = (
                f"HPA {h['name']} cannot compute its CPU utilization because {target}'s containers "
                f"set no resources.requests.cpu ({short(message, 160)})"
                if missing_requests
                else f"HPA {h['name']} cannot read its metric: {active.get('reason')}: "
                f"{short(message, 160)}"
            )
            out.append(
                Finding(
                    cls=CauseClass.HPA_METRICS_UNAVAILABLE,
                    cause=cause,
                    summary=f"HPA {h['name']} does not scale {target}: its metric is unavailable",
                    impact=f"{target} stays at {h['current_replicas']} replica(s) whatever the "
                    f"load.",
                    chain=chain(
                        link(
                            S,
                            f"HPA {h['name']} keeps {target} at {h['current_replicas']} replica(s) "
                            f"(min {h['min_replicas']}, max {h['max_replicas']}).",
                            hid,
                            about=hpa_ref,
                        ),
                        link(
                            C,
                            f"Condition ScalingActive=False ({active.get('reason')}): "
                            f"{short(message)}",
                            hid,
                            about=hpa_ref,
                            facts=(
                                fact(
                                    "k8s.hpas",
                                    f"[name={h['name']}].conditions[type=ScalingActive].status",
                                    "eq",
                                    "False",
                                    namespace=ctx.ns,
                                ),
                            ),
                        ),
                    ),
                    explains={str(ref), str(hpa_ref)},
                    follow_ups=[
                        f"Set resources.requests.cpu on {target}'s containers."
                        if missing_requests
                        else "Fix the metrics pipeline the HPA reads."
                    ],
                )
            )
            continue
        at_max = h["max_replicas"] is not None and (h["current_replicas"] or 0) >= h["max_replicas"]
        limited = _cond(h, "ScalingLimited")
        if at_max:
            cpu: p.MetricValue | dict[str, int] = next(
                (m for m in h["current_metrics"] if m.get("name") == "cpu"), {}
            )
            want: p.MetricTarget | dict[str, int] = next(
                (m for m in h["target_metrics"] if m.get("name") == "cpu"), {}
            )
            used, aim = cpu.get("utilization"), want.get("utilization")
            busy = used is not None and aim is not None and used > aim
            if not busy and not (limited and limited.get("status") == "True"):
                continue
            out.append(
                Finding(
                    cls=CauseClass.HPA_AT_MAX,
                    cause=f"HPA {h['name']} is held at maxReplicas {h['max_replicas']} (desired "
                    f"{h['desired_replicas']}) while CPU is {cpu.get('utilization', '?')}% "
                    f"against a {want.get('utilization', '?')}% target: maxReplicas is too "
                    f"low for the load",
                    summary=f"HPA {h['name']} is pinned at maxReplicas {h['max_replicas']} under "
                    f"load",
                    impact=f"{target} cannot scale out further; latency and errors rise with load.",
                    chain=chain(
                        link(
                            S,
                            f"{target} runs {h['current_replicas']} replicas, the HPA's maximum.",
                            hid,
                            about=ref,
                        ),
                        link(
                            C,
                            f"HPA {h['name']}: max {h['max_replicas']}, desired "
                            f"{h['desired_replicas']}, CPU {cpu.get('utilization', '?')}% vs "
                            f"target {want.get('utilization', '?')}%"
                            + (f"; ScalingLimited {limited.get('reason')}" if limited else "")
                            + ".",
                            hid,
                            about=hpa_ref,
                            facts=(
                                fact(
                                    "k8s.hpas",
                                    f"[name={h['name']}].current_replicas",
                                    "ge",
                                    h["max_replicas"],
                                    namespace=ctx.ns,
                                ),
                            ),
                        ),
                    ),
                    strength=Strength.STATED,
                    explains={str(ref), str(hpa_ref)},
                    follow_ups=[
                        "Raise maxReplicas (capacity permitting) or make each request cheaper."
                    ],
                )
            )
    return out
