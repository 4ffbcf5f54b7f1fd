"""Nodes: a node that is NotReady takes its pods with it; a node under memory, disk or PID
pressure evicts pods and refuses new ones (the scheduler's taint says so)."""

from __future__ import annotations

import re
from collections.abc import Mapping

from tools.read import payloads as p
from triage.agent.planners.rules.chain import Finding, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.reads import (
    NO_NETWORK,
    NODE_EVENTS_NAMESPACE,
    eligible,
    unhealthy,
    usable,
)
from triage.core.causes import CauseClass
from triage.core.models import LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _heaviest(ctx: Ctx, node: p.Node) -> str:
    """Who holds the node's memory: its pods that were read, unlimited ones first."""
    on = [x for x in ctx.facts.pods(ctx.ns)[0] if x["node"] == node["name"]]
    unlimited = [
        x["name"] for x in on if any(not c["limits"].get("memory") for c in x["containers"])
    ]
    # an emptyDir with medium Memory is a tmpfs: what is written there is RAM, and without a
    # sizeLimit nothing bounds it but the node
    tmpfs = [
        f"{x['name']} (emptyDir {v.get('name')}, medium: Memory, no sizeLimit)"
        for x in on
        for v in x["volumes"]
        if v.get("kind") == "emptyDir" and v.get("medium") == "Memory" and not v.get("size_limit")
    ]
    out = ""
    if tmpfs:
        out += (
            "; pods there write to memory-backed (tmpfs) volumes, RAM the node counts: "
            + ", ".join(tmpfs[:3])
        )
    if unlimited:
        out += f"; pods there without a memory limit: {', '.join(unlimited[:3])}"
    return out


# A program that cannot start a process or a thread: what running out of PIDs looks like
_NO_PIDS = re.compile(
    r"\bEAGAIN\b|Resource temporarily unavailable|pthread_create|fork: (retry|Resource)|"
    r"can't start new thread|unable to create (new )?native thread|\b(zombie|defunct)\b",
    re.I,
)


_NO_SPACE = re.compile(r"no space left on device|ENOSPC|disk quota exceeded", re.I)
_WRITTEN = re.compile(r"(?:write|open|mkdir|create)\s+(?P<path>/[\w./-]+)")


def _on_node(ctx: Ctx, node: p.Node) -> set[tuple[str, str]]:
    """(namespace, name) of the pods known to run on the node: this namespace's, and those
    its listing (every namespace) gave."""
    here = {(ctx.ns, x["name"]) for x in ctx.facts.pods(ctx.ns)[0] if x["node"] == node["name"]}
    return here | {(x["namespace"], x["name"]) for x in ctx.facts.pods_on_node(node["name"])[0]}


def _named(ctx: Ctx, args: Mapping[str, object]) -> str:
    """A log's pod, with its namespace when that is not the one asked about."""
    ns, pod = args.get("namespace"), args.get("pod")
    return f"{pod}" if ns == ctx.ns else f"{ns}/{pod}"


def _disk_fillers(ctx: Ctx, node: p.Node) -> tuple[str, str | None]:
    """What the pods on a node under DiskPressure say when a write fails for want of space:
    the pod and the path it writes, where the node's disk goes."""
    on = _on_node(ctx, node)
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or (ev.args.get("namespace"), ev.args.get("pod")) not in on:
            continue
        line = next((str(x) for x in reversed(ev.data or []) if _NO_SPACE.search(str(x))), None)
        if line is None:
            continue
        path = _WRITTEN.search(line)
        where = path.group("path") if path else ""
        top = "/".join(where.split("/")[:4]) if where else ""
        return (
            f"; pod {_named(ctx, ev.args)} on it runs out of space writing"
            + (f" under {top}" if top else "")
            + f': "{short(line, 200)}" — what it keeps on the node\'s disk there fills it',
            ev.id,
        )
    return "", None


