"""Storage: a claim that never binds (no such StorageClass, no provisioner), and a volume that
is full (the kubelet's volume stats, or the program's ENOSPC)."""

from __future__ import annotations

import itertools
import re

from tools.read import payloads as p
from triage.agent.planners.rules import quantities
from triage.agent.planners.rules.analyzers.access import refusal
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import series_values
from triage.core.causes import CauseClass
from triage.core.models import Fact, LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _no_volume_fits(ctx: Ctx, claim: p.PVC) -> tuple[str, str | None] | None:
    """Why the PersistentVolumes meant for `claim` cannot bind it, as the binder matches them:
    the same storageClassName, not bound to another claim, capacity at least the request,
    every access mode asked for. A volume reserved for the claim (claimRef) is named first.
    None when no volume was read or none is meant for it (nothing to compare)."""
    volumes, vid = ctx.facts.persistent_volumes()
    if vid is None:
        return None
    mine = f"{ctx.ns}/{claim['name']}"
    sc = claim["storage_class"] or ""
    meant = [v for v in volumes if v["claim"] == mine] or [
        v
        for v in volumes
        if (v["storage_class"] or "") == sc
        and (
            (v["phase"] == "Available" and not v["claim"])
            or v["phase"] == "Released"  # kept (Retain) after its claim went: not bindable
        )
    ]
    if not meant:
        return None
    want = quantities.quantity_bytes(claim["requested"])
    reasons = []
    for v in meant[:3]:
        why = []
        have = quantities.quantity_bytes(v["capacity"])
        if want is not None and have is not None and have < want:
            why.append(
                f"its capacity {v['capacity']} is less than the {claim['requested']} the "
                "claim requests"
            )
        lacking = [m for m in claim["access_modes"] if m not in v["access_modes"]]
        if lacking:
            why.append(f"it lacks access mode {', '.join(lacking)}")
        if v["phase"] == "Released":
            why.append(
                f"it is Released: its claimRef still holds the claim it was bound to before "
                f"({v['claim'] or 'unknown'}, deleted since, even if a new claim has its name), "
                "and the binder never binds a Released volume until that claimRef is cleared"
            )
        if (v["storage_class"] or "") != sc:
            why.append(
                f"its storageClassName {v['storage_class'] or chr(34) * 2} differs from the "
                f"claim's {sc or chr(34) * 2}"
            )
        if why:
            reserved = (
                " (its claimRef reserves it for this claim)"
                if v["claim"] == mine and v["phase"] != "Released"
                else ""
            )
            reasons.append(f"PersistentVolume {v['name']}{reserved} cannot bind: {'; '.join(why)}")
    if not reasons:
        return None
    sized = any("capacity" in r or "access mode" in r for r in reasons)
    return (
        f"claim {claim['name']} stays unbound: "
        + ". ".join(reasons)
        + (
            " — the binder never binds a volume smaller than the request or without the modes "
            "it asks for"
            if sized
            else ""
        ),
        vid,
    )


def waits_for_consumer(sc: p.StorageClass | None) -> bool:
    """The class binds a claim only once a pod that mounts it is scheduled."""
    return sc is not None and sc.get("binding_mode") == "WaitForFirstConsumer"


