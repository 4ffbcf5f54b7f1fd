"""Why "no fault": the reasons a reviewer needs, one function per kind of thing that looks
alarming (warning events and what followed them, error lines, the log lines a question
describes, restarts long ago, memory shape, full-looking volumes, NetworkPolicies, alerts,
autoscalers at their bounds, Jobs, scaled-down workloads, pods a Service routes past,
scanners' 404s).

Each returns claims that cite the evidence they rest on; `diagnosis._no_fault` puts them
after the verdict. A reason is said only when the evidence shows it; the judge re-checks "no
fault" on its own reads (judge/no_fault.py), never on these sentences.
"""

from __future__ import annotations

import itertools
import math
import re

from tools.read import payloads as p
from triage.agent.planners.rules import meanings, quantities, text
from triage.agent.planners.rules.analyzers.common import _ts, env_of, recovered, recycled
from triage.agent.planners.rules.analyzers.dependencies import (
    fenced_callers,
    labels_text,
    one_off_fenced,
    peer_text,
    peers_text,
)
from triage.agent.planners.rules.analyzers.network import scaled_to_zero
from triage.agent.planners.rules.analyzers.storage import waits_for_consumer
from triage.agent.planners.rules.analyzers.workloads import duration_words
from triage.agent.planners.rules.chain import link, short, unique
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import (
    Ref,
    budget_selects,
    selects,
    series_values,
    workload_of,
)
from triage.agent.planners.rules.reads import BUDGET_REFUSED, NODE_EVENTS_ARGS
from triage.core.cron import cadence_words as cron_words
from triage.core.models import Claim
from triage.core.signals import ERROR_RATIO_FLOOR, STATUS_LABELS

HEARTBEATS = re.compile(r"^(Watchdog|DeadMansSwitch|DeadMansSnitch|InfoInhibitor|AlwaysFiring)$")


def sentence(text_: str) -> str:
    text_ = " ".join(text_.split())
    return (text_[0].upper() + text_[1:]).rstrip(".") + "." if text_ else ""


def memory_explained(ctx: Ctx) -> list[Claim | None]:
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
                if shape == "and stays flat":
                    made_of += _own_bound(c, limit) + _committed_heap(c)
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


_EVICTION = re.compile(
    r"--?[\w.-]*(?:policy|evict)[\w.-]*[= ](?P<v>[\w-]*(?:lru|lfu|random|ttl)[\w-]*)"
)


def _own_bound(c: p.Container, limit: float) -> str:
    """A container told to keep at most a size below its limit (a cache's `--maxmemory 400mb`,
    `-s malloc,1G`, `--cache-size=2G`), and how it makes room at that size: what it holds
    levels off at its own bound by design, which is why a flat working set is not a leak."""
    bounds = [
        m
        for m in quantities.memory_settings(c["spec"])
        if m.bytes is not None and 0 < m.bytes < limit and not m.flag.startswith("-Xmx")
    ]
    if not bounds or c["spec"] is None:
        return ""
    args = " ".join([*c["spec"]["command"], *c["spec"]["args"]])
    policy = _EVICTION.search(args)
    return (
        f"; it is told to hold at most {bounds[0].flag} ({bounds[0].where}), below its limit"
        + (f", and to make room by evicting ({policy.group(0)})" if policy else "")
        + ": what it keeps levels off at its own bound by design — full to that bound is "
        "the setting working, not a leak"
    )


_XMS = re.compile(r"-Xms(\d+[kKmMgG]?)\b")
_XMX = re.compile(r"-Xmx(\d+[kKmMgG]?)\b")


def _committed_heap(c: p.Container) -> str:
    """A JVM told to commit its heap up front — -Xms as large as -Xmx, or -XX:+AlwaysPreTouch,
    which touches every heap page at start-up: the heap is resident from the first second, so
    a working set near its limit and flat from the start is the flags, not a leak."""
    spec = c["spec"]
    if spec is None:
        return ""
    sources = [("args", " ".join([*spec["command"], *spec["args"]]))]
    sources += [(f"env {e['name']}", e.get("value") or "") for e in spec["env"]]
    for where, said in sources:
        xms, xmx = _XMS.search(said), _XMX.search(said)
        touch = "-XX:+AlwaysPreTouch" in said
        fixed = xms is not None and xmx is not None and xms.group(1) == xmx.group(1)
        if not (touch or fixed):
            continue
        flags = " ".join(
            f
            for f in (xms and xms.group(0), xmx and xmx.group(0), touch and "-XX:+AlwaysPreTouch")
            if f
        )
        return (
            f"; its JVM is told to commit its heap up front ({flags} in {where}"
            + ("; the initial heap is the maximum" if fixed else "")
            + ("; AlwaysPreTouch touches every heap page at start-up" if touch else "")
            + "), so the whole heap is resident from the first second and the working set is "
            "that heap plus the JVM's own memory: a level its flags set, flat by design, not a "
            "leak"
        )
    return ""


_SIZE_CAP = re.compile(
    r"(?P<flag>--?[\w.-]*(?:retention[._-]?size|max[._-]?size|size[._-]?limit|max[._-]?bytes|"
    r"cache[._-]?size)[\w.-]*)[= ](?P<v>\d+(?:\.\d+)?\s?[kKmMgGtTpP]?[iI]?[bB]?)\b"
)


def _size_cap(ctx: Ctx, claim: str) -> str:
    """The flag with which the claim's user bounds what it keeps on it
    ('--storage.tsdb.retention.size=45GB'), or ''."""
    for spec in _claim_users(ctx, claim):
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


def _claim_users(ctx: Ctx, claim: str) -> list[p.ContainerSpec]:
    """The specs of the asked-about containers whose pods mount `claim`."""
    return [
        c["spec"]
        for pod in ctx.focus_pods
        if claim in pod["claims"]
        for c in pod["containers"]
        if c["spec"] is not None
    ]


_SIZE_WORD = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?\s?[kKmMgGtT][iI]?[bB]?)(?![\w])")


def _fixed_size(ctx: Ctx, claim: str, share: float) -> str:
    """The argument or setting of the claim's user that gives a size matching what the volume
    holds (within 10% of `share` of the claim's size): a fixed allocation it makes there, such
    as a cache file preallocated at start ('-s file,/var/lib/varnish/cache.bin,18G')."""
    pvc = next((c for c in ctx.facts.pvcs(ctx.ns)[0] if c["name"] == claim), None)
    size = quantities.quantity_bytes(str(pvc["requested"] or "")) if pvc else None
    if not size:
        return ""
    used = share * size
    for spec in _claim_users(ctx, claim):
        words = [
            *spec["args"],
            *spec["command"],
            *(f"{e['name']}={e.get('value')}" for e in spec["env"]),
        ]
        for w in words:
            for m in _SIZE_WORD.finditer(w):
                value = quantities.size_bytes(m.group(1)) or quantities.quantity_bytes(m.group(1))
                if value and abs(value - used) <= 0.1 * used:
                    return w
    return ""


