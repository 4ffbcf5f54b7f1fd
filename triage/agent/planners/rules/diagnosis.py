"""Diagnosis for the rules planner: from evidence to the RCA — a causal chain, an honest "no
fault" with its reasons, or an honest "inconclusive" with what is still unknown.

1. The analyzers (triage/agent/planners/rules/analyzers/) return causal chains.
2. The most explanatory complete chain wins (triage/agent/planners/rules/chain.py::rank); the
   next ones become contributing factors. A Job whose pods' chain was found gets the Job's
   failure as the chain's first link.
3. With no complete chain: if the asked-about objects are unhealthy (or a symptom rose in the
   metrics) the RCA is inconclusive and says what it saw and what is unknown; if they are
   healthy the RCA is "no fault", with a reason for every warning event, every error line
   read, the alert that was pasted, and the autoscaler at its minimum.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from tools.read import payloads as p
from tools.results import ErrorKind
from triage.agent.planners.rules import meanings, quantities, text
from triage.agent.planners.rules.analyzers import analyze
from triage.agent.planners.rules.analyzers.common import _ts, recovered
from triage.agent.planners.rules.analyzers.metrics import symptoms
from triage.agent.planners.rules.analyzers.network import scaled_to_zero
from triage.agent.planners.rules.analyzers.workloads import job_symptom
from triage.agent.planners.rules.chain import Finding, compose, link, rank, short, unique
from triage.agent.planners.rules.context import Ctx, build
from triage.agent.planners.rules.facts import Facts, Ref, selects, series_values, workload_of
from triage.agent.planners.rules.reads import (
    MAX_HOPS,
    _troubled,
    follow_dependencies,
    hosts_failing,
)
from triage.core.causes import CauseClass
from triage.core.models import Claim, Goal, LinkRole, RCADraft

HEARTBEATS = re.compile(r"^(Watchdog|DeadMansSwitch|DeadMansSnitch|InfoInhibitor|AlwaysFiring)$")


def _checked(facts: Facts) -> tuple[str, ...]:
    out = []
    for e in facts.evidence:
        arg = e.args.get("query") or e.args.get("pod") or e.args.get("deployment") or ""
        arg = arg or e.args.get("service") or e.args.get("object_name") or ""
        label = f"{e.tool}{' ' + short(str(arg), 90) if arg else ''}"
        cut = " (capped: incomplete)" if e.truncated else ""
        out.append(f"{e.id} {label}: {e.status.value}{cut}")
    return tuple(out)


def _unavailable(facts: Facts) -> tuple[str, ...]:
    notes: dict[str, str] = {}
    for e in facts.unavailable():
        source = "Prometheus" if e.tool.startswith("prom.") else "Kubernetes"
        notes.setdefault(source, f"{source} evidence unavailable: {short(e.excerpt, 160)}")
    return tuple(notes.values())


def _inconclusive(why: str, facts: Facts, cls: CauseClass, **extra: Any) -> RCADraft:
    fields: dict[str, Any] = {
        "checked": _checked(facts),
        "unavailable": _unavailable(facts),
        **extra,
    }
    return RCADraft(
        title=f"Inconclusive: {why}",
        summary=why,
        root_cause_class=cls,
        cause="",
        impact="Unknown.",
        inconclusive=True,
        **fields,
    )


def _sentence(text_: str) -> str:
    text_ = " ".join(text_.split())
    return (text_[0].upper() + text_[1:]).rstrip(".") + "." if text_ else ""


def _with_what_changed(best: Finding) -> tuple[Claim, ...]:
    """The chain with "what changed since the last healthy revision" as the link before the
    cause (the cause is the setting; the diff shows it is new), when the chain has no such
    link already."""
    chain_ = list(best.chain)
    said = {c.text for c in chain_}
    changed = [
        c.model_copy(update={"role": LinkRole.MECHANISM})
        for c in best.what_changed
        if c.text not in said
    ]
    if not changed or len(chain_) < 2:
        return tuple(chain_)
    return (*chain_[:-1], *changed[:1], chain_[-1])


def _about(name: str, names: set[str]) -> bool:
    """`name` is one of `names`, or one is named after the other (a pod after its
    Deployment, a claim after its StatefulSet): it holds the other between hyphens."""
    return any(name == n or f"-{n}-" in f"-{name}-" or f"-{name}-" in f"-{n}-" for n in names)


def _to_the_asked(ctx: Ctx, best: Finding) -> Claim | None:
    """When the chain is about something else than what was asked (an Ingress, asked about
    its Service) but explains it, the link that says so, on the chain's first evidence."""
    asked = {r.name for r in ctx.asked if r.kind != "Node"}
    subjects = {s.rsplit("/", 1)[-1] for c in best.chain if (s := c.subject)}
    if not asked or not best.chain or any(_about(s, asked) for s in subjects):
        return None
    for ref in sorted(best.explains):
        kind, _, rest = ref.partition("/")
        name = rest.rpartition("/")[2]
        if name in asked:
            return link(
                LinkRole.SYMPTOM,
                f"{kind} {name} is affected: {short(best.summary, 200)}.",
                *best.chain[0].evidence,
                about=Ref(kind, rest.rpartition("/")[0], name),
            )
    return None


def _from_the_caller(ctx: Ctx, best: Finding) -> Claim | None:
    """When the cause is in something the asked-about workload depends on (an upstream at
    its limit, a controller that should act on it), the link from what was asked: the line of
    its own log, or the setting, that names the dependency's Service. None when the chain
    already starts from what was asked, or nothing of the asked-about pods names it."""
    asked = {r.name for r in ctx.asked if r.kind != "Node"}
    subjects = {s.rsplit("/", 1)[-1] for s in best.subjects()}
    if not asked or not subjects or any(_about(s, asked) for s in subjects):
        return None
    services = ctx.facts.services(ctx.ns)[0]
    pods = ctx.facts.pods(ctx.ns)[0]

    def depended_on(host: str) -> str | None:
        found = text.service_of(host, ctx.ns)
        if found is None or found[1] != ctx.ns:
            return None
        svc = next((x for x in services if x["name"] == found[0]), None)
        behind = {found[0]}
        if svc is not None and svc["selector"]:
            behind |= {workload_of(x)[1] for x in pods if selects(svc["selector"], x["labels"])}
        return found[0] if any(_about(s, behind) for s in subjects) else None

    mine = [x for x in ctx.focus_pods if _about(workload_of(x)[1], asked)]
    names = {x["name"] for x in mine}
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("pod") not in names:
            continue
        lines = [str(x) for x in ev.data or []]
        ordered = [ln.text for ln in text.failures(lines)] + lines[::-1]
        for line in ordered:
            for e in text.endpoints_in(line):
                svc = depended_on(e.host)
                if svc is not None:
                    who = workload_of(next(x for x in mine if x["name"] == ev.args.get("pod")))
                    return link(
                        LinkRole.SYMPTOM,
                        f"{who[1]} depends on {svc}; its log says: {short(line, 200)}",
                        ev.id,
                        about=ctx.ref(who[0], who[1]),
                    )
    return None


