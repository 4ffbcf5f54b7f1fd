"""Pods that never start because nothing will place them, or that are never even created.

- Pending pods: the scheduler's FailedScheduling message says why, clause by clause
  ("0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint …");
  capacity clauses make it `insufficient_resources`, placement clauses (selectors,
  affinity, anti-affinity, taints, spread) `unschedulable_placement`, an unbound claim hands
  over to storage, a pressure taint to the nodes.
- Pods that are never created: the controller's FailedCreate event says who refused —
  a ResourceQuota ("exceeded quota"), a LimitRange ("maximum … per Container"), an admission
  webhook ("denied the request", or "failed calling webhook" when it is down and fails
  closed), a ValidatingAdmissionPolicy.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections import Counter

from tools.read import payloads as p
from triage.agent.planners.rules import quantities, text
from triage.agent.planners.rules.analyzers.network import nearest_labels
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import Ref, selects, workload_of
from triage.agent.planners.rules.reads import eligible, epoch, scarce_nodes, unhealthy, usable
from triage.core.causes import CauseClass
from triage.core.models import LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE

_PORTS = re.compile(r"didn't have free ports", re.I)
_CAPACITY = re.compile(r"Insufficient [\w./-]+|Too many pods|exceed.*max volume count", re.I)


# The scheduler stops at a node's first failing filter, and pod affinity, anti-affinity and
# topology spread run after the resource fit: a node counted under one of them had room for
# the pod. So beside them a capacity reason is not what blocks it — the pod rules are.
_AFTER_FIT = re.compile(
    r"didn't match pod (anti-)?affinity|didn't satisfy existing pods anti-affinity|"
    r"topology spread",
    re.I,
)


def _first_sentence(message: str) -> str:
    return re.split(r"\.? ?(?:no new claims|preemption:)", message)[0].rstrip(".") + "."


def pending(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    seen: set[str] = set()
    for pod in ctx.focus_pods:
        if pod["phase"] != "Pending" or pod["node"]:
            continue
        ref = ctx.workload_ref(pod)
        if str(ref) in seen:
            continue
        events, eid = ctx.facts.events_about(ctx.ns, pod["name"])
        failed = next((e for e in events if e["reason"] == "FailedScheduling"), None)
        if failed is None:
            unclaimed = _no_scheduler(ctx, pod, ref, events)
            if unclaimed is not None:
                seen.add(str(ref))
                out.append(unclaimed)
            continue
        seen.add(str(ref))
        msg = _first_sentence(str(failed["message"]))
        pods_id = ctx.facts.pods(ctx.ns)[1]
        symptom = link(
            S,
            f"Pod {pod['name']} is Pending: FailedScheduling: {short(msg, 300)}",
            eid,
            pods_id,
            about=ctx.pod_ref(pod),
            facts=(
                fact("k8s.pods", f"[name={pod['name']}].phase", "eq", "Pending", namespace=ctx.ns),
            ),
        )
        if "unbound" in msg and "PersistentVolumeClaim" in msg:
            continue  # the storage analyzer explains the claim
        nodes, nid = ctx.facts.nodes()
        requests = {k: v for c in pod["containers"] for k, v in c["requests"].items()}
        capacity = _CAPACITY.findall(msg)
        # a bound volume that may only attach where none of the pod's nodes is: capacity on
        # those nodes is beside the point (the scheduler names one reason per node)
        pinned = _volume_pinned(ctx, pod, nodes) if pod["claims"] else ""
        ports = _host_ports(pod) if _PORTS.search(msg) else []
        if pinned:
            cause = (
                f"pod {pod['name']} cannot be placed where its volume is{pinned}: {short(msg, 200)}"
            )
            cls = CauseClass.UNSCHEDULABLE_PLACEMENT
        elif ports and not capacity:
            cause = (
                f"pod {pod['name']} asks for host port(s) {', '.join(ports)} (hostPort: the "
                "node's own port, which one pod per node may hold), and no node it may use has "
                f"them free: {short(msg, 200)}"
            ) + _ports_held(ctx, pod, ports, nodes)
            cls = CauseClass.UNSCHEDULABLE_PLACEMENT
        elif capacity and not _AFTER_FIT.search(msg):
            largest = _room(ctx, pod, nodes)
            cause = (
                f"no node can fit pod {pod['name']}: it requests "
                f"{', '.join(f'{k} {v}' for k, v in requests.items()) or 'nothing'}{largest} "
                f"({', '.join(dict.fromkeys(capacity))})"
            ) + (_held_by_old_pods(ctx, pod, capacity) or _held_by(ctx, pod, capacity))
            cls = CauseClass.INSUFFICIENT_RESOURCES
        else:
            rules = []
            if pod["node_selector"]:
                rules.append(f"nodeSelector {pod['node_selector']}")
            rules += pod["affinity"]
            if pod["tolerations"]:
                rules.append(f"tolerations {pod['tolerations']}")
            cause = (
                (
                    f"pod {pod['name']}'s placement rules "
                    f"({'; '.join(rules) or 'see the scheduler'}) "
                    f"exclude every node: {short(msg, 200)}"
                )
                + _why_not(pod, nodes)
                + _no_peer(ctx, pod)
                + (_spread_full(ctx, pod, nodes) if "topology spread" in msg else "")
            )
            cls = CauseClass.UNSCHEDULABLE_PLACEMENT
        fit = usable(ctx, pod, nodes)
        sick = {str(Ref("Node", "", n["name"])) for n in fit if unhealthy(n) is not None}
        out.append(
            Finding(
                # every node it may use is NotReady or under pressure: that is the node's chain
                open_at=sick if fit and len(sick) == len(fit) else set(),
                cls=cls,
                cause=cause,
                summary=f"Pods of {ref.name} cannot be scheduled: {short(msg, 160)}",
                impact=f"Pods of {ref.name} stay Pending and never start.",
                chain=chain(
                    symptom,
                    link(C, cause[0].upper() + cause[1:] + ".", eid, pods_id, nid, about=ref),
                ),
                explains={str(ref)},
                follow_ups=[
                    "Lower the requests or add capacity"
                    if cls is CauseClass.INSUFFICIENT_RESOURCES
                    else "Free the host port on a node (rollout maxSurge 0 / maxUnavailable 1, "
                    "or Recreate), or drop the hostPort"
                    if ports and not capacity
                    else "Fix the nodeSelector/affinity/tolerations, or label/untaint a node"
                ],
            )
        )
    return out


def _room(ctx: Ctx, pod: p.Pod, nodes: list[p.Node]) -> str:
    """'; the node(s) its placement rules admit: pool-1 (cpu 3920m, hugepages-2Mi 0
    allocatable)' when its rules leave a few nodes, else the largest allocatable of all."""
    keys = sorted({k for c in pod["containers"] for k in c["requests"]}) or ["cpu", "memory"]
    admitted = usable(ctx, pod, nodes)
    if admitted and len(admitted) <= 3 and len(admitted) < len(nodes):
        return "; the node(s) its placement rules admit: " + "; ".join(
            f"{n['name']} ("
            + ", ".join(f"{k} {n['allocatable'].get(k, '0')}" for k in keys)
            + " allocatable)"
            for n in admitted
        )
    if not nodes:
        return ""
    return "; largest node allocatable: " + ", ".join(
        f"{k} {max((str(n['allocatable'].get(k, '0')) for n in nodes), key=_qty)}" for k in keys
    )