def _pid_holders(ctx: Ctx, node: p.Node) -> tuple[str, str | None]:
    """What the pods on a node under PIDPressure say when they cannot start a process or a
    thread: the pod that spawns them is the likeliest holder of the PIDs."""
    on = _on_node(ctx, node)
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or (ev.args.get("namespace"), ev.args.get("pod")) not in on:
            continue
        found = next((m for x in reversed(ev.data or []) if (m := _NO_PIDS.search(str(x)))), None)
        if found:
            line = found.string
            hit = line[max(0, found.start() - 100) : found.end() + 60]
            hit = ("…" if found.start() > 100 else "") + hit
            return (
                f"; pod {_named(ctx, ev.args)} on it cannot start processes: "
                f'"{hit}" — a process that spawns children and never reaps them '
                "(no init process as PID 1) fills the node's PID table with zombies",
                ev.id,
            )
    return "", None


def _kubelet_says(ctx: Ctx, node: p.Node) -> tuple[str, str | None]:
    """The node's own warnings, one per reason ('FreeDiskSpaceFailed: … only found 0 bytes
    eligible to free'): why the kubelet cannot recover by itself."""
    events, eid = ctx.facts.listed(
        "k8s.events",
        p.Event,
        namespace=NODE_EVENTS_NAMESPACE,
        object_name=node["name"],
        object_kind="Node",
    )
    said: dict[str, str] = {}
    for e in reversed(events):
        if e["type"] == "Warning" and e["reason"] and e["message"]:
            said.setdefault(str(e["reason"]), short(str(e["message"]), 160))
    if not said:
        return "", None
    parts = [f"{reason}: {message}" for reason, message in list(said.items())[:2]]
    return f"; the kubelet there reports {'; '.join(parts)}", eid


_TOLERATION = re.compile(r"\{([^{}]*)\}")
_FIELD = re.compile(r"(\w+): ([^,{}]*)")


def tolerates(tolerations: str, taint: p.Taint) -> bool:
    """Whether a template's tolerations (as its settings flatten them: '{effect: NoSchedule,
    key: dedicated, operator: Equal, value: gpu}, {operator: Exists}') tolerate the taint."""
    for item in _TOLERATION.findall(tolerations):
        t = {k: v.strip() for k, v in _FIELD.findall(item)}
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if not t.get("key"):
            if t.get("operator") == "Exists":
                return True
            continue
        if t["key"] != taint.get("key"):
            continue
        if t.get("operator") == "Exists" or t.get("value", "") == str(taint.get("value") or ""):
            return True
    return False


def _network_kept_off(ctx: Ctx, node: p.Node) -> tuple[str, str | None]:
    """A node whose network plugin never started: the cluster's DaemonSets that the node's own
    taints keep off it (the CNI agent is one of them, so the node never becomes Ready)."""
    cond = unhealthy(node)
    if cond is None or not NO_NETWORK.search(str(cond.get("message") or "")):
        return "", None
    daemons, did = ctx.facts.find_daemonsets()
    taints = [
        t
        for t in node["taints"]
        if t.get("effect") in ("NoSchedule", "NoExecute")
        and not str(t.get("key", "")).startswith("node.kubernetes.io/")
    ]
    kept = []
    for ds in daemons:
        selector = ds["template"]["node_selector"]
        if not ds["desired"] or any(node["labels"].get(k) != v for k, v in selector.items()):
            continue  # not meant for this node, or for none
        tolerations = ds["template"]["settings"].get("tolerations", "")
        refused = [t for t in taints if not tolerates(tolerations, t)]
        if refused:
            t = refused[0]
            kept.append(
                f"DaemonSet {ds['namespace']}/{ds['name']} does not tolerate its taint "
                f"{t.get('key')}={t.get('value') or ''}:{t.get('effect')}"
            )
    if not kept:
        return "", None
    return (
        f"; {'; '.join(kept[:3])}, so no pod of it runs on {node['name']}: the network plugin "
        "(CNI) such a DaemonSet installs never starts there",
        did,
    )