def pvc_pending(ctx: Ctx) -> list[Finding]:
    pvcs, pid = ctx.facts.pvcs(ctx.ns)
    pending = [c for c in pvcs if c["phase"] == "Pending"]
    if not pending:
        return []
    classes, sid = ctx.facts.storage_classes()
    names = {c["name"]: c for c in classes}
    warnings, eid = ctx.facts.warnings(ctx.ns)
    out: list[Finding] = []
    for claim in pending[:2]:
        about, aid = ctx.facts.events_about(ctx.ns, claim["name"])
        events = [*about, *warnings]
        eid = aid or eid
        prov = next(
            (
                e
                for e in events
                if e["object"]["name"] == claim["name"]
                and e["reason"] in ("ProvisioningFailed", "ExternalProvisioning")
            ),
            None,
        )
        sc = claim["storage_class"]
        advice = "Use an existing StorageClass or install the provisioner it needs."
        users = [x for x in ctx.facts.pods(ctx.ns)[0] if claim["name"] in x["claims"]]
        if not users and waits_for_consumer(names.get(claim["storage_class"] or "")):
            continue  # Pending by design until its first pod: reasons.claims_explained
        ref = (
            ctx.workload_ref(users[0]) if users else ctx.ref("PersistentVolumeClaim", claim["name"])
        )
        if sc and sid and sc not in names:
            cause = (
                f"StorageClass {sc} named by claim {claim['name']} does not exist (existing: "
                f"{', '.join(names) or 'none'})"
            )
            facts: tuple[Fact, ...] = (fact("k8s.storage_classes", f"[name={sc}]", "absent", None),)
        elif prov is not None:
            said = str(prov["message"])
            # a cloud API refusing the provisioner's identity: who may not do what, and the
            # API's code, which the clipped message would cut
            denied = refusal(said)
            code = re.search(
                r"\b(UnauthorizedOperation|AccessDenied\w*|Forbidden|PERMISSION_DENIED|AuthorizationFailed)\b",
                said,
            )
            cause = (
                f"claim {claim['name']} (accessModes {', '.join(claim['access_modes']) or 'none'})"
                f" cannot be provisioned by StorageClass {sc}: "
                f"{short(said, 200)}"
                + (
                    "; the cloud refuses the provisioner's identity"
                    + (f" ({code.group(1)})" if code else "")
                    + f": {denied} — the CSI controller calls the cloud as that identity, so "
                    "it needs the permission (or its own role on its ServiceAccount)"
                    if denied
                    else ""
                )
            )
            facts = ()
        elif (unfit := _no_volume_fits(ctx, claim)) is not None:
            cause, vid = unfit
            if sc == "":  # the class it asks for is why only such volumes are weighed
                cause = _classless(claim, classes) + "; " + cause[0].lower() + cause[1:]
            facts = ()
            advice = (
                "Give the volume what the claim asks for (capacity, access modes), or ask "
                "for what the volume has."
            )
            sid = vid or sid
        elif sc == "":
            cause = _classless(claim, classes) + ", and none is there"
            facts = ()
            advice = (
                'Drop storageClassName "" (a chart\'s storageClass "-" writes it) so the '
                "default class provisions the volume, or create a matching volume."
            )
        else:
            cause = (
                f"claim {claim['name']} (StorageClass {sc}) has no volume and nothing "
                f"provisions one"
            )
            facts = ()
        known = names.get(sc or "")
        if known is not None and known.get("provisioner"):
            cause += (
                f"; StorageClass {sc}'s provisioner is {known['provisioner']}: no volume has "
                "come from it, so its CSI driver (external provisioner) is not running or "
                "not installed"
                if prov is None or prov["reason"] == "ExternalProvisioning"
                else f" (provisioner {known['provisioner']})"
            )
        out.append(
            Finding(
                cls=CauseClass.PVC_PENDING,
                cause=cause,
                summary=f"PVC {claim['name']} stays Pending"
                + (f"; {ref.name}'s pods cannot start" if users else ""),
                impact=(
                    f"Pods waiting for the claim: {', '.join(u['name'] for u in users)}."
                    if users
                    else "No volume."
                ),
                chain=chain(
                    link(
                        S,
                        f"PersistentVolumeClaim {claim['name']} is Pending (storageClassName {sc})"
                        + (f"; pod {users[0]['name']} waits for it." if users else "."),
                        pid,
                        about=ctx.ref("PersistentVolumeClaim", claim["name"]),
                        facts=(
                            fact(
                                "k8s.pvcs",
                                f"[name={claim['name']}].phase",
                                "eq",
                                "Pending",
                                namespace=ctx.ns,
                            ),
                        ),
                    ),
                    link(
                        M,
                        f"Event {prov['reason']}: {short(str(prov['message']))}",
                        eid,
                        about=ctx.ref("PersistentVolumeClaim", claim["name"]),
                    )
                    if prov
                    else None,
                    link(
                        C,
                        cause[0].upper() + cause[1:] + ".",
                        sid,
                        pid,
                        about=ctx.ref("PersistentVolumeClaim", claim["name"]),
                        facts=facts,
                    ),
                ),
                explains={str(ref), str(ctx.ref("PersistentVolumeClaim", claim["name"]))},
                follow_ups=[advice],
            )
        )
    return out


def _classless(claim: p.PVC, classes: list[p.StorageClass]) -> str:
    """What storageClassName "" means (a chart's storageClass "-" writes it)."""
    default = next((c["name"] for c in classes if c["default"]), None)
    return (
        f'claim {claim["name"]} sets storageClassName "" (an empty class, not an unset one), '
        "which turns dynamic provisioning off"
        + (
            f" (the default StorageClass {default} would provision it were the field left out)"
            if default
            else ""
        )
        + ": it binds only to an existing PersistentVolume that has no class either"
    )


