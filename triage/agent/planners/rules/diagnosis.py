"""Diagnosis for the rules planner: from evidence to a root cause, or an honest "don't know".

The detectors (`detectors.py`) each look for one failure class; the most specific finding
wins and the others become contributing factors. With no finding the draft says "no fault
found" when everything checked was healthy, and CauseClass.INCONCLUSIVE with what was checked
otherwise. Things the request named that do not exist and sources that were unavailable are
listed, never hidden.
"""

from __future__ import annotations

from typing import Any

from tools.results import ErrorKind
from triage.agent.planners.rules.detectors import DETECTORS
from triage.agent.planners.rules.detectors_metrics import ratio_series
from triage.agent.planners.rules.facts import Facts, focus_pods, pod_problem, short
from triage.agent.planners.rules.findings import ERROR_RATIO_ALERT, Ctx, cite, present, workload_of
from triage.core.causes import CauseClass
from triage.core.models import Goal, RCADraft


def _checked(facts: Facts) -> tuple[str, ...]:
    out = []
    for e in facts.evidence:
        arg = e.args.get("query") or e.args.get("pod") or e.args.get("deployment") or ""
        arg = arg or e.args.get("service") or e.args.get("object_name") or ""
        label = f"{e.tool}{' ' + short(str(arg), 90) if arg else ''}"
        out.append(f"{e.id} {label}: {e.status.value}")
    return tuple(out)


def _unavailable(facts: Facts) -> tuple[str, ...]:
    notes: dict[str, str] = {}
    for e in facts.unavailable():
        source = "Prometheus" if e.tool.startswith("prom.") else "Kubernetes"
        notes.setdefault(source, f"{source} evidence unavailable: {short(e.excerpt, 160)}")
    return tuple(notes.values())


def _nonexistent(ctx: Ctx, facts: Facts) -> tuple[str, ...]:
    deployments, _ = facts.data("k8s.deployments", namespace=ctx.ns)
    jobs, _ = facts.data("k8s.jobs", namespace=ctx.ns)
    hpas, _ = facts.data("k8s.hpas", namespace=ctx.ns)
    pvcs, _ = facts.data("k8s.pvcs", namespace=ctx.ns)
    names = {p["name"] for p in ctx.pods} | {s["name"] for s in ctx.services}
    names |= {x["name"] for x in [*deployments, *jobs, *hpas, *pvcs]}
    prefixes = {workload_of(p) for p in ctx.pods}
    if ctx.pods_id is None:  # could not list: cannot tell what exists
        return ()
    return tuple(
        f"{w.kind or 'workload'} {w.name} in namespace {ctx.ns}"
        for w in ctx.goal.scope.workloads
        if w.name not in names and w.name not in prefixes
    )


def _inconclusive(goal: Goal, why: str, facts: Facts, cls: CauseClass, **extra: Any) -> RCADraft:
    fields: dict[str, Any] = {
        "checked": _checked(facts),
        "unavailable": _unavailable(facts),
        **extra,
    }
    return RCADraft(
        title=f"Inconclusive: {why}",
        summary=why,
        root_cause_class=cls,
        impact="Unknown.",
        inconclusive=True,
        **fields,
    )


def draft(goal: Goal, facts: Facts, now: float, *, planner: str) -> RCADraft:
    ns = goal.scope.namespace
    if ns is None:
        return _inconclusive(
            goal,
            "no namespace given: name one in the request ('in namespace X') or pass --namespace",
            facts,
            CauseClass.NO_SCOPE,
            planner=planner,
        )
    ns_ev = facts.get("k8s.namespace", namespace=ns)
    if ns_ev is None or not ns_ev.ok:
        if ns_ev is not None and ns_ev.error_kind is ErrorKind.NOT_FOUND:
            return _inconclusive(
                goal,
                f"namespace {ns} does not exist",
                facts,
                CauseClass.NONEXISTENT_TARGET,
                nonexistent=(f"namespace {ns}",),
                planner=planner,
            )
        return _inconclusive(
            goal,
            "the cluster could not be read",
            facts,
            CauseClass.EVIDENCE_UNAVAILABLE,
            planner=planner,
        )
    pods, pods_id = facts.data("k8s.pods", namespace=ns)
    services, services_id = facts.data("k8s.services", namespace=ns)
    events, events_id = facts.data("k8s.events", namespace=ns, warnings_only=True)
    ctx = Ctx(
        goal=goal,
        facts=facts,
        ns=ns,
        pods=pods,
        pods_id=pods_id,
        focus=focus_pods(goal, pods, services),
        services=services,
        services_id=services_id,
        events=events,
        events_id=events_id,
    )
    findings = sorted(
        (f for d in DETECTORS if (f := d(ctx)) is not None and f.claims),
        key=lambda f: -f.score,
    )
    common: dict[str, Any] = {
        "checked": _checked(facts),
        "unavailable": _unavailable(facts),
        "nonexistent": _nonexistent(ctx, facts),
        "planner": planner,
    }
    if findings:
        best, others = findings[0], findings[1:]
        contributing = list(best.contributing)
        for other in others[:2]:
            if other.cls != best.cls:
                contributing.append(other.claims[0])
        return RCADraft(
            title=f"RCA: {best.summary}",
            summary=best.summary,
            root_cause_class=best.cls,
            inconclusive=not best.cls.is_cause,
            impact=best.impact,
            timeline=tuple(best.timeline),
            root_cause=tuple(best.claims),
            contributing_factors=tuple(contributing),
            remediation=tuple(best.remediation),
            follow_ups=tuple(best.follow_ups),
            **common,
        )
    unhealthy = [p for p in ctx.focus if pod_problem(p)]
    if pods_id is None or unhealthy:
        what = (
            f"{len(unhealthy)} unhealthy pod(s) but no known failure pattern matched"
            if unhealthy
            else "the pods could not be listed"
        )
        return _inconclusive(goal, what, facts, CauseClass.INCONCLUSIVE, **common)
    ready = sum(1 for p in pods if p["ready"] or p["phase"] == "Succeeded")
    claims = present(
        cite(f"All {len(pods)} pods in {ns} are Running and Ready ({ready} ready).", pods_id)
        if pods
        else cite(f"Namespace {ns} has no pods.", ns_ev.id),
        cite(
            "No warning events in the namespace."
            if not events
            else f"{len(events)} warning event(s), none matching a failure pattern.",
            events_id,
        ),
    )
    about = ", ".join(w.name for w in goal.scope.workloads) or "its workloads"
    ratio = ratio_series(ctx)
    if ratio:
        last = ratio[0][-1][1]
        c = cite(f"The 5xx ratio is {last:.2%} now, below {ERROR_RATIO_ALERT:.0%}.", ratio[1])
        if c:
            claims.append(c)
    return RCADraft(
        title=f"No fault found in {ns}",
        summary=f"No fault found for {about} in namespace {ns}: healthy in the evidence gathered.",
        root_cause_class=CauseClass.NO_FAULT,
        impact="None observed.",
        root_cause=tuple(claims),
        follow_ups=("If users still see a problem, name the service and the symptom.",),
        **common,
    )