def volumes_explained(ctx: Ctx) -> list[Claim | None]:
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
                fixed = "" if cap else _fixed_size(ctx, claim, values[-1])
                out.append(
                    link(
                        None,
                        f"Volume {claim} is {values[-1]:.0%} used and flat over the window "
                        f"(between {min(values):.0%} and {max(values):.0%}): it is not filling; "
                        + (
                            f"its user caps what it keeps with {cap}, so the level is bounded "
                            "and will not fill the volume"
                            if cap
                            else f"its user is told to take a fixed size there (`{fixed}`), "
                            "which matches what the volume holds: an allocation made once (a "
                            "file preallocated at start, reused in place), so the level is by "
                            "design and will not grow"
                            if fixed
                            else "a level held steady is what a cache bounded by its own size "
                            "limit looks like"
                        ),
                        ev.id,
                        about=ctx.ref("PersistentVolumeClaim", claim),
                    )
                )
    return out[:2]


def released_explained(ctx: Ctx) -> list[Claim | None]:
    """A PersistentVolume Released from a claim of this namespace that no longer exists: its
    reclaim policy kept it (Retain) after the claim was deleted; nothing mounts it, and the
    claims the pods in question mount are named beside it."""
    volumes, vid = ctx.facts.persistent_volumes()
    claims, cid = ctx.facts.pvcs(ctx.ns)
    if vid is None or cid is None:
        return []
    present = {c["name"]: c for c in claims}
    mounted = sorted({c for x in ctx.focus_pods for c in x["claims"]})
    out: list[Claim | None] = []
    for v in volumes:
        ns, _, claim = str(v["claim"] or "").partition("/")
        if v["phase"] != "Released" or ns != ctx.ns or claim in present:
            continue
        policy = v.get("reclaim_policy") or "?"
        now = [f"{c} ({present[c]['phase']})" for c in mounted if c in present]
        said = (
            f"PersistentVolume {v['name']} ({v['capacity'] or '?'}) is Released: the claim it "
            f"was bound to, {claim}, no longer exists, and its reclaim policy {policy} "
            + (
                "keeps the volume and its data after the claim is deleted, attached to nothing "
                "until someone deletes it — expected after a claim is replaced, not a lost disk"
                if policy == "Retain"
                else "should have removed it"
            )
            + (f"; the pods in question mount {', '.join(now)}" if now else "")
        )
        out.append(
            link(None, sentence(said), vid, cid, about=ctx.ref("PersistentVolume", v["name"], ""))
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


def rollouts_explained(ctx: Ctx) -> list[Claim | None]:
    """A Deployment mid-rollout whose new pods are Ready but not yet available because of
    minReadySeconds: the controller counts a pod available only after it has been Ready that
    long, and replaces the next old pod only then, so a rollout one pod at a time takes about
    that long per pod, by design; it is stuck only past progressDeadlineSeconds."""
    deployments, did = ctx.facts.deployments(ctx.ns)
    out: list[Claim | None] = []
    for d in deployments:
        wait, replicas = int(d.get("min_ready_s") or 0), d["replicas"] or 0
        done = d["updated"] >= replicas and d["available"] >= replicas
        if not wait or done or d["ready"] < replicas:
            continue
        if not ctx.in_focus(ctx.ref("Deployment", d["name"])):
            continue
        progressing = next((c for c in d["conditions"] if c.get("type") == "Progressing"), None)
        if progressing is None or progressing.get("reason") == "ProgressDeadlineExceeded":
            continue
        deadline = d.get("progress_deadline_s")
        out.append(
            link(
                None,
                f"Deployment {d['name']} is mid-rollout as designed, not stuck: minReadySeconds "
                f"is {wait} ({_minutes(wait)}), so each new pod counts as available only after "
                f"it has been Ready that long, and the next old pod is replaced only then "
                f"(maxSurge {_written(d['max_surge'])}, maxUnavailable "
                f"{_written(d['max_unavailable'])}); {d['updated']} of {replicas} updated, "
                f"{d['available']} available, {d['ready']} Ready; the "
                f"controller reports it progressing ({progressing.get('reason')})"
                + (f" within progressDeadlineSeconds {deadline}" if deadline else "")
                + ": expected, no rollback needed.",
                did,
                about=ctx.ref("Deployment", d["name"]),
            )
        )
    return out[:2]


def _written(value: object) -> str:
    return "25%" if value is None else str(value)


def _minutes(seconds: int) -> str:
    return f"{seconds // 3600} hour(s)" if seconds % 3600 == 0 else f"{seconds / 60:g} minutes"


def aliases_explained(ctx: Ctx) -> list[Claim | None]:
    """A Service the request names (or a failing pod's settings name) that is an ExternalName
    alias: it has no selector and no endpoints, by design — DNS answers with a CNAME to the
    name outside the cluster, and whether that answers is the caller's log's to say."""
    services, sid = ctx.facts.services(ctx.ns)
    asked = {w.name for w in ctx.goal.scope.workloads}
    out: list[Claim | None] = []
    for svc in services:
        if svc["type"] != "ExternalName" or (asked and svc["name"] not in asked):
            continue
        target = svc.get("external_name") or "a name outside the cluster"
        out.append(
            link(
                None,
                f"Service {svc['name']} is an ExternalName Service, a DNS alias (CNAME) for "
                f"{target}: it has no selector and never has endpoints, by design, so a report "
                "of Services without endpoints lists it every time; callers reach what the "
                "name resolves to.",
                sid,
                about=ctx.ref("Service", svc["name"]),
            )
        )
    return out[:2]


def claims_explained(ctx: Ctx) -> list[Claim | None]:
    """A Pending claim of a StorageClass that binds on first consumer, which no pod mounts:
    the PV controller waits, by design, until a pod that mounts it is scheduled (so the
    volume is made where that pod runs); it binds at the workload's first run."""
    pvcs, pid = ctx.facts.pvcs(ctx.ns)
    classes, sid = ctx.facts.storage_classes()
    by_name = {c["name"]: c for c in classes}
    pods = ctx.facts.pods(ctx.ns)[0]
    out: list[Claim | None] = []
    for claim in pvcs:
        sc = by_name.get(claim["storage_class"] or "")
        if claim["phase"] != "Pending" or sc is None or not waits_for_consumer(sc):
            continue
        if any(claim["name"] in x["claims"] for x in pods):
            continue
        ready, vid = _ready_volume(ctx, claim, sc)
        if ready is None:
            continue  # nothing will make or offer it a volume: not by design
        out.append(
            link(
                None,
                f"PersistentVolumeClaim {claim['name']} is Pending as expected: StorageClass "
                f"{sc['name']} has volumeBindingMode WaitForFirstConsumer, so the claim is bound "
                "(and its volume provisioned) only when a pod that mounts it is scheduled, and "
                "no pod mounts it yet (the workload that uses it has not run); it is not a "
                f"provisioning fault{ready}.",
                pid,
                sid,
                vid,
                about=ctx.ref("PersistentVolumeClaim", claim["name"]),
            )
        )
    return out[:2]


def retained_explained(ctx: Ctx) -> list[Claim | None]:
    """Claims of a StatefulSet's claim template for ordinals it no longer runs (a
    scale-down): a StatefulSet removes the highest ordinals first and, under
    persistentVolumeClaimRetentionPolicy whenScaled Retain (the default), keeps their
    claims, so a scale-up gets the same data back — not pods that died."""
    pvcs, pid = ctx.facts.pvcs(ctx.ns)
    sets, ssid = ctx.facts.statefulsets(ctx.ns)
    out: list[Claim | None] = []
    for sts in sets:
        if sts["replicas"] is None or sts.get("claims_when_scaled", "Retain") != "Retain":
            continue
        start = sts.get("ordinals_start", 0)
        end = start + sts["replicas"]  # one past the last ordinal it runs
        kept: list[str] = []
        for tpl in sts["claim_templates"]:
            prefix = f"{tpl['name']}-{sts['name']}-"
            kept += [
                c["name"]
                for c in pvcs
                if c["name"].startswith(prefix)
                and c["name"][len(prefix) :].isdigit()
                and int(c["name"][len(prefix) :]) >= end
            ]
        if not kept:
            continue
        why = next((v for k, v in sts["annotations"].items() if k.endswith("change-cause")), None)
        said = (
            f"StatefulSet {sts['name']} runs replicas {sts['replicas']} (pods "
            f"{sts['name']}-{start}..{sts['name']}-{end - 1}); the claims "
            f"{', '.join(sorted(kept)[:4])} belong to ordinals above those: a scale-down "
            "removes the highest ordinals first and, with persistentVolumeClaimRetentionPolicy "
            "whenScaled Retain (the default), keeps their claims by design, so a scale-up gets "
            "the same data back — their pods were removed, they did not die"
            + (f' (its change-cause: "{short(why, 120)}")' if why else "")
            + "; delete the claims once the scale-down is final"
        )
        out.append(link(None, sentence(said), ssid, pid, about=ctx.ref("StatefulSet", sts["name"])))
    return out


def _ready_volume(ctx: Ctx, claim: p.PVC, sc: p.StorageClass) -> tuple[str | None, str | None]:
    """'; PersistentVolume nvme-1 (200Gi, Available) of that class waits for it': what it will
    bind to at the first run — a pre-made volume (a class with no provisioner makes none), or
    the provisioner that will make one."""
    volumes, vid = ctx.facts.persistent_volumes()
    free = [v for v in volumes if v["storage_class"] == sc["name"] and v["phase"] == "Available"]
    if free:
        v = free[0]
        return (
            f"; PersistentVolume {v['name']} ({v['capacity'] or '?'}, Available) of that class "
            "is there for it to bind to at that first run"
        ), vid
    if sc["provisioner"] and sc["provisioner"] != "kubernetes.io/no-provisioner":
        return f"; its provisioner {sc['provisioner']} makes the volume then", None
    # a class that provisions nothing, and no volume of it free: the first run will not bind
    return (None, None) if vid is not None else ("", None)


def restarts_explained(ctx: Ctx) -> list[Claim | None]:
    """A restart long ago, running and Ready since: when, why (its exit and the last words of
    the instance before), and that it has not recurred."""
    out: list[Claim | None] = []
    pods_id = ctx.facts.pods(ctx.ns)[1]
    for pod in ctx.focus_pods:
        for c in pod["containers"]:
            if c["restarts"] and (ended := recycled(ctx, pod, c)) is not None:
                out.append(_recycled(ctx, pod, c, *ended))
                continue
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


def _recycled(
    ctx: Ctx, pod: p.Pod, c: p.Container, run: float, setting: tuple[str, float] | None
) -> Claim | None:
    last = c["last_terminated"] or {}
    log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], True)
    ending = next((ln.strip() for ln in reversed(log) if ln.strip()), "") if lid else ""
    why = (
        f"it ends itself after `{setting[0]}` ({duration_words(round(setting[1]))}), "
        "the lifetime its own settings give it,"
        if setting
        else "its previous instance logged no failure before it ended,"
    )
    return link(
        None,
        f"Container {c['name']} of {pod['name']} restarted {c['restarts']} time(s): the last "
        f"instance ran {run / 60:.0f} min and exited with code 0 ({last.get('reason')}): {why} "
        "and the kubelet starts it again (restartPolicy Always) — a worker recycled by design, "
        "not a crash, and not a memory limit (no OOMKilled)"
        + (f'; its last words: "{short(ending, 120)}"' if ending else "")
        + ".",
        ctx.facts.pods(ctx.ns)[1],
        lid,
        about=ctx.pod_ref(pod),
    )


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


