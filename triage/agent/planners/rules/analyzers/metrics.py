"""Symptoms that live in Prometheus, tied to what explains them.

- Errors or latency that rise with a deploy: the deploy (placed by the newest ReplicaSet's
  creation, or by kube-state-metrics' generation stepping up) inside the window before the
  rise makes it `regression_after_deploy`, and the diff of the two revisions is the cause.
- CPU throttling high on the asked-about containers while latency is up: the CPU limit.
- A connection pool with requests waiting while its database is up: saturation.
A rise with nothing that explains it stays a symptom: the RCA says what is still unknown.
"""

from __future__ import annotations

import itertools
import math
import re
from typing import Any

from tools.read import payloads as p
from tools.read.payloads import ReplicaSet
from triage.agent.planners.rules import quantities, text
from triage.agent.planners.rules.analyzers.common import (
    changed_since_healthy,
    last_healthy,
    limit_source,
    release_changes,
    setting_explains,
)
from triage.agent.planners.rules.analyzers.dependencies import stale_policy_port
from triage.agent.planners.rules.chain import Finding, Strength, chain, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import (
    Ref,
    selects,
    series_points,
    series_values,
    workload_of,
)
from triage.agent.planners.rules.queries import SCRAPE_LABELS
from triage.agent.planners.rules.reads import dependency_users, hosts_failing, recent_neighbours
from triage.core.causes import CauseClass
from triage.core.models import Claim, Evidence, LinkRole, MutationProposal, TimelineEntry

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE
DEPLOY_WINDOW_S = (-300.0, 1200.0)  # a rise 5 min before to 20 min after a rollout
ERROR_RATIO_ALERT = 0.05


def _points(ev: Evidence) -> list[tuple[float, float]]:
    if not ev.data:
        return []
    return series_points(ev.data[0])


