"""What the rules planner reads, in the order a senior SRE would.

1. The namespace exists.
2. A survey of the namespace: every kind that can hold the cause (pods with container states,
   workloads of every kind, warning events, Services, claims, autoscalers, Ingresses,
   NetworkPolicies, quotas, limit ranges, disruption budgets) and, with Prometheus, which
   metric names exist for it.
3. Follow-ups chosen by what the survey shows, not by the incident: the logs of the
   containers the request is about (the crashed instance too), rollout history to diff
   revisions, endpoints behind Services, nodes for pending or evicted pods, storage classes
   for unbound claims, ingress classes, the RBAC of a ServiceAccount refused by the apiserver,
   admission webhooks when creates fail, and the metric signals that exist.
4. Hops: a host a failing container tries to reach (in its logs or its settings) is followed
   to that Service, its endpoints and its workloads, in whatever namespace it lives; a
   webhook's Service likewise.

Every read is scoped (namespace, selectors) and capped by the tools; the graph's tool budget
bounds the total.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from tools.read import payloads as p
from tools.read.kube_kinds import routes_host
from triage.agent.planners.base import ToolCall
from triage.agent.planners.rules import text
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import (
    Ref,
    pods_behind,
    selects,
    series_values,
    workload_of,
)
from triage.core.models import Goal

MAX_LOG_WORKLOADS = 4
MAX_LOG_PODS = 2
MAX_SERVICES = 8
MAX_HOPS = 3
MAX_HISTORIES = 4
MAX_NODES = 3  # nodes read one by one for the pods in question (more: they are listed)


def call(name: str, purpose: str | None = None, **args: Any) -> ToolCall:
    return ToolCall(
        name=name, args={k: v for k, v in args.items() if v is not None}, purpose=purpose
    )


def survey(ns: str) -> list[ToolCall]:
    return [
        call("k8s.pods", namespace=ns),
        call("k8s.deployments", namespace=ns),
        call("k8s.statefulsets", namespace=ns),
        call("k8s.daemonsets", namespace=ns),
        call("k8s.jobs", namespace=ns),
        call("k8s.cronjobs", namespace=ns),
        call("k8s.events", namespace=ns, warnings_only=True),
        call("k8s.services", namespace=ns),
        call("k8s.pvcs", namespace=ns),
        call("k8s.hpas", namespace=ns),
        call("k8s.ingresses", namespace=ns),
        call("k8s.network_policies", namespace=ns),
        call("k8s.resource_quotas", namespace=ns),
        call("k8s.limit_ranges", namespace=ns),
        call("k8s.pdbs", namespace=ns),
    ]


def window(goal: Goal, now: float) -> tuple[float, float]:
    start = goal.scope.since or now - 3 * 3600
    return start, goal.scope.until or now


def _troubled(pod: p.Pod) -> bool:
    if pod["phase"] in ("Pending", "Failed", "Unknown"):
        return True
    containers = [*pod["containers"], *pod["init_containers"]]
    return any(
        c["restarts"] > 0
        or (c["state"] or {}).get("kind") == "waiting"
        or ((c["state"] or {}).get("kind") == "terminated" and (c["state"] or {}).get("exit_code"))
        or not c["ready"]
        for c in containers
    ) or (pod["phase"] == "Running" and not pod["ready"])


def _log_calls(ns: str, pod: p.Pod, *, healthy_too: bool) -> list[ToolCall]:
    out = []
    for c in pod["init_containers"]:
        state = c["state"] or {}
        done_ok = state.get("kind") == "terminated" and not state.get("exit_code")
        if not done_ok:
            out.append(call("k8s.logs", namespace=ns, pod=pod["name"], container=c["name"]))
            if c["restarts"] > 0:
                out.append(
                    call(
                        "k8s.logs",
                        namespace=ns,
                        pod=pod["name"],
                        container=c["name"],
                        previous=True,
                    )
                )
    if pod["phase"] == "Pending" and not pod["node"]:
        return out
    for c in pod["containers"]:
        crashed = c["restarts"] > 0 or c["last_terminated"] is not None
        if crashed:
            out.append(
                call("k8s.logs", namespace=ns, pod=pod["name"], container=c["name"], previous=True)
            )
        if crashed or healthy_too or not c["ready"] or pod["phase"] == "Failed":
            out.append(call("k8s.logs", namespace=ns, pod=pod["name"], container=c["name"]))
    return out


def logs(ctx: Ctx) -> list[ToolCall]:
    """Logs of the workloads the request is about: troubled pods first, and one healthy pod
    per asked-about workload (error lines and failed calls show there too)."""
    by_workload: dict[tuple[str, str], list[p.Pod]] = {}
    for pod in ctx.focus_pods:
        by_workload.setdefault(workload_of(pod), []).append(pod)
    ordered = sorted(by_workload.items(), key=lambda kv: not any(_troubled(x) for x in kv[1]))
    out: list[ToolCall] = []
    for (_kind, _name), pods in ordered[:MAX_LOG_WORKLOADS]:
        # a pod not yet placed has no log: then the running ones speak for the workload
        troubled = [x for x in pods if _troubled(x) and (x["node"] or x["phase"] != "Pending")]
        healthy_too = not ctx.whole_namespace or "logs" in ctx.goal.checks or not troubled
        chosen = (troubled or [x for x in pods if x["node"]] or pods)[:MAX_LOG_PODS]
        for pod in chosen:
            out += _log_calls(ctx.ns, pod, healthy_too=healthy_too)
    return out


MAX_NEIGHBOURS = 2

# a registry refusing the credentials a pull presented
PULL_DENIED = re.compile(
    r"unauthorized|denied|authentication required|\b40[13]\b|forbidden|"
    r"no basic auth credentials|authorization token has expired",
    re.I,
)


def pull_denied(pod: p.Pod) -> bool:
    return any(
        (c["state"] or {}).get("reason") in ("ErrImagePull", "ImagePullBackOff")
        and PULL_DENIED.search(str((c["state"] or {}).get("message") or ""))
        for c in pod["containers"]
    )


def refreshers(ctx: Ctx) -> list[p.Pod]:
    """When a pull of the pods asked about is refused for its credentials: the failed pods of
    the namespace's Jobs (≤ 2), one of which may be what renews the pull Secret (an ECR
    token lives 12 hours, so a CronJob recreates it)."""
    if not any(pull_denied(x) for x in ctx.focus_pods):
        return []
    pods, _ = ctx.facts.pods(ctx.ns)
    return [
        x for x in pods if x["phase"] == "Failed" and x["owner"] and x["owner"]["kind"] == "Job"
    ][:MAX_NEIGHBOURS]


def refresher_logs(ctx: Ctx) -> list[ToolCall]:
    return [
        call("k8s.logs", namespace=ctx.ns, pod=x["name"], container=c["name"])
        for x in refreshers(ctx)
        for c in x["containers"][:1]
    ]


def fenced_neighbours(ctx: Ctx) -> list[p.Pod]:
    """One running pod of each other workload of the namespace, when the pods asked about are
    Ready and an ingress NetworkPolicy selects them: their callers may be the ones it drops,
    and only a caller's own log says so (the callee never sees the connection)."""
    if ctx.whole_namespace:
        return []
    policies, _ = ctx.facts.network_policies(ctx.ns)
    fenced = [
        x
        for x in ctx.focus_pods
        if x["ready"]
        and any(
            "Ingress" in pol["types"]
            and (not pol["pod_selector"] or selects(pol["pod_selector"], x["labels"]))
            for pol in policies
        )
    ]
    if not fenced:
        return []
    asked = {workload_of(x) for x in ctx.focus_pods}
    out: dict[tuple[str, str], p.Pod] = {}
    for x in ctx.facts.pods(ctx.ns)[0]:
        # a one-off pod (kubectl run: no controller) is read once it has run, whatever its
        # phase: a test command that timed out has exited (a Pending one has no log to read)
        ran = x["phase"] == "Running" or (
            x["owner"] is None and x["phase"] in ("Succeeded", "Failed")
        )
        if ran and workload_of(x) not in asked:
            out.setdefault(workload_of(x), x)
    return list(out.values())[:MAX_NEIGHBOURS]