def _below_threshold(pod: p.Pod, e: p.Event) -> str:
    """For a failed liveness check of a container that was not restarted: the kubelet
    restarts it only after failureThreshold consecutive failures (3 unless set), so checks
    that failed fewer times in a row did nothing but log this warning."""
    if e["reason"] != "Unhealthy" or not str(e["message"]).startswith("Liveness probe failed"):
        return ""
    for c in pod["containers"]:
        probe = c["spec"]["liveness"] if c["spec"] else None
        if probe is None or c["restarts"]:
            continue
        threshold = probe.get("failure_threshold") or 3
        period = probe.get("period_s") or 10
        return (
            f"; the kubelet restarts container {c['name']} only after failureThreshold "
            f"{threshold} consecutive failed checks (every {period}s), and it has not "
            "restarted it (restartCount 0): the checks that failed were fewer in a row"
        )
    return ""


def events_explained(ctx: Ctx) -> list[Claim | None]:
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
                + _below_threshold(pod, e)
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
        out.append(link(None, sentence(why), *ids, about=ctx.ref(kind, name)))
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


def scans_explained(ctx: Ctx) -> list[Claim | None]:
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


def described_explained(ctx: Ctx) -> list[Claim | None]:
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
        who = "anywhere" if not rule else " or ".join(peer_text(x) for x in rule[:4])
        said.append(who + (f" on {', '.join(rule_ports)}" if rule_ports else ""))
    return f"{direction.lower()} allowed from/to " + "; ".join(said)


# A request about traffic that does not get through: policies, drops, denials, the tools that
# count them (Cilium's Hubble, Calico), refused or timed-out connections.
_ABOUT_TRAFFIC = re.compile(
    r"polic|netpol|\bdrop|\bdenied\b|\bblock|firewall|hubble|cilium|calico"
    r"|connection (refused|reset|timed? ?out)|can'?t (reach|connect)|cannot (reach|connect)",
    re.I,
)


def policies_explained(ctx: Ctx) -> list[Claim | None]:
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
        if not mine or not (denies or _ABOUT_TRAFFIC.search(words)):
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
                    "and what no rule admits (any other pod or namespace) is dropped by design: "
                    "drops of such traffic are the policy working as intended, not a fault of "
                    f"{workload.name}"
                    if allows
                    else "with no allow rule beside the deny, everything it denies is dropped"
                )
                + ".",
                nid,
                about=workload,
            )
        )
        out.append(_dropped_from(ctx, workload.name))
    return out