Hop = tuple[str, str, str, list[Finding]]  # service, its namespace, the caller's line, findings


def _hops(ctx: Ctx) -> list[Hop]:
    """Every dependency in another namespace that the asked-about pods fail on, analysed as
    the asked-about workload is (its pods, logs, claims, volumes) in a context of its own:
    (service, namespace, the caller's failing line, the findings there). Same-namespace
    dependencies are in the focus already."""
    out: list[Hop] = []
    for svc_name, dep_ns, _port, line in hosts_failing(ctx)[:MAX_HOPS]:
        if dep_ns == ctx.ns:
            continue
        svc = next((x for x in ctx.facts.services(dep_ns)[0] if x["name"] == svc_name), None)
        if svc is None or not svc["selector"]:
            continue
        behind = [x for x in ctx.facts.pods(dep_ns)[0] if selects(svc["selector"], x["labels"])]
        if not behind:
            continue
        sub = Ctx(
            goal=ctx.goal,
            facts=ctx.facts,
            ns=dep_ns,
            now=ctx.now,
            focus={str(Ref("Service", dep_ns, svc_name))}
            | {str(Ref("Pod", dep_ns, x["name"])) for x in behind}
            | {str(Ref(*workload_of(x), dep_ns)) for x in behind},
            focus_pods=behind,
            whole_namespace=False,
        )
        out.append((svc_name, dep_ns, line, rank(compose(analyze(sub)), sub.focus)))
    return out


def _upstream(ctx: Ctx, hops: list[Hop]) -> Finding | None:
    """When nothing of the asked-about namespace explains its symptom: a dependency's
    complete chain, with the caller's failing line as the first link, is the cause; the
    caller's errors are the consequence."""
    for svc_name, dep_ns, line, findings in hops:
        found = [f for f in findings if f.complete]
        if not found:
            continue
        best = found[0]
        said = next(
            (
                ev
                for ev in ctx.facts.all("k8s.logs")
                if ev.ok
                and ev.args.get("namespace") == ctx.ns
                and any(line in str(x) for x in ev.data or [])
            ),
            None,
        )
        pod = next((x for x in ctx.focus_pods if said and x["name"] == said.args.get("pod")), None)
        if said is None or pod is None:
            continue
        caller = ctx.workload_ref(pod)
        first = link(
            LinkRole.SYMPTOM,
            f"{caller.name} depends on {svc_name} ({dep_ns}); its log says: {short(line, 220)}",
            said.id,
            about=caller,
        )
        if first is not None:
            best.chain.insert(0, first)
        best.summary = (
            f"{caller.name} fails because its dependency {svc_name} ({dep_ns}) does: {best.summary}"
        )
        best.explains |= {str(caller)}
        return best
    return None


def _attach_jobs(ctx: Ctx, findings: list[Finding]) -> None:
    for f in findings:
        for claim in f.chain:
            if not claim.subject or "/" not in claim.subject:
                continue
            kind, _ns, name = claim.subject.split("/", 2)
            if kind != "Job":
                continue
            found = job_symptom(ctx, name)
            if found and found[1]:
                first = link(LinkRole.SYMPTOM, found[0], found[1], about=ctx.ref("Job", name))
                if first is not None:
                    f.chain.insert(0, first)
                    f.summary = f"Job {name} failed: {f.summary}"
            break


def draft(goal: Goal, facts: Facts, now: float, *, planner: str) -> RCADraft:
    ns = goal.scope.namespace
    if ns is None:
        return _inconclusive(
            "no namespace given: name one in the request ('in namespace X') or pass --namespace",
            facts,
            CauseClass.NO_SCOPE,
            planner=planner,
        )
    ns_ev = facts.get("k8s.namespace", namespace=ns)
    if ns_ev is None or not ns_ev.ok:
        if ns_ev is not None and ns_ev.error_kind is ErrorKind.NOT_FOUND:
            return _inconclusive(
                f"namespace {ns} does not exist",
                facts,
                CauseClass.NONEXISTENT_TARGET,
                nonexistent=(f"namespace {ns}",),
                planner=planner,
            )
        return _inconclusive(
            "the cluster could not be read", facts, CauseClass.EVIDENCE_UNAVAILABLE, planner=planner
        )
    ctx = build(goal, facts, ns, now)
    follow_dependencies(ctx)
    common: dict[str, Any] = {
        "checked": _checked(facts),
        "unavailable": _unavailable(facts),
        "nonexistent": tuple(
            f"{w.kind or 'object'} {w.name} in namespace {ns}" for w in ctx.unresolved
        ),
        "planner": planner,
    }
    findings = analyze(ctx)
    _attach_jobs(ctx, findings)
    hops = _hops(ctx)
    # a chain open at a dependency in another namespace (its pods are not ready) is joined
    # with what explains it there (their crash, their full volume), as one in this one is
    elsewhere = [f for _s, _n, _l, found in hops for f in found if f.complete]
    ranked = rank(compose([*findings, *elsewhere])[: len(findings)], ctx.focus)
    complete = [f for f in ranked if f.complete]
    if not complete and (upstream := _upstream(ctx, hops)) is not None:
        complete = [upstream]
    if complete:
        best = complete[0]
        caller = _from_the_caller(ctx, best) or _to_the_asked(ctx, best)
        if caller is not None:
            best.chain.insert(0, caller)
        contributing = list(best.contributing)
        joined = {id(x) for x in best.absorbed}
        for other in complete[1:3]:
            if id(other) in joined or any(id(x) in joined for x in other.absorbed):
                continue
            if other.cls is not best.cls or other.subjects() != best.subjects():
                first = other.chain[-1]
                contributing.append(first.model_copy(update={"role": None}))
        return RCADraft(
            title=f"RCA: {short(best.summary, 160)}",
            summary=_sentence(best.summary),
            root_cause_class=best.cls,
            cause=_sentence(best.cause),
            impact=best.impact or "See the summary.",
            timeline=tuple(best.timeline),
            root_cause=_with_what_changed(best),
            what_changed=tuple(best.what_changed),
            contributing_factors=tuple(contributing),
            remediation=tuple(best.remediation),
            follow_ups=tuple(best.follow_ups),
            **common,
        )
    pods, pods_id = facts.pods(ns)
    if pods_id is None and not facts.answered("k8s.pods", namespace=ns):
        return _inconclusive(
            "the pods could not be listed", facts, CauseClass.INCONCLUSIVE, **common
        )
    troubled = [
        x
        for x in ctx.focus_pods
        if _troubled(x)
        and x["phase"] != "Succeeded"
        and not (
            x["ready"] and all(recovered(c, ctx.now) or not c["restarts"] for c in x["containers"])
        )
    ]
    rising = symptoms(ctx)
    failing = _unhandled_failures(ctx)
    erring = _error_ratio_now(ctx)
    if troubled or ranked or rising or failing or erring > ERROR_RATIO_FLOOR:
        seen = (
            f"{len(troubled)} unhealthy pod(s) of what was asked about (e.g. {troubled[0]['name']})"
            if troubled
            else f"the {rising[0][0]} rose"
            if rising
            else f"{erring:.1%} of requests fail now"
            if erring > ERROR_RATIO_FLOOR and not ranked and not failing
            else short(ranked[0].summary, 160)
            if ranked
            else f'the log of {failing[0][0]} says "{short(failing[0][1], 160)}"'
        )
        claims = tuple(c for f in ranked[:2] for c in f.chain[:1])
        return _inconclusive(
            f"{seen}, but no cause could be established from the evidence",
            facts,
            CauseClass.INCONCLUSIVE,
            root_cause=claims,
            follow_ups=("Check what the workload depends on and what changed around the start.",),
            **common,
        )
    return _no_fault(ctx, pods, pods_id, common)