_LIVENESS_WORDS = ("active", "up", "ready", "connected", "running", "healthy")


def _moved_with(ctx: Ctx) -> tuple[list[str], str | None]:
    """The application's series that grew over the window, and its liveness gauges that
    read 0 (a replication slot, a consumer, a replica no longer active): what holds on."""
    said: list[str] = []
    for ev in ctx.facts.purpose("comoving"):
        for series in ev.data or []:
            labels = dict(series.get("labels") or {})
            name = str(labels.pop("__name__", "?"))
            labels.pop("namespace", None)
            values = series_values(series)
            if not values:
                continue
            shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())[:3])
            label = f"{name}{{{shown}}}" if shown else name
            falls = sum(1 for a, b in itertools.pairwise(values) if b < a)
            if values[0] > 0 and values[-1] > values[0] * 1.05 and falls <= len(values) // 10:
                said.append(f"{label} grew {_size(values[0], name)} → {_size(values[-1], name)}")
            elif max(values) == 0 and any(w in name for w in _LIVENESS_WORDS):
                said.append(f"{label} is 0 for the whole window (inactive)")
        if said:
            return said[:3], ev.id
    return [], None


def _size(n: float, name: str = "bytes") -> str:
    if n >= 1024 and "bytes" in name:
        return quantities.human(n)
    return f"{n:,.0f}" if n >= 1e5 else f"{n:g}"


# How a program says its disk is full, or that it stopped writing because it nearly is
# (Elasticsearch's flood-stage watermark marks indices read-only; a kernel says ENOSPC).
_DISK_WORDS = re.compile(
    r"watermark|read[-_ ]only[-_ ]allow[-_ ]delete|ENOSPC|no space left|disk (is )?full|"
    r"disk usage exceeded|out of disk|not enough (disk |free )?space|NOT_ENOUGH_SPACE",
    re.I,
)


def _disk_said(ctx: Ctx, pods: list[p.Pod]) -> tuple[str, str, p.Pod] | None:
    """(line, evidence id, pod): the last line of these pods' logs that speaks of the disk."""
    names = {x["name"]: x for x in pods}
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("namespace") != ctx.ns or ev.args.get("pod") not in names:
            continue
        hits = [str(x) for x in ev.data or [] if _DISK_WORDS.search(str(x))]
        if hits:
            return hits[-1], ev.id, names[str(ev.args.get("pod"))]
    return None


def _only_grows(values: list[float]) -> bool:
    return (
        len(values) >= 3
        and values[-1] > values[0]
        and all(b >= a for a, b in itertools.pairwise(values))
    )


def _growth(values: list[float]) -> str:
    """How it filled: from what share at the start of the window."""
    if len(values) < 2 or values[0] >= values[-1] - 0.05:
        return ""
    return f" (it was {values[0]:.0%} at the start of the window and grew steadily)"


def _usage(ctx: Ctx, purpose: str) -> dict[str, float]:
    """The last usage share of each claim, by the kubelet's volume stats (bytes or inodes)."""
    out: dict[str, float] = {}
    for ev in ctx.facts.purpose(purpose):
        for series in ev.data or []:
            values = series_values(series)
            if values:
                out[str((series.get("labels") or {}).get("persistentvolumeclaim", "?"))] = values[
                    -1
                ]
    return out