def _needs_nodes(ctx: Ctx) -> bool:
    pods, _ = ctx.facts.pods(ctx.ns)
    if any(x["phase"] in ("Pending", "Unknown") or x["reason"] == "Evicted" for x in pods):
        return True
    events, _ = ctx.facts.warnings(ctx.ns)
    node_words = ("NodeNotReady", "Evicted", "Evict", "Pressure", "NodeHasDiskPressure", "Drain")
    if any(any(w in str(e["reason"]) for w in node_words) for e in events):
        return True
    # a budget that allows no disruption blocks drains; the words may be about nodes
    if any(b["allowed_disruptions"] == 0 for b in ctx.facts.pdbs(ctx.ns)[0]):
        return True
    # requests fail (a pasted alert, a server-error ratio above 5%) while the pods look
    # fine: a pod still listed Ready on a NotReady node is one way that happens
    if ctx.goal.alert is not None or _error_ratio(ctx) > 0.05:
        return True
    return bool(re.search(r"\b(node|nodes|drain\w*|cordon\w*|kubelet)\b", ctx.goal.words, re.I))


def _error_ratio(ctx: Ctx) -> float:
    for ev in ctx.facts.evidence:
        if ev.ok and (ev.purpose or "").startswith("error_ratio:") and ev.data:
            values = series_values(ev.data[0])
            if values:
                return float(values[-1])
    return 0.0


def follow_ups(ctx: Ctx) -> list[ToolCall]:
    facts, ns = ctx.facts, ctx.ns
    follow_dependencies(ctx)
    out = logs(ctx)
    for pod in fenced_neighbours(ctx):
        out += [
            call("k8s.logs", namespace=ns, pod=pod["name"], container=c["name"])
            for c in pod["containers"][:1]
        ]
    if _needs_nodes(ctx):
        out.append(call("k8s.nodes"))
    else:
        # the nodes the pods in question run on, by name: a pod still listed Running and
        # Ready on a NotReady node is stale (its kubelet stopped reporting)
        on = sorted({x["node"] for x in ctx.focus_pods if x["node"]})
        out += [call("k8s.node", node=n) for n in on[:MAX_NODES]]
    deployments, _ = facts.deployments(ns)
    wanted = [
        d
        for d in deployments
        if ctx.in_focus(ctx.ref("Deployment", d["name"]))
        or d["available"] < (d["replicas"] or 0)
        or d["updated"] < (d["replicas"] or 0)
        or len(deployments) <= 3
    ]
    for dep in wanted[:MAX_HISTORIES]:
        out.append(call("k8s.rollout_history", namespace=ns, deployment=dep["name"]))
    services, _ = facts.services(ns)
    chosen = [s for s in services if ctx.in_focus(ctx.ref("Service", s["name"]))]
    chosen = (chosen + [s for s in services if s not in chosen])[:MAX_SERVICES]
    out += [
        *(call("k8s.endpoints", namespace=ns, service=s["name"]) for s in chosen if s["selector"]),
        *(
            call("k8s.find_pods", label_selector=selector_text(s["selector"]))
            for s in selected_elsewhere(ctx, chosen)[:2]
        ),
    ]
    out += [*claim_reads(ctx), *ingress_reads(ctx), *refresher_logs(ctx)]
    if BUDGET_REFUSED.search(ctx.goal.words) or any(
        BUDGET_REFUSED.search(str(e["message"])) for e in facts.warnings(ns)[0]
    ):
        out.append(call("k8s.events", **NODE_EVENTS_ARGS))
    for cron in facts.cronjobs(ns)[0]:
        # the controller's Normal events say what became of its runs (SuccessfulDelete of a
        # run Replace cut short, SawCompletedJob): read for the CronJobs asked about
        if not ctx.whole_namespace and ctx.in_focus(ctx.ref("CronJob", cron["name"])):
            out.append(
                call("k8s.events", namespace=ns, object_name=cron["name"], object_kind="CronJob")
            )
    events, _ = facts.warnings(ns)
    pods, _ = facts.pods(ns)
    stuck = ("CreateContainerConfigError", "CreateContainerError", "ContainerCreating")
    if any((c["state"] or {}).get("reason") in stuck for x in pods for c in x["containers"]) or any(
        e["reason"] == "FailedMount" for e in events
    ):
        out.append(call("k8s.configmap_names", namespace=ns))  # names only, never the data
    if any("webhook" in str(e["message"]).lower() for e in events):
        out.append(call("k8s.webhooks"))
    out += warned_objects(ctx, events)
    out += configmap_keys(ctx, pods, events)
    out += makers_of_missing(ctx, pods, events)
    out += affinity_namespaces(ctx)
    if _families_in_logs(ctx) & {text.Family.ACCESS_DENIED, text.Family.CREDENTIALS} or any(
        e["reason"] == NO_PULL_SECRET for e in events
    ):
        out.append(call("k8s.service_accounts", namespace=ns))  # the cloud identity it has
    if _forbidden_namespaces(ctx):
        out += [call("k8s.rbac", namespace=n) for n in _forbidden_namespaces(ctx)]
        out += [
            call("k8s.rollout_history", namespace=n, deployment=d)
            for n, d in refused_deployments(ctx)
        ]
    out += hops(ctx)
    out += node_hops(ctx)
    out += node_event_reads(ctx)
    out += holder_hops(ctx)
    out += metrics_api_hops(ctx)
    if (
        any(text.VOLUME_PINNED.search(str(e["message"])) for e in events)
        or any(x["phase"] == "Pending" and not x["node"] and x["claims"] for x in pods)
        or ASKS_VOLUMES.search(ctx.goal.words)
    ):
        # where each bound volume may attach; what became of the volumes the user asks about
        out.append(call("k8s.persistent_volumes"))
    return out