# -- no fault, with reasons ------------------------------------------------------------------


ERROR_RATIO_FLOOR = 0.05  # the judge's floor too (judge/symptoms.py): above it, not "no fault"


def _error_ratio_now(ctx: Ctx) -> float:
    """The last point of the error-ratio series read, 0 when none was: a chronic ratio that
    never rose in the window is as much a fault as one that did."""
    for ev in ctx.facts.evidence:
        if ev.ok and (ev.purpose or "").startswith("error_ratio:"):
            values = series_values((ev.data or [{}])[0])
            if values:
                return float(values[-1])
    return 0.0


def _unhandled_failures(ctx: Ctx) -> list[tuple[str, str]]:
    """(pod, line) of asked-about logs that state a failure no analyzer explained and the
    program did not cope with (a 403 from the apiserver, a full disk, a refused credential):
    a Ready pod with such a line is not "no fault"."""
    focus = {x["name"] for x in ctx.focus_pods}
    out = []
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or str(ev.args.get("pod")) not in focus:
            continue
        for ln in text.failures([str(x) for x in ev.data or []]):
            if ln.family in text.FAILING_FAMILIES and not text.handled(ln.text):
                out.append((str(ev.args.get("pod")), ln.text))
    return out


def _n(count: int, noun: str) -> str:
    """'0 restarts', '1 restart', '2 pods'."""
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _no_fault(ctx: Ctx, pods: list[p.Pod], pods_id: str | None, common: dict[str, Any]) -> RCADraft:
    facts, ns = ctx.facts, ctx.ns
    focus = ctx.focus_pods
    # what the answer is about is what the names resolved to, never a name that matched nothing
    resolved = sorted({ctx.workload_ref(x).name for x in focus}) or sorted(
        {ref.rsplit("/", 1)[-1] for ref in ctx.focus}
    )
    about = f"namespace {ns}" if ctx.whole_namespace else ", ".join(resolved)
    unmatched = [
        w.name
        for w in ctx.goal.scope.workloads
        if not any(n == w.name or n.startswith(w.name + "-") for n in resolved)
    ]
    ready = sum(1 for x in focus if x["ready"] or x["phase"] == "Succeeded")
    claims: list[Claim | None] = [
        link(
            LinkRole.CAUSE,
            f"No fault found: all {_n(len(focus), 'pod')} of {about} are Running and Ready "
            f"({ready} ready, "
            f"{_n(sum(c['restarts'] for x in focus for c in x['containers']), 'restart')} in all)."
            if focus
            else f"Namespace {ns} has no pods.",
            pods_id or facts.ok("k8s.namespace", namespace=ns).id,  # type: ignore[union-attr]
            about=ctx.ref("Namespace", ns, ns),
        )
    ]
    if unmatched and ctx.whole_namespace:
        claims.append(
            link(
                None,
                f"Nothing named {', '.join(unmatched)} was found in {ns} among the kinds the "
                "reader lists, so this answer is for the namespace as a whole.",
                pods_id,
                about=ctx.ref("Namespace", ns, ns),
            )
        )
    claims += _restarts_explained(ctx)
    claims += _memory_explained(ctx)
    claims += _volumes_explained(ctx)
    claims += _events_explained(ctx)
    claims += _scans_explained(ctx)
    claims += _policies_explained(ctx)
    claims += _described_explained(ctx)
    claims += _logs_explained(ctx)
    claims += _alert_explained(ctx)
    claims += _autoscalers_explained(ctx)
    claims += _scaled_down_explained(ctx)
    claims += _jobs_explained(ctx)
    others = [x for x in pods if x not in focus and _troubled(x) and x["phase"] != "Succeeded"]
    if others and not ctx.whole_namespace:
        names = sorted({workload_of(x)[1] for x in others})
        claims.append(
            link(
                None,
                f"Outside what was asked about, {', '.join(names)} is unhealthy in {ns} "
                f"(e.g. pod {others[0]['name']}); it is a separate problem.",
                pods_id,
                about=ctx.workload_ref(others[0]),
            )
        )
    ratio = [e for e in facts.evidence if e.ok and (e.purpose or "").startswith("error_ratio:")]
    for ev in ratio[:1]:
        values = series_values((ev.data or [{}])[0])
        if values:
            claims.append(
                link(
                    None,
                    f"The error ratio is {values[-1]:.2%} now, with no rise in the window.",
                    ev.id,
                )
            )
    kept = tuple(c for c in claims if c is not None)
    return RCADraft(
        title=f"No fault found for {about}",
        summary=f"No fault found for {about} in namespace {ns}: "
        + "; ".join(short(c.text, 90) for c in kept[1:4])
        if len(kept) > 1
        else f"No fault found for {about} in namespace {ns}: healthy in everything read.",
        root_cause_class=CauseClass.NO_FAULT,
        cause=f"No fault found for {about}: {short(kept[0].text, 200)}",
        impact="None observed.",
        root_cause=kept,
        follow_ups=("If users still see a problem, name the service and the symptom.",),
        **common,
    )