def volume_full(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    by_bytes = _usage(ctx, "volume_usage")
    stats = [(ev, "bytes") for ev in ctx.facts.purpose("volume_usage")]
    stats += [(ev, "inodes") for ev in ctx.facts.purpose("inode_usage")]
    for ev, unit in stats:
        for series in ev.data or []:
            values = series_values(series)
            if not values or values[-1] < 0.95:
                continue
            labels = series.get("labels") or {}
            if labels.get("namespace") not in (None, ctx.ns):
                continue  # a dependency's volume: analysed with the dependency
            claim = labels.get("persistentvolumeclaim", "?")
            if unit == "inodes" and by_bytes.get(claim, 0) >= 0.95:
                continue  # full by its bytes too: said once, by them
            inodes = (
                f" of its inodes (files), while only {by_bytes[claim]:.0%} of its bytes are: "
                "ENOSPC ('No space left on device') comes when either runs out, so a great "
                "many small files fill it"
                + (
                    " — the file count only grew in the window: its files are never deleted"
                    if _only_grows(values)
                    else ""
                )
                if unit == "inodes" and claim in by_bytes
                else " of its inodes (files)"
                if unit == "inodes"
                else ""
            )
            users = [x for x in ctx.facts.pods(ctx.ns)[0] if claim in x["claims"]]
            ref = ctx.workload_ref(users[0]) if users else ctx.ref("PersistentVolumeClaim", claim)
            claims, cid = ctx.facts.pvcs(ctx.ns)
            pvc = next((c for c in claims if c["name"] == claim), None)
            size = f" of {pvc['requested']}" if pvc and pvc["requested"] else ""
            grew = _growth(values)
            with_it, wid = _moved_with(ctx)
            # what the full disk does, in the words of its own users and of those who write
            # to them (a log shipper refused by a store that went read-only)
            own = _disk_said(ctx, users)
            others = [x for x in ctx.facts.pods(ctx.ns)[0] if x not in users]
            told = _disk_said(ctx, others)
            out.append(
                Finding(
                    cls=CauseClass.VOLUME_FULL,
                    cause=f"volume {claim}{size} is {values[-1]:.0%} full"
                    + (inodes or grew)
                    + (f"; {ref.name} says: {short(own[0], 200)}" if own else ""),
                    summary=f"Volume {claim} is full",
                    impact="Writes to it fail (ENOSPC).",
                    chain=chain(
                        link(
                            S,
                            f"{ctx.workload_ref(told[2]).name}'s log: {short(told[0], 240)}",
                            told[1],
                            about=ctx.workload_ref(told[2]),
                        )
                        if told
                        else None,
                        link(
                            S if told is None else M,
                            f"{ref.name}'s log: {short(own[0], 240)}",
                            own[1],
                            about=ref,
                        )
                        if own
                        else None,
                        link(
                            M if with_it else C,
                            f"kubelet volume stats: PersistentVolumeClaim {claim}{size} is "
                            f"{values[-1]:.0%} used{inodes or grew}.",
                            ev.id,
                            cid if pvc else None,
                            about=ctx.ref("PersistentVolumeClaim", claim),
                        ),
                        link(
                            C,
                            "What filled it, in the application's own metrics: "
                            + "; ".join(with_it)
                            + ".",
                            wid,
                            about=ctx.ref("PersistentVolumeClaim", claim),
                        )
                        if with_it
                        else None,
                    ),
                    strength=Strength.STATED,
                    explains={
                        str(ref),
                        str(ctx.ref("PersistentVolumeClaim", claim)),
                        *(str(ctx.pod_ref(x)) for x in users),
                    },
                    follow_ups=[
                        f"Delete the files that fill {claim} and make whatever writes them clean "
                        "up (growing the volume adds inodes only on some filesystems)."
                        if unit == "inodes"
                        else f"Grow PVC {claim} or clean what fills it."
                    ],
                )
            )
    return out


# The kubelet's words when a pod outgrows its own local-storage limit (its eviction manager's
# per-pod checks): the node is not short of disk, the pod's own bound is met.
_OWN_LIMIT = re.compile(
    r'Usage of EmptyDir volume "(?P<volume>[^"]+)" exceeds the limit "(?P<vlimit>[^"]+)"'
    r'|Container (?P<container>\S+) exceeded its local ephemeral storage limit "(?P<climit>[^"]+)"'
    r"|Pod ephemeral local storage usage exceeds the total limit of containers (?P<plimit>\S+?)"
    r"\.?(?:\s|$)"
)
_SIZE = re.compile(r"(?<![\w.])(?P<n>\d+(?:\.\d+)?) ?(?P<u>[KMGT]i?B?)(?![\w])")


def _sizes(line: str) -> float:
    """The largest size a log line states, in bytes (0 when it states none)."""
    best = 0.0
    for m in _SIZE.finditer(line):
        unit = m.group("u").removesuffix("B")  # 5.3 GB -> 5.3G, 1.1 GiB -> 1.1Gi
        best = max(best, quantities.quantity_bytes(f"{m.group('n')}{unit}") or 0.0)
    return best


def _writes_to(ctx: Ctx, pod: p.Pod, paths: dict[str, str]) -> tuple[list[str], str | None]:
    """What the pod's own log says it put on the paths (`paths`: container -> mount path; ""
    for anywhere): the lines naming them that state a size, largest first."""
    said: list[tuple[float, str]] = []
    lid = None
    for container, path in paths.items():
        for previous in (False, True):
            log, eid = ctx.facts.logs(ctx.ns, pod["name"], container, previous)
            for line in log:
                size = _sizes(line)
                if size and (not path or path in line):
                    said.append((size, line))
                    lid = lid or eid
    said.sort(key=lambda x: -x[0])
    return list(dict.fromkeys(line for _, line in said))[:2], lid


def own_storage_limit(ctx: Ctx) -> list[Finding]:
    """Pods the kubelet evicted for outgrowing a local-storage bound of their own — an
    emptyDir's sizeLimit, a container's ephemeral-storage limit, their sum over the pod —
    with what the pod's log says it wrote there. The node's disk is not the cause: that
    eviction is told 'The node was low on resource' (the nodes analyzer's)."""
    out: list[Finding] = []
    seen: set[str] = set()
    pods_id = ctx.facts.pods(ctx.ns)[1]
    for pod in ctx.focus_pods:
        m = _OWN_LIMIT.search(str(pod["message"] or ""))
        ref = ctx.workload_ref(pod)
        if m is None or pod["reason"] != "Evicted" or str(ref) in seen:
            continue
        seen.add(str(ref))
        evicted = [
            x for x in ctx.focus_pods if ctx.workload_ref(x) == ref and x["reason"] == "Evicted"
        ]
        mounts = {
            c["name"]: path
            for c in pod["containers"]
            for mount in (c["spec"]["mounts"] if c["spec"] else [])
            for vol, _, path in [mount.partition(" -> ")]
            if m.group("volume") and vol == m.group("volume")
        }
        if m.group("volume"):
            volume = next((v for v in pod["volumes"] if v.get("name") == m.group("volume")), None)
            where = ", ".join(f"{c} at {path}" for c, path in mounts.items())
            bound = (
                f"emptyDir volume {m.group('volume')}'s sizeLimit {m.group('vlimit')}"
                + (f" (mounted by {where})" if where else "")
                + (f", medium {volume['medium']}" if volume and volume.get("medium") else "")
            )
            paths = mounts or {c["name"]: "" for c in pod["containers"]}
        elif m.group("container"):
            bound = (
                f"container {m.group('container')}'s ephemeral-storage limit "
                f"{m.group('climit')} (its writable layer, logs and disk-backed emptyDirs)"
            )
            paths = {m.group("container"): ""}
        else:
            bound = (
                f"the pod's ephemeral-storage limit {m.group('plimit')} (its containers' "
                "limits summed)"
            )
            paths = {c["name"]: "" for c in pod["containers"]}
        wrote, lid = _writes_to(ctx, pod, paths)
        node_ok = _node_has_no_disk_pressure(ctx, pod)
        cause = (
            f"{ref.name} writes more than {bound} allows, so the kubelet evicts its pods"
            + (f"; its log: {'; '.join(short(x, 160) for x in wrote)}" if wrote else "")
            + (
                f" (node {pod['node']} is not short of disk: the bound is the pod's own)"
                if node_ok
                else ""
            )
        )
        said = short(str(pod["message"]), 200)
        out.append(
            Finding(
                cls=CauseClass.VOLUME_FULL,
                cause=cause,
                summary=f"{ref.name}'s pods are evicted for outgrowing {bound.split(' (')[0]}",
                impact=f"{ref.name}'s pods are killed before they finish.",
                chain=chain(
                    link(
                        S,
                        f"{len(evicted)} pod(s) of {ref.name} Evicted (e.g. {pod['name']}).",
                        pods_id,
                        about=ctx.pod_ref(pod),
                    ),
                    link(
                        M,
                        f"The kubelet says: {said}",
                        pods_id,
                        about=ctx.pod_ref(pod),
                        facts=(
                            fact(
                                "k8s.pods",
                                f"[name={pod['name']}].message",
                                "contains",
                                m.group(0).strip()[:120],
                                namespace=ctx.ns,
                            ),
                        ),
                    ),
                    link(C, cause[0].upper() + cause[1:] + ".", pods_id, lid, about=ref),
                ),
                explains={str(ref), *(str(ctx.pod_ref(x)) for x in evicted)},
                follow_ups=[
                    f"Raise {bound.split(' (')[0]} to what {ref.name} writes, or make it write "
                    "less there (or to a PersistentVolumeClaim sized for it)."
                ],
            )
        )
    return out


def _node_has_no_disk_pressure(ctx: Ctx, pod: p.Pod) -> bool:
    node = next((n for n in ctx.facts.nodes()[0] if n["name"] == pod["node"]), None)
    return node is not None and not any(
        c.get("type") == "DiskPressure" and c.get("status") == "True" for c in node["conditions"]
    )