def claim_reads(ctx: Ctx) -> list[ToolCall]:
    """Pending claims' events, the StorageClasses, and the volumes a claim could bind to."""
    ns, out = ctx.ns, []
    pvcs, _ = ctx.facts.pvcs(ns)
    statefulsets, _ = ctx.facts.statefulsets(ns)
    for claim in [c for c in pvcs if c["phase"] == "Pending"][:2]:
        # the provisioner's own events are Normal ones ("Waiting for a volume to be created
        # by the external provisioner …"): read every event about the claim
        out.append(call("k8s.events", namespace=ns, object_name=claim["name"]))
    if any(c["phase"] == "Pending" for c in pvcs) or any(
        s["claim_templates"] for s in statefulsets
    ):
        out.append(call("k8s.storage_classes"))
    if any(c["phase"] == "Pending" for c in pvcs):
        out.append(call("k8s.persistent_volumes"))  # what a claim could bind to, and why not
    return out


# the kubelet's warning for a pod's imagePullSecret it cannot get ("Unable to retrieve some
# image pull secrets (name); attempting to pull the image may not succeed.")
NO_PULL_SECRET = "FailedToRetrieveImagePullSecret"  # noqa: S105 (an event reason)


def selector_text(selector: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in selector.items())


def selected_elsewhere(ctx: Ctx, services: list[p.Service]) -> list[p.Service]:
    """The Services with no endpoints at all whose selector no pod of the namespace carries:
    where pods that carry it run (a Deployment moved to another namespace, its Service left
    behind) is read by that selector, across namespaces."""
    pods, _ = ctx.facts.pods(ctx.ns)
    out = []
    for svc in services:
        eps, _ = ctx.facts.endpoints(ctx.ns, svc["name"])
        if eps is None or not svc["selector"] or eps["ready"] or eps["not_ready"]:
            continue
        if not any(selects(svc["selector"], x["labels"]) for x in pods):
            out.append(svc)
    return out


# a request about PersistentVolumes themselves (a dashboard flags a Released one)
ASKS_VOLUMES = re.compile(r"\bpersistent ?volumes?\b|\bPVs?\b|\breleased\b|\breclaim", re.I)


def affinity_namespaces(ctx: Ctx) -> list[ToolCall]:
    """The pods (and Deployments) of the namespaces a Pending pod's required pod affinity
    looks in, when it names others: whether any pod there carries its labels."""
    wanted: list[str] = []
    for pod in ctx.facts.pods(ctx.ns)[0]:
        if pod["phase"] != "Pending" or pod["node"]:
            continue
        for rule in pod["affinity"]:
            kind, _, rest = rule.partition(" ")
            where = rest.partition(" per ")[0].partition(" in ")[2]
            if kind == "affinity":
                wanted += [n for n in where.split(",") if n and n != ctx.ns and n not in wanted]
    out: list[ToolCall] = []
    for ns in wanted[:2]:
        out += [call("k8s.pods", namespace=ns), call("k8s.deployments", namespace=ns)]
    return out


def configmap_keys(ctx: Ctx, pods: list[p.Pod], events: list[p.Event]) -> list[ToolCall]:
    """The keys (never the values) of the ConfigMaps a pod references when the kubelet says a
    key it asks for is missing: which keys there are is what shows a rename."""
    said = [(str(e["object"]["name"]), str(e["message"])) for e in events] + [
        (x["name"], str((c["state"] or {}).get("message") or ""))
        for x in pods
        for c in x["containers"]
    ]
    by_name = {x["name"]: x for x in pods}
    wanted: list[str] = []
    for pod_name, message in said:
        found = text.missing_config_key(message)
        if found is None:
            continue
        _key, cm = found
        pod = by_name.get(pod_name)
        wanted += [cm] if cm else (pod["configmaps"] if pod else [])
    return [  # ToolCall itself: `call`'s first parameter is already called name
        ToolCall(name="k8s.configmap_keys", args={"namespace": ctx.ns, "name": n})
        for n in list(dict.fromkeys(wanted))[:3]
    ]


def makers_of_missing(ctx: Ctx, pods: list[p.Pod], events: list[p.Event]) -> list[ToolCall]:
    """Every event about a Secret or ConfigMap the kubelet says is missing, by its name and of
    any kind: what makes such an object (a SealedSecret, an ExternalSecret, a cert-manager
    Certificate, a sync job's custom resource) usually bears its name and records why it did
    not make it."""
    said = [str(e["message"]) for e in events] + [
        str((c["state"] or {}).get("message") or "") for x in pods for c in x["containers"]
    ]
    wanted = [m.group(2) for line in said for m in [text.MISSING_OBJECT.search(line)] if m]
    return [
        ToolCall(name="k8s.events", args={"namespace": ctx.ns, "object_name": n})
        for n in list(dict.fromkeys(wanted))[:2]
    ]