def _memory_explained(ctx: Ctx) -> list[Claim | None]:
    """The working set of what was asked about against its limit, and its shape: a sawtooth
    that falls back after each peak is garbage collection, not a leak."""
    out: list[Claim | None] = []
    for ev in ctx.facts.purpose("memory"):
        for pod in ctx.focus_pods[:4]:
            workload = ctx.workload_ref(pod).name
            for c in pod["containers"]:
                limit = quantities.quantity_bytes(c["limits"].get("memory"))
                series = next(
                    (
                        x
                        for x in ev.data or []
                        if str((x.get("labels") or {}).get("pod", "")).startswith(f"{workload}-")
                        and (x.get("labels") or {}).get("container") in (c["name"], None)
                    ),
                    None,
                )
                values = series_values(series) if series else []
                if not values or not limit:
                    continue
                peak = max(values)
                falls = sum(1 for a, b in itertools.pairwise(values) if b < a * 0.8)
                shape = (
                    "and falls back after each peak (garbage collection, not a leak)"
                    if falls
                    else "and stays flat"
                    if max(values) < min(values) * 1.3
                    else "and has not fallen back in the window"
                )
                made_of, mid = _memory_parts(ctx, workload, c["name"])
                out.append(
                    link(
                        None,
                        f"The working set of {workload}/{c['name']} peaks at "
                        f"{quantities.human(peak)} of "
                        f"its {c['limits'].get('memory')} limit ({peak / limit:.0%}) {shape}"
                        + made_of
                        + ".",
                        ev.id,
                        mid,
                        ctx.facts.pods(ctx.ns)[1],
                        about=ctx.workload_ref(pod),
                    )
                )
                return out
    return out


_SIZE_CAP = re.compile(
    r"(?P<flag>--?[\w.-]*(?:retention[._-]?size|max[._-]?size|size[._-]?limit|max[._-]?bytes|"
    r"cache[._-]?size)[\w.-]*)[= ](?P<v>\d+(?:\.\d+)?\s?[kKmMgGtTpP]?[iI]?[bB]?)\b"
)


def _size_cap(ctx: Ctx, claim: str) -> str:
    """The flag with which the claim's user bounds what it keeps on it
    ('--storage.tsdb.retention.size=45GB'), or ''."""
    for pod in ctx.focus_pods:
        if claim not in pod["claims"]:
            continue
        for c in pod["containers"]:
            spec = c["spec"]
            if spec is None:
                continue
            said = " ".join(
                [
                    *spec["command"],
                    *spec["args"],
                    *(f"--{e['name']}={e.get('value')}" for e in spec["env"]),
                ]
            )
            m = _SIZE_CAP.search(said)
            if m:
                return f"{m.group('flag')}={m.group('v')}"
    return ""


def _volumes_explained(ctx: Ctx) -> list[Claim | None]:
    """A volume of what was asked about that is well used but did not grow in the window:
    held at a level (a cache under its own size cap, a data set that no longer grows)."""
    used = {c for x in ctx.focus_pods for c in x["claims"]}
    out: list[Claim | None] = []
    for ev in ctx.facts.purpose("volume_usage"):
        for series in ev.data or []:
            claim = str((series.get("labels") or {}).get("persistentvolumeclaim", ""))
            values = series_values(series)
            if claim not in used or len(values) < 6 or values[-1] < 0.5:
                continue
            if max(values) - min(values) <= 0.02:
                cap = _size_cap(ctx, claim)
                out.append(
                    link(
                        None,
                        f"Volume {claim} is {values[-1]:.0%} used and flat over the window "
                        f"(between {min(values):.0%} and {max(values):.0%}): it is not filling; "
                        + (
                            f"its user caps what it keeps with {cap}, so the level is bounded "
                            "and will not fill the volume"
                            if cap
                            else "a level held steady is what a cache bounded by its own size "
                            "limit looks like"
                        ),
                        ev.id,
                        about=ctx.ref("PersistentVolumeClaim", claim),
                    )
                )
    return out[:2]


def _memory_parts(ctx: Ctx, workload: str, container: str) -> tuple[str, str | None]:
    """'; of it, 160Mi is the process's own (RSS) and 780Mi page cache, which the kernel
    reclaims under pressure before it OOM-kills': when cAdvisor's split was read."""
    last: dict[str, tuple[float, str]] = {}
    for part in ("memory_rss", "memory_cache"):
        for ev in ctx.facts.purpose(part):
            for series in ev.data or []:
                labels = series.get("labels") or {}
                if str(labels.get("pod", "")).startswith(f"{workload}-") and labels.get(
                    "container"
                ) in (container, None):
                    values = series_values(series)
                    if values:
                        last[part] = (values[-1], ev.id)
    if "memory_rss" not in last or "memory_cache" not in last:
        return "", None
    rss, cache = last["memory_rss"][0], last["memory_cache"][0]
    said = (
        f"; cAdvisor counts {quantities.human(rss)} of the process's own memory (RSS) and "
        f"{quantities.human(cache)} page cache"
    )
    if cache > rss:
        said += ", which the kernel reclaims under pressure before it OOM-kills: not a leak"
    return said, last["memory_rss"][1]


