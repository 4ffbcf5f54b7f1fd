"""Nodes: a node that is NotReady takes its pods with it; a node under memory, disk or PID
pressure evicts pods and refuses new ones (the scheduler's taint says so)."""

from __future__ import annotations

import re

from tools.read import payloads as p
from triage.agent.planners.rules.chain import Finding, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import workload_of
from triage.core.causes import CauseClass
from triage.core.models import LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE
_PRESSURES = ("MemoryPressure", "DiskPressure", "PIDPressure")


def _condition(node: p.Node, kind: str) -> p.Condition | None:
    return next((c for c in node["conditions"] if c.get("type") == kind), None)


def unhealthy(node: p.Node) -> p.Condition | None:
    """The condition that makes a node unfit: Ready not True, or a pressure condition True."""
    ready = _condition(node, "Ready")
    if ready is not None and ready.get("status") != "True":
        return ready
    return next(
        (c for kind in _PRESSURES if (c := _condition(node, kind)) and c.get("status") == "True"),
        None,
    )


def eligible(pod: p.Pod, nodes_: list[p.Node]) -> list[p.Node]:
    """The nodes the pod's nodeSelector and tolerations would allow, health aside."""
    tolerated = {t.get("key") for t in pod["tolerations"]}

    def allowed(n: p.Node) -> bool:
        taints = [
            t
            for t in n["taints"]
            if t.get("effect") in ("NoSchedule", "NoExecute")
            and not str(t.get("key", "")).startswith("node.kubernetes.io/")
        ]
        return all(n["labels"].get(k) == v for k, v in pod["node_selector"].items()) and all(
            t.get("key") in tolerated or None in tolerated for t in taints
        )

    return [n for n in nodes_ if allowed(n)]


def usable(ctx: Ctx, pod: p.Pod, nodes_: list[p.Node]) -> list[p.Node]:
    """`eligible` less the nodes its own workload already holds when it keeps one replica per
    node (a required anti-affinity on the hostname): where a Pending replica could still go."""
    spread = any("anti-affinity" in a and "hostname" in a for a in pod["affinity"])
    mine = workload_of(pod)
    held = {
        x["node"]
        for x in ctx.facts.pods(ctx.ns)[0]
        if spread and x["name"] != pod["name"] and x["node"] and workload_of(x) == mine
    }
    return [n for n in eligible(pod, nodes_) if n["name"] not in held]


def _heaviest(ctx: Ctx, node: p.Node) -> str:
    """Who holds the node's memory: its pods that were read, unlimited ones first."""
    on = [x for x in ctx.facts.pods(ctx.ns)[0] if x["node"] == node["name"]]
    unlimited = [
        x["name"] for x in on if any(not c["limits"].get("memory") for c in x["containers"])
    ]
    if unlimited:
        return f"; pods there without a memory limit: {', '.join(unlimited[:3])}"
    return ""


# A program that cannot start a process or a thread: what running out of PIDs looks like
_NO_PIDS = re.compile(
    r"\bEAGAIN\b|Resource temporarily unavailable|pthread_create|fork: (retry|Resource)|"
    r"can't start new thread|unable to create (new )?native thread|\b(zombie|defunct)\b",
    re.I,
)


_NO_SPACE = re.compile(r"no space left on device|ENOSPC|disk quota exceeded", re.I)
_WRITTEN = re.compile(r"(?:write|open|mkdir|create)\s+(?P<path>/[\w./-]+)")


def _disk_fillers(ctx: Ctx, node: p.Node) -> tuple[str, str | None]:
    """What the pods on a node under DiskPressure say when a write fails for want of space:
    the pod and the path it writes, where the node's disk goes."""
    on = {x["name"] for x in ctx.facts.pods(ctx.ns)[0] if x["node"] == node["name"]}
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("namespace") != ctx.ns or ev.args.get("pod") not in on:
            continue
        line = next((str(x) for x in reversed(ev.data or []) if _NO_SPACE.search(str(x))), None)
        if line is None:
            continue
        path = _WRITTEN.search(line)
        where = path.group("path") if path else ""
        top = "/".join(where.split("/")[:4]) if where else ""
        return (
            f"; pod {ev.args.get('pod')} on it runs out of space writing"
            + (f" under {top}" if top else "")
            + f': "{short(line, 200)}" — what it keeps on the node\'s disk there fills it',
            ev.id,
        )
    return "", None


def _pid_holders(ctx: Ctx, node: p.Node) -> tuple[str, str | None]:
    """What the pods on a node under PIDPressure say when they cannot start a process or a
    thread: the pod that spawns them is the likeliest holder of the PIDs."""
    on = {x["name"] for x in ctx.facts.pods(ctx.ns)[0] if x["node"] == node["name"]}
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("namespace") != ctx.ns or ev.args.get("pod") not in on:
            continue
        found = next((m for x in reversed(ev.data or []) if (m := _NO_PIDS.search(str(x)))), None)
        if found:
            line = found.string
            hit = line[max(0, found.start() - 100) : found.end() + 60]
            hit = ("…" if found.start() > 100 else "") + hit
            return (
                f"; pod {ev.args.get('pod')} on it cannot start processes: "
                f'"{hit}" — a process that spawns children and never reaps them '
                "(no init process as PID 1) fills the node's PID table with zombies",
                ev.id,
            )
    return "", None


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
