"""Autoscalers: one that cannot compute its metric (containers without requests, no metrics
API) never scales; one held at maxReplicas while the load needs more is a capacity limit.
An HPA at its minimum with low load is by design, and said so (a reason for "no fault")."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from tools.read import payloads as p
from triage.agent.planners.rules import text
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import series_values
from triage.agent.planners.rules.reads import METRICS_API, METRICS_SERVER, metrics_servers
from triage.core.causes import CauseClass
from triage.core.models import LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _cond(hpa: p.HPA, kind: str) -> p.Condition | None:
    return next((c for c in hpa["conditions"] if c.get("type") == kind), None)


def _said(m: p.MetricValue | p.MetricTarget) -> str:
    kind = m.get("kind") or "Resource"
    what = "CPU" if m.get("name") == "cpu" else f"{kind} metric {m.get('name')}"
    if m.get("utilization") is not None:
        return f"{what} at {m.get('utilization')}%"
    return f"{what} at {m.get('value')}"


def _number(value: str | None) -> float | None:
    """A quantity as the API writes it: 48250, 1k, 500m, 2.5."""
    if not value:
        return None
    scale = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9}.get(value[-1], 1.0)
    try:
        return float(value[:-1] if scale != 1.0 else value) * scale
    except ValueError:
        return None


def _over_target(h: p.HPA) -> str | None:
    """'External metric kafka_lag at 48250 against a target of 1k': the first metric of any
    type above its target (utilization against utilization, value against value)."""
    for cur in h["current_metrics"]:
        aim = next(
            (
                t
                for t in h["target_metrics"]
                if t.get("name") == cur.get("name") and t.get("kind") == cur.get("kind")
            ),
            None,
        )
        if aim is None:
            continue
        used, want = cur.get("utilization"), aim.get("utilization")
        if used is not None and want is not None and used > want:
            return f"{_said(cur)} against a {want}% target"
        value, limit = _number(cur.get("value")), _number(aim.get("value"))
        if value is not None and limit is not None and value > limit:
            return f"{_said(cur)} against a target of {aim.get('value')}"
    return None


def _max_lowered(ctx: Ctx, h: p.HPA) -> str:
    """'; maxReplicas was 20 until about 2 days ago, then 4 (its spec_max_replicas series)': the
    bound's own history over the last week, when it was higher before."""
    for ev in ctx.facts.purpose("hpa_max_history"):
        for series in ev.data or []:
            if (series.get("labels") or {}).get("horizontalpodautoscaler") != h["name"]:
                continue
            points = [
                (float(t), float(v))
                for t, v in series.get("values") or []
                if isinstance(v, int | float)
            ]
            now_max = h["max_replicas"]
            before = [(t, v) for t, v in points if now_max is not None and v > now_max]
            if not before:
                continue
            was, until = before[-1][1], before[-1][0]
            return (
                f"; maxReplicas was {was:.0f} until about {_span(ctx.now - until)} ago and has "
                f"been {now_max} since (kube_horizontalpodautoscaler_spec_max_replicas): the "
                "bound was lowered, so the change that lowered it is what to undo"
            )
    return ""


def _span(seconds: float) -> str:
    return f"{seconds / 86400:.0f} days" if seconds >= 2 * 86400 else f"{seconds / 3600:.0f} h"


def _first_metric(h: p.HPA) -> str:
    return _said(h["current_metrics"][0]) if h["current_metrics"] else "its metrics read nothing"


def _source_gone(ctx: Ctx, h: p.HPA, message: str) -> tuple[str, str | None] | None:
    """A custom metric the metrics API cannot find, whose source series (by the adapter's
    usual rule, `<name>_total` for `<name>_per_second`) the namespace no longer exports:
    what the workload exports instead is named beside it."""
    if "could not find the metric" not in message and "unable to get metric" not in message:
        return None
    names = {str(t.get("name")) for t in h["target_metrics"] if t.get("kind") != "Resource"}
    sel = f'{{namespace="{ctx.ns}"}}'
    exported = ctx.facts.metric_names(sel)
    eid = next(
        (e.id for e in ctx.facts.all("prom.metric_names") if e.args.get("selector") == sel), None
    )
    for name in sorted(names):
        if not name.endswith("_per_second"):
            continue
        series = name.removesuffix("_per_second") + "_total"
        if not exported:
            continue
        if series in exported:
            # listed by the series index, which spans more than the window: gone only if
            # none of it exists at any step of the window
            counted = ctx.facts.purpose(f"hpa_source:{series}")
            values = [v for e in counted for x in e.data or [] for v in series_values(x)]
            if not values or any(values):
                continue
            eid = counted[0].id
        head = series.split("_")[0]
        instead = sorted(n for n in exported if n.startswith(head + "_") and n != series)[:3]
        return (
            f"the metrics adapter derives {name} from the rate of {series} (its usual rule), "
            f"but nothing in {ctx.ns} exports {series} in the window"
            + (" (its last samples are older)" if series in exported else "")
            + (f"; what it exports instead: {', '.join(instead)}" if instead else ""),
            eid,
        )
    return None