def _restarts_explained(ctx: Ctx) -> list[Claim | None]:
    """A restart long ago, running and Ready since: when, why (its exit and the last words of
    the instance before), and that it has not recurred."""
    out: list[Claim | None] = []
    pods_id = ctx.facts.pods(ctx.ns)[1]
    for pod in ctx.focus_pods:
        for c in pod["containers"]:
            if not c["restarts"] or not recovered(c, ctx.now):
                continue
            last = c["last_terminated"] or {}
            ago = (ctx.now - (_ts(str(last.get("finished_at"))) or ctx.now)) / 86400
            when = f"{ago:.0f} days ago" if ago >= 2 else f"{ago * 24:.0f} h ago"
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], True)
            line = text.telling(log) if lid else None
            why = f'; the instance before said "{short(line.text, 140)}"' if line else ""
            out.append(
                link(
                    None,
                    f"Container {c['name']} of {pod['name']} restarted {c['restarts']} time(s), "
                    f"last {when} ({last.get('reason')}, exit {last.get('exit_code')}){why}; it "
                    "has run and been Ready since, so it is not recurring.",
                    pods_id,
                    lid,
                    about=ctx.pod_ref(pod),
                )
            )
    return out


STARTUP_S = 120.0  # a probe that fails this soon after its container started: start-up


# The line a server logs once it serves (Spring Boot, Tomcat/Jetty, Node and Go servers,
# gunicorn/uvicorn, Redis/Postgres/MySQL): before it, a probe that cannot connect is start-up.
_SERVING = re.compile(
    r"\bStarted \S+ in [\d.]+ ?s|\b(Tomcat|Jetty|Netty|Undertow) started on port|"
    r"\blistening (on|at)\b|\bListening at\b|\bserver (started|listening)|"
    r"Application startup complete|ready to accept connections|\bserving on\b",
    re.I,
)
_TIMESTAMP_LESS = re.compile(r"^\S+, \[[^\]]*\]\s+\w+ -- : (\[[^\]]*\]\s*)?")
_LEADING_TS = re.compile(r"^\[?(\d{4}-\d{2}-\d{2}[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)")


def _serving_since(ctx: Ctx, pod: p.Pod) -> tuple[float, str] | None:
    """(when, the line) the pod's current log first says the server serves."""
    for c in pod["containers"]:
        log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
        for raw in log if lid else []:
            if _SERVING.search(raw) and (m := _LEADING_TS.match(raw.strip())):
                at = _ts(m.group(1).replace(" ", "T"))
                if at is not None:
                    return at, raw
    return None


def _at_startup(pod: p.Pod, e: p.Event, ctx: Ctx | None = None) -> str:
    """'; it fired 4 s after the container started, before it was first Ready: a transient
    start-up failure' when the warning's last time is within STARTUP_S of the start of a
    container that has not restarted since."""
    last = _ts(str(e["last_seen"])) if e["last_seen"] else None
    for c in pod["containers"]:
        at = (c["state"] or {}).get("started_at")
        started = _ts(str(at)) if at else None
        if last is None or started is None or c["restarts"]:
            continue
        if -5.0 <= last - started <= STARTUP_S:
            return (
                f"; it fired {max(0.0, last - started):.0f} s after container {c['name']} "
                "started, before the pod was first Ready: a transient start-up failure, "
                "expected while the server is still starting"
            )
    serving = _serving_since(ctx, pod) if ctx is not None and last is not None else None
    if serving is not None and last is not None and last <= serving[0] + 15.0:
        said = _LEADING_TS.sub("", serving[1].strip()).strip()
        return (
            f'; it stopped when the server started (its log: "{short(said, 140)}"): the probe '
            "ran before the app was listening, a transient start-up failure, expected while "
            "it starts"
        )
    return ""


def _rolled_out_owner(ctx: Ctx, replicaset: str) -> p.Deployment | None:
    """The Deployment owning `replicaset` when all its replicas run the newest revision."""
    for d in ctx.facts.deployments(ctx.ns)[0]:
        failing = any(
            (c["type"] == "ReplicaFailure" and c["status"] == "True")
            or (c["type"] == "Progressing" and c["status"] == "False")
            for c in d["conditions"]
        )
        ours = replicaset.startswith(f"{d['name']}-")
        if ours and not failing and d["updated"] >= (d["replicas"] or 0):
            return d
    return None


QUIET_S = 600.0  # a warning not repeated for this long has stopped, not paused
# Normal events every pod's start goes through: worth quoting only after the warning.
_ROUTINE = frozenset({"Scheduled", "Pulling", "Pulled", "Created", "Started", "Killing"})
# The routine step that ends a warning of each kind.
_RESOLVES = {
    "FailedScheduling": ("Scheduled",),
    "Failed": ("Pulled",),
    "BackOff": ("Pulled", "Started"),
    "FailedMount": ("Started",),
}
PER_OBJECT = 3  # distinct warnings explained per object, those the request names first
FOLLOWERS = 3  # Normal events after a warning quoted in its explanation


def _after(ctx: Ctx, e: p.Event) -> tuple[str, str | None]:
    """What the object's own events say happened after the warning (Normal ones, read by
    name: reads.warned_objects): '; then TriggeredScaleUp (pod triggered scale-up …)'."""
    name, kind = str(e["object"]["name"]), str(e["object"]["kind"])
    own, oid = ctx.facts.listed(
        "k8s.events", p.Event, namespace=ctx.ns, object_name=name, object_kind=kind
    )
    last = _ts(str(e["last_seen"])) if e["last_seen"] else None
    if last is None or oid is None:
        return "", None
    seen: dict[str, p.Event] = {}
    for x in sorted(own, key=lambda x: str(x["last_seen"])):
        at = _ts(str(x["last_seen"])) if x["last_seen"] else None
        if x["type"] != "Normal" or at is None or not x["reason"]:
            continue
        # not a step every pod goes through, or the step that ends this warning, after it
        reason = str(x["reason"])
        ends = reason in _RESOLVES.get(str(e["reason"]), ()) and at >= last - 1.0
        if reason not in _ROUTINE or ends:
            seen.setdefault(reason, x)
    if not seen:
        return "", None
    then = ", ".join(
        f"{r} ({short(str(x['message']), 90)})" for r, x in list(seen.items())[:FOLLOWERS]
    )
    return f"; what followed it: {then}", oid


def _stopped(ctx: Ctx, e: p.Event) -> str:
    """' (12 times, the last 41 min ago: it no longer occurs)' for a warning that has been
    quiet for QUIET_S; its count and last time otherwise."""
    last = _ts(str(e["last_seen"])) if e["last_seen"] else None
    times = f"{e['count']} time(s)" if e["count"] else "seen"
    if last is None:
        return f" ({times})"
    ago = max(0.0, ctx.now - last)
    when = f"{ago / 60:.0f} min ago" if ago < 7200 else f"{ago / 3600:.1f} h ago"
    if ago >= QUIET_S:
        return f" ({times}, the last {when}: it no longer occurs, a transient warning)"
    return f" ({times}, the last {when})"