def _dropped_from(ctx: Ctx, workload: str) -> Claim | None:
    """Who the dropped packets come from, by the drop counter's own labels (Hubble's source
    and destination, when its context options give them): the sender to look at."""
    for ev in ctx.facts.purpose("drops"):
        senders = []
        for series in ev.data or []:
            labels = {str(k): str(v) for k, v in (series.get("labels") or {}).items()}
            values = [v for v in series_values(series) if not math.isnan(v)]
            to = labels.get("destination") or labels.get("destination_workload") or ""
            source = labels.get("source") or labels.get("source_workload") or ""
            if values and values[-1] > 0 and source and (not to or workload in to):
                reason = labels.get("reason", "")
                senders.append(f"{source} ({values[-1]:.2g}/s{', ' + reason if reason else ''})")
        if senders:
            return link(
                None,
                f"The dropped packets to {workload} come from {', '.join(senders[:3])}: that "
                "sender is what tries to connect where no rule admits it — the change, if any, "
                "belongs on its side.",
                ev.id,
                about=ctx.ref("Namespace", ctx.ns, ctx.ns),
            )
    return None


ONE_OFF_AFTER = 3  # quiet lines after a single failure line that make it a one-off


def logs_explained(ctx: Ctx) -> list[Claim | None]:
    """Every warning or error line read, grouped by what it says, with why it is harmless
    here: the program says it coped (retries, serves cached data, rejected a caller's
    input) and the pod is Ready."""
    out: list[Claim | None] = []
    # a one-off pod that a policy drops by design is explained by what it did
    # (`fenced_explained`), not as a Ready pod serving
    exited = one_off_fenced(ctx)
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("previous") or ev.args.get("pod") in exited:
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
            else "the pod is Ready and serving, so none of them takes the service down: "
            "harmless to its availability"
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


# What a node's drain or upgrade logs once it is through (kubectl drain, node upgraders,
# managed node groups): "drained", "DrainComplete", "uncordoned", "UpgradeComplete".
_DRAIN_DONE = re.compile(r"drain\w* ?complete|\bdrained\b|uncordon|upgrade ?complete", re.I)


def node_drain_events(ctx: Ctx) -> tuple[list[p.Event], str | None]:
    """The nodes' events (read when budget refusals are in question): a drain's retries and
    its end are written about the node, not the pods."""
    return ctx.facts.listed("k8s.events", p.Event, **NODE_EVENTS_ARGS)


def _ago(ctx: Ctx, e: p.Event) -> str:
    at = _ts(str(e["last_seen"])) if e["last_seen"] else None
    return f" ({(ctx.now - at) / 60:.0f} min ago)" if at is not None else ""


def budgets_explained(ctx: Ctx) -> list[Claim | None]:
    """A PodDisruptionBudget over the asked-about pods whose refusals a drain logged: what
    the budget allows (maxUnavailable / minAvailable), what it allows now, and that the
    refusals stopped — a budget that let a drain evict one pod at a time did its job."""
    out: list[Claim | None] = []
    budgets, bid = ctx.facts.pdbs(ctx.ns)
    events, eid = ctx.facts.warnings(ctx.ns)
    node_events, nid = node_drain_events(ctx)
    refused = [
        e
        for e in [*events, *node_events]
        if BUDGET_REFUSED.search(str(e["message"]))
        and (
            e in events or f'"{ctx.ns}"' in str(e["message"]) or f" {ctx.ns} " in str(e["message"])
        )
    ]
    drained = {str(e["object"]["name"]) for e in refused if e in node_events}
    finished = sorted(
        (
            e
            for e in node_events
            if str(e["object"]["name"]) in drained
            and _DRAIN_DONE.search(f"{e['reason']} {e['message']}")
        ),
        key=lambda e: str(e["last_seen"]),
    )
    asked = BUDGET_REFUSED.search(ctx.goal.words)
    if not budgets or not (refused or asked):
        return out
    for b in budgets:
        mine = [x for x in ctx.focus_pods if budget_selects(b, x["labels"])]
        if not mine or b["allowed_disruptions"] < 1:
            continue  # a budget that allows nothing now is not "doing its job" here
        bound = (
            f"maxUnavailable {b['max_unavailable']}"
            if b["max_unavailable"] is not None
            else f"minAvailable {b['min_available']}"
        )
        last = max((str(e["last_seen"]) for e in refused if e["last_seen"]), default="")
        at = _ts(last) if last else None
        stopped = (
            f"; the last refusal was {(ctx.now - at) / 60:.0f} min ago, and the drain's retries "
            "stopped once the evicted pods' replacements were Ready"
            if at is not None and ctx.now - at > 120
            else ""
        ) + (
            "; then the node's own events say the drain finished: "
            + "; ".join(
                f'{e["reason"]} "{short(str(e["message"]), 90)}"' + _ago(ctx, e)
                for e in finished[-2:]
            )
            if finished
            else ""
        )
        out.append(
            link(
                None,
                f"PodDisruptionBudget {b['name']} ({bound}) covers {len(mine)} of the pods asked "
                f"about; it allows {b['allowed_disruptions']} disruption(s) now, with "
                f"{b['current_healthy']} of {b['expected_pods']} pods healthy (it needs "
                f"{b['desired_healthy']}). Its 'Cannot evict pod as it would violate the pod's "
                "disruption budget' answers are the budget doing its job: the eviction API "
                "refuses a second eviction until the first pod's replacement is Ready, so a "
                f"drain evicts one pod at a time, as {bound} intends{stopped}.",
                bid,
                eid if any(e in events for e in refused) else None,
                nid if drained else None,
                about=ctx.ref("PodDisruptionBudget", b["name"]),
            )
        )
    return out


# An admission warning a client printed, pasted into the question: a ValidatingAdmissionPolicy
# whose binding's validationActions hold Warn (the API server returns the failure as a warning
# header and admits the request; Deny would fail it, "... is forbidden: ValidatingAdmission
# Policy ... denied request"), and Pod Security admission in warn or audit mode ("would
# violate PodSecurity"; enforce says "violates PodSecurity" and rejects the pod).
_ADMISSION_WARNING = re.compile(
    r"Warning: Validation failed for ValidatingAdmissionPolicy '(?P<policy>[^']+)'"
    r"(?: with binding '(?P<binding>[^']+)')?"
    r"|Warning: would violate PodSecurity \"(?P<level>[^\"]+)\""
)


def admission_warning_explained(ctx: Ctx) -> list[Claim | None]:
    """A warning the question pastes from `kubectl apply`: what admitted the request with a
    warning (a policy in Warn/Audit mode, Pod Security in warn mode), that such a warning
    blocks nothing, and how the workload rolled out since."""
    m = _ADMISSION_WARNING.search(ctx.goal.words)
    if m is None:
        return []
    deployments, did = ctx.facts.deployments(ctx.ns)
    asked = [d for d in deployments if ctx.in_focus(ctx.ref("Deployment", d["name"]))]
    rolled = "; ".join(
        f"Deployment {d['name']} has rolled out since (revision {d['revision']}, "
        f"{d['updated']}/{d['replicas']} updated, {d['available']} available)"
        for d in asked[:2]
        if d["replicas"] is not None
        and d["updated"] >= d["replicas"]
        and d["available"] >= d["replicas"]
    )
    if m.group("policy"):
        what = (
            f"ValidatingAdmissionPolicy {m.group('policy')}"
            + (f" through binding {m.group('binding')}" if m.group("binding") else "")
            + " failed the request and the API server sent that back as a warning: the "
            "binding's validationActions hold Warn (and perhaps Audit), not Deny, so the "
            'request was admitted — a Deny would have failed it ("is forbidden: '
            'ValidatingAdmissionPolicy … denied request") and no pod would exist'
        )
    else:
        what = (
            f"Pod Security admission warns that the pods would violate the "
            f'"{m.group("level")}" level: the namespace has it in warn (or audit) mode, not '
            'enforce, so the pods are admitted — enforce would reject them ("violates '
            'PodSecurity")'
        )
    return [
        link(
            None,
            f"The warning in the question is an admission warning, not an error: {what}"
            + (
                f". {rolled}. Nothing is blocked now; meeting the rule before it is enforced is "
                "a follow-up."
                if rolled
                else ". Whether the workload has rolled out since is not known from what was read."
            ),
            did,
            about=ctx.ref("Namespace", ctx.ns, ctx.ns),
        )
    ]