# the object an Object metric describes, as the HPA controller names it in its error
# ("… Ingress on shop classifieds-main/unable to fetch …", "… for ingresses.networking.k8s.io
# classifieds-main")
_DESCRIBED = re.compile(
    r"\b(?P<kind>[A-Z][A-Za-z]+) on \S+ (?P<name>[a-z0-9][\w.-]*)/"
    r"|\bfor (?P<res>[a-z]+)(?:\.[\w.]+)? (?P<name2>[a-z0-9][\w.-]*)$"
)


def _names(read: tuple[Sequence[Mapping[str, object]], str | None]) -> tuple[list[str], str | None]:
    return sorted(str(x["name"]) for x in read[0]), read[1]


def _described_gone(ctx: Ctx, message: str) -> tuple[str, str | None] | None:
    """An Object metric about an object of the namespace that does not exist (renamed by a
    chart, deleted): the adapter has no series for it, whatever it serves for the others."""
    m = _DESCRIBED.search(message)
    if m is None:
        return None
    kind = m.group("kind") or {"ingresses": "Ingress", "services": "Service"}.get(
        m.group("res") or "", ""
    )
    name = m.group("name") or m.group("name2")
    listed: dict[str, tuple[list[str], str | None]] = {
        "Ingress": _names(ctx.facts.ingresses(ctx.ns)),
        "Service": _names(ctx.facts.services(ctx.ns)),
        "Deployment": _names(ctx.facts.deployments(ctx.ns)),
    }
    if kind not in listed or listed[kind][1] is None:
        return None
    names, lid = listed[kind]
    if name in names:
        return None
    return (
        f"its Object metric describes {kind} {name}, which does not exist in {ctx.ns} "
        f"({kind} objects there: {', '.join(names[:4]) or 'none'}): there is no such object and no "
        "series for it — the HPA still names an old name",
        lid,
    )


def _metrics_server_says(ctx: Ctx, message: str) -> tuple[str, str] | None:
    """When the HPA cannot reach the resource metrics API: the metrics-server that serves it
    (found in any namespace) and the failure its log gives, e.g. every kubelet scrape refused
    for a certificate ("x509: … doesn't contain any IP SANs")."""
    if not (METRICS_API.search(message)):
        return None
    for pod in metrics_servers(ctx)[:1]:
        container = pod["containers"][0] if pod["containers"] else None
        log, lid = ctx.facts.logs(pod["namespace"], pod["name"], container, False)
        line = text.telling(log) if lid else None
        state = "not Ready" if not pod["ready"] else "Ready"
        where = f"metrics-server ({pod['namespace']}/{pod['name']}, {state})"
        if line is not None and lid is not None:
            return (
                f"the resource metrics API (metrics.k8s.io) is served by {where}, which cannot "
                f'collect metrics: its log says "{short(line.text, 220)}"',
                lid,
            )
        pods_id = (
            ctx.facts.find_pods(METRICS_SERVER[0])[1] or ctx.facts.find_pods(METRICS_SERVER[1])[1]
        )
        if not pod["ready"] and pods_id is not None:
            return f"the resource metrics API (metrics.k8s.io) is served by {where}", pods_id
    return None


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
        if active and active.get("reason") == "ScalingDisabled":
            continue  # its target is scaled to 0: the HPA stands aside by design (reasons.py)
        if active and active.get("status") == "False":
            message = str(active.get("message") or "")
            missing_requests = "missing request" in message
            source = (
                _described_gone(ctx, message)
                or _source_gone(ctx, h, message)
                or _metrics_server_says(ctx, message)
            )
            cause = (
                f"HPA {h['name']} cannot compute its CPU utilization because {target}'s containers "
                f"set no resources.requests.cpu ({short(message, 160)})"
                if missing_requests
                else f"HPA {h['name']} cannot read its metric: {active.get('reason')}: "
                f"{short(message, 160)}" + (f"; {source[0]}" if source else "")
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
                        link(C, source[0][0].upper() + source[0][1:] + ".", source[1], about=ref)
                        if source
                        else None,
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
            over = _over_target(h)
            # ScalingLimited says which bound held it: TooManyReplicas (the load wants more than
            # maxReplicas) is a capacity limit; TooFewReplicas (it wants fewer than
            # minReplicas: min = max pins it) is not
            capped = (
                limited is not None
                and limited.get("status") == "True"
                and limited.get("reason") != "TooFewReplicas"
            )
            if over is None and not capped:
                continue
            load = over or _first_metric(h)
            out.append(
                Finding(
                    cls=CauseClass.HPA_AT_MAX,
                    cause=f"HPA {h['name']} is held at maxReplicas {h['max_replicas']} (desired "
                    f"{h['desired_replicas']}) while {load}: maxReplicas is too low for the load"
                    + _max_lowered(ctx, h),
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
                            f"{h['desired_replicas']}, {load}"
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
