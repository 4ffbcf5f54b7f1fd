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

from typing import Any

from tools.read import payloads as p
from tools.results import ErrorKind
from triage.agent.planners.rules import reasons, text
from triage.agent.planners.rules.analyzers import analyze
from triage.agent.planners.rules.analyzers.common import recovered, recycled
from triage.agent.planners.rules.analyzers.dependencies import one_off_fenced
from triage.agent.planners.rules.analyzers.metrics import symptoms
from triage.agent.planners.rules.analyzers.workloads import job_symptom
from triage.agent.planners.rules.chain import Finding, Strength, compose, link, rank, short
from triage.agent.planners.rules.context import Ctx, build
from triage.agent.planners.rules.facts import (
    Facts,
    Ref,
    pods_behind,
    selects,
    series_values,
    workload_of,
)
from triage.agent.planners.rules.reads import (
    MAX_HOPS,
    _troubled,
    follow_dependencies,
    hosts_failing,
)
from triage.core.causes import CauseClass
from triage.core.models import Claim, Goal, LinkRole, RCADraft
from triage.core.signals import ERROR_RATIO_FLOOR


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
        behind = pods_behind(svc["selector"], ctx.facts.pods(dep_ns)[0])
        if not behind:
            continue
        sub = Ctx(
            goal=ctx.goal,
            facts=ctx.facts,
            ns=dep_ns,
            now=ctx.now,
            focus={str(Ref("Service", dep_ns, svc_name))}
            | {str(Ref("Pod", dep_ns, x["name"])) for x in behind}
            | {str(ctx.workload_ref(x, dep_ns)) for x in behind},
            focus_pods=behind,
            whole_namespace=False,
        )
        out.append((svc_name, dep_ns, line, rank(compose(analyze(sub)), sub.focus)))
    return out


def _serving(ctx: Ctx, svc_name: str, ns: str) -> bool:
    eps, _ = ctx.facts.endpoints(ns, svc_name)
    svc = next((x for x in ctx.facts.services(ns)[0] if x["name"] == svc_name), None)
    behind = pods_behind(svc["selector"], ctx.facts.pods(ns)[0]) if svc else []
    return bool(eps and eps["ready"]) and bool(behind) and all(x["ready"] for x in behind)