# A setting that makes a server replace its own worker processes after so much work:
# gunicorn's --max-requests, uWSGI's --max-requests / --reload-on-rss, Celery's
# --max-tasks-per-child / --max-memory-per-child, PHP-FPM's pm.max_requests, Apache's
# MaxConnectionsPerChild, Puma's worker killer.
_RECYCLE_SETTING = re.compile(
    r"max[-_.]?requests|max[-_]?tasks[-_]per[-_]child|max[-_]?memory[-_]per[-_]child|"
    r"reload[-_]on[-_](?:rss|as)|MaxConnectionsPerChild|MaxRequestsPerChild|worker[-_]?killer|"
    r"max[-_]?jobs|recycle",
    re.I,
)
# A worker process of the server ending or starting, in its own log: "Worker exiting (pid: 12)",
# "Booting worker with pid: 13", "Autorestarting worker", "respawned worker 2", "child 42 exited"
_WORKER_TURNOVER = re.compile(
    r"\b(?:worker|child|process)\b[^\n]{0,30}\b(?:exit\w*|boot\w*|spawn\w*|respawn\w*|"
    r"recycl\w*|restart\w*|retir\w*)|\b(?:boot\w*|spawn\w*|respawn\w*|autorestart\w*|"
    r"recycl\w*|restart\w*)\b[^\n]{0,20}\b(?:worker|child|process)\b",
    re.I,
)


def recycling_explained(ctx: Ctx) -> list[Claim | None]:
    """Worker processes that end and start again inside a container that never restarted,
    when the server's own settings recycle them (gunicorn's --max-requests, Celery's
    --max-tasks-per-child): the turnover the log shows is that setting at work, by design."""
    out: list[Claim | None] = []
    seen: set[str] = set()
    for pod in ctx.focus_pods:
        for c in pod["containers"]:
            spec = c["spec"]
            key = f"{workload_of(pod)[1]}/{c['name']}"
            if spec is None or key in seen or c["restarts"]:
                continue
            words = [*spec["command"], *spec["args"]]
            settings = [
                w + (f" {words[i + 1]}" if "=" not in w and i + 1 < len(words) else "")
                for i, w in enumerate(words)
                if w.startswith("-") and _RECYCLE_SETTING.search(w)
            ] + [
                f"{e['name']}={e.get('value')}"
                for e in spec["env"]
                if _RECYCLE_SETTING.search(e["name"]) and e.get("value")
            ]
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            turnover = [ln.strip() for ln in log if _WORKER_TURNOVER.search(ln)]
            if not settings or not turnover or lid is None:
                continue
            seen.add(key)
            said = next((x for x in turnover if re.search(r"auto|recycl|max", x, re.I)), None)
            out.append(
                link(
                    None,
                    f"The worker turnover in {pod['name']}'s log ({len(turnover)} lines such as "
                    f'"{short(_BARE_STAMP.sub("", said or turnover[-1]).strip(), 100)}") is the '
                    f"server recycling its own worker processes, as its settings tell it to "
                    f"({', '.join(settings[:3])}): each worker is replaced after that much work, "
                    f"by design, while container {c['name']} itself has not restarted "
                    "(restartCount 0) and the pod stays Ready.",
                    lid,
                    ctx.facts.pods(ctx.ns)[1],
                    about=ctx.pod_ref(pod),
                )
            )
    return out


# How long a request took, as access logs write it: duration_ms=25002, "duration": 1.2 (s),
# responseTime=9 (ms), took 25002ms.
_TOOK = re.compile(
    r"(?:duration(?:_ms)?|elapsed(?:_ms)?|responseTime|latency(?:_ms)?|took)[\"']?\s*[:= ]\s*"
    r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>ms|s\b)?",
    re.I,
)
# A setting whose value is a wait: POLL_TIMEOUT_SECONDS, LONGPOLL_WAIT_MS, --hold-timeout=30s.
_WAIT_SETTING = re.compile(r"timeout|wait|poll|hold|linger|keepalive|keep_alive", re.I)
_PATH = re.compile(r"\bpath[\"']?\s*[:=]\s*[\"']?(?P<p>/[^\s;,\"']*)", re.I)


def _seconds_of(name: str, value: str) -> float | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s|m)?", value.strip())
    if m is None:
        return None
    n = float(m.group(1))
    unit = m.group(2) or ("ms" if re.search(r"_MS$|MILLIS", name, re.I) else "s")
    return n / 1000 if unit == "ms" else n * 60 if unit == "m" else n


def waits_explained(ctx: Ctx) -> list[Claim | None]:
    """Requests that last as long as a wait the container is configured with (a long poll's
    timeout) and end well: held open by design, so a latency quantile over them measures the
    wait, not slowness."""
    out: list[Claim | None] = []
    for pod in ctx.focus_pods[:2]:
        for c in pod["containers"]:
            waits = {
                n: secs
                for n, v in env_of(c).items()
                if _WAIT_SETTING.search(n) and (secs := _seconds_of(n, v))
            }
            if not waits:
                continue
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            for line in log:
                took = _TOOK.search(line)
                code = text.answered(line)
                if took is None or code is None or code >= 400:
                    continue
                n = float(took.group("n"))
                secs = n if took.group("unit") == "s" else n / 1000
                hit = next(
                    (k for k, w in waits.items() if w >= 1 and abs(secs - w) <= 0.05 * w), None
                )
                if hit is None:
                    continue
                where = _PATH.search(line)
                out.append(
                    link(
                        None,
                        f"Requests{' to ' + where.group('p') if where else ''} last {secs:.1f}s, "
                        f"the value of {hit} ({waits[hit]:g}s) that container {c['name']} is "
                        f"configured with, and end {code}: each is held open until that wait "
                        "ends, by design (a long poll), so a latency quantile over them measures "
                        "the wait, not slowness.",
                        lid,
                        ctx.facts.pods(ctx.ns)[1],
                        about=ctx.pod_ref(pod),
                    )
                )
                return out
            if held := _held_route(ctx, waits):
                out.append(held)
                return out
    return out