def rise(
    points: list[tuple[float, float]], floor: float, factor: float = 3.0
) -> tuple[float, float, float, float] | None:
    """(when, baseline, value, peak) of the first point well above the early baseline
    (`factor` times it, and above `floor`)."""
    points = [(t, v) for t, v in points if not math.isnan(v)]  # 0/0 before traffic
    if len(points) < 6:
        return None
    third = max(len(points) // 3, 1)
    baseline = sorted(v for _, v in points[:third])[third // 2]
    threshold = max(floor, baseline * factor)
    first = next(((t, v) for t, v in points if v > threshold), None)
    if first is None:
        return None
    return first[0], baseline, first[1], max(v for _, v in points)


def symptoms(
    ctx: Ctx, *, not_found: bool = False
) -> list[tuple[str, Evidence, tuple[float, float, float, float]]]:
    """(what, evidence, rise) for every error-ratio or latency series that rose; with
    `not_found`, the share of requests answered 404 too (a route a release stopped matching:
    a symptom of a release, not of load, so only the regression reads it)."""
    out = []
    for ev in ctx.facts.evidence:
        if not ev.ok or not ev.purpose:
            continue
        if ev.purpose.startswith("error_ratio:"):
            found = rise(_points(ev), ERROR_RATIO_ALERT)
            if found:
                out.append(("error ratio", ev, found))
        elif ev.purpose.startswith("client_error_ratio:"):
            found = rise(_points(ev), ERROR_RATIO_ALERT)
            if found:
                out.append(("client error (4xx) ratio", ev, found))
        elif not_found and ev.purpose.startswith("not_found_ratio:"):
            found = rise(_points(ev), ERROR_RATIO_ALERT)
            if found:
                out.append(("not-found (404) ratio", ev, found))
        elif ev.purpose.startswith("latency_p99:"):
            pts = _points(ev)
            found = rise(pts, 0.5)
            if found:
                out.append(("p99 latency", ev, found))
        elif ev.purpose.startswith("latency_mean:"):
            found = rise(_points(ev), 0.1, factor=2.0)
            if found:
                out.append(("mean latency", ev, found))
    if not any(what == "p99 latency" for what, _, _ in out):
        # a p99 pinned at the largest finite bucket hides a rise the median shows
        for ev in ctx.facts.evidence:
            if not (ev.ok and (ev.purpose or "").startswith("latency_p50:")):
                continue
            found = rise(_points(ev), 0.1)
            if found:
                out.append(("median latency", ev, found))
                break
    if not any(what.endswith("latency") for what, _, _ in out):
        # one route's p99 can rise while the whole service's hides it (other routes' volume)
        for ev in ctx.facts.evidence:
            if ev.ok and (ev.purpose or "").startswith("latency_p99_by:"):
                for series in ev.data or []:
                    found = rise(series_points(series), 0.5)
                    labels = ", ".join(
                        f"{k}={v}" for k, v in (series.get("labels") or {}).items() if k != "le"
                    )
                    if found and labels:
                        out.append((f"p99 latency of {labels}", ev, found))
                        break
    return out


def _deploys(ctx: Ctx) -> list[tuple[Ref, float, str | None]]:
    from triage.agent.planners.rules.analyzers.workloads import _ts  # noqa: PLC0415

    out = []
    for dep in ctx.facts.deployments(ctx.ns)[0]:
        ref = ctx.ref("Deployment", dep["name"])
        newest, _good, hid = last_healthy(ctx, ref)
        created = _ts(newest["created"]) if newest else None
        if created is not None:
            out.append((ref, created, hid))
    for ev in ctx.facts.purpose("generation"):
        for series in ev.data or []:
            name = (series.get("labels") or {}).get("deployment")
            values = series.get("values") or []
            for (_, before), (t, after) in itertools.pairwise(values):
                if name and after > before:
                    out.append((ctx.ref("Deployment", name), float(t), ev.id))
    return out


_LOGS_THE_FAILURE = "The new revision's pods log the failure: "
_MIGRATED = "At start-up the new revision's pods applied the schema migration(s) "


def _pods_of_revision(ctx: Ctx, newest: ReplicaSet | None) -> list[p.Pod]:
    return [
        x
        for x in ctx.facts.pods(ctx.ns)[0]
        if newest is not None and x["owner"] is not None and x["owner"]["name"] == newest["name"]
    ]


# How frameworks log a request no route matched: Spring's NoResourceFoundException, Rails'
# RoutingError, Express/Django/Go's "not found" — with the path it was asked for.
_UNROUTED = re.compile(
    r"(NoResourceFoundException|No static resource|RoutingError|No route matches|"
    r"\bnot found\b|\b404\b)[^/\n]{0,60}?(?P<path>/?[\w.~%-]+(?:/[\w.~%{}-]*)+)",
    re.I,
)


def _unrouted(ctx: Ctx, pods: list[p.Pod]) -> tuple[str, str | None] | None:
    """The line of the new revision's pods that answers a request no route matched, and what
    its paths have in common (all end in '/': the release stopped matching a trailing slash)."""
    for pod in pods[:2]:
        for c in pod["containers"]:
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            hits = [(ln, m) for ln in log if (m := _UNROUTED.search(ln))]
            if not hits or lid is None:
                continue
            paths = [m.group("path").rstrip(".]'\")") for _, m in hits]
            slash = all(x.endswith("/") for x in paths)
            said = f"{_LOGS_THE_FAILURE}{short(hits[-1][0].strip(), 220)}" + (
                f"; every path answered not found ends in a trailing slash ('/', "
                f"{len(paths)} of {len(paths)}): the new version no longer matches a route "
                "written with one (trailing-slash matching)"
                if slash
                else ""
            )
            return said, lid
    return None


def _what_the_release_does(
    ctx: Ctx, ref: Ref, newest: ReplicaSet | None, deployed: float, *, not_found: bool = False
) -> list[Claim]:
    """The cause in the release's own words: the error its pods log, and the application's
    series that stepped at the deploy (queries per request, a pool's wait) — or, failing both,
    the rollout itself is the cause (the link before is promoted)."""
    out: list[Claim] = []
    pods = _pods_of_revision(ctx, newest)
    if not_found and (unrouted := _unrouted(ctx, pods)) is not None:
        said = link(C, unrouted[0], unrouted[1], about=ref)
        return [said] if said else []
    for pod in pods[:2]:
        for c in pod["containers"]:
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            line = text.telling(log) if lid else None
            if line is not None and line.severity >= 2:
                said = link(
                    C,
                    f"{_LOGS_THE_FAILURE}{short(line.text, 240)}",
                    lid,
                    about=ref,
                )
                return [said] if said else []
            applied = text.migrations(log) if lid else []
            if applied:
                planned, pid = _database_says(ctx)
                said = link(
                    C,
                    f"{_MIGRATED}{', '.join(dict.fromkeys(x for x, _ in applied[-3:]))} (its "
                    f'log: "{short(applied[-1][1], 140)}"): a schema change that came with the '
                    "release (a dropped or changed index, a rewritten table) slows what runs "
                    "against it from the deploy on"
                    + (f"; the database's own log since: {planned}" if planned else "")
                    + ".",
                    lid,
                    pid,
                    about=ref,
                )
                return [said] if said else []
            loop = text.repeated(log) if lid else None
            slow = text.heaviest_request(log) if lid else None
            warned = text.recurring_warning(log) if lid else None
            if loop or slow or warned:
                parts = []
                if warned:
                    parts.append(f'it warns "{short(warned[0], 160)}" ({warned[1]} times)')
                if loop:
                    parts.append(f'it says "{short(loop[0], 140)}" {loop[1]} times in a row')
                if slow:
                    parts.append(f'its slowest request: "{short(slow, 160)}"')
                said = link(
                    C,
                    "The new revision's pods do more work per request: " + "; ".join(parts) + ".",
                    lid,
                    about=ref,
                )
                return [said] if said else []
    steps = _steps(ctx, deployed)
    rises = sorted((x for x in steps if x[3] > x[2] * 3), key=lambda x: -(x[3] / x[2]))
    if rises:
        name, labels, was, now, ev = rises[0]
        unit = "/s" if (ev.purpose or "").startswith("stepped:") else ""
        fell = next(
            (
                (k, other[k], w, n)
                for o_name, other, w, n, _ in steps
                if o_name == name and n < w / 3
                for k in other
                if other.get(k) != labels.get(k)
            ),
            None,
        )
        stepped = link(
            C,
            f"At the deploy {name}{_labels_text(labels)} stepped from {was:.3g}{unit} to "
            f"{now:.3g}{unit}"
            + (
                f" while {fell[0]}={fell[1]} fell from {fell[2]:.3g}{unit} to {fell[3]:.3g}{unit}"
                if fell
                else ""
            )
            + ": what the new revision does differently shows there.",
            ev.id,
            about=ref,
        )
        if stepped:
            out.append(stepped)
    return out


# What a SQL server logs about a slow statement: its duration (Postgres' log_min_duration_
# statement, MySQL's slow log "Query_time:") and the plan auto_explain writes for it.
_SLOW_STATEMENT = re.compile(r"duration: (?P<ms>[\d.]+) ms|Query_time: (?P<s>[\d.]+)")
_FULL_SCAN = re.compile(r"\b(Seq Scan on \S+|Parallel Seq Scan on \S+|type: ALL|Full scan)")


def _database_says(ctx: Ctx) -> tuple[str | None, str | None]:
    """The slowest statement another namespace's server logged, with a full scan in its plan
    (read on the hop to the database a release migrated)."""
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("namespace") == ctx.ns:
            continue
        log = [str(x) for x in ev.data or []]
        durations = [
            float(m.group("ms") or float(m.group("s") or 0) * 1000)
            for ln in log
            if (m := _SLOW_STATEMENT.search(ln))
        ]
        scan = next((m.group(1) for ln in log if (m := _FULL_SCAN.search(ln))), None)
        if durations and scan:
            return (
                f"statements of up to {max(durations) / 1000:.1f} s, planned as a full table scan "
                f'("{scan}")',
                ev.id,
            )
    return None, None


def _steps(ctx: Ctx, deployed: float) -> list[tuple[str, dict[str, str], float, float, Evidence]]:
    """(name, labels, median before, median after) of the application's own series around a
    deploy: its gauges as they are, its counters by rate (one query each, named by purpose)."""
    out = []
    for ev in ctx.facts.evidence:
        purpose = ev.purpose or ""
        if not ev.ok or not (purpose == "stepped" or purpose.startswith("stepped:")):
            continue
        for series in ev.data or []:
            points = series_points(series)
            before = sorted(v for t, v in points if t < deployed)
            after = sorted(v for t, v in points if t > deployed + 120)
            if len(before) < 3 or len(after) < 3:
                continue
            labels = {str(k): str(v) for k, v in (series.get("labels") or {}).items()}
            name = labels.pop("__name__", None) or purpose.partition(":")[2] or "?"
            was, now = before[len(before) // 2], after[len(after) // 2]
            if was > 0:
                out.append((name, labels, was, now, ev))
    return out


def _labels_text(labels: dict[str, str]) -> str:
    kept = {k: v for k, v in labels.items() if k not in SCRAPE_LABELS}
    return "{" + ",".join(f"{k}={v}" for k, v in sorted(kept.items())[:4]) + "}" if kept else ""


def _stepped_text(does: list[Claim]) -> str | None:
    return next((c.text for c in does if c.text.startswith("At the deploy ")), None)


def regression(ctx: Ctx) -> list[Finding]:
    out = []
    for what, ev, (when, baseline, value, peak) in symptoms(ctx, not_found=True):
        ratio = what.endswith("ratio")

        def fmt(x: float, ratio: bool = ratio) -> str:
            return f"{x:.1%}" if ratio else f"{x:.2f}s"

        rose = link(
            S,
            f"The {what} rose from {fmt(baseline)} to {fmt(value)} and peaked at {fmt(peak)}.",
            ev.id,
            about=ctx.ref("Namespace", ctx.ns, ctx.ns),
        )
        for ref, deployed, hid in _deploys(ctx):
            if not DEPLOY_WINDOW_S[0] <= when - deployed <= DEPLOY_WINDOW_S[1]:
                continue
            newest, good, _ = last_healthy(ctx, ref)
            does = _what_the_release_does(
                ctx, ref, newest, deployed, not_found=what.startswith("not-found")
            )
            said = next(
                (c.text.split(": ", 1)[1] for c in does if c.text.startswith(_LOGS_THE_FAILURE)),
                None,
            )
            finding = Finding(
                cls=CauseClass.REGRESSION_AFTER_DEPLOY,
                cause=f"the deploy of {ref.name}"
                + (
                    f" revision {newest['revision']} ({', '.join(newest['images'])})"
                    if newest
                    else ""
                )
                + (
                    f" {(when - deployed) / 60:.0f} min before the {what} rose"
                    if when - deployed >= 60
                    else f" as the {what} began to rise"
                )
                + (
                    f"; revision {good['revision']} ({', '.join(good['images'])}) did not have it"
                    if good
                    else ""
                )
                + (f"; its pods log: {short(said, 160)}" if said else "")
                + (
                    f"; {stepped[0].lower()}{stepped[1:].split(': what the new', 1)[0]}"
                    if not said and (stepped := _stepped_text(does))
                    else ""
                )
                + (
                    f"; at start-up it applied the schema migration(s) "
                    f"{migrated.removeprefix(_MIGRATED).split(' (its log', 1)[0]}"
                    + (
                        "; the database's own log since: "
                        + migrated.split("; the database's own log since: ", 1)[1].rstrip(".")
                        if "; the database's own log since: " in migrated
                        else ""
                    )
                    if (
                        migrated := next((c.text for c in does if c.text.startswith(_MIGRATED)), "")
                    )
                    else ""
                ),
                summary=f"The {what} rose to {fmt(peak)} right after {ref.name} was deployed",
                impact=f"Up to {fmt(peak)} ({what}) in {ctx.ns}.",
                chain=chain(
                    rose,
                    link(
                        M,
                        f"{ref.name} rolled out "
                        + (
                            f"revision {newest['revision']} ({', '.join(newest['images'])})"
                            if newest
                            else "a new revision"
                        )
                        + (
                            f" {(when - deployed) / 60:.0f} min before the rise"
                            if when - deployed >= 60
                            else " as the rise began"
                        )
                        + (
                            f"; revision {good['revision']} ({', '.join(good['images'])}) ran "
                            "before it without errors"
                            if good
                            else ""
                        )
                        + ".",
                        hid,
                        about=ref,
                    ),
                    *does,
                ),
                strength=Strength.CORRELATED,
                explains={str(ref)},
                remediation=[
                    MutationProposal(
                        action="rollback",
                        target=f"Deployment/{ctx.ns}/{ref.name}",
                        args={"to_revision": int(good["revision"] or 0)},
                        rationale="the regression started with this revision",
                    )
                ]
                if good
                else [],
                follow_ups=["Diff the revisions and add a canary step."],
                timeline=[
                    TimelineEntry(
                        at=f"{deployed:.0f}", what="deploy", evidence=tuple(i for i in (hid,) if i)
                    ),
                    TimelineEntry(
                        at=f"{when:.0f}", what=f"{what} above threshold", evidence=(ev.id,)
                    ),
                ],
            )
            if finding.chain[-1].role is not C:
                finding.chain[-1] = finding.chain[-1].model_copy(update={"role": C})
            explained = setting_explains(ctx, ref, said) if said else None
            if explained is not None:
                # the release changed the setting that governs the failure its pods log:
                # that setting is the cause, the log line its mechanism, the image innocent
                cause_link, change = explained
                finding.cls = CauseClass.BAD_CONFIG
                finding.strength = Strength.INFERRED
                finding.cause = (
                    f"{ref.name}'s release changed {change}, and its pods now fail with: "
                    f"{short(str(said), 160)}"
                )
                finding.summary = (
                    f"The {what} rose to {fmt(peak)} after {ref.name}'s release changed {change}"
                )
                finding.chain = [
                    *finding.chain[:-1],
                    finding.chain[-1].model_copy(update={"role": M}),
                    cause_link,
                ]
                finding.follow_ups = [
                    f"Set it back ({change}) or roll back; then check why the change was made."
                ]
            elif not said:
                policy_link = stale_policy_port(
                    ctx, ref, release_changes(ctx, ref)[0], _pods_of_revision(ctx, newest)
                )
                if policy_link is not None:
                    # the release moved a port that a NetworkPolicy still opens by its old
                    # number: the policy is the cause, the deploy what made it stale
                    finding.cls = CauseClass.NETWORK_POLICY_BLOCKING
                    finding.strength = Strength.INFERRED
                    finding.cause = policy_link.text
                    finding.summary = (
                        f"The {what} rose to {fmt(peak)} after {ref.name}'s release moved its "
                        "port past what a NetworkPolicy admits"
                    )
                    finding.chain = [
                        *finding.chain[:-1],
                        finding.chain[-1].model_copy(update={"role": M}),
                        policy_link,
                    ]
                    finding.follow_ups = [
                        "Open the new port in the NetworkPolicy (or name the port in it, so it "
                        "follows the container's), then keep the policy with the chart."
                    ]
            changed_since_healthy(ctx, ref, finding)
            out.append(finding)
            break
    return out


def chronic_latency(ctx: Ctx) -> list[tuple[str, Evidence, tuple[float, float, float, float]]]:
    """(what, evidence, level) for a p99 that stood at 0.5 s or more through the whole window
    without rising in it: slow since before the window (a fault days old, or a load that grew),
    which a rise cannot show."""
    out = []
    for ev in ctx.facts.evidence:
        if not ev.ok or not (ev.purpose or "").startswith("latency_p99:"):
            continue
        pts = [(t, v) for t, v in _points(ev) if not math.isnan(v)]
        if len(pts) < 6 or rise(pts, 0.5):
            continue
        level = sorted(v for _, v in pts)[len(pts) // 2]
        if level >= 0.5:
            out.append(("p99 latency", ev, (pts[0][0], level, level, max(v for _, v in pts))))
    return out


THROTTLED = 0.25  # share of CFS periods throttled that holds a container back


def series_pod(named: str, pods: list[p.Pod]) -> p.Pod | None:
    """The pod a series is labelled with, or another pod of the same workload (series outlive
    the pods they were scraped from)."""
    return next((x for x in pods if x["name"] == named), None) or next(
        (x for x in pods if named.startswith(f"{workload_of(x)[1]}-")), None
    )


def throttling(ctx: Ctx) -> list[Finding]:
    # a CPU limit that throttles slows a service from the day load outgrew it: a p99 that rose,
    # or one that was already high when the window opened
    rose, chronic = symptoms(ctx), chronic_latency(ctx)
    if not rose and not chronic:
        return []
    what, sid = (
        ("Latency/errors rose in the window.", rose[0][1].id)
        if rose
        else (
            f"The p99 latency stood at {chronic[0][2][1]:.2f}s through the window.",
            chronic[0][1].id,
        )
    )
    out = []
    for ev in ctx.facts.purpose("throttling"):
        for series in ev.data or []:
            values = series_values(series)
            if not values or max(values) < THROTTLED:
                continue
            labels = series.get("labels") or {}
            pod = series_pod(str(labels.get("pod", "")), ctx.focus_pods)
            if pod is None:
                continue
            ref = ctx.workload_ref(pod)
            container = next(
                (c for c in pod["containers"] if c["name"] == labels.get("container")),
                pod["containers"][0],
            )
            limit = container["limits"].get("cpu", "unset")
            source = limit_source(ctx, pod, container["name"], "cpu")
            threads, tid = _parallelism(ctx, pod, container)
            out.append(
                Finding(
                    cls=CauseClass.CPU_THROTTLING,
                    cause=f"container {container['name']} of {ref.name} is CPU-throttled in "
                    f"{max(values):.0%} of CFS periods by its {limit} CPU limit{source}, so "
                    f"requests wait for CPU" + (f"; {threads}" if threads else ""),
                    summary=f"{ref.name} is CPU-throttled (limit {limit}) while latency is up",
                    impact="Requests slow down under load.",
                    chain=chain(
                        link(S, what, sid, about=ref),
                        link(
                            C,
                            f"container_cpu_cfs_throttled ratio up to {max(values):.0%} for "
                            f"{labels.get('pod')}/{container['name']} (limits.cpu {limit}).",
                            ev.id,
                            ctx.facts.pods(ctx.ns)[1],
                            about=ref,
                        ),
                        link(C, f"{threads[0].upper()}{threads[1:]}.", tid, about=ref)
                        if threads
                        else None,
                    ),
                    strength=Strength.INFERRED,
                    explains={str(ref)},
                    follow_ups=[
                        "Raise or remove the CPU limit (keep the request), or make requests "
                        "cheaper."
                    ],
                )
            )
            return out
    return out


def dependency_throttled(ctx: Ctx) -> list[Finding]:
    """The asked-about service waits on a dependency (its log names the dependency's host with
    the failure: a timeout, a deadline) whose containers are CPU-throttled by their limit, in
    the dependency's own namespace: the dependency's limit is the cause, the caller's latency
    its consequence."""
    out: list[Finding] = []
    for svc_name, ns, _port, line in hosts_failing(ctx)[:2]:
        if ns == ctx.ns:
            continue  # the dependency's pods are the asked-about ones': `throttling` sees them
        svc = next((x for x in ctx.facts.services(ns)[0] if x["name"] == svc_name), None)
        behind = [
            x
            for x in ctx.facts.pods(ns)[0]
            if svc and svc["selector"] and selects(svc["selector"], x["labels"])
        ]
        for ev in ctx.facts.purpose(f"throttling:{ns}"):
            for series in ev.data or []:
                values = series_values(series)
                labels = series.get("labels") or {}
                pod = series_pod(str(labels.get("pod", "")), behind)
                if pod is None or not values or max(values) < THROTTLED:
                    continue
                dep = ctx.workload_ref(pod, ns)
                c = next(
                    (x for x in pod["containers"] if x["name"] == labels.get("container")),
                    pod["containers"][0],
                )
                limit = c["limits"].get("cpu", "unset")
                source = limit_source(ctx, pod, c["name"], "cpu", ns=ns)
                caller = next(iter(ctx.focus_pods), None)
                who = ctx.workload_ref(caller).name if caller else "the caller"
                logs_id = next((e.id for e in ctx.facts.all("k8s.logs") if e.ok), None)
                out.append(
                    Finding(
                        cls=CauseClass.CPU_THROTTLING,
                        cause=f"{dep.name} (in {ns}), which {who} waits on, is CPU-throttled in "
                        f"{max(values):.0%} of CFS periods by its {limit} CPU limit{source}, so "
                        f"it answers slowly and {who}'s calls to it time out",
                        summary=f"{who} is slow because {dep.name} in {ns} is CPU-throttled "
                        f"(limit {limit})",
                        impact=f"Every request of {who} that calls {dep.name} waits for it.",
                        chain=chain(
                            link(
                                S,
                                f"{who}'s log names {svc_name}.{ns} as it fails: "
                                f"{short(line, 240)}",
                                logs_id,
                                about=ctx.workload_ref(caller) if caller else None,
                            ),
                            link(
                                M,
                                f"container_cpu_cfs_throttled ratio up to {max(values):.0%} for "
                                f"{ns}/{pod['name']}/{c['name']} (limits.cpu {limit}).",
                                ev.id,
                                about=dep,
                            ),
                            link(
                                C,
                                f"{dep.name}'s CPU limit is {limit}{source}: below what it "
                                "uses under this load.",
                                ev.id,
                                ctx.facts.limit_ranges(ns)[1],
                                ctx.facts.pods(ns)[1],
                                about=dep,
                            ),
                        ),
                        strength=Strength.INFERRED,
                        explains={str(ctx.ref("Service", svc_name, ns)), str(dep)},
                        follow_ups=[
                            f"Give {dep.name} a CPU limit (or LimitRange default) that fits its "
                            "load, or none with a request that does."
                        ],
                    )
                )
                return out
    return out


# How many threads a runtime runs code on, as it reports it at start: Go's GOMAXPROCS, the
# JVM's available processors, a worker or thread pool size.
_PARALLEL = re.compile(
    r"\b(?P<what>gomaxprocs|GOMAXPROCS|availableProcessors|active_?processor_?count|"
    r"(?:worker|thread)s?(?:_count)?)\b[\"']?\s*[=:]\s*[\"']?(?P<n>\d+)\b"
)


def _parallelism(ctx: Ctx, pod: p.Pod, c: p.Container) -> tuple[str, str | None]:
    """The threads the runtime runs on when that is more than the CPU limit allows at once:
    each burst uses the CFS quota of a period in a fraction of it, then waits out the rest,
    although the average use stays under the limit (Go sizes GOMAXPROCS from the node's CPUs
    unless told otherwise; so do JVMs before container support, and many worker pools)."""
    limit = quantities.cpu_cores(c["limits"].get("cpu"))
    if limit is None:
        return "", None
    log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
    for line in log[:50]:
        m = _PARALLEL.search(line)
        if m is None or int(m.group("n")) <= limit:
            continue
        n, what = int(m.group("n")), m.group("what")
        env = {e["name"] for e in (c["spec"]["env"] if c["spec"] else [])}
        unset = (
            " (GOMAXPROCS is not set)"
            if what.lower() == "gomaxprocs" and ("GOMAXPROCS" not in env)
            else ""
        )
        return (
            f"the process runs {n} threads at once ({what} {n}{unset}) against a "
            f"{limit:g}-CPU limit: a burst spends the period's CFS quota in a fraction of "
            f"it and is throttled for the rest",
            lid,
        )
    return "", None


_EXHAUSTED = re.compile(
    r"Connection is not available|pool (is )?exhausted|timeout (waiting|acquiring) .*connection|"
    r"too many (clients|connections)|remaining connection slots|max_connections|"
    r"max number of clients|Cannot acquire connection|"
    # PgBouncer at its client limit (max_client_conn)
    r"no more connections allowed|max_client_conn|"
    # a server that takes the connection but rejects the work for capacity
    r"rejected[_ ]execution|queue capacity|thread ?pool (is )?(full|exhausted)|"
    r"server (is )?(overloaded|busy)|too many (concurrent|simultaneous|parallel)|"
    # a broker that holds its publishers back (RabbitMQ's memory or disk alarm, flow control)
    r"blocked (the |our )?connection|(publisher|producer|connection)s? (is |are )?blocked|"
    r"blocked by (the )?broker|flow[- ]control",
    re.I,
)
_REFUSED_FULL = re.compile(
    r"too many (clients|connections)|remaining connection slots|max number of clients|"
    r"max_connections|no more connections allowed|max_client_conn|rejected[_ ]execution|"
    r"queue capacity|thread ?pool (is )?(full|exhausted)|"
    # a server at its own limit of work in flight (ClickHouse's max_concurrent_queries)
    r"too many (concurrent|simultaneous|parallel) (queries|requests)|"
    # a server over its own resource limit: RabbitMQ's alarms, Redis' maxmemory
    r"resource limit alarm|(memory|disk) alarm|publishers will be blocked|"
    r"OOM command not allowed",
    re.I,
)
# A server whose workers cannot keep up, in its own words: gunicorn killing a worker past its
# --timeout ("WORKER TIMEOUT"), uWSGI's harakiri, PHP-FPM at pm.max_children, Puma
# terminating a timed-out worker, Tomcat with every thread busy, nginx out of
# worker_connections, Sidekiq/Celery hard time limits.
_OVERRUN = re.compile(
    r"WORKER TIMEOUT|HARAKIRI|reached (?:pm\.)?max_children|Terminating timed out worker|"
    r"All threads \(\d+\) are currently busy|worker_connections are not enough|"
    r"TimeLimitExceeded|Hard time limit",
    re.I,
)
_CAPACITY = re.compile(
    r"rejected[_ ]execution|queue capacity|thread ?pool|overloaded|busy|blocked|flow[- ]control|"
    r"too many (concurrent|simultaneous|parallel)",
    re.I,
)


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def saturation(ctx: Ctx) -> list[Finding]:
    """A caller that waits for connections to a dependency that is up: the dependency's own
    words ("too many clients"), its connection count against its maximum, and who holds the
    connections — the label values of its connection gauge, matched to a workload."""
    out: list[Finding] = []
    for svc_name, ns, _port, failing in hosts_failing(ctx)[:2]:
        caller_line = _caller_says(ctx, _EXHAUSTED)
        if (capped := _memory_cap(ctx, svc_name, ns)) is not None:
            out.append(capped)
            continue
        busy = [
            (e, s)
            for e in ctx.facts.purpose("pool_pending")
            for s in e.data or []
            if max(series_values(s), default=0) > 0
        ]
        used, cap, cid = _connections(ctx, ns, svc_name)
        # its own gauges say it is at the most connections it allows
        at_cap = used is not None and cap is not None and cap > 0 and used >= cap
        if (
            caller_line is None
            and not busy
            and (late := _overrun_finding(ctx, ns, svc_name, failing))
        ):
            out.append(late)
            continue
        if caller_line is None and not busy and not at_cap:
            continue
        eps, _ = ctx.facts.endpoints(ns, svc_name)
        if eps is not None and not eps["ready"]:
            continue  # down, not saturated: the dependency analyzer says why
        dep = Ref("Service", ns, svc_name)
        svc = next((x for x in ctx.facts.services(ns)[0] if x["name"] == svc_name), None)
        said = _refuses_for_want_of_room(ctx, ns, svc)
        caller_pod = next(iter(ctx.focus_pods), None)
        caller = ctx.workload_ref(caller_pod) if caller_pod else ctx.ref("Namespace", ctx.ns)
        holders, hid = _holders(ctx, ns, svc_name)
        if caller_line is not None and _CAPACITY.search(caller_line[0]) and not holders:
            out.append(
                _rejects_work(ctx, caller, symptom_of(caller, caller_line), dep, ns, svc, said)
            )
            continue
        if at_cap and not holders and (seen := caller_line or _line_read(ctx, failing)):
            level = f"{used:.0f} connections open of the {cap:.0f} it allows"
            symptom = symptom_of(caller, seen)
            out.append(_rejects_work(ctx, caller, symptom, dep, ns, svc, said, level, cid))
            continue
        if caller_line is None and not busy:
            continue  # at its cap, but nothing here says the caller waits on it
        symptom = (
            link(
                S, f"{caller.name}'s log: {short(caller_line[0])}", caller_line[1].id, about=caller
            )
            if caller_line
            else link(
                S,
                f"{caller.name}'s connection pool has up to "
                f"{max(series_values(busy[0][1])):.0f} requests waiting.",
                busy[0][0].id,
                about=caller,
            )
        )
        full = (
            link(
                M,
                f"{svc_name} ({ns}) refuses new connections: {short(said[0])}",
                said[1].id,
                about=dep,
            )
            if said
            else None
        )
        count = (
            link(
                M,
                f"{svc_name} has {used:.0f} connections of max_connections {cap:.0f}.",
                cid,
                about=dep,
            )
            if used is not None and cap
            else None
        )
        if holders:
            who, n, workload = holders[0]
            held = f"{who} holds {n:.0f} of them" + (
                f" — that is {workload[0]} {workload[1]}"
                + (f" (started {workload[2]})" if workload[2] else "")
                if workload
                else ""
            )
            cause = (
                f"{svc_name} in {ns} is out of connections"
                + (f" ({used:.0f}/{cap:.0f})" if used is not None and cap else "")
                + f": {held}; {caller.name}'s pool waits and its requests time out"
            )
            last = link(C, held[0].upper() + held[1:] + ".", hid, cid, about=dep)
        else:
            cause = (
                f"{svc_name} in {ns} is out of connections"
                + (f" ({used:.0f}/{cap:.0f})" if used is not None and cap else "")
                + f"; {caller.name}'s pool waits and its requests time out"
            )
            last = None
        links = chain(symptom, full, count, last)
        if links and last is None:
            links[-1] = links[-1].model_copy(update={"role": C})
        if not links:
            continue
        out.append(
            Finding(
                cls=CauseClass.DEPENDENCY_SATURATED,
                cause=cause,
                summary=f"{caller.name} times out waiting for connections to {svc_name} ({ns})",
                impact="Requests queue for a connection and time out.",
                chain=links,
                strength=Strength.STATED if said or holders else Strength.INFERRED,
                explains={str(caller), str(dep)},
                follow_ups=[
                    "Cap what holds the connections (its pool size or workers), or raise "
                    f"{svc_name}'s max_connections; add a pooler (pgbouncer)."
                ],
            )
        )
    return out


# A server at its own memory cap refusing writes: Redis (and Valkey, KeyDB) with
# maxmemory reached and nothing it may evict.
_OVER_MEMORY_CAP = re.compile(r"OOM command not allowed|used memory > '?maxmemory", re.I)


def _caller_says(ctx: Ctx, pattern: re.Pattern[str]) -> tuple[str, Evidence] | None:
    for ev in ctx.facts.all("k8s.logs"):
        if ev.ok and ev.args.get("namespace") == ctx.ns:
            hit = next((str(x) for x in ev.data or [] if pattern.search(str(x))), None)
            if hit:
                return hit, ev
    return None


def _memory_cap(ctx: Ctx, svc_name: str, ns: str) -> Finding | None:
    """A dependency that is up and answers, but refuses every write: it has reached its own
    memory cap (Redis' maxmemory) and may evict nothing to make room — Redis answers "OOM
    command not allowed" only under maxmemory-policy noeviction (its default), or under a
    volatile-* policy when no key has a TTL. Reads still work, so it looks half-up."""
    said = _caller_says(ctx, _OVER_MEMORY_CAP)
    eps, _ = ctx.facts.endpoints(ns, svc_name)
    if said is None or (eps is not None and not eps["ready"]):
        return None
    caller_pod = next(iter(ctx.focus_pods), None)
    caller = ctx.workload_ref(caller_pod) if caller_pod else ctx.ref("Namespace", ctx.ns)
    dep = Ref("Service", ns, svc_name)
    used, uid = _last(ctx, f"memory_used:{ns}")
    cap, _ = _last(ctx, f"memory_max:{ns}")
    evicted, eid = _last(ctx, f"evicted:{ns}")
    level = (
        f"{quantities.human(used[0][1])} used of a {quantities.human(cap[0][1])} maxmemory"
        if used and cap and cap[0][1] > 0
        else ""
    )
    none_evicted = bool(evicted) and sum(v for _, v in evicted) == 0
    cause = (
        f"{svc_name} in {ns} has reached its maxmemory"
        + (f" ({level})" if level else "")
        + " and may evict nothing to make room, so it refuses every command that adds data "
        f'("{short(said[0], 140)}") while reads still work; it answers so only under '
        "maxmemory-policy noeviction (the default) or a volatile-* policy with no key carrying "
        "a TTL"
        + (" — and it evicted nothing (evicted keys 0)" if none_evicted else "")
        + f"; {caller.name}'s writes fail"
    )
    return Finding(
        cls=CauseClass.DEPENDENCY_SATURATED,
        cause=cause,
        summary=f"{svc_name} ({ns}) is full and refuses {caller.name}'s writes",
        impact=f"Every request of {caller.name} that writes to {svc_name} fails; reads work.",
        chain=chain(
            symptom_of(caller, said),
            link(
                M,
                f"{svc_name} ({ns}) is at its memory cap: {level}.",
                uid,
                about=dep,
            )
            if level
            else None,
            link(
                C,
                f"{svc_name} may evict nothing at maxmemory (maxmemory-policy noeviction, or "
                "volatile-* with no key carrying a TTL)"
                + (": it evicted no key while full" if none_evicted else "")
                + ", so it refuses writes instead of making room.",
                eid if none_evicted else uid,
                said[1].id,
                about=dep,
            ),
        ),
        strength=Strength.STATED,
        explains={str(caller), str(dep)},
        follow_ups=[
            f"Free {svc_name}: find what fills it (keys written without a TTL, `redis-cli "
            "--bigkeys`), give them a TTL or delete them; then choose an eviction policy that "
            "fits a cache (allkeys-lru) or raise maxmemory within the container's limit."
        ],
    )


def symptom_of(caller: Ref, caller_line: tuple[str, Any]) -> Any:
    return link(S, f"{caller.name}'s log: {short(caller_line[0])}", caller_line[1].id, about=caller)


def _overrun(ctx: Ctx, ns: str, svc_name: str) -> tuple[str, Evidence, p.Pod] | None:
    """The dependency's own line saying its workers cannot keep up (_OVERRUN)."""
    svc = next((x for x in ctx.facts.services(ns)[0] if x["name"] == svc_name), None)
    if svc is None:
        return None
    behind = {x["name"]: x for x in ctx.facts.pods(ns)[0] if selects(svc["selector"], x["labels"])}
    for ev in ctx.facts.all("k8s.logs"):
        if ev.ok and ev.args.get("namespace") == ns and ev.args.get("pod") in behind:
            hits = [str(x) for x in ev.data or [] if _OVERRUN.search(str(x))]
            if hits:
                return hits[-1], ev, behind[str(ev.args.get("pod"))]
    return None


def _workers_of(pod: p.Pod) -> str:
    """'--workers 2' / 'WEB_CONCURRENCY=2' / 'pm.max_children' as the server's settings give
    its number of workers, or ''."""
    for c in pod["containers"]:
        spec = c["spec"]
        if spec is None:
            continue
        words = [*spec["command"], *spec["args"]]
        for i, w in enumerate(words):
            name, eq, value = w.partition("=")
            if re.fullmatch(r"--?(workers|w|processes|threads|concurrency)", name):
                return f"{name} {value if eq else words[i + 1] if i + 1 < len(words) else ''}"
        for e in spec["env"]:
            if re.search(r"WORKERS|CONCURRENCY|THREADS", e["name"]) and e.get("value"):
                return f"{e['name']}={e.get('value')}"
    return ""


def _overrun_finding(ctx: Ctx, ns: str, svc_name: str, failing: str) -> Finding | None:
    """The caller's calls time out while the dependency's own log says its workers overrun:
    the dependency lacks capacity for the load, with the worker count its settings give."""
    overrun = _overrun(ctx, ns, svc_name)
    seen = _line_read(ctx, failing) if overrun else None
    if overrun is None or seen is None:
        return None
    dep = Ref("Service", ns, svc_name)
    caller_pod = next(iter(ctx.focus_pods), None)
    caller = ctx.workload_ref(caller_pod) if caller_pod else ctx.ref("Namespace", ctx.ns)
    symptom = symptom_of(caller, seen)
    line, ev, pod = overrun
    pods = [x for x in ctx.facts.pods(ns)[0] if workload_of(x) == workload_of(pod)]
    workers = _workers_of(pod)
    cause = (
        f"{dep.name} in {ns} cannot keep up with the work it is sent: its own log says its "
        f'workers overrun ("{short(_bare(line), 120)}")'
        + (
            f", with {workers} per pod and {len(pods)} pod(s)"
            if workers
            else f" on {len(pods)} pod(s)"
        )
        + f" — requests queue behind busy workers, so {caller.name}'s calls to it time out; "
        "it needs more capacity for this load (more workers or replicas), or less load"
    )
    return Finding(
        cls=CauseClass.DEPENDENCY_SATURATED,
        cause=cause,
        summary=f"{caller.name}'s calls to {dep.name} ({ns}) time out: its workers cannot keep up",
        impact=f"Requests of {caller.name} that need {dep.name} are slow or fail.",
        chain=chain(
            symptom,
            link(M, f"{dep.name} ({ns}) logs: {short(_bare(line))}", ev.id, about=dep),
            link(C, cause[0].upper() + cause[1:] + ".", ev.id, ctx.facts.pods(ns)[1], about=dep),
        ),
        strength=Strength.INFERRED,
        explains={str(caller), str(dep)},
        follow_ups=[
            f"Give {dep.name} more workers or replicas for the load, then watch its latency."
        ],
    )


def _bare(line: str) -> str:
    return re.sub(r"^(?:\[[^\]]*\]\s*){1,2}", "", line.strip())


def _refuses_for_want_of_room(
    ctx: Ctx, ns: str, svc: p.Service | None
) -> tuple[str, Evidence] | None:
    """The line of the dependency's own log (its pods behind the Service) that says it is
    full ("too many clients")."""
    behind = {
        x["name"]
        for x in ctx.facts.pods(ns)[0]
        if svc is not None and selects(svc["selector"], x["labels"])
    }
    for ev in ctx.facts.all("k8s.logs"):
        if ev.ok and ev.args.get("namespace") == ns and ev.args.get("pod") in behind:
            hits = [str(x) for x in ev.data or [] if _REFUSED_FULL.search(str(x))]
            # what it says when it refuses (a warning or worse), not where it prints the limit
            hit = next((x for x in reversed(hits) if text.severity(x) >= 1), None) or next(
                iter(hits), None
            )
            if hit:
                return hit, ev
    return None


def _line_read(ctx: Ctx, line: str) -> tuple[str, Evidence] | None:
    """The log read (of the namespace asked about) that holds the line."""
    for ev in ctx.facts.all("k8s.logs"):
        if ev.ok and ev.args.get("namespace") == ctx.ns:
            hit = next((str(x) for x in ev.data or [] if line[:60] in str(x)), None)
            if hit:
                return hit, ev
    return None


def _rejects_work(
    ctx: Ctx,
    caller: Ref,
    symptom: Any,
    dep: Ref,
    ns: str,
    svc: p.Service | None,
    said: tuple[str, Any] | None,
    level: str = "",
    level_id: str | None = None,
) -> Finding:
    """A dependency that is up and reachable but rejects work for capacity (a full thread
    pool's queue, "rejected execution"): the caller's requests are refused. What newly loads
    it is what started beside it lately — its own log says what it does."""
    behind = [
        x
        for x in ctx.facts.pods(ns)[0]
        if svc is not None and selects(svc["selector"], x["labels"])
    ]
    load = None
    users = dependency_users(ctx, dep.name, ns)
    for pod in recent_neighbours(ctx, ns, behind) + users:
        where = ctx.ns if pod in users else ns
        log_ev = next(
            (
                e
                for e in ctx.facts.all("k8s.logs")
                if e.ok and e.args.get("namespace") == where and e.args.get("pod") == pod["name"]
            ),
            None,
        )
        lines = [str(x) for x in (log_ev.data if log_ev else None) or [] if str(x).strip()]
        kind, name = workload_of(pod)
        started = _ago(ctx, pod["start_time"]) or "lately"
        load = (
            f"{kind} {name} started {started} "
            + (f"in {ctx.ns} and uses it too" if where != ns else "beside it")
            + (f' and says "{short(lines[0], 140)}"' if lines else "")
            + (f' (latest: "{short(lines[-1], 100)}")' if len(lines) > 1 else ""),
            log_ev.id if log_ev else ctx.facts.pods(where)[1],
            pod,
            where,
        )
        break
    cause = (
        f"{dep.name} in {ns} is up but rejects work for capacity"
        + (f": {level}" if level else "")
        + (f" ({short(said[0], 120)})" if said else "")
        + (f": {load[0]}, a new load that fills it" if load else "")
        + f"; {caller.name}'s requests to it are refused and fail in turn"
    )
    return Finding(
        cls=CauseClass.DEPENDENCY_SATURATED,
        cause=cause,
        summary=f"{caller.name}'s requests are rejected by {dep.name} ({ns}), which is at capacity",
        impact=f"Requests of {caller.name} that need {dep.name} fail.",
        chain=chain(
            symptom,
            link(M, f"{dep.name} ({ns}) says: {short(said[0])}", said[1].id, about=dep)
            if said
            else None,
            link(M, f"{dep.name} ({ns}) has {level}.", level_id, about=dep) if level else None,
            link(
                C,
                (load[0][0].upper() + load[0][1:] + ".")
                if load
                else f"{dep.name} in {ns} rejects work for capacity.",
                load[1] if load else ctx.facts.pods(ns)[1],
                about=ctx.workload_ref(load[2], load[3]) if load else dep,
            ),
        ),
        strength=Strength.INFERRED,
        explains={str(caller), str(dep)},
        follow_ups=[
            f"Throttle or reschedule what loads {dep.name}"
            + (f" ({load[2]['name']})" if load else "")
            + f", or give {dep.name} more capacity."
        ],
    )


def _tokens(name: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", name.lower()) if len(t) > 2}


def _last(
    ctx: Ctx, purpose: str, svc: str | None = None
) -> tuple[list[tuple[dict[str, str], float]], str | None]:
    """The last value of each series read for `purpose`. Several reads (a server's exporter
    and its pooler's) are told apart by the Service called: the one whose series carry its
    name as their job, or whose metric's name shares a word with it (pgbouncer_… for
    shared-pgbouncer), comes first."""
    found = ctx.facts.purpose(purpose)
    if svc is not None and len(found) > 1:
        words = _tokens(svc)

        def calls_it(ev: Evidence) -> bool:
            query = str(ev.args.get("query") or "")
            series = ev.data or []
            return any((x.get("labels") or {}).get("job") == svc for x in series) or bool(
                words & _tokens(query.split("{", 1)[0])
            )

        found = sorted(found, key=lambda ev: not calls_it(ev))
    for ev in found:
        rows = []
        for series in ev.data or []:
            values = series_values(series)
            if values:
                rows.append(
                    ({str(k): str(v) for k, v in (series.get("labels") or {}).items()}, values[-1])
                )
        return rows, ev.id
    return [], None


def _connections(
    ctx: Ctx, ns: str, svc: str | None = None
) -> tuple[float | None, float | None, str | None]:
    rows, cid = _last(ctx, f"connections:{ns}", svc)
    caps, _ = _last(ctx, f"max_connections:{ns}", svc)
    used = sum(v for _, v in rows) if rows else None
    cap = caps[0][1] if caps else None
    return used, cap, cid


def _holders(
    ctx: Ctx, ns: str, svc: str | None = None
) -> tuple[list[tuple[str, float, tuple[str, str, str] | None]], str | None]:
    """(who, connections, the workload it is) by connection count, biggest first. `who` is
    the label value that differs between series (usename=invoice_batch)."""
    rows, hid = _last(ctx, f"connection_holders:{ns}", svc)
    if not rows:
        rows, hid = _last(ctx, f"connections:{ns}", svc)
        if len(rows) < 2:
            return [], None  # one series is the server's total, not who holds them
    if not rows:
        return [], None
    keys = [
        k
        for k in sorted({k for labels, _ in rows for k in labels})
        if k not in ("__name__", "namespace", "state", "datname", "instance", "job")
    ]
    # who tells the series apart (user=, application_name=), before what they share
    # (database=)
    varying = sorted(keys, key=lambda k: len({labels.get(k) for labels, _ in rows}) < 2)
    out = []
    for labels, n in sorted(rows, key=lambda r: -r[1]):
        if n <= 0:
            continue
        who = next((f"{k}={labels[k]}" for k in varying if labels.get(k)), "one client")
        out.append((who, n, _workload_named(ctx, [labels[k] for k in varying if labels.get(k)])))
    return out[:3], hid


def _workload_named(ctx: Ctx, values: list[str]) -> tuple[str, str, str] | None:
    """The workload (of the asked-about namespace) a client name stands for: invoice_batch
    is Job invoice-batch."""
    wanted = {_norm(v) for v in values}
    for kind, items in (
        ("Job", ctx.facts.jobs(ctx.ns)[0]),
        ("Deployment", ctx.facts.deployments(ctx.ns)[0]),
        ("CronJob", ctx.facts.cronjobs(ctx.ns)[0]),
        ("StatefulSet", ctx.facts.statefulsets(ctx.ns)[0]),
    ):
        for item in items:
            name = _norm(str(item["name"]))
            # a Job of a CronJob is named <cronjob>-<scheduled time>
            if any(name == w or (name.startswith(w) and name[len(w) :].isdigit()) for w in wanted):
                started = item.get("start_time") if kind == "Job" else None
                return kind, str(item["name"]), _ago(ctx, started)
    return None


def _ago(ctx: Ctx, when: object) -> str:
    from triage.agent.planners.rules.analyzers.workloads import _ts  # noqa: PLC0415

    ts = _ts(str(when)) if when else None
    return f"{(ctx.now - ts) / 60:.0f} min ago" if ts else ""