# How long an unbound pod may wait before "no scheduler acted on it" is said: a running
# scheduler binds a pod or records FailedScheduling within seconds of its creation.
_UNSCHEDULED_AFTER_S = 120.0


def _no_scheduler(ctx: Ctx, pod: p.Pod, ref: Ref, events: list[p.Event]) -> Finding | None:
    """A Pending pod that names a scheduler of its own (spec.schedulerName) and that, minutes
    after its creation, is neither bound nor has any scheduling event: no scheduler of that
    name is placing pods here. The default kube-scheduler takes only pods that name
    default-scheduler (or nothing), so such a pod waits, silently, for one that never comes."""
    name = pod.get("scheduler")
    created = epoch(pod["created"])
    if not name or created is None or ctx.now - created < _UNSCHEDULED_AFTER_S:
        return None
    if any(e["reason"] in ("Scheduled", "FailedScheduling", "Preempted") for e in events):
        return None
    pods, pods_id = ctx.facts.pods(ctx.ns)
    waiting = [x for x in pods if x.get("scheduler") == name and not x["node"]]
    placed = [x for x in pods if x["node"] and not x.get("scheduler")]
    minutes = round((ctx.now - created) / 60)
    others = (
        f" (nor have the other {len(waiting) - 1} pods that name it)" if len(waiting) > 1 else ""
    )
    by_default = f", as it placed {placed[0]['name']}" if placed else ""
    cause = (
        f"pod {pod['name']} names spec.schedulerName {name}, and no scheduler of that name has "
        f"acted on it: {minutes} min after its creation it is bound to no node and has no "
        f"scheduling event, not even FailedScheduling{others}. The kube-scheduler "
        f"(default-scheduler) places only pods that name it or no scheduler{by_default}; a pod "
        "naming another waits Pending for that scheduler, which does not run here"
    )
    symptom = link(
        S,
        f"Pod {pod['name']} is Pending, bound to no node, with no scheduling event.",
        pods_id,
        about=ctx.pod_ref(pod),
        facts=(fact("k8s.pods", f"[name={pod['name']}].phase", "eq", "Pending", namespace=ctx.ns),),
    )
    return Finding(
        cls=CauseClass.UNSCHEDULABLE_PLACEMENT,
        cause=cause,
        summary=f"Pods of {ref.name} name scheduler {name}, which does not place them",
        impact=f"Pods of {ref.name} stay Pending and never start.",
        chain=chain(symptom, link(C, cause[0].upper() + cause[1:] + ".", pods_id, about=ref)),
        explains={str(ref)},
        follow_ups=[
            f"Drop schedulerName {name} from the pod template (or set default-scheduler), or "
            "deploy the scheduler it names"
        ],
    )


def _scaled(value: int | str | None, replicas: int, default: str, *, up: bool) -> int:
    """A rolling update's maxSurge (rounded up) or maxUnavailable (rounded down), in pods."""
    text = str(default if value is None else value)
    if text.endswith("%") and text[:-1].isdigit():
        exact = int(text[:-1]) * replicas / 100
        return math.ceil(exact) if up else math.floor(exact)
    return int(text) if text.isdigit() else 0


def _amount(value: str, resource: str) -> float:
    """A '+'-joined request (k8s.pods_on_node) in the resource's unit: cores for cpu, bytes for
    memory and storage, a count for the rest (GPUs, hugepages counts, device plugins)."""
    total = 0.0
    for part in value.split("+"):
        if resource == "cpu":
            total += quantities.cpu_cores(part) or 0.0
        elif resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages"):
            total += quantities.quantity_bytes(part) or 0.0
        else:
            total += _qty(part)
    return total


def _held_by(ctx: Ctx, pod: p.Pod, capacity: list[str]) -> str:
    """'; nvidia.com/gpu on gpu-1 (2) is held by jupyterhub/jupyter-dnowak (1, since …) and …':
    who holds the scarce resource on the few nodes that have it (read in every namespace by
    reads.holder_hops), largest first. What a human frees or moves is one of these pods."""
    scarce = [c.removeprefix("Insufficient ").strip() for c in capacity if c.startswith("Insuff")]
    if any(c.lower() == "too many pods" for c in capacity):
        scarce.append("pods")  # its pod slots (the kubelet's max-pods): every pod holds one
    said = []
    for resource in scarce[:2]:
        for node in scarce_nodes(ctx, pod, resource):
            on = [
                x
                for x in ctx.facts.pods_on_node(node["name"])[0]
                if x["phase"] in ("Running", "Pending")
            ]
            if resource == "pods":
                said.append(_slots_taken(node, on))
                continue
            held = [
                (x, _amount(x["requests"][resource], resource))
                for x in on
                if resource in (x.get("requests") or {})
            ]
            held = sorted((h for h in held if h[1] > 0), key=lambda h: -h[1])
            if not held:
                continue
            who = ", ".join(
                f"{x['namespace']}/{x['name']} ({x['requests'][resource]}"
                + (f", since {x['started']}" if x.get("started") else "")
                + ")"
                for x, _ in held[:3]
            )
            said.append(
                f"{resource} on {node['name']} ({node['allocatable'].get(resource)} allocatable) "
                f"is held by {who}" + _outranked(ctx, pod, [x for x, _ in held[:3]])
            )
    return ("; " + "; ".join(said) + ": free it there or add capacity") if said else ""


def _outranked(ctx: Ctx, pod: p.Pod, holders: list[p.PodRef]) -> str:
    """' — price-file-import-h5rh6 runs with priorityClassName business-critical, pos-gateway's
    pod with none: …': a holder of higher priority preempts lower-priority pods to fit, and is
    never preempted for them, so the Pending pod waits until it ends."""
    mine = pod["priority_class"]
    out = []
    for x in holders:
        full = next((y for y in ctx.facts.pods(x["namespace"])[0] if y["name"] == x["name"]), None)
        theirs = full["priority_class"] if full else None
        if theirs and theirs != mine:
            out.append(f"{x['name']} runs with priorityClassName {theirs}")
    if not out:
        return ""
    return (
        f" — {', '.join(out)}, {pod['name']} with "
        + (f"priorityClassName {mine}" if mine else "none (priority 0)")
        + ": the scheduler preempts lower-priority pods to place a higher-priority one, and "
        "never preempts it to place them"
    )