MAX_WARNED = 3  # objects with warnings whose every event (Normal too) is read


def warned_objects(ctx: Ctx, warnings: list[p.Event]) -> list[ToolCall]:
    """Every event about the objects the warnings are about (Normal ones too, by name): what
    followed a warning says whether it is over and why (SuccessfulAttachVolume after a
    Multi-Attach error, TriggeredScaleUp after FailedScheduling, SuccessfulRescale after
    FailedGetResourceMetric). Objects the request names first; a few, each one small read."""
    words = ctx.goal.words.lower()
    seen: list[tuple[str, str]] = []
    for e in sorted(warnings, key=lambda e: str(e["object"]["name"]).lower() not in words):
        key = (str(e["object"]["kind"] or ""), str(e["object"]["name"] or ""))
        if all(key) and key not in seen:
            seen.append(key)
    # by kind and name: a read of its own, apart from the by-name reads analyzers make
    return [
        call("k8s.events", namespace=ctx.ns, object_name=name, object_kind=kind)
        for kind, name in seen[:MAX_WARNED]
    ]


RECENT_S = 3 * 3600.0  # a neighbour started within this is a candidate new load


def recent_neighbours(ctx: Ctx, ns: str, behind: list[p.Pod]) -> list[p.Pod]:
    """Running pods of `ns` that are not the dependency's own and started within RECENT_S,
    newest first: what may have begun to load the dependency when the symptom began."""
    own = {x["name"] for x in behind}
    out = []
    for x in ctx.facts.pods(ns)[0]:
        started = epoch(x["start_time"])
        if x["name"] in own or x["phase"] != "Running" or started is None:
            continue
        if 0 <= ctx.now - started <= RECENT_S:
            out.append((started, x))
    return [x for _, x in sorted(out, key=lambda t: -t[0])]


def dependency_users(ctx: Ctx, svc: str, ns: str) -> list[p.Pod]:
    """Other pods of the asked-about namespace that started within RECENT_S and whose settings
    name the same dependency (svc.ns in an env value or an argument), newest first: a new
    load on it from beside the caller (a batch Job publishing to the same broker)."""
    asked = {str(ctx.workload_ref(x)) for x in ctx.focus_pods}
    needle = re.compile(rf"\b{re.escape(svc)}\.{re.escape(ns)}\b")
    out = []
    for x in ctx.facts.pods(ctx.ns)[0]:
        started = epoch(x["start_time"])
        if str(ctx.workload_ref(x)) in asked or started is None:
            continue
        if not 0 <= ctx.now - started <= RECENT_S:
            continue
        said = [
            str(v)
            for c in x["containers"]
            if c["spec"]
            for v in [e.get("value") for e in c["spec"]["env"]] + list(c["spec"]["args"])
        ]
        if any(needle.search(s) for s in said):
            out.append((started, x))
    return [x for _, x in sorted(out, key=lambda t: -t[0])]