def nodes(ctx: Ctx) -> list[Finding]:
    """A node that is NotReady or under pressure, when it holds or would hold what was asked
    about: pods running (or evicted) there, or Pending pods it is the only fit for."""
    all_nodes, nid = ctx.facts.nodes()
    if not all_nodes:
        return []
    pods_id = ctx.facts.pods(ctx.ns)[1]
    out: list[Finding] = []
    for node in all_nodes:
        cond = unhealthy(node)
        if cond is None:
            continue
        on = [x for x in ctx.focus_pods if x["node"] == node["name"]]
        waiting = [
            x
            for x in ctx.focus_pods
            if x["phase"] == "Pending"
            and not x["node"]
            and (fit := usable(ctx, x, all_nodes))
            and all(unhealthy(n) is not None for n in fit)
            and node in fit
        ]
        if not on and not waiting:
            continue
        kind = str(cond.get("type"))
        not_ready = kind == "Ready"
        state = (
            ("NotReady" if cond.get("status") == "False" else "unreachable")
            if not_ready
            else f"{kind}=True"
        )
        cls = CauseClass.NODE_NOT_READY if not_ready else CauseClass.NODE_PRESSURE
        taints = [
            f"{t.get('key')}:{t.get('effect')}"
            for t in node["taints"]
            if str(t.get("key", "")).startswith("node.kubernetes.io/")
        ]
        subject = (on or waiting)[0]
        ref = ctx.workload_ref(subject)
        what = (
            f"pod {subject['name']} runs on it and is {subject['phase']}"
            + (
                f" ({subject['reason']})"
                if subject["reason"]
                else (", ready" if subject["ready"] else ", not ready")
            )
            if on
            else f"pod {subject['name']} is Pending and {node['name']} is the only node its "
            f"nodeSelector {subject['node_selector'] or '{}'} and tolerations allow"
            + (
                " that its own replicas do not already hold (one per node)"
                if len(eligible(subject, all_nodes)) > len(usable(ctx, subject, all_nodes))
                else ""
            )
        )
        if on and subject["reason"] == "Evicted" and subject["message"]:
            # the kubelet's eviction message names the container and what it used against
            # its request ("Container export was using 18Gi, request is 0")
            what += f": the kubelet says {short(str(subject['message']), 220)}"
        detail = short(str(cond.get("message") or cond.get("reason") or ""), 200)
        cause = (
            f"node {node['name']} is {state} ({cond.get('reason')}: {detail})"
            + (f", tainted {', '.join(taints)}" if taints else "")
            + (_heaviest(ctx, node) if kind == "MemoryPressure" else "")
            + f": {what}"
        )
        spawner, sid = (
            _pid_holders(ctx, node)
            if kind == "PIDPressure"
            else _disk_fillers(ctx, node)
            if kind == "DiskPressure"
            else ("", None)
        )
        says, kid = _kubelet_says(ctx, node)
        kept, did = _network_kept_off(ctx, node)
        spawner += says + kept
        kid = kid or did
        cause += spawner
        out.append(
            Finding(
                cls=cls,
                cause=cause,
                summary=f"Node {node['name']} is {state}; {ref.name}'s pods "
                + ("there are down" if on else "cannot be placed"),
                impact=f"Pods of {ref.name} serve nothing or stay Pending until the node recovers.",
                chain=chain(
                    link(S, what[0].upper() + what[1:] + ".", pods_id, about=ctx.pod_ref(subject)),
                    link(
                        C,
                        f"Node {node['name']} condition {kind}={cond.get('status')} "
                        f"({cond.get('reason')}: {detail})"
                        + (f"; taints {', '.join(taints)}" if taints else "")
                        + spawner
                        + ".",
                        nid,
                        sid,
                        kid,
                        about=ctx.ref("Node", node["name"], ""),
                        facts=(
                            fact(
                                "k8s.nodes",
                                f"[name={node['name']}].conditions[type={kind}].status",
                                "eq",
                                cond.get("status"),
                            ),
                        ),
                    ),
                ),
                explains={
                    str(ref),
                    str(ctx.ref("Node", node["name"], "")),
                    *(str(ctx.pod_ref(x)) for x in on + waiting),
                },
                follow_ups=[
                    f"Check node {node['name']} (kubelet, runtime, network); cordon and drain it "
                    "if it does not recover."
                    if not_ready
                    else f"Free {kind.replace('Pressure', '').lower()} on {node['name']} (set "
                    "limits on what fills it) or move load off it."
                ],
            )
        )
    return out
