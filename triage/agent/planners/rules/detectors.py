"""Failure detectors for the rules planner, one function per failure class.

Each returns a Finding only when `ok` evidence decides it, and every claim it makes cites the
ids of that evidence. Scores order specificity: a failing rollout (95) explains the
crash-looping pods it created (80); a pending claim (90) explains its pending pod (85).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from tools.results import ToolStatus
from triage.agent.planners.rules.detectors_metrics import error_rate
from triage.agent.planners.rules.facts import Json, pod_problem, selects, short
from triage.agent.planners.rules.findings import (
    Ctx,
    Finding,
    cite,
    fmt_time,
    parse_ts,
    present,
    unhealthy,
    workload_of,
)
from triage.core.causes import CauseClass
from triage.core.models import Claim, MutationProposal, TimelineEntry


def job_backoff(ctx: Ctx) -> Finding | None:
    jobs, jid = ctx.facts.data("k8s.jobs", namespace=ctx.ns)
    for job in jobs:
        cond = next(
            (
                c
                for c in job["conditions"]
                if c.get("type") == "Failed" and c.get("status") == "True"
            ),
            None,
        )
        if cond is None:
            continue
        reason = cond.get("reason") or "Failed"
        main = cite(
            f"Job {job['name']} failed with {reason}: {job['failed']} pods failed "
            f"(backoffLimit {job['backoff_limit']}).",
            jid,
        )
        extra: list[Claim] = []
        failed_pod = next(
            (p for p in ctx.pods if (p.get("owner") or {}).get("name") == job["name"]), None
        )
        if failed_pod:
            c = failed_pod["containers"][0]
            line, lid, _ = ctx.fatal(failed_pod["name"], c["name"])
            log_claim = cite(f"Its pods exit with: {short(line or '')}", lid)
            if line and log_claim:
                extra.append(log_claim)
        denied = any(
            w in (ln or "") for ln in [c.text for c in extra] for w in ("AccessDenied", "403")
        )
        return Finding(
            cls=CauseClass.CLOUD_ACCESS_DENIED if denied else CauseClass.APPLICATION_ERROR,
            score=92,
            summary=f"Job {job['name']} hit its backoff limit ({reason}) after "
            f"{job['failed']} failed pods",
            claims=present(main, *extra),
            impact=f"Job {job['name']} did not complete; its work was not done.",
            follow_ups=[f"Fix the failure the job's pods log, then re-create Job {job['name']}."],
        )
    return None


def bad_rollout(ctx: Ctx) -> Finding | None:
    for ev in ctx.facts.all("k8s.rollout_history"):
        if ev.status is not ToolStatus.OK:
            continue
        revisions = ev.data["revisions"]
        dep = ev.data["deployment"]
        if len(revisions) < 2:
            continue
        newest = revisions[-1]
        serving = [r for r in revisions[:-1] if r["ready"] > 0]
        new_pods = [p for p in ctx.pods if (p.get("owner") or {}).get("name") == newest["name"]]
        problems = sorted({pb for p in new_pods if (pb := pod_problem(p))})
        if not serving or not problems or newest["ready"] >= max(newest["replicas"], 1):
            continue
        old = serving[-1]
        main = cite(
            f"The rollout of deployment {dep['name']} to revision {newest['revision']} "
            f"(image {', '.join(newest['images'])}) is failing: its new pods are "
            f"{'/'.join(problems)}, while revision {old['revision']} "
            f"(image {', '.join(old['images'])}) still serves {old['ready']} ready pods.",
            ev.id,
            ctx.pods_id,
        )
        extra: list[Claim] = []
        sample = new_pods[0]
        line, lid, prev = ctx.fatal(sample["name"], sample["containers"][0]["name"])
        if line:
            c = cite(
                f"The new pods' {'previous ' if prev else ''}log ends with: {short(line)}", lid
            )
            if c:
                extra.append(c)
        created = parse_ts(newest["created"])
        timeline = []
        if created:
            timeline.append(
                TimelineEntry(
                    at=fmt_time(created),
                    what=f"revision {newest['revision']} rolled out",
                    evidence=(ev.id,),
                )
            )
        return Finding(
            cls=CauseClass.APPLICATION_ERROR,
            score=95,
            summary=f"Bad rollout: revision {newest['revision']} of {dep['name']} "
            f"({', '.join(newest['images'])}) fails ({'/'.join(problems)}); "
            f"revision {old['revision']} still serves",
            claims=present(main, *extra),
            impact=f"{dep['name']} runs at reduced capacity on the old revision; "
            "the rollout is stuck.",
            remediation=[
                MutationProposal(
                    action="rollback",
                    target=f"Deployment/{ctx.ns}/{dep['name']}",
                    args={"to_revision": int(old["revision"] or 0)},
                    rationale=f"revision {old['revision']} is the last one that served",
                )
            ],
            follow_ups=["Fix the new revision before rolling forward again."],
            timeline=timeline,
        )
    return None


def image_pull(ctx: Ctx) -> Finding | None:
    hits = unhealthy(ctx.focus, "ImagePullBackOff", "ErrImagePull", "InvalidImageName")
    if not hits:
        return None
    pod, c = hits[0]
    state = c["state"] or {}
    events, eid = ctx.pod_events(pod["name"])
    failed = next((e for e in events if "pull" in str(e.get("message", "")).lower()), None)
    main = cite(
        f"Container {c['name']} of pod {pod['name']} cannot start: {state.get('reason')} "
        f"for image {c['image']}"
        + (f": {short(state['message'])}" if state.get("message") else ""),
        ctx.pods_id,
    )
    ev_claim = (
        cite(f"Event {failed['reason']}: {short(failed['message'])}", eid) if failed else None
    )
    return Finding(
        cls=CauseClass.IMAGE_PULL,
        score=86,
        summary=f"Image {c['image']} cannot be pulled ({state.get('reason')})",
        claims=present(main, ev_claim),
        impact=f"{len(hits)} container(s) of {workload_of(pod)} never started.",
        follow_ups=["Check that the image tag exists in the registry and the pull secret works."],
    )


def config_reference(ctx: Ctx) -> Finding | None:
    hits = unhealthy(ctx.focus, "CreateContainerConfigError")
    if not hits:
        return None
    pod, c = hits[0]
    message = str((c["state"] or {}).get("message") or "")
    main = cite(
        f"Container {c['name']} of pod {pod['name']} cannot be created: "
        f"CreateContainerConfigError: {short(message)}",
        ctx.pods_id,
    )
    names, cid = ctx.facts.data("k8s.configmap_names", namespace=ctx.ns)
    missing = [n for n in pod.get("configmaps", []) if n not in (names or [])]
    cm_claim = (
        cite(
            f"ConfigMap {', '.join(missing)} referenced by the pod does not exist in "
            f"namespace {ctx.ns} (present: {', '.join(names) or 'none'}).",
            cid,
            ctx.pods_id,
        )
        if missing and cid
        else None
    )
    return Finding(
        cls=CauseClass.MISSING_CONFIG_REFERENCE,
        score=86,
        summary=f"Pods of {workload_of(pod)} reference configuration that does not exist: "
        f"{short(message, 120)}",
        claims=present(main, cm_claim),
        impact=f"{len(hits)} container(s) of {workload_of(pod)} cannot start.",
        follow_ups=["Create the missing ConfigMap/Secret or fix the reference in the pod spec."],
    )


def oom(ctx: Ctx) -> Finding | None:
    hits = unhealthy(ctx.focus, "OOMKilled")
    if not hits:
        return None
    pod, c = hits[0]
    last = c.get("last_terminated") or c.get("state") or {}
    limit = (c.get("limits") or {}).get("memory", "none")
    main = cite(
        f"Container {c['name']} of pod {pod['name']} was OOMKilled (exit code "
        f"{last.get('exit_code', 137)}), {c['restarts']} restarts; its memory limit is {limit}.",
        ctx.pods_id,
    )
    extra = []
    for ev in ctx.facts.all("prom.range"):
        if ev.status is ToolStatus.OK and "container_memory_working_set_bytes" in ev.args["query"]:
            peak = max(
                (v for s in ev.data for _, v in s["values"] if not math.isnan(v)), default=0.0
            )
            if peak >= 0.8:
                claim = cite(
                    f"Memory working set reached {peak:.0%} of the memory limit before the kills.",
                    ev.id,
                )
                if claim:
                    extra.append(claim)
    return Finding(
        cls=CauseClass.OOM_KILLED,
        score=88,
        summary=f"{workload_of(pod)} is OOMKilled: container {c['name']} exceeds its "
        f"memory limit of {limit}",
        claims=present(main),
        contributing=extra,
        impact=f"{len(hits)} container(s) of {workload_of(pod)} restart repeatedly.",
        follow_ups=[
            "Raise the memory limit if the working set is legitimate, otherwise find the leak "
            "(heap profile of the previous instance)."
        ],
    )


def crashloop(ctx: Ctx) -> Finding | None:
    hits = [
        (p, c)
        for p, c in unhealthy(ctx.focus, "CrashLoopBackOff", "Error", "RunContainerError")
        if (c.get("last_terminated") or {}).get("reason") != "OOMKilled"
    ]
    if not hits:
        return None
    pod, c = hits[0]
    last = c.get("last_terminated") or {}
    main = cite(
        f"Container {c['name']} of pod {pod['name']} is in CrashLoopBackOff: last exit code "
        f"{last.get('exit_code', '?')} ({last.get('reason', 'Error')}), "
        f"{c['restarts']} restarts.",
        ctx.pods_id,
    )
    line, lid, prev = ctx.fatal(pod["name"], c["name"])
    log_claim = (
        cite(f"The {'previous ' if prev else ''}instance's log ends with: {short(line)}", lid)
        if line
        else None
    )
    summary = f"{workload_of(pod)} is in CrashLoopBackOff"
    summary += f': the container exits at startup with "{short(line, 160)}"' if line else ""
    return Finding(
        cls=CauseClass.BAD_CONFIG,
        score=80 if line else 60,
        summary=summary,
        claims=present(main, log_claim),
        impact=f"{len(hits)} container(s) of {workload_of(pod)} crash-loop and serve nothing.",
        follow_ups=["Fix the setting the log names; restarting will not help."],
    )


def readiness(ctx: Ctx) -> Finding | None:
    hits = [
        p
        for p in ctx.focus
        if p["phase"] == "Running"
        and not p["ready"]
        and all((c.get("state") or {}).get("kind") == "running" for c in p["containers"])
    ]
    if not hits:
        return None
    pod = hits[0]
    events, eid = ctx.pod_events(pod["name"])
    probe = next(
        (e for e in events if e.get("reason") == "Unhealthy" and "eadiness" in str(e["message"])),
        None,
    )
    main = cite(
        f"{len(hits)} pod(s) of {workload_of(pod)} are Running but not Ready "
        f"(e.g. {pod['name']}); containers are running, so the readiness probe is failing.",
        ctx.pods_id,
    )
    probe_claim = cite(f"Event Unhealthy: {short(probe['message'])}", eid) if probe else None
    return Finding(
        cls=CauseClass.READINESS_PROBE_FAILING,
        score=78 if probe else 65,
        summary=f"Readiness probe failing for {workload_of(pod)}"
        + (f": {short(probe['message'], 140)}" if probe else ""),
        claims=present(main, probe_claim),
        impact=f"{len(hits)} pod(s) receive no traffic from their Service.",
        follow_ups=["Check what the readiness endpoint depends on (database, cache, config)."],
    )


def scheduling(ctx: Ctx) -> Finding | None:
    pending = [p for p in ctx.focus if p["phase"] == "Pending"]
    for pod in pending:
        events, eid = ctx.pod_events(pod["name"])
        failed = next((e for e in events if e.get("reason") == "FailedScheduling"), None)
        if failed is None:
            continue
        # the scheduler's first sentence says why; the preemption epilogue adds nothing
        msg = re.split(r"\.? ?(?:no new claims|preemption:)", str(failed["message"]))[0] + "."
        if "unbound" in msg and "PersistentVolumeClaim" in msg:
            continue  # the claim explains it (pvc detector)
        # A tainted node that the pod was never meant for shows up in both messages; what
        # decides is whether the pod's own selector/affinity excluded nodes, or capacity did.
        placement = (
            "didn't match" in msg
            or "node affinity" in msg
            or ("taint" in msg and "Insufficient" not in msg)
        )
        cls = (
            CauseClass.INSUFFICIENT_RESOURCES
            if "Insufficient" in msg and not placement
            else CauseClass.UNSCHEDULABLE_PLACEMENT
        )
        requests = {k: v for c in pod["containers"] for k, v in (c.get("requests") or {}).items()}
        main = cite(
            f"Pod {pod['name']} is Pending: FailedScheduling: {short(msg)}", eid, ctx.pods_id
        )
        nodes, nid = ctx.facts.data("k8s.nodes")
        detail = None
        if nodes:
            if cls is CauseClass.INSUFFICIENT_RESOURCES:
                text = (
                    f"The pod requests {requests or 'nothing'}; the largest node allocatable is "
                    f"cpu {max(str(n['allocatable'].get('cpu')) for n in nodes)}, memory "
                    f"{max(str(n['allocatable'].get('memory')) for n in nodes)}."
                )
            else:
                text = (
                    f"The pod's nodeSelector is {pod.get('node_selector') or '{}'} and "
                    f"tolerations {pod.get('tolerations') or '[]'}; nodes: "
                    + "; ".join(
                        f"{n['name']} labels {n['labels']} taints {n['taints']}" for n in nodes[:4]
                    )
                )
            detail = cite(short(text, 400), nid, ctx.pods_id)
        kind = (
            "insufficient resources"
            if cls is CauseClass.INSUFFICIENT_RESOURCES
            else "placement rules"
        )
        return Finding(
            cls=cls,
            score=85,
            summary=f"Pods of {workload_of(pod)} cannot be scheduled ({kind}): {short(msg, 160)}",
            claims=present(main, detail),
            impact=f"{len(pending)} pod(s) of {workload_of(pod)} are Pending and never started.",
            follow_ups=["Lower the requests, add capacity, or fix the nodeSelector/tolerations."],
        )
    return None


def pvc_pending(ctx: Ctx) -> Finding | None:
    pvcs, pid = ctx.facts.data("k8s.pvcs", namespace=ctx.ns)
    pending = [c for c in pvcs if c["phase"] == "Pending"]
    if not pending:
        return None
    claim_ = pending[0]
    classes, sid = ctx.facts.data("k8s.storage_classes")
    names = [c["name"] for c in classes or []]
    main = cite(
        f"PersistentVolumeClaim {claim_['name']} is Pending (storageClassName "
        f"{claim_['storage_class']}).",
        pid,
    )
    cls_claim = None
    if claim_["storage_class"] and sid and claim_["storage_class"] not in names:
        cls_claim = cite(
            f"StorageClass {claim_['storage_class']} does not exist "
            f"(existing: {', '.join(names) or 'none'}).",
            sid,
        )
    prov = next(
        (
            e
            for e in ctx.events
            if e["object"]["name"] == claim_["name"] and e["reason"] == "ProvisioningFailed"
        ),
        None,
    )
    missing_per_event = prov is not None and "not found" in str(prov["message"])
    ev_claim = (
        cite(f"Event ProvisioningFailed: {short(prov['message'])}", ctx.events_id) if prov else None
    )
    users = [p["name"] for p in ctx.pods if claim_["name"] in p.get("claims", [])]
    return Finding(
        cls=CauseClass.PVC_PENDING,
        score=90,
        summary=f"PVC {claim_['name']} stays Pending: storage class "
        f"{claim_['storage_class']} "
        + ("does not exist" if cls_claim or missing_per_event else "cannot provision a volume"),
        claims=present(main, cls_claim, ev_claim),
        impact=(f"Pods waiting for the claim: {', '.join(users)}." if users else "No volume."),
        follow_ups=["Use an existing StorageClass or install the provisioner it needs."],
    )


def service_selector(ctx: Ctx) -> Finding | None:
    named = {w.name for w in ctx.goal.scope.workloads}
    for svc in ctx.services:
        eps, eid = ctx.facts.data("k8s.endpoints", namespace=ctx.ns, service=svc["name"])
        if not eid or not svc["selector"] or eps["ready"] or eps["not_ready"]:
            continue
        if any(selects(svc["selector"], p["labels"]) for p in ctx.pods):
            continue
        close = sorted(
            {f"app={p['labels'].get('app')}" for p in ctx.pods if p["labels"].get("app")}
        )
        sel = ",".join(f"{k}={v}" for k, v in svc["selector"].items())
        main = cite(
            f"Service {svc['name']} selects {sel}, but no pod in {ctx.ns} has these labels, "
            f"so it has 0 endpoints.",
            ctx.services_id,
            eid,
            ctx.pods_id,
        )
        near = (
            cite(f"The pods in the namespace carry {', '.join(close)}.", ctx.pods_id)
            if close
            else None
        )
        return Finding(
            cls=CauseClass.SERVICE_SELECTOR_MISMATCH,
            score=88 if svc["name"] in named else 75,
            summary=f"Service {svc['name']} has no endpoints: its selector {sel} matches no pod",
            claims=present(main, near),
            impact=f"Requests to service {svc['name']} fail: there is nothing behind it.",
            follow_ups=["Align the Service selector with the pod template labels."],
        )
    return None


def hpa_max(ctx: Ctx) -> Finding | None:
    hpas, hid = ctx.facts.data("k8s.hpas", namespace=ctx.ns)
    for h in hpas:
        if not h["max_replicas"] or (h["current_replicas"] or 0) < h["max_replicas"]:
            continue
        cpu: Json = next((m for m in h["current_metrics"] if m.get("name") == "cpu"), {})
        target: Json = next((m for m in h["target_metrics"] if m.get("name") == "cpu"), {})
        limited = next((c for c in h["conditions"] if c.get("type") == "ScalingLimited"), None)
        main = cite(
            f"HorizontalPodAutoscaler {h['name']} is at its maximum: {h['current_replicas']} of "
            f"max {h['max_replicas']} replicas (desired {h['desired_replicas']}); CPU "
            f"utilization {cpu.get('utilization', '?')}% against a target of "
            f"{target.get('utilization', '?')}%."
            + (f" ScalingLimited: {limited.get('reason')}." if limited else ""),
            hid,
        )
        extra = []
        for ev in ctx.facts.all("prom.range"):
            if (
                ev.status is ToolStatus.OK
                and "container_cpu_usage_seconds_total" in ev.args["query"]
            ):
                last = sum(s["values"][-1][1] for s in ev.data if s["values"])
                c = cite(f"Pods of the namespace use {last:.2f} CPU cores in total now.", ev.id)
                if c:
                    extra.append(c)
        return Finding(
            cls=CauseClass.HPA_AT_MAX,
            score=82,
            summary=f"HPA {h['name']} is pinned at maxReplicas {h['max_replicas']} under CPU "
            f"load ({cpu.get('utilization', '?')}% vs target {target.get('utilization', '?')}%)",
            claims=present(main),
            contributing=extra,
            impact=f"{h['target']['name']} cannot scale out further; latency and errors rise "
            "with load.",
            follow_ups=["Raise maxReplicas (capacity permitting) or reduce per-request CPU."],
        )
    return None


DETECTORS: tuple[Callable[[Ctx], Finding | None], ...] = (
    job_backoff,
    bad_rollout,
    image_pull,
    config_reference,
    oom,
    crashloop,
    readiness,
    pvc_pending,
    scheduling,
    service_selector,
    hpa_max,
    error_rate,
)