def epoch(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


MAX_HOLDER_NODES = 3  # nodes whose pods are read to find who holds what a pod cannot get
# what the scheduler found short on a node: a resource, or its pod slots (max-pods)
_SCARCE = re.compile(r"Insufficient ([\w./-]+)|Too many (pods)")


def scarce_nodes(ctx: Ctx, pod: p.Pod, resource: str) -> list[p.Node]:
    """The nodes a Pending pod could use for `resource`: those that have some of it and that
    its nodeSelector admits; none when more than MAX_HOLDER_NODES do (a large pool's pods are
    not read one node at a time)."""
    nodes = [
        n
        for n in ctx.facts.nodes()[0]
        if str(n["allocatable"].get(resource, "0")) not in ("0", "")
        and all(n["labels"].get(k) == v for k, v in pod["node_selector"].items())
    ]
    return nodes if len(nodes) <= MAX_HOLDER_NODES else []


def holder_hops(ctx: Ctx) -> list[ToolCall]:
    """A pod the scheduler cannot fit for a resource (Insufficient nvidia.com/gpu): the pods
    on the few nodes that have it, in every namespace, to say who holds it."""
    wanted: list[str] = []
    for pod in [x for x in ctx.focus_pods if x["phase"] == "Pending" and not x["node"]][:2]:
        events, _ = ctx.facts.events_about(ctx.ns, pod["name"])
        said = " ".join(str(e["message"]) for e in events if e["reason"] == "FailedScheduling")
        for resource in dict.fromkeys(a or b for a, b in _SCARCE.findall(said)):
            wanted += [n["name"] for n in scarce_nodes(ctx, pod, resource)]
    return [
        call("k8s.pods_on_node", node=n) for n in list(dict.fromkeys(wanted))[:MAX_HOLDER_NODES]
    ]


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


# A kubelet whose network plugin (CNI) has not started on the node: it stays NotReady
NO_NETWORK = re.compile(r"NetworkPluginNotReady|network plugin|\bcni\b|NetworkReady=false", re.I)

# Where kubelets and node controllers record a Node's events (a Node has no namespace)
NODE_EVENTS_NAMESPACE = "default"
# every node's events (a drain's retries and its end are written about the node): read when
# the question or the namespace's warnings are about evictions a disruption budget refused
NODE_EVENTS_ARGS: dict[str, Any] = {"namespace": NODE_EVENTS_NAMESPACE, "object_kind": "Node"}
BUDGET_REFUSED = re.compile(r"violate the pod's disruption budget|disruption budget", re.I)


def sick_nodes(ctx: Ctx) -> list[p.Node]:
    """The unhealthy nodes (NotReady, under pressure) that the pods in question run on or,
    Pending, could only go to."""
    all_nodes = ctx.facts.nodes()[0]
    sick = [n for n in all_nodes if unhealthy(n) is not None]
    on = {x["node"] for x in ctx.focus_pods if x["node"]}
    waiting = [x for x in ctx.focus_pods if x["phase"] == "Pending" and not x["node"]]
    fits = {n["name"] for x in waiting[:2] for n in usable(ctx, x, all_nodes)}
    return [n for n in sick if n["name"] in on | fits]


def node_event_reads(ctx: Ctx) -> list[ToolCall]:
    """What the kubelet says about a sick node the pods in question need (image garbage
    collection that frees nothing, an eviction threshold met): its own events, and under PID
    or disk pressure what its other pods say."""
    sick = sick_nodes(ctx)[:MAX_NODES]
    out = [
        call(
            "k8s.events", namespace=NODE_EVENTS_NAMESPACE, object_name=n["name"], object_kind="Node"
        )
        for n in sick
    ]
    if any(NO_NETWORK.search(str((unhealthy(n) or {}).get("message") or "")) for n in sick):
        # the network plugin is a DaemonSet of the cluster's own: whether it runs there
        out.append(call("k8s.find_daemonsets"))
    return out + pressured_neighbours(ctx)


def pressured_neighbours(ctx: Ctx) -> list[ToolCall]:
    """A node under PID or disk pressure that the pods in question need: what else runs on it
    (every namespace) and the logs of a few of those pods, where a process that spawns
    children it never reaps, or one that fills the node's disk, says so."""
    out: list[ToolCall] = []
    mine = {(ctx.ns, x["name"]) for x in ctx.focus_pods}
    for node in sick_nodes(ctx)[:MAX_NODES]:
        if (unhealthy(node) or {}).get("type") not in ("PIDPressure", "DiskPressure"):
            continue
        out.append(call("k8s.pods_on_node", node=node["name"]))
        others = [
            x
            for x in ctx.facts.pods_on_node(node["name"])[0]
            if (x["namespace"], x["name"]) not in mine and x["containers"]
        ]
        out += [
            call("k8s.logs", namespace=x["namespace"], pod=x["name"], container=x["containers"][0])
            for x in others[:MAX_NEIGHBOURS]
        ]
    return out


def node_hops(ctx: Ctx) -> list[ToolCall]:
    """A node the question names that is cordoned: what runs on it (every namespace), and the
    disruption budgets of those pods' namespaces, which decide whether a drain can finish."""
    out: list[ToolCall] = []
    cordoned = [n["name"] for n in ctx.facts.nodes()[0] if n["unschedulable"]]
    for node in [n for n in cordoned if str(Ref("Node", "", n)) in ctx.focus][:MAX_HOPS]:
        out.append(call("k8s.pods_on_node", node=node))
        spaces = sorted({x["namespace"] for x in ctx.facts.pods_on_node(node)[0]} - {ctx.ns})
        out += [call("k8s.pdbs", namespace=ns) for ns in spaces[:MAX_HOPS]]
        # a budget there that allows nothing: the pods it counts, and which are unhealthy
        out += [
            call("k8s.pods", namespace=ns)
            for ns in spaces[:MAX_HOPS]
            if any(b["allowed_disruptions"] == 0 for b in ctx.facts.pdbs(ns)[0])
        ]
    return out


# The resource metrics API (metrics.k8s.io) is served by metrics-server, labelled by its chart
# (app.kubernetes.io/name) or by the upstream manifest (k8s-app).
METRICS_SERVER = ("app.kubernetes.io/name=metrics-server", "k8s-app=metrics-server")
METRICS_API = re.compile(r"metrics\.k8s\.io|resource metrics API", re.I)


def metrics_api_down(ctx: Ctx) -> bool:
    """An HPA of the namespace says the resource metrics API itself does not answer."""
    return any(
        METRICS_API.search(str(c.get("message") or "")) and c.get("status") == "False"
        for h in ctx.facts.hpas(ctx.ns)[0]
        for c in h["conditions"]
    )


def metrics_servers(ctx: Ctx) -> list[p.PodRef]:
    """The pods serving the resource metrics API, not-ready ones first."""
    found = [x for sel in METRICS_SERVER for x in ctx.facts.find_pods(sel)[0]]
    unique = list({f"{x['namespace']}/{x['name']}": x for x in found}.values())
    return sorted(unique, key=lambda x: x["ready"])


def metrics_api_hops(ctx: Ctx) -> list[ToolCall]:
    """An HPA that cannot reach the resource metrics API: the metrics-server pods, in whatever
    namespace they run, and the log of the first that is not ready (why it serves nothing)."""
    if not metrics_api_down(ctx):
        return []
    out = [call("k8s.find_pods", label_selector=sel) for sel in METRICS_SERVER]
    for pod in metrics_servers(ctx)[:1]:
        container = pod["containers"][0] if pod["containers"] else None
        out.append(
            call("k8s.logs", namespace=pod["namespace"], pod=pod["name"], container=container)
        )
    return out


_GENERIC_WORDS = {"k8s", "io", "ingress", "controller", "ingress-controller", "kubernetes"}


def controller_selector(controller: str) -> str | None:
    """The pods of an IngressClass's controller, by the recommended `app.kubernetes.io/name`
    label: "k8s.io/ingress-nginx" -> ingress-nginx, "traefik.io/ingress-controller" ->
    traefik, "haproxy.org/ingress-controller/haproxy" -> haproxy."""
    domain, _, path = controller.partition("/")
    names = [path.rsplit("/", 1)[-1], domain.split(".")[0]]
    kept = sorted({n for n in names if n and n not in _GENERIC_WORDS})
    return f"app.kubernetes.io/name in ({','.join(kept)})" if kept else None


def controller_pods(ctx: Ctx, class_name: str) -> list[p.PodRef]:
    """Running pods of the controller serving `class_name`, those started for it first."""
    classes, _ = ctx.facts.ingress_classes()
    cls = next((c for c in classes if c["name"] == class_name), None)
    selector = controller_selector(str(cls["controller"] or "")) if cls else None
    if selector is None:
        return []
    found, _ = ctx.facts.find_pods(selector)
    mine = [x for x in found if class_name in x["args"]]
    return sorted(mine or found, key=lambda x: not x["ready"])


def ingress_reads(ctx: Ctx) -> list[ToolCall]:
    """The Ingresses' classes and controllers; and, for a host the words name that no Ingress
    of the namespace routes, who routes it, wherever it lives (with that namespace's Services:
    an Ingress routes only to Services of its own namespace)."""
    out: list[ToolCall] = []
    ingresses, _ = ctx.facts.ingresses(ctx.ns)
    for host in text.public_hosts(ctx.goal.words)[:2]:
        if not any(
            routes_host(str(b.get("host") or ""), host) for i in ingresses for b in i["backends"]
        ):
            out.append(call("k8s.find_ingresses", host=host))
    elsewhere = ingresses_elsewhere(ctx)
    for where in dict.fromkeys(i["namespace"] for i in elsewhere):
        out.append(call("k8s.services", namespace=where))
    if ingresses or elsewhere:
        out.append(call("k8s.ingress_classes"))
        out += ingress_controllers(ctx)
    # a backend Service the namespace does not have: where a Service of that name lives
    # (an Ingress left behind when its Service moved)
    services, sid = ctx.facts.services(ctx.ns)
    if sid is not None:
        have = {x["name"] for x in services}
        missing = {
            str(b["service"])
            for i in ingresses
            if ctx.ingress_asked(i)
            for b in i["backends"]
            if b.get("service") and b["service"] not in have
        }
        out += [call("k8s.find_services", service=name) for name in sorted(missing)[:2]]
    return out


def ingresses_elsewhere(ctx: Ctx) -> list[p.FoundIngress]:
    """The Ingresses of other namespaces that route a host the words name (k8s.find_ingresses,
    read when no Ingress of the namespace asked about routes it)."""
    out: list[p.FoundIngress] = []
    for host in text.public_hosts(ctx.goal.words)[:2]:
        out += [i for i in ctx.facts.find_ingresses(host)[0] if i["namespace"] != ctx.ns]
    return out


def ingress_controllers(ctx: Ctx) -> list[ToolCall]:
    """The controller of each asked-about Ingress's class, and its log: a TLS Secret it
    cannot load, a backend it rejects, is said there (the reader never reads Secrets)."""
    classes, _ = ctx.facts.ingress_classes()
    if not classes:
        return []
    default = next((c["name"] for c in classes if c.get("default")), None)
    out: list[ToolCall] = []
    wanted: list[str] = []
    fenced = bool(ctx.facts.network_policies(ctx.ns)[0])
    for ing in ctx.facts.ingresses(ctx.ns)[0]:
        name = ing["ingress_class"] or default
        if name and name not in wanted and ctx.ingress_asked(ing):
            wanted.append(name)
    for ing in ingresses_elsewhere(ctx):
        name = ing["ingress_class"] or default
        if name and name not in wanted:
            wanted.append(name)
    for name in wanted[:2]:
        cls = next((c for c in classes if c["name"] == name), None)
        selector = controller_selector(str(cls["controller"] or "")) if cls else None
        if selector is None:
            continue
        out.append(call("k8s.find_pods", label_selector=selector))
        for pod in controller_pods(ctx, name)[:1]:
            container = pod["containers"][0] if pod["containers"] else None
            out.append(
                call("k8s.logs", namespace=pod["namespace"], pod=pod["name"], container=container)
            )
            if fenced and pod["namespace"] != ctx.ns:
                # whether the policies fencing the pods admit the controller: by its labels
                # and its namespace's
                out.append(call("k8s.namespace", namespace=pod["namespace"]))
    return out


def _families_in_logs(ctx: Ctx) -> set[text.Family]:
    return {
        line.family
        for ev in ctx.facts.all("k8s.logs")
        if ev.ok
        for line in text.failures([str(x) for x in ev.data or []])
        if line.family is not None
    }


def refused_deployments(ctx: Ctx) -> list[tuple[str, str]]:
    """(namespace, Deployment) of the pods of other namespaces (an Ingress controller, a
    dependency) whose log says the apiserver refuses them: what their own last release changed
    is what a human acts on. A pod belongs to a Deployment when it carries pod-template-hash
    (its name is <deployment>-<hash>-<suffix>)."""
    out: list[tuple[str, str]] = []
    found = [x for ev in ctx.facts.all("k8s.find_pods") if ev.ok for x in ev.data or []]
    for ev in ctx.facts.all("k8s.logs"):
        ns, name = str(ev.args.get("namespace")), str(ev.args.get("pod"))
        if not ev.ok or ns == ctx.ns:
            continue
        if not any(
            ln.family is text.Family.K8S_FORBIDDEN
            for ln in text.failures([str(x) for x in ev.data or []])
        ):
            continue
        pod = next((x for x in found if x["namespace"] == ns and x["name"] == name), None)
        digest = (pod or {}).get("labels", {}).get("pod-template-hash")
        deployment = name.rsplit(f"-{digest}-", 1)[0] if digest else ""
        if deployment and deployment != name and (ns, deployment) not in out:
            out.append((ns, deployment))
    return out[:2]


def _forbidden_namespaces(ctx: Ctx) -> list[str]:
    found: list[str] = []
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok:
            continue
        for line in text.failures([str(x) for x in ev.data or []]):
            if line.family is text.Family.K8S_FORBIDDEN:
                parsed = text.forbidden(line.text)
                # the account's own namespace (its ClusterRoleBindings), and the one the
                # request was refused in: a RoleBinding grants only in its own namespace
                for where in (parsed or {}).get("ns"), (parsed or {}).get("target"):
                    if where and where not in found:
                        found.append(where)
    return found[:3]


def _settings_of(ctx: Ctx, ns: str, pod_name: str) -> list[str]:
    """The container settings that may name a host: env values and args of the pod."""
    pod = next((x for x in ctx.facts.pods(ns)[0] if x["name"] == pod_name), None)
    if pod is None:
        return []
    out = []
    for c in pod["containers"] + pod["init_containers"]:
        spec = c["spec"]
        if spec is None:
            continue
        env = {e["name"]: str(e.get("value")) for e in spec["env"] if e.get("value")}
        out += [f"{k}={v}" for k, v in env.items()]
        # DB_HOST=orders-db (+ DB_PORT=5432): a bare host name in a *_HOST-like setting
        for name, value in env.items():
            m = _HOST_SETTING.match(name)
            if m and re.fullmatch(r"[a-z][a-z0-9.-]*", value):
                port = next(
                    (
                        env[f"{m.group('prefix')}{p}"]
                        for p in ("_PORT", "PORT")
                        if f"{m.group('prefix')}{p}" in env
                    ),
                    None,
                )
                out.append(f"tcp://{value}" + (f":{port}" if port and port.isdigit() else ""))
        out += [" ".join([*spec["command"], *spec["args"]])]
    return out


_HOST_SETTING = re.compile(
    r"^(?P<prefix>[A-Z0-9_]*?)_?(HOST|HOSTNAME|ADDR|ADDRESS|SERVER|SERVICE|ENDPOINT)$"
)


def hosts_failing(ctx: Ctx) -> list[tuple[str, str, int | None, str]]:
    """(service, namespace, port, line) for hosts the asked-about containers fail to reach.
    A failing line that names a host is followed as it is; one that names only an address
    ("connection to server at 10.96.41.17, port 5433 failed") is matched with the hosts the
    same log or the container's settings name (on that port, when the line gives one)."""
    out: dict[tuple[str, str], tuple[str, str, int | None, str]] = {}
    asked = {x["name"] for x in ctx.focus_pods}
    for ev in ctx.facts.all("k8s.logs"):
        # the logs of the namespace asked about: a dependency's own logs are its hop's (in a
        # hop's context, its own namespace's are; a caller's line is not the dependency's),
        # and of the pods asked about (a neighbour's failed call is its own, not theirs)
        if not ev.ok or ev.args.get("namespace") != ctx.ns:
            continue
        if asked and ev.args.get("pod") not in asked:
            continue
        ns = ctx.ns
        log = [str(x) for x in ev.data or []]
        context: list[tuple[text.Endpoint, str]] | None = None
        for line in text.lines_of(log[-200:]):
            reached = line.family in (text.Family.CONNECTION, text.Family.DNS)
            server = text.server_in(line.text) if line.severity >= 2 and not reached else None
            # a server that answered 5xx: followed when the line names it (the host is there)
            answered = line.severity >= 2 and text.server_error(line.text) is not None
            # an answer it cannot decode, from the peer a field of the line names
            peer = (
                text.peer_named(line.text)
                if line.severity >= 2 and line.family is text.Family.RESPONSE
                else None
            )
            if (
                not (reached and line.severity >= 1)
                and server is None
                and not answered
                and peer is None
            ):
                continue
            named = [
                (e, svc)
                for e in text.endpoints_in(line.text)
                if (svc := text.service_of(e.host, ns)) is not None
            ]
            if not named and server is None and not reached and peer is None:
                continue  # a 5xx whose server the line does not name: not guessed
            if not named:
                if context is None:
                    # each host with the text that names it (a URL's scheme says the product)
                    found = [(e, raw) for raw in log for e in text.endpoints_in(raw)]
                    found += [
                        (e, setting)
                        for setting in _settings_of(ctx, ns, str(ev.args.get("pod")))
                        for e in text.endpoints_in(setting)
                    ]
                    context = found
                port = text.port_in(line.text)
                for e, source in context:
                    svc = text.service_of(e.host, ns)
                    if svc is None or (port is not None and e.port not in (None, port)):
                        continue
                    if peer is not None and svc[0] != peer:
                        continue
                    # an error reply names the product, not the host: the host the settings
                    # give for that product (its port, its name, or its URL's scheme — a
                    # pooler in front of the server takes the server's URL)
                    if (
                        server is not None
                        and e.port != server[1]
                        and server[0] not in e.host
                        and not _scheme_says(source, e.host, server[0])
                    ):
                        continue
                    named.append((text.Endpoint(e.host, e.port or port), svc))
                named = _by_address(ctx, named, line.text, log)
            for endpoint, svc in named:
                out.setdefault(svc, (svc[0], svc[1], endpoint.port, line.text))
    return list(out.values())


def migrated_hosts(ctx: Ctx) -> list[tuple[str, str, int | None, str]]:
    """(service, namespace, port, setting) of the servers the asked-about pods are set to use,
    when their log says they applied a schema migration at start-up: the database the
    migration changed, whose own log shows what the change did to the queries."""
    out: list[tuple[str, str, int | None, str]] = []
    for pod in ctx.focus_pods[:2]:
        for c in pod["containers"][:1]:
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            if lid is None or not text.migrations(log):
                continue
            for setting in _settings_of(ctx, ctx.ns, pod["name"]):
                for e in text.endpoints_in(setting):
                    svc = text.service_of(e.host, ctx.ns)
                    if svc is not None and all(x[:2] != svc for x in out):
                        out.append((svc[0], svc[1], e.port, setting))
    # the database first: a SQL server's port, or a name that says it is one
    out.sort(key=lambda x: not (x[2] in _SQL_PORTS or _SQL_NAME.search(f"{x[0]} {x[3]}")))
    return out[:1]


_SQL_PORTS = {5432, 3306, 1433, 26257, 5433, 6432}
_SQL_NAME = re.compile(r"postgres|\bpg|pg\b|-pg|mysql|maria|sql|\bdb\b|-db\b|database", re.I)


def _scheme_says(source: str, host: str, product: str) -> bool:
    """The text names `host` in a URL whose scheme is the product's
    ("postgresql+psycopg2://u@shared-pgbouncer.db:6432/app" for postgres)."""
    m = re.search(rf"\b([a-z][a-z0-9+.-]*)://[^\s/]*{re.escape(host)}", source, re.I)
    return m is not None and product.lower() in m.group(1).lower()


_ADDRESS = re.compile(r"(?<![\d.])((?:\d{1,3}\.){3}\d{1,3})(?![\d.])")


def _by_address(
    ctx: Ctx, named: list[tuple[text.Endpoint, tuple[str, str]]], line: str, log: list[str]
) -> list[tuple[text.Endpoint, tuple[str, str]]]:
    """Of the hosts the settings give for an address-only line, those the address is known
    to be: the Service whose ClusterIP it is (read so far), or the host another line of the
    same log dialled at that very address ('Post "http://geo-lookup…": dial tcp 10.96.41.7…').
    Else all of them, unchanged: a port shared by several hosts says nothing more."""
    m = _ADDRESS.search(line)
    if m is None or len(named) < 2:
        return named
    address = m.group(1)
    paired = {
        text.service_of(e.host, ctx.ns)
        for raw in log
        if address in raw
        for e in text.endpoints_in(raw)
        if e.host != address
    }
    exact = [
        (e, svc)
        for e, svc in named
        if svc in paired
        or any(
            s["name"] == svc[0] and s.get("cluster_ip") == address
            for s in ctx.facts.services(svc[1])[0]
        )
    ]
    return exact or named


def follow_dependencies(ctx: Ctx) -> None:
    """Add what the asked-about containers fail to reach — the Service and the pods behind
    it — to the focus: the dependency's own failure is part of what was asked, its pods are
    analysed (and their logs read) like the asked-about ones. Pods in another namespace
    stay out of `focus_pods` (the analyzers read one namespace); their chain is the hop's."""
    for svc_name, ns, _port, _line in hosts_failing(ctx)[:MAX_HOPS]:
        ctx.focus.add(str(ctx.ref("Service", svc_name, ns)))
        svc = next((x for x in ctx.facts.services(ns)[0] if x["name"] == svc_name), None)
        if svc is None or not svc["selector"]:
            continue
        for pod in pods_behind(svc["selector"], ctx.facts.pods(ns)[0]):
            ctx.focus.add(str(ctx.pod_ref(pod, ns)))
            ctx.focus.add(str(ctx.workload_ref(pod, ns)))
            if ns == ctx.ns and pod not in ctx.focus_pods:
                ctx.focus_pods.append(pod)


# a controller (an HPA, a PDB's disruption controller) that names a workload it cannot find
_NOT_FOUND = re.compile(r'\b(deployments|statefulsets)(?:/scale)?(?:\.apps)? "([\w.-]+)" not found')


def vanished_workloads(ctx: Ctx, svc_name: str, ns: str) -> list[str]:
    """The names a workload that backed Service `svc_name` may have had, when the Service has
    no endpoints and no Deployment or StatefulSet in `ns` has pods it would select: the
    Service's own name and what a controller reports "not found" in the namespace's warnings.
    Their events (Normal ones too) say who deleted it and why."""
    eps, _ = ctx.facts.endpoints(ns, svc_name)
    svc = next((x for x in ctx.facts.services(ns)[0] if x["name"] == svc_name), None)
    deps, _ = ctx.facts.deployments(ns)
    sets, _ = ctx.facts.statefulsets(ns)
    known = all(
        ctx.facts.answered(tool, namespace=ns) for tool in ("k8s.deployments", "k8s.statefulsets")
    )
    if eps is None or eps["ready"] or svc is None or not svc["selector"] or not known:
        return []
    templates = [d["template_labels"] for d in deps] + [s["selector"] for s in sets]
    if any(all(t.get(k) == v for k, v in svc["selector"].items()) for t in templates):
        return []
    named = [
        m.group(2)
        for e in ctx.facts.warnings(ns)[0]
        for m in _NOT_FOUND.finditer(str(e["message"] or ""))
    ]
    return list(dict.fromkeys([svc_name, *named]))[:3]


def hops(ctx: Ctx) -> list[ToolCall]:
    out: list[ToolCall] = []
    seen_ns: set[str] = set()
    for svc, ns, _port, _line in [*hosts_failing(ctx), *migrated_hosts(ctx)][:MAX_HOPS]:
        if ns != ctx.ns and ns not in seen_ns:
            seen_ns.add(ns)
            out += [
                call("k8s.namespace", namespace=ns),
                call("k8s.services", namespace=ns),
                call("k8s.pods", namespace=ns),
                call("k8s.deployments", namespace=ns),
                call("k8s.statefulsets", namespace=ns),
                call("k8s.events", namespace=ns, warnings_only=True),
                # what admits callers into the dependency's pods: policies live beside them
                call("k8s.network_policies", namespace=ns),
                # the dependency's own state is analysed as the asked-about one's: its claims
                call("k8s.pvcs", namespace=ns),
                # the defaults admission gives its containers (a CPU limit nobody wrote)
                call("k8s.limit_ranges", namespace=ns),
            ]
        out.append(call("k8s.endpoints", namespace=ns, service=svc))
        # a Service no workload backs any more: what the events say about the one that went
        out += [
            call("k8s.events", namespace=ns, object_name=name)
            for name in vanished_workloads(ctx, svc, ns)
        ]
        listed = ctx.facts.get("k8s.services", namespace=ns)
        if listed is not None and not any(x["name"] == svc for x in ctx.facts.services(ns)[0]):
            # no such Service where the caller looks (or no such namespace): where is it?
            out.append(call("k8s.find_services", service=svc))
        if ns != ctx.ns:
            start, end = window(ctx.goal, ctx.now)
            out.append(
                call("prom.metric_names", selector=f'{{namespace="{ns}"}}', start=start, end=end)
            )
            # what the dependency itself says (its pods in their namespace)
            found = next((x for x in ctx.facts.services(ns)[0] if x["name"] == svc), None)
            pods_there = ctx.facts.pods(ns)[0]
            behind = pods_behind(found["selector"], pods_there) if found else []
            for pod in sorted(behind, key=lambda x: not _troubled(x))[:MAX_LOG_PODS]:
                out += _log_calls(ns, pod, healthy_too=True)
            # its releases: what changed on the other side of the call
            out += [
                call("k8s.rollout_history", namespace=ns, deployment=name)
                for name in dict.fromkeys(workload_of(x)[1] for x in behind)
                if any(d["name"] == name for d in ctx.facts.deployments(ns)[0])
            ][:1]
            # what else runs beside it and started lately: a new load on the dependency
            for pod in recent_neighbours(ctx, ns, behind)[:2]:
                out += _log_calls(ns, pod, healthy_too=True)
            # and what else beside the caller uses it and started lately
            for pod in dependency_users(ctx, svc, ns)[:2]:
                out += _log_calls(ctx.ns, pod, healthy_too=True)
    for hook in ctx.facts.webhooks()[0]:
        if hook["service"]:
            where, _, _hook_port = hook["service"].partition(":")
            hook_ns, _, hook_svc = where.partition("/")
            out.append(call("k8s.endpoints", namespace=hook_ns, service=hook_svc))
    return out