def _slots_taken(node: p.Node, on: list[p.PodRef]) -> str:
    """'node x has 8 pod slots (allocatable pods, the kubelet's max-pods) and 8 pods: …'."""
    owners = Counter(x["name"].rsplit("-", 1)[0] for x in on)
    listed = ", ".join(f"{n} ({k})" for n, k in owners.most_common(6))
    return (
        f"node {node['name']} has {node['allocatable'].get('pods')} pod slots (allocatable "
        f"pods, the kubelet's max-pods) and {len(on)} pods on it ({listed}), so no other pod "
        "fits there whatever CPU and memory are free (raise max-pods)"
    )


def _held_by_old_pods(ctx: Ctx, pod: p.Pod, capacity: list[str]) -> str:
    """'; the old pods of the rollout hold it …': a Deployment's new pod that no node can fit
    for a resource its own previous revision's pods hold, under a rolling update that may not
    take an old pod away before a new one is Ready (maxUnavailable 0 after rounding down), is
    a deadlock of the update strategy, not a cluster short of capacity."""
    ref = ctx.workload_ref(pod)
    if ref.kind != "Deployment":
        return ""
    dep = next((d for d in ctx.facts.deployments(ctx.ns)[0] if d["name"] == ref.name), None)
    scarce = [c.removeprefix("Insufficient ").strip() for c in capacity if c.startswith("Insuff")]
    if dep is None or dep["strategy"] == "Recreate" or not scarce:
        return ""
    mine = pod["owner"]["name"] if pod["owner"] else None
    old = [
        x
        for x in ctx.facts.pods_of(ctx.ns, "Deployment", ref.name)
        if x["phase"] == "Running"
        and (x["owner"]["name"] if x["owner"] else None) != mine
        and any(r in c["requests"] for c in x["containers"] for r in scarce)
    ]
    replicas = dep["replicas"] or 0
    unavailable = _scaled(dep.get("max_unavailable"), replicas, "25%", up=False)
    if not old or unavailable > 0:
        return ""
    surge = _scaled(dep.get("max_surge"), replicas, "25%", up=True)
    held = ", ".join(f"{x['name']} on {x['node']}" for x in old[:3])
    written = {
        k: "25%" if dep.get(k) is None else dep.get(k) for k in ("max_surge", "max_unavailable")
    }
    return (
        f"; the {', '.join(scarce)} it needs is held by the old pod(s) of the same Deployment "
        f"({held}), and its rolling update (maxSurge {written['max_surge']} = {surge}, "
        f"maxUnavailable {written['max_unavailable']} = 0 of {replicas} replica(s)) "
        "removes no old pod before a new one is Ready: the new pod waits for what the old "
        "one holds, and the rollout never progresses (strategy Recreate, or maxUnavailable 1, "
        "frees it first)"
    )


def _host_ports(pod: p.Pod) -> list[str]:
    """'514/UDP', '601/TCP': the host ports a pod's containers bind on their node."""
    return list(
        dict.fromkeys(
            f"{x['host_port']}/{x.get('protocol') or 'TCP'}"
            for c in pod["containers"]
            if c["spec"]
            for x in c["spec"]["ports"]
            if x.get("host_port")
        )
    )


def _ports_held(ctx: Ctx, pod: p.Pod, ports: list[str], nodes: list[p.Node]) -> str:
    """'; 514/UDP is held on edge-1 by syslog-relay-7d9-x (…) and …': the pods of the namespace
    that bind the same host port on the nodes this pod may use. When they are the old pods of
    its own Deployment, the rolling update is what waits: a surge pod needs a node where the
    port is free, and no old pod is stopped before it is Ready (maxUnavailable rounds to 0)."""
    fit = {n["name"] for n in usable(ctx, pod, nodes)} or {n["name"] for n in nodes}
    holders = [
        x
        for x in ctx.facts.pods(ctx.ns)[0]
        if x["name"] != pod["name"]
        and x["node"] in fit
        and x["phase"] in ("Running", "Pending")
        and set(_host_ports(x)) & set(ports)
    ]
    if not holders:
        return ""
    said = "; " + ", ".join(
        f"{'/'.join(sorted(set(_host_ports(x)) & set(ports)))} is held on {x['node']} by "
        f"{x['name']}"
        for x in holders[:4]
    )
    ref = ctx.workload_ref(pod)
    mine = pod["owner"]["name"] if pod["owner"] else None
    dep = next((d for d in ctx.facts.deployments(ctx.ns)[0] if d["name"] == ref.name), None)
    own = [
        x
        for x in holders
        if ctx.workload_ref(x) == ref and (x["owner"]["name"] if x["owner"] else None) != mine
    ]
    if ref.kind != "Deployment" or dep is None or not own or dep["strategy"] == "Recreate":
        return said + " (another workload binds the same host port on those nodes)"
    replicas = dep["replicas"] or 0
    surge = _scaled(dep.get("max_surge"), replicas, "25%", up=True)
    unavailable = _scaled(dep.get("max_unavailable"), replicas, "25%", up=False)
    written = {
        k: "25%" if dep.get(k) is None else dep.get(k) for k in ("max_surge", "max_unavailable")
    }
    if unavailable > 0:
        return said + " (old pods of the same Deployment, still running)"
    return said + (
        f" — the old pods of the same Deployment: its rolling update (maxSurge "
        f"{written['max_surge']} = {surge}, maxUnavailable {written['max_unavailable']} = 0 of "
        f"{replicas} replica(s)) starts a surge pod before it stops any old one, and with every "
        "node's host port taken by an old pod the surge pod can never be placed, so the "
        "rollout never progresses (strategy Recreate, or maxSurge 0 with maxUnavailable 1, "
        "frees a node first; a DaemonSet suits one pod per node)"
    )


def _no_peer(ctx: Ctx, pod: p.Pod) -> str:
    """'; no pod in shop carries app=memcached (pods of memcached carry no app label …)': a
    required pod-affinity term is met only beside a pod its selector matches, in the pod's
    own namespace; when none carries those labels, no node will ever qualify."""
    out = []
    for sel_text, where in affinity_terms(pod):
        selector = dict(part.split("=", 1) for part in sel_text.split(",") if "=" in part)
        for ns in where or [ctx.ns]:
            pods, pid = ctx.facts.pods(ns)
            others = [x for x in pods if x["name"] != pod["name"]]
            if pid is None or not selector or any(selects(selector, x["labels"]) for x in others):
                continue
            running = [x for x in others if x["phase"] == "Running"]
            close = nearest_labels(selector, running)
            idle = [
                d["name"]
                for d in ctx.facts.deployments(ns)[0]
                if d["replicas"] == 0 and selects(selector, d["template_labels"])
            ]
            out.append(
                f"; no pod in {ns} carries {sel_text}, which its affinity needs beside it"
                + (f" ({'; '.join(close)})" if close else "")
                + (
                    f"; Deployment {', '.join(idle)}, whose pods would, is scaled to 0"
                    if idle
                    else ""
                )
            )
    return "".join(out)