def _upstream(ctx: Ctx, hops: list[Hop]) -> Finding | None:
    """When nothing of the asked-about namespace explains its symptom: a dependency's
    complete chain, with the caller's failing line as the first link, is the cause; the
    caller's errors are the consequence."""
    for svc_name, dep_ns, line, findings in hops:
        found = [f for f in findings if f.complete]
        if _serving(ctx, svc_name, dep_ns):
            # a dependency that serves (ready endpoints, every pod ready) fails its callers
            # only in ways a message states (its log, its exporter, the kernel): an oddity of
            # its structure that leaves it serving is not why they fail
            found = [f for f in found if f.strength >= Strength.STATED]
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
            summary=reasons.sentence(best.summary),
            root_cause_class=best.cls,
            cause=reasons.sentence(best.cause),
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
            x["ready"]
            and all(
                recovered(c, ctx.now) or not c["restarts"] or recycled(ctx, x, c)
                for c in x["containers"]
            )
        )
    ]
    rising = symptoms(ctx)
    failing = _unhandled_failures(ctx)
    erring = _error_ratio_now(ctx)
    falling = _short(ctx)
    if troubled or ranked or rising or failing or falling or erring > ERROR_RATIO_FLOOR:
        seen = (
            f"{len(troubled)} unhealthy pod(s) of what was asked about (e.g. {troubled[0]['name']})"
            if troubled
            else falling[0]
            if falling and not ranked
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


def _error_ratio_now(ctx: Ctx) -> float:
    """The last point of the error-ratio series read, 0 when none was: a chronic ratio that
    never rose in the window is as much a fault as one that did."""
    for ev in ctx.facts.evidence:
        if ev.ok and (ev.purpose or "").startswith("error_ratio:"):
            values = series_values((ev.data or [{}])[0])
            if values:
                return float(values[-1])
    return 0.0


def _short(ctx: Ctx) -> list[str]:
    """What the asked-about controllers say is wrong whatever their pods say: a Deployment or
    StatefulSet with fewer replicas available than asked (no pod at all, when admission
    refuses every one), a DaemonSet short of the nodes it should run on, a Job that failed.
    None of them is "no fault"; a rollout waiting out minReadySeconds with every pod Ready is
    (reasons.rollouts_explained says why)."""
    facts, ns = ctx.facts, ctx.ns
    out = []
    for d in facts.deployments(ns)[0]:
        asked = d["replicas"] or 0
        baking = int(d.get("min_ready_s") or 0) and d["ready"] >= asked
        if ctx.in_focus(ctx.ref("Deployment", d["name"])) and d["available"] < asked and not baking:
            out.append(f"Deployment {d['name']} has {d['available']} of {asked} replicas available")
    for x in facts.statefulsets(ns)[0]:
        if ctx.in_focus(ctx.ref("StatefulSet", x["name"])) and x["ready"] < (x["replicas"] or 0):
            out.append(f"StatefulSet {x['name']} has {x['ready']} of {x['replicas']} ready")
    for ds in facts.daemonsets(ns)[0]:
        if ctx.in_focus(ctx.ref("DaemonSet", ds["name"])) and ds["ready"] < ds["desired"]:
            out.append(f"DaemonSet {ds['name']} runs {ds['ready']} ready of {ds['desired']} pods")
    for job in facts.jobs(ns)[0]:
        owner = job["owner"]
        asked_job = ctx.in_focus(ctx.ref("Job", job["name"])) or (
            owner is not None and ctx.in_focus(ctx.ref(str(owner["kind"]), str(owner["name"])))
        )
        failed = next(
            (
                c
                for c in job["conditions"]
                if c.get("type") == "Failed" and c.get("status") == "True"
            ),
            None,
        )
        if asked_job and failed is not None:
            out.append(f"Job {job['name']} failed ({failed.get('reason') or 'Failed'})")
    return out


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
    if not focus and any(r.startswith("Node//") for r in ctx.focus) and pods:
        # a question about a node: the namespace's pods are what it could affect
        focus, about = pods, f"namespace {ns}"
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
    claims += reasons.restarts_explained(ctx)
    claims += reasons.memory_explained(ctx)
    claims += reasons.volumes_explained(ctx)
    claims += reasons.released_explained(ctx)
    claims += reasons.claims_explained(ctx)
    claims += reasons.retained_explained(ctx)
    claims += reasons.aliases_explained(ctx)
    claims += reasons.rollouts_explained(ctx)
    claims += reasons.events_explained(ctx)
    claims += reasons.scans_explained(ctx)
    claims += reasons.policies_explained(ctx)
    claims += reasons.described_explained(ctx)
    claims += reasons.logs_explained(ctx)
    claims += reasons.waits_explained(ctx)
    claims += reasons.edge_explained(ctx)
    claims += reasons.alert_explained(ctx)
    claims += reasons.autoscalers_explained(ctx)
    claims += reasons.scaled_down_explained(ctx)
    claims += reasons.traffic_explained(ctx)
    claims += reasons.fenced_explained(ctx)
    claims += reasons.members_explained(ctx)
    claims += reasons.nodes_explained(ctx)
    claims += reasons.recycling_explained(ctx)
    claims += reasons.budgets_explained(ctx)
    claims += reasons.admission_warning_explained(ctx)
    claims += reasons.jobs_explained(ctx)
    # a one-off pod that failed because a policy drops it by design is explained above
    fenced = one_off_fenced(ctx)
    others = [
        x
        for x in pods
        if x not in focus and _troubled(x) and x["phase"] != "Succeeded" and x["name"] not in fenced
    ]
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