def _events_explained(ctx: Ctx) -> list[Claim | None]:
    events, eid = ctx.facts.warnings(ctx.ns)
    pods = {x["name"]: x for x in ctx.facts.pods(ctx.ns)[0]}
    out: list[Claim | None] = []
    seen: dict[tuple[str, str], set[str]] = {}
    words = ctx.goal.words.lower()
    newest_first = sorted(events, key=lambda e: str(e["last_seen"]), reverse=True)
    # those whose reason the request names first, then the newest (a stable sort)
    for e in sorted(newest_first, key=lambda e: str(e["reason"]).lower() not in words):
        name, kind = str(e["object"]["name"]), str(e["object"]["kind"])
        reasons = seen.setdefault((kind, name), set())
        if str(e["reason"]) in reasons or len(reasons) >= PER_OBJECT:
            continue
        reasons.add(str(e["reason"]))
        pod = pods.get(name)
        then, oid = _after(ctx, e)
        if kind == "Pod" and pod is not None and pod["ready"]:
            why = (
                f"pod {name} is Ready now ({sum(c['restarts'] for c in pod['containers'])} "
                f"restart(s)): the {e['reason']} warning{_stopped(ctx, e)} is over"
                + (_at_startup(pod, e, ctx) if e["reason"] not in _RESOLVES else "")
                + then
            )
        elif kind == "Pod" and pod is None:
            why = f"pod {name} no longer exists: its {e['reason']} warning is history{then}"
        elif kind == "ReplicaSet":
            done = _rolled_out_owner(ctx, name)
            if done is None:
                continue  # its Deployment has not rolled out: not explained, and not said to be
            why = (
                f"ReplicaSet {name} had {e['reason']} ({short(str(e['message']), 100)}); "
                f"Deployment {done['name']} has rolled out since ({done['updated']}/"
                f"{done['replicas']} updated, {done['available']} available){then}"
            )
        else:
            why = (
                f"{kind} {name} had {e['reason']}{_stopped(ctx, e)}: "
                f"{short(str(e['message']), 100)}; it is healthy in what was read{then}"
            )
        known = meanings.meaning(e["reason"], e["message"])
        if known:
            why += f" ({e['reason']}: {known})"
        ids = (eid, oid) if oid and oid != eid else (eid,)
        out.append(link(None, _sentence(why), *ids, about=ctx.ref(kind, name)))
    return out


# A request line that names the path and the client ("Started GET "/x" for 1.2.3.4", an
# access log "1.2.3.4 - - [..] "GET /x HTTP/1.1" 404"), and a path the app says it has not
_REQUEST_FOR = re.compile(
    r"\b(?:GET|POST|PUT|HEAD|DELETE|PATCH|OPTIONS)\s+\"?(?P<path>/[^\s\"]*)\"?\s+for\s+"
    r"(?P<ip>\d{1,3}(?:\.\d{1,3}){3})"
    r"|^(?P<ip2>\d{1,3}(?:\.\d{1,3}){3})\s.*?\"(?:GET|POST|PUT|HEAD|DELETE|PATCH|OPTIONS)\s+"
    r"(?P<path2>/\S*)[^\"]*\"\s+404\b"
)
_NOT_SERVED = re.compile(
    r"No route matches \[\w+\] \"(?P<path>/[^\"]*)\"|\"(?:GET|POST|HEAD) (?P<p2>/\S*)[^\"]*\" 404\b"
)
SCAN_PATHS = 3  # distinct paths not served, from one address: a scan, not a broken link


def _scans_explained(ctx: Ctx) -> list[Claim | None]:
    """One client address asking for several paths the app does not serve (/wp-login.php,
    /.env, /phpmyadmin/): a scanner probing for known weak spots; its 404s are not a fault."""
    out: list[Claim | None] = []
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("previous"):
            continue
        log = [str(x) for x in ev.data or []]
        missing = {m.group("path") or m.group("p2") for ln in log if (m := _NOT_SERVED.search(ln))}
        by_ip: dict[str, set[str]] = {}
        for ln in log:
            m = _REQUEST_FOR.search(_TIMESTAMP_LESS.sub("", ln))
            if m is None:
                continue
            ip, path = m.group("ip") or m.group("ip2"), m.group("path") or m.group("path2")
            if path in missing or m.group("ip2"):
                by_ip.setdefault(ip, set()).add(path)
        for ip, paths in sorted(by_ip.items(), key=lambda kv: -len(kv[1])):
            if len(paths) >= SCAN_PATHS:
                out.append(
                    link(
                        None,
                        f"The not-found errors in the log of {ev.args.get('pod')} come from one "
                        f"address, {ip}, asking for {len(paths)} paths the app does not serve "
                        f"({', '.join(sorted(paths)[:5])}): a scanner probing for known weak "
                        "spots, answered 404 — not a fault of the app, which serves everyone "
                        "else (block the address at the edge if it is noisy).",
                        ev.id,
                        about=ctx.ref("Pod", str(ev.args.get("pod"))),
                    )
                )
                return out
    return out


_TOKEN = re.compile(r"[a-z][a-z0-9]{3,}")
_STOP = frozenset(
    {
        "logs",
        "log",
        "full",
        "every",
        "couple",
        "minutes",
        "nobody",
        "complained",
        "looks",
        "that",
        "this",
        "with",
        "from",
        "they",
        "them",
        "their",
        "have",
        "been",
        "since",
        "what",
        "when",
        "there",
        "about",
        "just",
        "also",
        "into",
        "some",
        "more",
        "lots",
        "keep",
        "keeps",
    }
)
STEM = 5  # letters a word and a log word share to be one word ("exiting" / "exit" no: 4)
DESCRIBED_MIN = 2  # lines that must match what the request describes


def _stems(words: str) -> set[str]:
    return {w[:STEM] for w in _TOKEN.findall(words.lower()) if w not in _STOP}


