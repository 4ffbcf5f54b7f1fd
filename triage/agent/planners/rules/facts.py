"""Typed views over the evidence gathered so far, shared by the read plan and the analyzers.

Only evidence whose status is `ok` is treated as fact; every accessor returns the typed
payload (tools/read/payloads.py) together with the id of the evidence it came from, so
whatever is concluded from it can cite it. Lookups that analyzers need again and again —
the pods of a workload, the events of an object, the Services that select a pod — are
indexed once per Facts (sets and dicts, never list scans inside loops).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from tools.read import payloads as p
from tools.read.registry import canonical_args
from tools.results import ErrorKind, ToolStatus
from triage.core.models import Evidence

T = TypeVar("T")


@dataclass(frozen=True)
class Ref:
    """An object by kind, namespace and name: what a link of a chain is about."""

    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def budget_selects(pdb: p.PDB, labels: dict[str, str]) -> bool:
    """A PodDisruptionBudget covers a pod with these labels: its matchLabels all hold, or its
    selector is empty ({}), which in policy/v1 selects every pod of the namespace."""
    return bool(pdb.get("selects_all")) or selects(pdb["selector"], labels)


def nearly_selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    """The labels carry every key of a selector of two or more, and differ in the value of
    exactly one: a pod its selector would take but for a label set by whoever runs it (an
    operator's role=replica where the Service wants role=primary)."""
    if len(selector) < 2 or any(k not in labels for k in selector):
        return False
    return sum(labels[k] != v for k, v in selector.items()) == 1


def pods_behind(selector: dict[str, str], pods: list[Any]) -> list[Any]:
    """The pods a Service's selector selects or, when it selects none, those it nearly selects
    (their own failure may be why none carries the label it wants)."""
    chosen = [x for x in pods if selects(selector, x["labels"])]
    return chosen or [x for x in pods if nearly_selects(selector, x["labels"])]


def series_values(series: dict[str, Any]) -> list[float]:
    """The numeric values of a range series (NaN and nulls — a gap, or NaN through JSON —
    dropped)."""
    out = []
    for point in series.get("values") or []:
        v = point[1] if isinstance(point, list | tuple) and len(point) > 1 else None
        if isinstance(v, int | float) and not math.isnan(v):
            out.append(float(v))
    return out


def series_points(series: dict[str, Any]) -> list[tuple[float, float]]:
    out = []
    for point in series.get("values") or []:
        if isinstance(point, list | tuple) and len(point) > 1:
            t, v = point[0], point[1]
            if isinstance(v, int | float) and not math.isnan(v):
                out.append((float(t), float(v)))
    return out


def workload_of(pod: p.Pod) -> tuple[str, str]:
    """(kind, name) of what runs the pod: checkout-api-7d9c6b-xk2p → (Deployment, checkout-api)."""
    owner = pod["owner"]
    name = str(owner["name"] if owner and owner["name"] else pod["name"])
    kind = str(owner["kind"] if owner and owner["kind"] else "Pod")
    if kind == "ReplicaSet" and "-" in name:
        return "Deployment", name.rsplit("-", 1)[0]
    return kind, name


def workload_ref(pod: p.Pod, ns: str) -> Ref:
    """What runs the pod, as a chain's subject (kind, namespace, name)."""
    kind, name = workload_of(pod)
    return Ref(kind, ns, name)


class Facts:
    def __init__(self, evidence: Iterable[Evidence]) -> None:
        self.evidence = list(evidence)
        self._by_key = {f"{e.tool} {canonical_args(e.args)}": e for e in self.evidence}
        self._by_purpose: dict[str, list[Evidence]] = defaultdict(list)
        for e in self.evidence:
            if e.purpose:
                self._by_purpose[e.purpose].append(e)

    # -- raw ----------

    def get(self, tool: str, **args: Any) -> Evidence | None:
        return self._by_key.get(f"{tool} {canonical_args(args)}")

    def has(self, tool: str, **args: Any) -> bool:
        return self.get(tool, **args) is not None

    def ok(self, tool: str, **args: Any) -> Evidence | None:
        ev = self.get(tool, **args)
        return ev if ev is not None and ev.status is ToolStatus.OK else None

    def answered(self, tool: str, **args: Any) -> bool:
        """Read with an answer (ok, or an empty answer): what exists is known."""
        ev = self.get(tool, **args)
        return ev is not None and ev.status in (ToolStatus.OK, ToolStatus.NO_DATA)

    def data(self, tool: str, **args: Any) -> tuple[Any, str | None]:
        """(data, evidence id) of an ok call, ([], None) otherwise."""
        ev = self.ok(tool, **args)
        return (ev.data, ev.id) if ev is not None else ([], None)

    def listed(self, tool: str, kind: type[T], **args: Any) -> tuple[list[T], str | None]:
        data, eid = self.data(tool, **args)
        return cast(list[T], list(data or [])), eid

    def all(self, tool: str) -> list[Evidence]:
        return [e for e in self.evidence if e.tool == tool]

    def purpose(self, purpose: str) -> list[Evidence]:
        """Evidence read for `purpose` (e.g. a metric signal), ok ones only."""
        return [e for e in self._by_purpose.get(purpose, []) if e.status is ToolStatus.OK]

    def unavailable(self) -> list[Evidence]:
        """Calls that failed because a backend was down, slow or refused us."""
        return [
            e
            for e in self.evidence
            if e.status in (ToolStatus.ERROR, ToolStatus.DENIED)
            and e.error_kind
            in (ErrorKind.UNREACHABLE, ErrorKind.TIMEOUT, ErrorKind.DENIED, ErrorKind.BACKEND)
        ]

    # -- typed lists ----------

    def pods(self, ns: str) -> tuple[list[p.Pod], str | None]:
        return self.listed("k8s.pods", p.Pod, namespace=ns)

    def deployments(self, ns: str) -> tuple[list[p.Deployment], str | None]:
        return self.listed("k8s.deployments", p.Deployment, namespace=ns)

    def statefulsets(self, ns: str) -> tuple[list[p.StatefulSet], str | None]:
        return self.listed("k8s.statefulsets", p.StatefulSet, namespace=ns)

    def daemonsets(self, ns: str) -> tuple[list[p.DaemonSet], str | None]:
        return self.listed("k8s.daemonsets", p.DaemonSet, namespace=ns)

    def jobs(self, ns: str) -> tuple[list[p.Job], str | None]:
        return self.listed("k8s.jobs", p.Job, namespace=ns)

    def cronjobs(self, ns: str) -> tuple[list[p.CronJob], str | None]:
        return self.listed("k8s.cronjobs", p.CronJob, namespace=ns)

    def services(self, ns: str) -> tuple[list[p.Service], str | None]:
        return self.listed("k8s.services", p.Service, namespace=ns)

    def find_daemonsets(self) -> tuple[list[p.FoundDaemonSet], str | None]:
        return self.listed("k8s.find_daemonsets", p.FoundDaemonSet)

    def find_services(self, name: str) -> tuple[list[p.FoundService], str | None]:
        return self.listed("k8s.find_services", p.FoundService, service=name)

    def find_ingresses(self, host: str) -> tuple[list[p.FoundIngress], str | None]:
        return self.listed("k8s.find_ingresses", p.FoundIngress, host=host)

    def pvcs(self, ns: str) -> tuple[list[p.PVC], str | None]:
        return self.listed("k8s.pvcs", p.PVC, namespace=ns)

    def hpas(self, ns: str) -> tuple[list[p.HPA], str | None]:
        return self.listed("k8s.hpas", p.HPA, namespace=ns)

    def ingresses(self, ns: str) -> tuple[list[p.Ingress], str | None]:
        return self.listed("k8s.ingresses", p.Ingress, namespace=ns)

    def network_policies(self, ns: str) -> tuple[list[p.NetworkPolicy], str | None]:
        return self.listed("k8s.network_policies", p.NetworkPolicy, namespace=ns)

    def quotas(self, ns: str) -> tuple[list[p.ResourceQuota], str | None]:
        return self.listed("k8s.resource_quotas", p.ResourceQuota, namespace=ns)

    def limit_ranges(self, ns: str) -> tuple[list[p.LimitRange], str | None]:
        return self.listed("k8s.limit_ranges", p.LimitRange, namespace=ns)

    def pdbs(self, ns: str) -> tuple[list[p.PDB], str | None]:
        return self.listed("k8s.pdbs", p.PDB, namespace=ns)

    def nodes(self) -> tuple[list[p.Node], str | None]:
        """Every node when they were listed, else the nodes read one by one (k8s.node)."""
        listed, nid = self.listed("k8s.nodes", p.Node)
        if nid is not None:
            return listed, nid
        one = [e for e in self.all("k8s.node") if e.ok and e.data]
        return [n for e in one for n in e.data], (one[0].id if one else None)

    def persistent_volumes(self) -> tuple[list[p.PersistentVolume], str | None]:
        return self.listed("k8s.persistent_volumes", p.PersistentVolume)

    def storage_classes(self) -> tuple[list[p.StorageClass], str | None]:
        return self.listed("k8s.storage_classes", p.StorageClass)

    def ingress_classes(self) -> tuple[list[p.IngressClass], str | None]:
        return self.listed("k8s.ingress_classes", p.IngressClass)

    def service_accounts(self, ns: str) -> tuple[list[p.ServiceAccount], str | None]:
        return self.listed("k8s.service_accounts", p.ServiceAccount, namespace=ns)

    def find_pods(self, selector: str) -> tuple[list[p.PodRef], str | None]:
        return self.listed("k8s.find_pods", p.PodRef, label_selector=selector)

    def pods_on_node(self, node: str) -> tuple[list[p.PodRef], str | None]:
        return self.listed("k8s.pods_on_node", p.PodRef, node=node)

    def webhooks(self) -> tuple[list[p.Webhook], str | None]:
        return self.listed("k8s.webhooks", p.Webhook)

    def warnings(self, ns: str) -> tuple[list[p.Event], str | None]:
        return self.listed("k8s.events", p.Event, namespace=ns, warnings_only=True)

    def configmap_names(self, ns: str) -> tuple[list[str], str | None]:
        return self.listed("k8s.configmap_names", str, namespace=ns)

    def metric_names(self, selector: str) -> set[str]:
        for e in self.all("prom.metric_names"):
            if e.ok and e.args.get("selector") == selector:
                return {str(n) for n in e.data or []}
        return set()

    # -- single objects ----------

    def rbac(self, ns: str) -> tuple[p.RBAC | None, str | None]:
        data, eid = self.data("k8s.rbac", namespace=ns)
        return (cast(p.RBAC, data) if data else None), eid

    def history(self, ns: str, deployment: str) -> tuple[p.RolloutHistory | None, str | None]:
        data, eid = self.data("k8s.rollout_history", namespace=ns, deployment=deployment)
        return (cast(p.RolloutHistory, data) if data else None), eid

    def endpoints(self, ns: str, service: str) -> tuple[p.Endpoints | None, str | None]:
        data, eid = self.data("k8s.endpoints", namespace=ns, service=service)
        return (cast(p.Endpoints, data) if data else None), eid

    def logs(
        self, ns: str, pod: str, container: str | None, previous: bool
    ) -> tuple[list[str], str | None]:
        args: dict[str, Any] = {"namespace": ns, "pod": pod, "container": container}
        if previous:
            args["previous"] = True
        data, eid = self.data("k8s.logs", **args)
        return [str(x) for x in data or []], eid

    def events_about(self, ns: str, name: str) -> tuple[list[p.Event], str | None]:
        """Warning events about one object: its own read if made, else from the survey."""
        own, oid = self.listed("k8s.events", p.Event, namespace=ns, object_name=name)
        if own:
            return own, oid
        evs, eid = self.warnings(ns)
        mine = [e for e in evs if e["object"]["name"] == name]
        return mine, (eid if mine else None)

    # -- relations ----------

    def pods_of(self, ns: str, kind: str, name: str) -> list[p.Pod]:
        pods, _ = self.pods(ns)
        return [x for x in pods if workload_of(x) == (kind, name) or _job_of(x, kind, name)]

    def services_selecting(self, ns: str, pod: p.Pod) -> list[p.Service]:
        services, _ = self.services(ns)
        return [s for s in services if selects(s["selector"], pod["labels"])]

    def workload_pods(self, ns: str) -> dict[tuple[str, str], list[p.Pod]]:
        pods, _ = self.pods(ns)
        out: dict[tuple[str, str], list[p.Pod]] = defaultdict(list)
        for x in pods:
            out[workload_of(x)].append(x)
        return out


def _job_of(pod: p.Pod, kind: str, name: str) -> bool:
    """A CronJob's pods belong to it through their Job (name-<schedule hash>)."""
    owner = pod["owner"]
    return (
        kind == "CronJob"
        and owner is not None
        and owner.get("kind") == "Job"
        and str(owner.get("name") or "").startswith(name + "-")
    )