def affinity_terms(pod: p.Pod) -> list[tuple[str, list[str]]]:
    """(selector text, namespaces) of each required pod-affinity term (not anti-affinity);
    no namespaces: the pod's own."""
    out = []
    for rule in pod["affinity"]:
        kind, _, rest = rule.partition(" ")
        sel_text, _, where = rest.partition(" per ")[0].partition(" in ")
        if kind == "affinity" and sel_text not in ("", "*"):
            out.append((sel_text, [n for n in where.split(",") if n]))
    return out


def _tolerates(pod: p.Pod, taint: p.Taint) -> bool:
    for t in pod["tolerations"]:
        if t.get("operator") == "Exists" and t.get("key") in (None, "", taint.get("key")):
            return True
        if t.get("key") == taint.get("key") and (t.get("value") or "") == (
            taint.get("value") or ""
        ):
            return t.get("effect") in (None, "", taint.get("effect"))
    return False


# Node labels the kubelet stopped setting (Kubernetes' well-known labels: the beta ones were
# deprecated in 1.17 and are gone from new nodes), and the ones it sets instead.
_DEPRECATED_LABELS = {
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
_AFFINITY_KEY = re.compile(r"^node (?P<key>\S+) (?P<op>In|Exists|Gt|Lt)\b")


def _keys_no_node_has(pod: p.Pod, nodes: list[p.Node]) -> str:
    """The labels a required node-affinity term asks for that no node carries at all (with
    the label that replaced it, when it is a deprecated one)."""
    out = []
    for rule in pod["affinity"]:
        m = _AFFINITY_KEY.match(str(rule))
        if m is None or any(m.group("key") in n["labels"] for n in nodes):
            continue
        key = m.group("key")
        new = _DEPRECATED_LABELS.get(key)
        out.append(
            f"no node carries the label {key} its node affinity requires"
            + (
                f" (a deprecated label, no longer set on nodes: they carry {new})"
                if new and any(new in n["labels"] for n in nodes)
                else ""
            )
        )
    return "; " + "; ".join(out) if out else ""


def _volume_pinned(ctx: Ctx, pod: p.Pod, nodes: list[p.Node]) -> str:
    """'; claim data-kafka-0 is bound to volume pv-1, which may only be attached where
    topology.kubernetes.io/zone is eu-west-1a, and no node kafka-0 may use is there (…)': a
    bound volume's required node affinity (a zonal disk) against the nodes the pod's own
    selector and tolerations allow."""
    volumes, _ = ctx.facts.persistent_volumes()
    allowed = eligible(pod, nodes)
    said = []
    for claim in pod["claims"]:
        pv = next((v for v in volumes if v.get("claim") == f"{ctx.ns}/{claim}"), None)
        if pv is None:
            said += _class_confined(ctx, pod, claim, allowed)
            continue
        for term in (pv.get("node_affinity") or [])[:1]:
            for key, op, values in term:
                if op != "In":
                    continue
                there = sorted({n["labels"].get(key, "none") for n in allowed})
                if any(n["labels"].get(key) in values for n in allowed):
                    continue
                said.append(
                    f"claim {claim} is bound to volume {pv['name']}, and the volume's node "
                    f"affinity (spec.nodeAffinity) lets it attach only where {key} is "
                    f"{' or '.join(values)}, and no node "
                    f"{pod['name']} may use is there ({key} of those: {', '.join(there) or 'none'})"
                    ": the volume cannot follow the pod, so a node must exist where the volume is "
                    "(or the volume be recreated where the nodes are)"
                )
    return ("; " + "; ".join(said[:2])) if said else ""


def _class_confined(ctx: Ctx, pod: p.Pod, claim: str, allowed: list[p.Node]) -> list[str]:
    """An unbound claim whose StorageClass may provision only where allowedTopologies says
    (a zonal disk class), while every node the pod may use is elsewhere: the scheduler finds
    no volume to bind on those nodes, and the claim waits for a consumer that cannot come."""
    pvc = next((c for c in ctx.facts.pvcs(ctx.ns)[0] if c["name"] == claim), None)
    if pvc is None or pvc["volume"]:
        return []
    classes = ctx.facts.storage_classes()[0]
    sc = next((c for c in classes if c["name"] == pvc["storage_class"]), None)
    out = []
    for key, values in (sc.get("allowed_topologies") or []) if sc else []:
        if not allowed or any(n["labels"].get(key) in values for n in allowed):
            continue
        there = sorted({n["labels"].get(key, "none") for n in allowed})
        out.append(
            f"claim {claim} (unbound) uses StorageClass {pvc['storage_class']}, whose "
            f"allowedTopologies let it provision only where {key} is {' or '.join(values)}, and "
            f"no node {pod['name']} may use is there ({key} of those: {', '.join(there)}): the "
            "scheduler finds no volume it could bind on them, so a class that allows the nodes' "
            f"{key} is needed (or nodes where the class provisions)"
        )
    return out


def _why_not(pod: p.Pod, nodes: list[p.Node]) -> str:
    """Node by node, what keeps the pod off: the nodes its nodeSelector matches and the taints
    they carry that it does not tolerate, or that no node has those labels."""
    if not nodes:
        return ""
    missing = _keys_no_node_has(pod, nodes)
    if missing:
        return missing
    selector = pod["node_selector"]
    matching = [n for n in nodes if all(n["labels"].get(k) == v for k, v in selector.items())]
    if selector and not matching:
        return f"; no node has the labels {', '.join(f'{k}={v}' for k, v in selector.items())}"
    blocked = []
    spread = [a for a in pod["affinity"] if a.startswith("spread")]
    for n in matching[:3]:
        if n["unschedulable"]:
            zone = n["labels"].get("topology.kubernetes.io/zone")
            blocked.append(
                f"{n['name']}{f' (zone {zone})' if zone else ''} is cordoned (spec.unschedulable: "
                "true, SchedulingDisabled): nothing new is placed there until it is uncordoned"
                + (
                    "; a topology spread constraint still counts its domain (nodeTaintsPolicy "
                    "defaults to Ignore), with no pod there, so every other domain may hold at "
                    "most maxSkew pods more than it"
                    if spread
                    else ""
                )
            )
            continue
        taints = [
            f"{t.get('key')}={t.get('value', '')}:{t.get('effect')}"
            for t in n["taints"]
            if t.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(pod, t)
        ]
        if taints:
            blocked.append(f"{n['name']} has taint {', '.join(taints)}, which it does not tolerate")
    return f"; {'; '.join(blocked)}" if blocked else ""


_SPREAD = re.compile(
    r"spread maxSkew (?P<skew>\d+) per (?P<key>\S+)(?: minDomains (?P<min>\d+))?"
    r"(?: of (?P<sel>\S+))?"
)
_DOMAIN_WORDS = {"topology.kubernetes.io/zone": "zone", "kubernetes.io/hostname": "node"}


def _spread_full(ctx: Ctx, pod: p.Pod, nodes: list[p.Node]) -> str:
    """Why a DoNotSchedule topology spread constraint with more minDomains than the pod's
    nodes span refuses every node, counted as the scheduler counts it: the domains of the nodes
    the pod's nodeSelector allows (taints do not remove a domain: nodeTaintsPolicy defaults to
    Ignore), the pods its labelSelector matches in each, and the global minimum — taken as 0
    while there are fewer domains than minDomains, so that each domain may then hold at most
    maxSkew pods."""
    out = []
    allowed = [
        n for n in nodes if all(n["labels"].get(k) == v for k, v in pod["node_selector"].items())
    ]
    for m in (_SPREAD.fullmatch(a) for a in pod["affinity"]):
        if m is None or not m.group("sel"):
            continue
        key, skew = m.group("key"), int(m.group("skew"))
        minimum = int(m.group("min") or 1)
        want = dict(kv.partition("=")[::2] for kv in m.group("sel").split(","))
        domain_of = {n["name"]: n["labels"][key] for n in allowed if key in n["labels"]}
        counts = dict.fromkeys(sorted(set(domain_of.values())), 0)
        for x in ctx.facts.pods(ctx.ns)[0]:
            node = x["node"] or ""
            placed = node in domain_of and x["phase"] in ("Pending", "Running")
            if placed and all(x["labels"].get(k) == v for k, v in want.items()):
                counts[domain_of[node]] += 1
        if not counts:
            continue
        word = _DOMAIN_WORDS.get(key, f"{key} domain")
        if len(counts) >= minimum or any(c + 1 <= skew for c in counts.values()):
            # with minDomains met the least-used domain always has room (its skew is 1), and
            # below it the global minimum is 0: what refuses the pod is elsewhere
            continue
        held = ", ".join(f"{d} with {c} pod{'s' if c != 1 else ''}" for d, c in counts.items())
        out.append(
            f"its topology spread constraint on {key} (maxSkew {skew}, whenUnsatisfiable "
            f"DoNotSchedule, minDomains {minimum}) counts the nodes it may use in only "
            f"{len(counts)} {word}{'s' if len(counts) != 1 else ''} ({held}), fewer than "
            f"minDomains {minimum}: the scheduler then takes the global minimum as 0, so each "
            f"{word} may hold at most maxSkew = {skew} pod{'s' if skew != 1 else ''}, and every "
            f"one is full — a node in another {word} (or minDomains lowered to {len(counts)}) "
            "lets it schedule"
        )
    return f"; {'; '.join(out)}" if out else ""


def _qty(value: str) -> float:
    from triage.agent.planners.rules.quantities import quantity_bytes  # noqa: PLC0415

    return quantity_bytes(value) or 0.0


# The ResourceQuota admission plugin's two refusals: a request over what is left ("exceeded
# quota: q, requested: …, used: …, limited: …") and a pod that declares no value for a resource
# the quota tracks ("failed quota: q: must specify limits.cpu for: c1,c2; requests.memory …").
_QUOTA = re.compile(r"(?:exceeded|failed) quota: (?P<quota>[\w.-]+)", re.I)
_MUST_SPECIFY = re.compile(r"(?P<resource>[\w./-]+) for: (?P<containers>[\w.,-]+)")
# The LimitRanger admission plugin's words: a bound per container or pod, and what was asked.
# A resource's name is a qualified name (cpu, ephemeral-storage, hugepages-2Mi, nvidia.com/gpu).
_RESOURCE = r"[A-Za-z0-9](?:[\w./-]*[A-Za-z0-9])?"
_LIMIT = re.compile(
    rf"(?P<bound>minimum|maximum) (?P<what>{_RESOURCE}) usage per (?P<per>Container|Pod|"
    r"PersistentVolumeClaim) is "
    r"(?P<max>[^,\s\]]+)(, but (?P<which>request|limit) is (?P<got>[^,\s\]]+))?"
    rf"|(?P<rwhat>{_RESOURCE}) max limit to request ratio per (?P<rper>Container|Pod) is "
    r"(?P<ratio>[^,\s\]]+)",
    re.I,
)
_WEBHOOK_DENIED = re.compile(
    r"admission webhook \"(?P<hook>[^\"]+)\" denied the request:? ?(?P<why>.*)", re.I
)
_WEBHOOK_FAILED = re.compile(r"failed calling webhook \"(?P<hook>[^\"]+)\"", re.I)
_POLICY = re.compile(
    r"ValidatingAdmissionPolicy '(?P<policy>[^']+)'.*denied request:? ?(?P<why>.*)", re.I
)


def create_failures(ctx: Ctx) -> list[Finding]:
    """FailedCreate on a ReplicaSet/StatefulSet/Job/DaemonSet: who refused the new pods."""
    events, eid = ctx.facts.warnings(ctx.ns)
    out: list[Finding] = []
    seen: set[str] = set()
    for e in events:
        if e["reason"] not in ("FailedCreate", "FailedCreatePodSandBox") or not e["message"]:
            continue
        message = str(e["message"])
        owner = str(e["object"]["name"])
        ref = _owner_ref(ctx, str(e["object"]["kind"]), owner)
        if str(ref) in seen:
            continue
        symptom = link(
            S,
            f"{e['object']['kind']} {owner} cannot create pods: {short(message, 300)}",
            eid,
            about=ref,
            facts=(
                fact(
                    "k8s.events",
                    "[reason=FailedCreate].message",
                    "contains",
                    message[:80],
                    namespace=ctx.ns,
                    warnings_only=True,
                ),
            ),
        )
        finding = (
            _quota(ctx, ref, message, symptom)
            or _limit(ctx, ref, message, symptom)
            or _admission(ctx, ref, message, symptom)
        )
        if finding is not None:
            seen.add(str(ref))
            out.append(finding)
    return out + [f for f in _refusals_logged(ctx) if not (f.explains & seen)]


# How the apiserver words a refused create to any client: `jobs.batch "x" is forbidden: …`.
_REFUSED_CREATE = re.compile(r"(?P<resource>[a-z][a-z0-9.]*) \"(?P<obj>[^\"]+)\" is forbidden: ")


def _refusal_in(line: str) -> str | None:
    """The apiserver's refusal a log line quotes, from where it names the object: in a
    structured (JSON) line, the field that holds it, without what the line carries besides."""
    fields: list[str] = [line]
    if line.lstrip().startswith("{"):
        with contextlib.suppress(ValueError):
            parsed = json.loads(line)
            if isinstance(parsed, dict):
                fields = [v for v in parsed.values() if isinstance(v, str)]
    for value in fields:
        m = _REFUSED_CREATE.search(value)
        if m is not None:
            return value[m.start() :]
    return None


def _refusals_logged(ctx: Ctx) -> list[Finding]:
    """A refusal an application logged for an object it creates itself (a dispatcher that
    makes a Job per request): the apiserver answers it with the same words it gives a
    controller, which a controller records as FailedCreate and an application only logs.
    Read with the same quota and admission rules as the event (a LimitRange judges pods,
    which a controller creates, so it is not among them)."""
    out: list[Finding] = []
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok or ev.args.get("namespace") != ctx.ns or ev.args.get("previous"):
            continue
        pod_name = str(ev.args.get("pod"))
        pod = next((x for x in ctx.facts.pods(ctx.ns)[0] if x["name"] == pod_name), None)
        if pod is None:
            continue
        # the latest refusal: what the apiserver says now
        for ln in reversed(text.lines_of([str(x) for x in ev.data or []][-200:])):
            said = _refusal_in(ln.text)
            if said is None:
                continue
            m = _REFUSED_CREATE.match(said)
            if m is None or m.group("resource") in ("pods", "pod"):
                continue  # pods are a controller's, whose own event says it
            ref = ctx.workload_ref(pod)
            made = m.group("resource")
            symptom = link(
                S,
                f"{pod_name}'s log: {short(ln.text, 300)}",
                ev.id,
                about=ref,
                facts=(
                    fact(
                        "k8s.logs",
                        "",
                        "contains",
                        ln.text[:120],
                        namespace=ctx.ns,
                        pod=pod_name,
                        container=ev.args.get("container"),
                    ),
                ),
            )
            finding = _quota(ctx, ref, said, symptom, made=made) or _admission(
                ctx, ref, said, symptom, made=made
            )
            if finding is not None:
                out.append(finding)
                break
    return out


def _owner_ref(ctx: Ctx, kind: str, name: str) -> Ref:
    if kind == "ReplicaSet" and "-" in name:
        return ctx.ref("Deployment", name.rsplit("-", 1)[0])
    return ctx.ref(kind or "ReplicaSet", name)


# What a quota scope counts (Kubernetes' ResourceQuota scopes): a scoped quota applies only
# to the pods of that kind, so a pod refused by it is one of them.
_SCOPES = {
    "BestEffort": "pods whose containers set no resource requests or limits (QoS BestEffort)",
    "NotBestEffort": "pods with at least one resource request or limit",
    "Terminating": "pods with activeDeadlineSeconds (Jobs' pods among them)",
    "NotTerminating": "pods without activeDeadlineSeconds",
    "PriorityClass": "pods of the priority classes it selects",
}


def _scoped(quota: p.ResourceQuota | None, ref: Ref) -> str:
    """'; its scope BestEffort counts only pods whose containers set no requests …, which
    orders-backfill's are'."""
    scopes = [x for x in (quota.get("scopes") or []) if x in _SCOPES] if quota else []
    if not scopes:
        return ""
    counted = "; ".join(f"{x}: {_SCOPES[x]}" for x in scopes)
    return f"; its scope counts only {counted} — which {ref.name}'s pods are"


def _quota(
    ctx: Ctx, ref: Ref, message: str, symptom: object, *, made: str = "pods"
) -> Finding | None:
    """`made`: what `ref` creates and the quota refuses (a controller's pods, or the objects
    an application creates itself: jobs.batch)."""
    m = _QUOTA.search(message)
    if m is None:
        return None
    quotas, qid = ctx.facts.quotas(ctx.ns)
    quota = next((q for q in quotas if q["name"] == m.group("quota")), None)
    usage = ""
    if quota:
        usage = ", ".join(f"{k} {quota['used'].get(k, '0')}/{v}" for k, v in quota["hard"].items())
    name = m.group("quota")
    unset = _unset_resources(message)
    if unset:
        # Not a full quota: containers that declare nothing for what the quota counts (and no
        # LimitRange default fills it in), which the plugin refuses whatever is left.
        limits, lid = ctx.facts.limit_ranges(ctx.ns)
        defaults = "" if limits else f"; no LimitRange in {ctx.ns} supplies defaults"
        missing = "; ".join(f"{c} sets no {', '.join(r)}" for c, r in unset.items())
        cause = (
            f"ResourceQuota {name} in {ctx.ns} tracks {', '.join(sorted(_tracked(unset)))}, so "
            f"every pod must specify them, but the new template of {ref.name} has container(s) "
            f"without those resources: {missing}{defaults}"
        )
        return Finding(
            cls=CauseClass.QUOTA_EXCEEDED,
            cause=cause,
            summary=f"{ref.name} cannot create pods: quota {name} refuses containers "
            f"without resources ({', '.join(unset)})",
            impact=f"{ref.name} cannot roll out or scale; existing pods keep running.",
            chain=chain(
                symptom,  # type: ignore[arg-type]
                link(C, cause[0].upper() + cause[1:] + ".", qid, lid, about=ref),
            ),
            explains={str(ref)},
            follow_ups=[
                f"Give container(s) {', '.join(unset)} of {ref.name} a resources block "
                f"(requests and limits), or add a LimitRange with defaults to {ctx.ns}."
            ],
        )
    new = f"the new pods of {ref.name}" if made == "pods" else f"the {made} {ref.name} creates"
    held = _used_by(ctx, message)
    cause = (
        f"ResourceQuota {name} in {ctx.ns} rejects {new}: "
        f"{short(message.rsplit('forbidden:', maxsplit=1)[-1], 200)}"
        + (f" (used/hard: {usage})" if usage else "")
        + _scoped(quota, ref)
        + held
    )
    fix = f"Raise ResourceQuota {name} or lower the requests of {ref.name}."
    if "still count" in held:
        fix = (
            f"Delete the finished Jobs that hold ResourceQuota {name} and give the Jobs a "
            "ttlSecondsAfterFinished (or raise the quota)."
        )
    return Finding(
        cls=CauseClass.QUOTA_EXCEEDED,
        cause=cause,
        summary=f"{ref.name} cannot create {made}: quota {name} is exhausted",
        impact=f"{ref.name} cannot roll out or scale; existing pods keep running."
        if made == "pods"
        else f"{ref.name} cannot create the {made} its work needs; what it already runs keeps "
        "running.",
        chain=chain(symptom, link(C, cause[0].upper() + cause[1:] + ".", qid, about=ref)),  # type: ignore[arg-type]
        explains={str(ref)},
        follow_ups=[fix],
    )


_SUMMED = ("cpu", "memory", "ephemeral-storage")  # quota resources summed over pods
_EXCEEDED = re.compile(rf"limited: (?P<what>{_RESOURCE})=")


def _used_by(ctx: Ctx, message: str) -> str:
    """Who holds what the quota ran out of: the namespace's pods summed per workload, as the
    quota counts them (requests.X / limits.X / bare X = requests.X, per container)."""
    m = _EXCEEDED.search(message)
    if m is None:
        return ""
    what = m.group("what")
    if what in ("pods", "count/pods", "count/jobs.batch"):
        return _counted_by(ctx, what)
    field, _, resource = (
        what.partition(".")
        if what.startswith(("requests.", "limits."))
        else (
            "",
            "",
            what,
        )
    )
    field = field or "requests"
    # an extended resource (nvidia.com/gpu) is counted in whole devices
    extended = "/" in resource
    if field not in ("requests", "limits") or (resource not in _SUMMED and not extended):
        return ""
    measure = quantities.cpu_cores if resource == "cpu" or extended else quantities.quantity_bytes
    totals: dict[str, list[float]] = {}
    for pod in ctx.facts.pods(ctx.ns)[0]:
        if pod["phase"] in ("Succeeded", "Failed"):
            continue
        n = 0.0
        for c in pod["containers"]:
            amounts = c["limits"] if field == "limits" else c["requests"]
            n += measure(amounts.get(resource)) or 0.0
        totals.setdefault(workload_of(pod)[1], []).append(n)
    ranked = sorted(totals.items(), key=lambda kv: -sum(kv[1]))[:4]
    if not ranked or not sum(ranked[0][1]):
        return ""
    shown = (
        f"{sum(v) * 1000:.0f}m"
        if resource == "cpu"
        else f"{sum(v):g}"
        if extended
        else quantities.human(sum(v))
        for _, v in ranked
    )
    return f"; {what} is held by " + ", ".join(
        f"{name} {amount} ({len(v)} pod(s))"
        for (name, v), amount in zip(ranked, shown, strict=True)
    )


def _counted_by(ctx: Ctx, what: str) -> str:
    """Who holds an object-count quota: the namespace's Jobs (finished ones count until they
    are deleted: a Job kept by no TTL holds its slot) or its live pods, per owner."""
    held: Counter[str] = Counter()
    finished: Counter[str] = Counter()
    kept: Counter[str] = Counter()  # finished, and no TTL will ever delete them
    if what == "count/jobs.batch":
        for job in ctx.facts.jobs(ctx.ns)[0]:
            # a Job no CronJob owns is named by whoever made it: its name less the suffix
            # that made it unique (stock-feed-replay-b4466 and -b4467 are one script's)
            owner = str(job["owner"]["name"] if job["owner"] else job["name"].rsplit("-", 1)[0])
            held[owner] += 1
            done = any(
                c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                for c in job["conditions"]
            )
            finished[owner] += int(done)
            kept[owner] += int(done and "ttl_after_finished_s" not in job)
    else:
        for pod in ctx.facts.pods(ctx.ns)[0]:
            if pod["phase"] not in ("Succeeded", "Failed"):
                held[workload_of(pod)[1]] += 1
    if not held:
        return ""

    def finished_words(name: str) -> str:
        if not finished[name]:
            return ""
        if kept[name] == finished[name]:
            return (
                f" ({finished[name]} finished Jobs with no ttlSecondsAfterFinished: never "
                "deleted, they still count)"
            )
        return f" ({finished[name]} finished, still counted)"

    return f"; {what} is held by " + ", ".join(
        f"{name} {n}{finished_words(name)}" for name, n in held.most_common(4)
    )


def _unset_resources(message: str) -> dict[str, list[str]]:
    """{container: [resources it sets no value for]} from a 'must specify' refusal."""
    _, _, rest = message.partition("must specify ")
    out: dict[str, list[str]] = {}
    for m in _MUST_SPECIFY.finditer(rest):
        for container in m.group("containers").split(","):
            if container:
                out.setdefault(container, []).append(m.group("resource"))
    return out


def _tracked(unset: dict[str, list[str]]) -> set[str]:
    return {r for resources in unset.values() for r in resources}


def _offender(ctx: Ctx, ref: Ref, m: re.Match[str]) -> str:
    """' (container X requests 5m)': the container of the workload's template whose request or
    limit is the value the LimitRanger refused, when one is."""
    template = _template_of(ctx, ref)
    got, what = m.group("got"), m.group("what")
    if template is None or not got or not what:
        return ""
    asked = (m.group("which") or "").lower() == "request"
    field = "requests" if asked else "limits"
    if (m.group("per") or "").lower() == "pod":
        # a bound per Pod is the sum of its containers': which ones add up to it
        parts = [
            (c["name"], value)
            for c in template["containers"]
            if (value := (c["requests"] if asked else c["limits"]).get(what.lower())) is not None
        ]
        if len(parts) > 1:
            return (
                f" (its containers' {field} {what}: "
                + " + ".join(f"{name} {value}" for name, value in parts)
                + f" = {got})"
            )
    for c in [*template["containers"], *template["init_containers"]]:
        value = (c["requests"] if asked else c["limits"]).get(what.lower())
        if value is not None and str(value) == got:
            return f" (container {c['name']} {field} {what} {got})"
    return ""


def _limit(ctx: Ctx, ref: Ref, message: str, symptom: object) -> Finding | None:
    m = _LIMIT.search(message)
    if m is None:
        return None
    ranges, rid = ctx.facts.limit_ranges(ctx.ns)
    name = ranges[0]["name"] if ranges else "the namespace's LimitRange"
    if m.group("ratio"):
        bound = f"a limit-to-request ratio of {m.group('rwhat')} of at most {m.group('ratio')}"
        per = m.group("rper").lower()
    else:
        bound = f"a {m.group('bound').lower()} {m.group('what')} of {m.group('max')}"
        per = m.group("per").lower()
    which = _defaulted(ctx, ref, ranges, m.group("rwhat") or m.group("what") or "", m.group("got"))
    cause = (
        f"LimitRange {name} sets {bound} per {per}, and {ref.name}'s pods break it"
        f"{which or _offender(ctx, ref, m)}: "
        f"{short(message.rsplit('forbidden:', maxsplit=1)[-1], 200)}"
    )
    return Finding(
        cls=CauseClass.LIMIT_RANGE_VIOLATION,
        cause=cause,
        summary=f"{ref.name}'s pods are refused by LimitRange {name}",
        impact=f"{ref.name} cannot create pods.",
        chain=chain(symptom, link(C, cause + ".", rid, about=ref)),  # type: ignore[arg-type]
        explains={str(ref)},
        follow_ups=[
            f"Bring {ref.name}'s requests and limits inside LimitRange {name}, or change it."
        ],
    )


def _defaulted(
    ctx: Ctx, ref: Ref, ranges: list[p.LimitRange], resource: str, got: str | None
) -> str:
    """' (container x sets requests memory 192Mi and no limit, so admission fills in the
    LimitRange's default limit 512Mi: 512Mi / 192Mi = 2.67)': a request or limit the template
    leaves out, which the LimitRanger sets from the range's default / defaultRequest before
    it checks the range — the value that breaks it is one nobody wrote. For a bound other than
    a ratio, only when the filled-in value is the refused one (`got`)."""
    template = _template_of(ctx, ref)
    resource = resource.lower()
    if template is None or not resource:
        return ""
    amount = quantities.cpu_cores if resource == "cpu" else quantities.quantity_bytes
    for lim in (x for r in ranges for x in r["limits"] if x.get("type") == "Container"):
        default = (lim.get("default") or {}).get(resource)
        default_request = (lim.get("defaultRequest") or {}).get(resource)
        for c in template["containers"]:
            req, cap = c["requests"].get(resource), c["limits"].get(resource)
            if cap is None and default is not None and req is not None:
                said = f"sets requests {resource} {req} and no {resource} limit"
                injected = f"default limit {default}"
                top, bottom = amount(str(default)), amount(str(req))
                shown = f"{default} / {req}"
            elif req is None and cap is not None and default_request is not None:
                said = f"sets limits {resource} {cap} and no {resource} request"
                injected = f"defaultRequest {default_request}"
                top, bottom = amount(str(cap)), amount(str(default_request))
                shown = f"{cap} / {default_request}"
            else:
                continue
            if got and got not in injected:
                continue
            ratio = f": {shown} = {top / bottom:.2f}" if top and bottom else ""
            return (
                f" (container {c['name']} {said}, so admission fills in the LimitRange's "
                f"{injected}{ratio})"
            )
    return ""


def _template_images(ctx: Ctx, ref: Ref) -> list[str]:
    """The images the workload's pod template asks for: what an admission rule judged."""
    template = _template_of(ctx, ref)
    return [str(c["image"]) for c in template["containers"]][:4] if template else []


def _template_of(ctx: Ctx, ref: Ref) -> p.PodTemplate | None:
    """The pod template of the workload `ref` names, as the reader listed it."""
    templates: list[tuple[str, p.PodTemplate]] = []
    if ref.kind == "Deployment":
        templates = [(d["name"], d["template"]) for d in ctx.facts.deployments(ctx.ns)[0]]
    elif ref.kind == "StatefulSet":
        templates = [(x["name"], x["template"]) for x in ctx.facts.statefulsets(ctx.ns)[0]]
    elif ref.kind == "DaemonSet":
        templates = [(x["name"], x["template"]) for x in ctx.facts.daemonsets(ctx.ns)[0]]
    return next((template for name, template in templates if name == ref.name), None)


def _admission(
    ctx: Ctx, ref: Ref, message: str, symptom: object, *, made: str = "pods"
) -> Finding | None:
    denied = _WEBHOOK_DENIED.search(message)
    failed = _WEBHOOK_FAILED.search(message)
    policy = _POLICY.search(message)
    if not (denied or failed or policy):
        return None
    hooks, wid = ctx.facts.webhooks()
    theirs = f"{ref.name}'s pods" if made == "pods" else f"the {made} {ref.name} creates"
    # what an admission rule judged: the pod template, when the refused are its pods
    images = _template_images(ctx, ref) if made == "pods" else []
    denied_what = f" (its pod template's images: {', '.join(images)})" if images else ""
    if policy:
        cause = (
            f"ValidatingAdmissionPolicy {policy.group('policy')} denies {theirs}: "
            f"{short(policy.group('why'), 200)}{denied_what}"
        )
        links = [symptom, link(C, cause + ".", ctx.facts.warnings(ctx.ns)[1], about=ref)]
    elif denied:
        cause = (
            f"admission webhook {denied.group('hook')} denies {theirs}: "
            f"{short(denied.group('why'), 200)}{denied_what}"
        )
        hook = next((h for h in hooks if h["name"] == denied.group("hook")), None)
        links = [
            symptom,
            link(
                M,
                f"Webhook {hook['name']} ({hook['kind']} configuration {hook['configuration']}) "
                f"is served by {hook['service'] or hook['url'] or '?'}, failurePolicy "
                f"{hook['failure_policy']}, for {'; '.join(hook['rules'][:3]) or 'every request'}.",
                wid,
                about=ref,
            )
            if hook
            else None,
            link(C, cause + ".", ctx.facts.warnings(ctx.ns)[1], wid, about=ref),
        ]
    else:
        assert failed is not None
        name = failed.group("hook")
        hook = next((h for h in hooks if h["name"] == name), None)
        eps_text, eps_id = "", None
        if hook and hook["service"]:
            where, _, _port = hook["service"].partition(":")
            hook_ns, _, svc = where.partition("/")
            eps, eps_id = ctx.facts.endpoints(hook_ns, svc)
            if eps is not None:
                eps_text = f"; its Service {hook_ns}/{svc} has {eps['ready']} ready endpoint(s)"
        policy_text = f" and failurePolicy {hook['failure_policy']}" if hook else ""
        cause = (
            f"admission webhook {name} cannot be called{eps_text}{policy_text}, so the "
            f"apiserver refuses {theirs} (it fails closed): {short(message, 160)}"
        )
        links = [
            symptom,
            link(
                M,
                f"Webhook {name} is served by {hook['service'] if hook else '?'}{eps_text}.",
                wid,
                eps_id,
                about=ref,
            )
            if hook
            else None,
            link(
                C,
                cause[0].upper() + cause[1:] + ".",
                ctx.facts.warnings(ctx.ns)[1],
                wid,
                eps_id,
                about=ref,
            ),
        ]
    return Finding(
        cls=CauseClass.ADMISSION_WEBHOOK,
        cause=cause,
        summary=f"{ref.name} cannot create {made}: admission refuses them",
        impact=f"{ref.name} cannot roll out, scale or replace pods."
        if made == "pods"
        else f"{ref.name} cannot create the {made} its work needs.",
        chain=chain(*links),  # type: ignore[arg-type]
        strength=Strength.STATED,
        explains={str(ref)},
        follow_ups=[
            "Fix or remove the webhook (or its service), or scope it with a namespaceSelector."
        ],
    )