def _described_explained(ctx: Ctx) -> list[Claim | None]:
    """The log lines the request itself describes ("workers exiting and new ones booting"),
    found by the words they share with it, quoted with the line that comes before them and
    the command line of the process that writes them: whether the program does it on purpose
    (a setting, a line that says why) is for the reviewer to see, not to take on trust."""
    scope = ctx.goal.scope
    names = " ".join([*(w.name for w in scope.workloads), scope.namespace or ""])
    asked = _stems(ctx.goal.words.replace("-", " ")) - _stems(names.replace("-", " "))
    out: list[Claim | None] = []
    if len(asked) < 2:
        return out
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("previous"):
            continue
        log = [_LEADING_TS.sub("", str(x)).strip(" ]") for x in ev.data or []]
        hits = [i for i, ln in enumerate(log) if len(_stems(ln) & asked) >= 2]
        if len(hits) < DESCRIBED_MIN:
            continue
        pod_name = str(ev.args.get("pod"))
        first = hits[-1]  # the last run of such lines, and what comes just before it
        while first - 1 in hits:
            first -= 1
        before = log[first - 1] if first > 0 else ""
        pod = next((x for x in ctx.focus_pods if x["name"] == pod_name), None)
        spec = next(
            (
                c["spec"]
                for c in (pod["containers"] if pod else [])
                if c["spec"] is not None and c["name"] == ev.args.get("container", c["name"])
            ),
            None,
        )
        command = " ".join([*spec["command"], *spec["args"]]) if spec else ""
        out.append(
            link(
                None,
                f"The lines the request describes are in the log of {pod_name}: "
                f'{len(hits)} like "{short(log[hits[-1]], 100)}"'
                + (f'; the line before the last of them: "{short(before, 100)}"' if before else "")
                + (f"; the process runs `{short(command, 200)}`" if command else "")
                + ".",
                ev.id,
                about=ctx.ref("Pod", pod_name, str(ev.args.get("namespace") or ctx.ns)),
            )
        )
        if len(out) >= 2:
            break
    return out


def _rules(pol: p.NetworkPolicy, direction: str) -> str:
    peers = pol["ingress"] if direction == "Ingress" else pol["egress"]
    ports = pol["ingress_ports"] if direction == "Ingress" else pol["egress_ports"]
    if direction not in pol["types"]:
        return ""
    if not peers:
        return f"{direction.lower()}: nothing (deny)"
    said = []
    for rule, rule_ports in zip(peers, ports, strict=False):
        who = "anywhere" if not rule else f"{len(rule)} peer(s)"
        said.append(who + (f" on {', '.join(rule_ports)}" if rule_ports else ""))
    return f"{direction.lower()} allowed from/to " + "; ".join(said)


def _policies_explained(ctx: Ctx) -> list[Claim | None]:
    """The NetworkPolicies selecting what was asked about, each with what it admits: policies
    add up, so a default deny beside allow rules blocks only what no rule allows. Said when
    the request is about policies, or when a deny-all selects the pods."""
    policies, nid = ctx.facts.network_policies(ctx.ns)
    words = ctx.goal.words.lower()
    out: list[Claim | None] = []
    if not policies or nid is None:
        return out
    for pod in ctx.focus_pods[:8]:
        workload = ctx.workload_ref(pod)
        if any(str(workload) == str(c.subject) for c in out if c is not None):
            continue
        mine = [
            pol
            for pol in policies
            if not pol["pod_selector"] or selects(pol["pod_selector"], pod["labels"])
        ]
        denies = [
            pol
            for pol in mine
            if ("Ingress" in pol["types"] and not pol["ingress"])
            or ("Egress" in pol["types"] and not pol["egress"])
        ]
        if not mine or not (denies or "polic" in words):
            continue
        parts = [
            f"{pol['name']} ("
            + ", ".join(x for x in (_rules(pol, "Ingress"), _rules(pol, "Egress")) if x)
            + ")"
            for pol in mine[:6]
        ]
        allows = [pol["name"] for pol in mine if pol not in denies]
        out.append(
            link(
                None,
                f"NetworkPolicies selecting {workload.name}: {'; '.join(parts)}. Policies add "
                "up: "
                + (
                    f"traffic is allowed by {', '.join(allows)} where its rules admit it, "
                    "and only what no rule admits is dropped"
                    if allows
                    else "with no allow rule beside the deny, everything it denies is dropped"
                )
                + ".",
                nid,
                about=workload,
            )
        )
    return out


ONE_OFF_AFTER = 3  # quiet lines after a single failure line that make it a one-off


def _logs_explained(ctx: Ctx) -> list[Claim | None]:
    """Every warning or error line read, grouped by what it says, with why it is harmless
    here: the program says it coped (retries, serves cached data, rejected a caller's
    input) and the pod is Ready."""
    out: list[Claim | None] = []
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("previous"):
            continue
        lines = text.lines_of([str(x) for x in ev.data or []])
        loud = [ln for ln in lines if ln.severity >= 1]
        pod = str(ev.args.get("pod"))
        ref = ctx.ref("Pod", pod, str(ev.args.get("namespace") or ctx.ns))
        if not loud:
            latest = f'; its latest line: "{short(lines[-1].text, 140)}"' if lines else ""
            out.append(
                link(
                    None,
                    f"The log of {pod} ({len(lines)} lines read) has no warnings or errors"
                    f"{latest}.",
                    ev.id,
                    about=ref,
                )
            )
            continue
        groups: dict[str, list[text.Line]] = {}
        for ln in loud:
            groups.setdefault(text.template(ln.text), []).append(ln)
        parts = []
        for said, group in sorted(groups.items(), key=lambda kv: -len(kv[1]))[:3]:
            coped = text.handled(" ".join(ln.text for ln in group))
            quiet = sum(1 for ln in lines if ln.index > group[-1].index and ln.severity == 0)
            once = (
                f"once, then {quiet} lines without a warning or error: a one-off"
                if len(group) == 1 and quiet >= ONE_OFF_AFTER
                else ""
            )
            notes = "; ".join(x for x in (coped, once) if x)
            parts.append(f'{len(group)}x "{short(said, 100)}"' + (f" ({notes})" if notes else ""))
        all_handled = all(text.handled(" ".join(ln.text for ln in g)) for g in groups.values())
        probes = text.health_checkers([ln.text for ln in loud])
        verdict = (
            f"every one comes from {probes}, which open a connection and close it without "
            "speaking TLS or HTTP: the load balancer's health checks, expected and harmless"
            if probes
            else "every one is an error the program handles, benign for availability"
            if all_handled
            else "the pod is Ready and serving, so none of them takes the service down"
        )
        out.append(
            link(
                None,
                f"The log of {pod} has {len(loud)} warning/error line(s): "
                + "; ".join(parts)
                + f" — {verdict}.",
                ev.id,
                about=ref,
            )
        )
    return out