def _held_route(ctx: Ctx, waits: dict[str, float]) -> Claim | None:
    """The route whose own p99 is the configured wait (a histogram's interpolated quantile
    lands between the wait and the next bucket bound) while every other route answers in under
    a second: that route is held open by design and sets the overall p99 alone."""
    for ev in ctx.facts.evidence:
        if not ev.ok or not (ev.purpose or "").startswith("latency_p99_by:"):
            continue
        routes = []
        for series in ev.data or []:
            values = [v for v in series_values(series) if not math.isnan(v)]
            labels = {str(k): str(v) for k, v in (series.get("labels") or {}).items()}
            if values:
                routes.append((sorted(values)[len(values) // 2], labels))
        slow = [(v, lb) for v, lb in routes if v >= 1]
        if len(slow) != 1 or len(routes) < 2:
            continue
        level, labels = slow[0]
        hit = next((k for k, w in waits.items() if w >= 1 and 0.8 * w <= level <= 1.3 * w), None)
        if hit is None:
            continue
        route = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "one route"
        fastest = max(v for v, lb in routes if lb is not labels)
        return link(
            None,
            f"The p99 latency is set by one route alone: {route} has a p99 of {level:.1f}s, "
            f"the {hit} wait ({waits[hit]:g}s) the container is configured with (up to the "
            f"histogram's next bucket), while every other route's p99 is at most "
            f"{fastest:.2f}s: those requests are held open until the wait ends, by design (a "
            "long poll), so a p99 over all routes measures the wait, not slowness — the "
            "alert should leave that route out.",
            ev.id,
            ctx.facts.pods(ctx.ns)[1],
            about=ctx.ref("Namespace", ctx.ns, ctx.ns),
        )
    return None


# what a status a proxy writes means when it is not the service's own answer
_PROXY_STATUSES = {
    "499": "the client closed the request before the answer came (nginx's code for a "
    "cancelled request: an aborted type-ahead, a closed tab, a client-side timeout)",
}


def edge_explained(ctx: Ctx) -> list[Claim | None]:
    """What the proxy in front counts for the namespace, by status, now: the share of each
    status, and that none is a server error — a ratio that counts 4xx (a 499 the client
    caused) as errors measures the clients, not the service."""
    out: list[Claim | None] = []
    for ev in ctx.facts.evidence:
        if not ev.ok or not (ev.purpose or "").startswith("edge_statuses:"):
            continue
        counter = (ev.purpose or "").split(":", 1)[1]
        rates: dict[str, float] = {}
        for series in ev.data or []:
            values = series_values(series)
            labels = {str(k): str(v) for k, v in (series.get("labels") or {}).items()}
            status = next((labels[k] for k in STATUS_LABELS if labels.get(k)), None)
            if values and status:
                rates[status] = rates.get(status, 0.0) + values[-1]
        total = sum(rates.values())
        if total <= 0:
            continue
        server = sum(v for k, v in rates.items() if k.startswith("5")) / total
        if server > ERROR_RATIO_FLOOR:
            continue  # not healthy at the edge: a cause's to explain, not this
        shown = ", ".join(
            f"{k} {v / total:.1%}" for k, v in sorted(rates.items(), key=lambda kv: -kv[1])[:5]
        )
        said = (
            f"The proxy in front counts {total:.1f} requests/s for {ctx.ns} ({counter}, "
            f"exported_namespace {ctx.ns}), by status: {shown}; "
            + (
                f"{server:.2%} are server errors (5xx)"
                if server
                else "none is a server error (5xx)"
            )
        )
        client = {k: v for k, v in rates.items() if k.startswith("4")}
        if client:
            said += (
                f"; the {sum(client.values()) / total:.1%} answered 4xx are the clients' own "
                "doing, which an error-ratio rule counting 4xx with 5xx counts as errors"
            )
        for code, meaning in _PROXY_STATUSES.items():
            if code in rates:
                said += f"; {code} means {meaning}, not a failure of the service"
        out.append(link(None, sentence(said), ev.id, about=ctx.ref("Namespace", ctx.ns, ctx.ns)))
    return out


def alert_explained(ctx: Ctx) -> list[Claim | None]:
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
        why += _scheduled_work(ctx)
        quota, quota_id = _quota_measured(ctx, alert.labels)
        why += quota
        ids = unique(*ids, quota_id)
        classes = sorted(
            {str(x.get("priority_class")) for x in ctx.focus_pods if x.get("priority_class")}
        )
        if classes:
            why += (
                f"; the pods it is about run in PriorityClass {', '.join(classes)}, the rank "
                "their owners gave them"
            )
    return [link(None, sentence(why), *ids, about=ctx.ref("Alert", alert.name, ""))]


def _amount(resource: str, value: str) -> float | None:
    if "cpu" in resource:
        return quantities.cpu_cores(value)
    if "memory" in resource or "storage" in resource:
        return quantities.quantity_bytes(value)
    try:
        return float(value)
    except ValueError:
        return None


def _quota_measured(ctx: Ctx, labels: dict[str, str]) -> tuple[str, str | None]:
    """'; ResourceQuota q has requests.memory 480Mi used of 512Mi (94%) …': the quota an alert
    is about (kube-state-metrics' resourcequota and resource labels, as kube-prometheus's quota
    rules carry them) as it stands, and whether any pod was refused for it — a quota close to
    full that refuses nothing is a measure, not an outage."""
    name = labels.get("resourcequota")
    quotas, qid = ctx.facts.quotas(ctx.ns)
    quota = next((q for q in quotas if q["name"] == name), None)
    if quota is None:
        return "", None
    wanted = labels.get("resource")
    parts = []
    for res, hard in quota["hard"].items():
        if wanted and res != wanted:
            continue
        used = quota["used"].get(res, "0")
        h, u = _amount(res, hard), _amount(res, used)
        share = f" ({100 * u / h:.0f}%)" if h and u is not None else ""
        parts.append(f"{res} {used} used of {hard}{share}")
    if not parts:
        return "", None
    warnings, _ = ctx.facts.warnings(ctx.ns)
    refused = [e for e in warnings if "exceeded quota" in str(e["message"])]
    return (
        f"; ResourceQuota {quota['name']} has {', '.join(parts[:3])}: close to its limit is what "
        "the alert measures"
        + (
            f", and it has refused pods ({refused[0]['reason']}: "
            f"{short(str(refused[0]['message']), 120)})"
            if refused
            else ", and no pod has been refused for it (no FailedCreate or 'exceeded quota' "
            "event): every pod it is sized for runs"
        ),
        qid,
    )


INFORMATIONAL = {"info", "informational", "none", "low", "notice", "debug"}

_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
# a task's start as programs log it: "index rebuild started", "starting compaction"
_BEGINS = re.compile(r"\b(started|starting|begins?|beginning|kicked off|triggered)\b", re.I)
_WORDS_ONLY = re.compile(r"[^a-z ]+")
_BARE_STAMP = re.compile(_STAMP.pattern + r"|\b(?:time|ts|timestamp)=\s*")
RECENT_TASK_S = 900.0  # the latest run of a task this recent is under way as the alert fires


def _scheduled_work(ctx: Ctx) -> str:
    """'; it coincides with work the program runs on a schedule: …': a task whose start the
    log records at a steady interval (at least three times), the latest within RECENT_TASK_S
    — a load the program puts on itself by design (an hourly rebuild), which ends."""
    for pod in ctx.focus_pods[:2]:
        for c in pod["containers"][:1]:
            log, _ = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            runs: dict[str, list[float]] = {}
            latest_line: dict[str, str] = {}
            for ln in log:
                stamp = _STAMP.search(ln)
                body = _STAMP.sub("", ln)
                if stamp is None or not _BEGINS.search(body):
                    continue
                at = _ts(stamp.group(0))
                if at is not None:
                    key = " ".join(_WORDS_ONLY.sub(" ", body.lower()).split())[:80]
                    runs.setdefault(key, []).append(at)
                    latest_line[key] = ln
            for key, times in runs.items():
                gaps = [b - a for a, b in itertools.pairwise(sorted(times))]
                if len(times) < 3 or min(gaps) < 60 or max(gaps) > 1.2 * min(gaps):
                    continue
                latest = max(times)
                if not 0 <= ctx.now - latest <= RECENT_TASK_S:
                    continue
                line = latest_line[key]  # this task's own line, not another's
                period = sum(gaps) / len(gaps)
                limits = c["limits"].get("cpu")
                return (
                    f"; it coincides with work {workload_of(pod)[1]} runs on a schedule: its log "
                    f'records "{short(_BARE_STAMP.sub("", line).strip(), 120)}", which recurs '
                    f"{cron_words(period)} ({len(times)} times), the latest "
                    f"{(ctx.now - latest) / 60:.0f} min ago — a load it puts on itself by "
                    "design, which ends when the run does"
                    + (
                        ""
                        if limits
                        else "; the container has no CPU limit, so nothing throttles it"
                    )
                )
    return ""


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


def autoscalers_explained(ctx: Ctx) -> list[Claim | None]:
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
        able = next((c for c in h["conditions"] if c.get("type") == "AbleToScale"), None)
        active = next((c for c in h["conditions"] if c.get("type") == "ScalingActive"), None)
        if active is not None and active.get("reason") == "ScalingDisabled":
            out.append(_disabled(ctx, h, active, hid))
        elif able is not None and able.get("reason") == "ScaleDownStabilized":
            out.append(_stabilized(ctx, h, able, cpu, want, hid))
        elif h["current_replicas"] == h["min_replicas"] and pinned:
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


def _disabled(ctx: Ctx, h: p.HPA, active: p.Condition, hid: str | None) -> Claim | None:
    """An HPA whose target was scaled to 0 replicas: the controller stops scaling it by design
    (ScalingActive False, ScalingDisabled) until someone scales it up again; who parked it is
    what the target's annotations and events say."""
    target = str(h["target"]["name"] or "")
    dep = next((d for d in ctx.facts.deployments(ctx.ns)[0] if d["name"] == target), None)
    notes = dep.get("annotations") or {} if dep else {}
    noted = "; ".join(f"{k}={short(v, 80)}" for k, v in list(notes.items())[:4])
    events, eid = ctx.facts.events_about(ctx.ns, target)
    scaled = next((e for e in events if "scal" in str(e["reason"] or "").lower()), None)
    return link(
        None,
        f"HPA {h['name']} does not scale by design: ScalingActive False, ScalingDisabled "
        f'("{short(str(active.get("message") or ""), 120)}"): its target {target} was scaled to '
        "0 replicas, and the controller leaves a target at zero alone until it is scaled up"
        + (f"; {target} is annotated {noted}" if noted else "")
        + (
            f'; {scaled["source"] or "something"} scaled it: "{short(str(scaled["message"]), 80)}"'
            if scaled
            else ""
        )
        + ". It is parked on purpose, not broken: scale it up (or lift the downtime) when it "
        "should serve.",
        hid,
        ctx.facts.deployments(ctx.ns)[1] if dep else None,
        eid if scaled else None,
        about=ctx.ref("HorizontalPodAutoscaler", h["name"]),
    )


def _stabilized(
    ctx: Ctx,
    h: p.HPA,
    able: p.Condition,
    cpu: p.MetricValue | dict[str, int],
    want: p.MetricTarget | dict[str, int],
    hid: str | None,
) -> Claim | None:
    """An HPA above what its metric now asks for because the controller keeps the highest
    recommendation of its scale-down stabilization window (AbleToScale, ScaleDownStabilized):
    it scales down by itself once the window has passed since the peak."""
    window = h.get("scale_down_window_s")
    written = (
        f"behavior.scaleDown.stabilizationWindowSeconds {window} ({window / 60:g} minutes)"
        if isinstance(window, int)
        else "the default scale-down stabilization window of 300 seconds (5 minutes)"
    )
    return link(
        None,
        f"HPA {h['name']} holds {h['current_replicas']} replica(s) by design: AbleToScale "
        f'{able.get("status")} ScaleDownStabilized ("{short(str(able.get("message") or ""), 140)}'
        f'"): the controller keeps the highest recommendation of the last {written}, so after '
        f"a peak it scales down only when that window has passed, with no action needed; CPU "
        f"is {cpu.get('utilization', '?')}% against a {want.get('utilization', '?')}% target "
        "(a shorter window scales down sooner, at the risk of flapping).",
        hid,
        about=ctx.ref("HorizontalPodAutoscaler", h["name"]),
    )


def scaled_down_explained(ctx: Ctx) -> list[Claim | None]:
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


def traffic_explained(ctx: Ctx) -> list[Claim | None]:
    """Ready pods that no Service selects while a Service selects a sibling workload — the
    same labels but one value (slot=green, not blue): the Service routes to the sibling, so
    these pods get no requests by the Service's own selector (a blue/green standby, a
    canary between turns), not for a fault of theirs."""
    if ctx.whole_namespace:
        return []
    out: list[Claim | None] = []
    for ref in ctx.asked:
        if ref.kind not in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
            continue
        out += _routed_past(ctx, ref.kind, ref.name)
    return out


def _routed_past(ctx: Ctx, kind: str, name: str) -> list[Claim | None]:
    """The claims of `traffic_explained` for one workload the request names."""
    svcs, sid = ctx.facts.services(ctx.ns)
    mine = ctx.facts.pods_of(ctx.ns, kind, name)
    if not svcs or not mine:
        return []
    if any(selects(s["selector"], x["labels"]) for s in svcs for x in mine):
        return []
    pods, pid = ctx.facts.pods(ctx.ns)
    out: list[Claim | None] = []
    for svc in svcs:
        sel = svc["selector"]
        labels = mine[0]["labels"]
        if not sel or not set(sel) <= set(labels):
            continue
        differ = {k: v for k, v in sel.items() if labels[k] != v}
        chosen = [x for x in pods if selects(sel, x["labels"]) and x["ready"]]
        eps, eid = ctx.facts.endpoints(ctx.ns, svc["name"])
        if not differ or not chosen or (eps is not None and not eps["ready"]):
            continue
        sibling = sorted({workload_of(x)[1] for x in chosen})
        said = (
            f"No Service selects {name}'s pods: Service {svc['name']} selects "
            + ", ".join(f"{k}={v}" for k, v in sorted(differ.items()))
            + f" — the pods of {', '.join(sibling)} — where {name}'s pods carry "
            + ", ".join(f"{k}={labels[k]}" for k in sorted(differ))
            + f", so requests to {svc['name']} go to {', '.join(sibling)}"
            + (f" ({eps['ready']} ready endpoints)" if eps else "")
            + f" and {name} gets none by the Service's own selector: the layout of a "
            "blue/green or canary switch, where the idle side is the standby (the rollback "
            "target), not a fault of its pods; switch the selector back if it should serve"
        )
        out.append(link(None, sentence(said), sid, pid, eid, about=ctx.ref(kind, name)))
    return out


def jobs_explained(ctx: Ctx) -> list[Claim | None]:
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


def fenced_explained(ctx: Ctx) -> list[Claim | None]:
    """A one-off pod (kubectl run: no controller, a test or debug command) whose connection
    to the asked-about Service times out because the Service's ingress policy does not admit
    it: the policy doing what it was written to do, while the callers it admits are served —
    the reason a "no fault" answer owes for the failure the user saw."""
    _, nid = ctx.facts.network_policies(ctx.ns)
    pods_id = ctx.facts.pods(ctx.ns)[1]
    out: list[Claim | None] = []
    for (client, target, svc, blocker, lines, lid), _arrives in fenced_callers(ctx):
        if client["owner"] is not None:
            continue
        callee = ctx.workload_ref(target)
        said = (
            f"Pod {client['name']} (labels {labels_text(client['labels'])}, no controller: a "
            f'one-off pod) fails to reach Service {svc["name"]} ("{short(lines[-1], 120)}") '
            f"because NetworkPolicy {blocker['name']} admits ingress to {callee.name}'s pods "
            f"only from {peers_text(blocker)}, which it is not: the policy drops it by design, "
            f"and the callers it admits are served by {callee.name}'s ready pods. To test from "
            "inside, run the pod with labels the policy admits"
        )
        out.append(link(None, sentence(said), lid, nid, pods_id, about=callee))
    return out


# A clustered server's own count of the members it formed a cluster with: Hazelcast's
# "Members {size:3, ver:3} [", "cluster formed with 3 members", "3 nodes joined the cluster"
_MEMBERS = re.compile(
    r"\bMembers \{size:(?P<a>\d+)"
    r"|\bcluster (?:formed|joined|is (?:formed|up))\b[^\n]{0,40}?\b(?P<b>\d+) "
    r"(?:members|nodes|peers)\b"
    r"|\b(?P<c>\d+) (?:members|nodes|peers) (?:joined|in) (?:the )?cluster\b",
    re.I,
)


# What a taint says about who put it there and why, as each component documents its own:
# the cluster autoscaler's scale-down, Karpenter's disruption, the node lifecycle controller,
# the cloud node controller, a cordon.
TAINT_MEANINGS = (
    (
        "ToBeDeletedByClusterAutoscaler",
        "the cluster autoscaler is removing this node in a scale-down (an underutilized node: it "
        "taints and cordons it, evicts what runs there, then deletes it)",
    ),
    (
        "DeletionCandidateOfClusterAutoscaler",
        "the cluster autoscaler found this node unneeded, a candidate for scale-down",
    ),
    (
        "karpenter.sh/disrupted",
        "Karpenter is disrupting this node (consolidation, drift or expiry)",
    ),
    (
        "karpenter.sh/disruption",
        "Karpenter is disrupting this node (consolidation, drift or expiry)",
    ),
    ("node.kubernetes.io/unschedulable", "the node is cordoned"),
    ("node.kubernetes.io/out-of-service", "the node was marked out of service (shut down)"),
    (
        "node.cloudprovider.kubernetes.io/uninitialized",
        "the cloud controller has not initialised it",
    ),
    ("node.kubernetes.io/not-ready", "the node lifecycle controller: the node is not Ready"),
    ("node.kubernetes.io/unreachable", "the node lifecycle controller: its kubelet is unreachable"),
)


def nodes_explained(ctx: Ctx) -> list[Claim | None]:
    """A node the question names: whether it is cordoned, what its taints mean (who put them
    there and why), and what runs on it — a node being scaled down by design is explained as
    such, with where the namespace's pods run instead."""
    out: list[Claim | None] = []
    nodes, nid = ctx.facts.nodes()
    pods, pods_id = ctx.facts.pods(ctx.ns)
    for node in nodes:
        if str(Ref("Node", "", node["name"])) not in ctx.focus:
            continue
        taints = [
            f"{t.get('key')}{'=' + str(t['value']) if t.get('value') else ''}:{t.get('effect')}"
            + next((f" ({why})" for key, why in TAINT_MEANINGS if t.get("key") == key), "")
            for t in node["taints"]
        ]
        on, on_id = ctx.facts.pods_on_node(node["name"])  # an empty answer is not cited
        mine = [x for x in pods if x["node"] == node["name"]]
        ready = next((c for c in node["conditions"] if c["type"] == "Ready"), None)
        where = sorted({x["node"] for x in pods if x["node"] and x["node"] != node["name"]})
        out.append(
            link(
                None,
                f"Node {node['name']} is "
                + ("cordoned (SchedulingDisabled)" if node["unschedulable"] else "schedulable")
                + (f", Ready {ready['status']}" if ready else "")
                + (f", tainted {'; '.join(taints[:3])}" if taints else "")
                + (f"; {len(on)} pod(s) of the cluster run on it" if on else "")
                + (
                    f"; {len(mine)} pod(s) of {ctx.ns} run on it"
                    if mine
                    else f"; no pod of {ctx.ns} runs on it"
                )
                + (f", they run on {', '.join(where[:3])}" if where else ""),
                nid,
                on_id,
                pods_id,
                about=Ref("Node", "", node["name"]),
            )
        )
    return out


def members_explained(ctx: Ctx) -> list[Claim | None]:
    """For a workload whose pods form a cluster of their own (an embedded cache, a
    consensus group): the members its log last counted, against its ready pods — a
    cluster with every pod in it has formed, whatever its discovery warnings say."""
    out: list[Claim | None] = []
    seen: set[tuple[str, str]] = set()
    for pod in ctx.focus_pods:
        workload = workload_of(pod)
        if workload in seen:
            continue
        for c in pod["containers"][:1]:
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            counted = [
                int(next(g for g in m.groups() if g)) for ln in log if (m := _MEMBERS.search(ln))
            ]
            if not counted or lid is None:
                continue
            seen.add(workload)
            ready = sum(1 for x in ctx.focus_pods if workload_of(x) == workload and x["ready"])
            n = counted[-1]
            said = (
                f"{workload[1]}'s pods have formed their cluster: the log of {pod['name']} "
                f"last counts {n} members, and {ready} of its pods are ready — every pod is a "
                "member, so the warnings beside it did not keep it from clustering"
                if n == ready
                else f"the log of {pod['name']} last counts {n} cluster members while "
                f"{ready} pods of {workload[1]} are ready"
            )
            out.append(link(None, sentence(said), lid, about=ctx.workload_ref(pod)))
    return out