def _alert_explained(ctx: Ctx) -> list[Claim | None]:
    alert = ctx.goal.alert
    if alert is None:
        return []
    ns_id = ctx.facts.ok("k8s.namespace", namespace=ctx.ns)
    ids = unique(ns_id.id if ns_id else None, ctx.facts.pods(ctx.ns)[1])
    if (
        HEARTBEATS.match(alert.name)
        or "always firing" in " ".join(alert.annotations.values()).lower()
    ):
        why = (
            f"Alert {alert.name} is a heartbeat that fires all the time by design (it proves the "
            f"alerting pipeline works); it is not an incident"
        )
    else:
        why = (
            f"Alert {alert.name} fired, but nothing read about "
            f"{alert.labels.get('namespace', ctx.ns)} shows a fault behind it"
        )
        severity = str(alert.labels.get("severity") or "").lower()
        if severity in INFORMATIONAL:
            why += (
                f"; it is severity {severity}: informational by its own rule, for a dashboard "
                "rather than a page"
            )
        why += _sidecar(ctx, str(alert.labels.get("container") or ""))
        classes = sorted(
            {str(x.get("priority_class")) for x in ctx.focus_pods if x.get("priority_class")}
        )
        if classes:
            why += (
                f"; the pods it is about run in PriorityClass {', '.join(classes)}, the rank "
                "their owners gave them"
            )
    return [link(None, _sentence(why), *ids, about=ctx.ref("Alert", alert.name, ""))]


INFORMATIONAL = {"info", "informational", "none", "low", "notice", "debug"}


def _sidecar(ctx: Ctx, container: str) -> str:
    """'; it is about container config-reloader, a sidecar: the container that serves is
    app': an alert on a helper container beside the one whose ports carry the traffic."""
    if not container:
        return ""
    for pod in ctx.focus_pods:
        names = [c["name"] for c in pod["containers"]]
        if container not in names or len(names) < 2:
            continue
        serving = [
            c["name"]
            for c in pod["containers"]
            if c["spec"] and c["spec"]["ports"] and c["name"] != container
        ]
        mine = next(c for c in pod["containers"] if c["name"] == container)
        if serving and not (mine["spec"] and mine["spec"]["ports"]):
            return (
                f"; it is about container {container}, a sidecar that serves no port: the "
                f"container that serves the traffic is {', '.join(serving)}, which it does not "
                "slow down"
            )
    return ""


def _autoscalers_explained(ctx: Ctx) -> list[Claim | None]:
    hpas, hid = ctx.facts.hpas(ctx.ns)
    out: list[Claim | None] = []
    for h in hpas:
        cpu: p.MetricValue | dict[str, int] = next(
            (m for m in h["current_metrics"] if m.get("name") == "cpu"), {}
        )
        want: p.MetricTarget | dict[str, int] = next(
            (m for m in h["target_metrics"] if m.get("name") == "cpu"), {}
        )
        pinned = h["min_replicas"] is not None and h["min_replicas"] == h["max_replicas"]
        if h["current_replicas"] == h["min_replicas"] and pinned:
            out.append(
                link(
                    None,
                    f"HPA {h['name']} is pinned by design: minReplicas = maxReplicas = "
                    f"{h['min_replicas']}, so it runs at its maximum whatever the load; CPU is "
                    f"{cpu.get('utilization', '?')}% against a {want.get('utilization', '?')}% "
                    "target, so the load would need fewer, not more (an at-max alert here is "
                    "the pin, not a capacity limit).",
                    hid,
                    about=ctx.ref("HorizontalPodAutoscaler", h["name"]),
                )
            )
        elif h["current_replicas"] == h["min_replicas"]:
            out.append(
                link(
                    None,
                    f"HPA {h['name']} sits at its minReplicas {h['min_replicas']} by design: "
                    "CPU is "
                    f"{cpu.get('utilization', '?')}% against a {want.get('utilization', '?')}% "
                    f"target, so "
                    "there is no load to scale for.",
                    hid,
                    about=ctx.ref("HorizontalPodAutoscaler", h["name"]),
                )
            )
    return out


def _scaled_down_explained(ctx: Ctx) -> list[Claim | None]:
    """A Service with no endpoints because the workload it selects is scaled to 0 replicas:
    its selector is right and nothing runs behind it by its spec (a canary between releases,
    a paused worker); said with what routes to it (a canary Ingress and its weight)."""
    svcs, sid = ctx.facts.services(ctx.ns)
    out: list[Claim | None] = []
    for svc in svcs:
        eps, eid = ctx.facts.endpoints(ctx.ns, svc["name"])
        if not svc["selector"] or eps is None or eps["ready"]:
            continue
        idle = scaled_to_zero(ctx, svc)
        if not idle:
            continue
        routed = [
            f"Ingress {ing['name']} (canary weight {ing['canary'].get('canary-weight', '?')})"
            if ing.get("canary")
            else f"Ingress {ing['name']}"
            for ing in ctx.facts.ingresses(ctx.ns)[0]
            if any(b.get("service") == svc["name"] for b in ing["backends"])
        ]
        out.append(
            link(
                None,
                f"Service {svc['name']} has no endpoints because {idle[0]['name']}, the "
                f"workload it selects, is scaled to 0 replicas (replicas: 0 in its spec): the "
                "selector is right and nothing runs behind it by its spec, and nothing that "
                "was read fails for want of it (scale it up if it should serve)"
                + (f"; it is routed by {', '.join(routed)}" if routed else "")
                + ".",
                sid,
                eid,
                about=ctx.ref("Service", svc["name"]),
            )
        )
    return out


def _jobs_explained(ctx: Ctx) -> list[Claim | None]:
    jobs, jid = ctx.facts.jobs(ctx.ns)
    out: list[Claim | None] = []
    for job in jobs:
        done = any(
            c.get("type") == "Complete" and c.get("status") == "True" for c in job["conditions"]
        )
        if done:
            out.append(
                link(
                    None,
                    f"Job {job['name']} completed ({job['succeeded']} succeeded): its pods are "
                    f"Completed, not broken.",
                    jid,
                    about=ctx.ref("Job", job["name"]),
                )
            )
    return out
