"""The read registry: every tool the planner and the judge may call, and nothing that writes.

Tools are named (`k8s.pods`, `prom.range`, …), described for a model, and take a pydantic
argument model validated before any request. The registry is the only door: a planner or the
judge holds a `ReadTools` and can do nothing else. Mutations live in a different registry, in
modules this one may not import (import-linter contract).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tools.errors import truncate
from tools.read.kube import KubeReader
from tools.read.prometheus import PrometheusReader
from tools.redact import DEFAULT
from tools.results import ErrorKind, ToolResult, ToolStatus, clip

log = logging.getLogger("triage.tools")

_NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NamespaceArgs(_Args):
    namespace: str = Field(pattern=_NAME, max_length=63)


class PodsArgs(NamespaceArgs):
    label_selector: str | None = Field(default=None, max_length=512)
    field_selector: str | None = Field(default=None, max_length=512)


class EventsArgs(NamespaceArgs):
    object_name: str | None = Field(default=None, pattern=_NAME, max_length=253)
    object_kind: str | None = Field(default=None, max_length=63)
    warnings_only: bool = False


class ConfigMapArgs(NamespaceArgs):
    name: str = Field(pattern=_NAME, max_length=253)


class LogsArgs(NamespaceArgs):
    pod: str = Field(pattern=_NAME, max_length=253)
    container: str | None = Field(default=None, pattern=_NAME, max_length=63)
    previous: bool = False
    tail_lines: int | None = Field(default=None, ge=1, le=2000)


class SelectorArgs(NamespaceArgs):
    label_selector: str | None = Field(default=None, max_length=512)


class DeploymentArgs(NamespaceArgs):
    deployment: str = Field(pattern=_NAME, max_length=253)


class ServiceArgs(NamespaceArgs):
    service: str = Field(pattern=_NAME, max_length=253)


class ReportArgs(NamespaceArgs):
    name: str = Field(pattern=_NAME, max_length=253)


class NodesArgs(_Args):
    label_selector: str | None = Field(default=None, max_length=512)


class FindPodsArgs(_Args):
    label_selector: str = Field(min_length=3, max_length=512)


class NodePodsArgs(_Args):
    node: str = Field(min_length=1, max_length=253)


class ServiceNameArgs(_Args):
    service: str = Field(pattern=_NAME, max_length=63)


class HostArgs(_Args):
    # a DNS name as a user writes it in a URL (lower-cased by the caller)
    host: str = Field(pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", max_length=253)


class NoArgs(_Args):
    pass


class MetricNamesArgs(_Args):
    selector: str = Field(min_length=2, max_length=500, pattern=r"^\{.*\}$")
    start: float
    end: float


# A bound on what a planner (or a model) may send: the error-ratio query ORs ten label
# conventions, each with its sparse-scrape fallback window, ~3,000 characters at the longest
# namespace name.
MAX_QUERY_CHARS = 4000


class InstantQueryArgs(_Args):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    at: float | None = None


class RangeQueryArgs(_Args):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    start: float
    end: float
    step_s: float | None = Field(default=None, gt=0)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    args: type[_Args]


SPECS: tuple[ToolSpec, ...] = (
    ToolSpec("k8s.namespace", "Check that a namespace exists.", NamespaceArgs),
    ToolSpec(
        "k8s.pods",
        "Pods with phase, readiness, container state, restarts and last termination "
        "(reason, exit code).",
        PodsArgs,
    ),
    ToolSpec(
        "k8s.events",
        "Events in a namespace, optionally for one object; warnings only if asked.",
        EventsArgs,
    ),
    ToolSpec(
        "k8s.logs",
        "Last lines of a container's log; previous=true reads the crashed instance.",
        LogsArgs,
    ),
    ToolSpec("k8s.deployments", "Deployments with replica counts and conditions.", SelectorArgs),
    ToolSpec(
        "k8s.rollout_history",
        "A deployment's ReplicaSets by revision: images, creation time, readiness.",
        DeploymentArgs,
    ),
    ToolSpec("k8s.nodes", "Nodes with allocatable resources, taints and conditions.", NodesArgs),
    ToolSpec(
        "k8s.node",
        "One node by name (as k8s.nodes shapes it): the node a pod in question runs on.",
        NodePodsArgs,
    ),
    ToolSpec(
        "k8s.find_pods",
        "Pods in every namespace the reader may list that match a label selector (required): "
        "namespace, name, phase, readiness, container names.",
        FindPodsArgs,
    ),
    ToolSpec(
        "k8s.pods_on_node",
        "Pods of every namespace the reader may list that run on one node (where a drain or a "
        "node's failure lands): namespace, name, phase, readiness, labels.",
        NodePodsArgs,
    ),
    ToolSpec("k8s.services", "Services and their selectors.", NamespaceArgs),
    ToolSpec(
        "k8s.find_services",
        "Services of one name in every namespace the reader may list (where a dependency "
        "lives when the namespace a caller names has none): namespace, selector, ports.",
        ServiceNameArgs,
    ),
    ToolSpec(
        "k8s.find_ingresses",
        "Ingresses of every namespace the reader may list that route one host (who serves a "
        "URL the user names): namespace, class, backends.",
        HostArgs,
    ),
    ToolSpec(
        "k8s.find_daemonsets",
        "DaemonSets of every namespace the reader may list (the cluster's own agents, the "
        "network plugin among them): namespace, name, ready/desired, template.",
        NoArgs,
    ),
    ToolSpec("k8s.endpoints", "Ready and not-ready endpoints behind a service.", ServiceArgs),
    ToolSpec("k8s.pvcs", "PersistentVolumeClaims with phase and storage class.", NamespaceArgs),
    ToolSpec("k8s.storage_classes", "StorageClasses that exist in the cluster.", NoArgs),
    ToolSpec(
        "k8s.persistent_volumes",
        "PersistentVolumes: capacity, access modes, storage class, phase and the claim each "
        "is bound or reserved for (what a Pending claim could bind to).",
        NoArgs,
    ),
    ToolSpec("k8s.hpas", "HorizontalPodAutoscalers with current/min/max replicas.", NamespaceArgs),
    ToolSpec("k8s.jobs", "Jobs with succeeded/failed counts and conditions.", NamespaceArgs),
    ToolSpec("k8s.configmap_names", "Names of the ConfigMaps in a namespace.", NamespaceArgs),
    ToolSpec(
        "k8s.configmap_keys",
        "The keys (never the values) of one ConfigMap: what a volume's items or a "
        "configMapKeyRef can find in it.",
        ConfigMapArgs,
    ),
    ToolSpec(
        "k8s.statefulsets",
        "StatefulSets with replicas, governing service and volume claim templates.",
        NamespaceArgs,
    ),
    ToolSpec("k8s.daemonsets", "DaemonSets with desired/ready counts.", NamespaceArgs),
    ToolSpec(
        "k8s.cronjobs",
        "CronJobs with schedule, suspend, concurrency policy, last schedule and active jobs.",
        NamespaceArgs,
    ),
    ToolSpec("k8s.pdbs", "PodDisruptionBudgets with allowed disruptions.", NamespaceArgs),
    ToolSpec(
        "k8s.ingresses", "Ingresses with class, TLS secret names and backends.", NamespaceArgs
    ),
    ToolSpec("k8s.ingress_classes", "IngressClasses that exist in the cluster.", NoArgs),
    ToolSpec(
        "k8s.network_policies",
        "NetworkPolicies with their pod selector and ingress/egress rules.",
        NamespaceArgs,
    ),
    ToolSpec("k8s.resource_quotas", "ResourceQuotas with hard limits and usage.", NamespaceArgs),
    ToolSpec("k8s.limit_ranges", "LimitRanges with min/max/default per type.", NamespaceArgs),
    ToolSpec(
        "k8s.service_accounts",
        "ServiceAccounts with their annotations (the cloud identity each is bound to); never "
        "their tokens.",
        NamespaceArgs,
    ),
    ToolSpec(
        "k8s.rbac",
        "RoleBindings of a namespace with their Roles/ClusterRoles and rules.",
        NamespaceArgs,
    ),
    ToolSpec(
        "k8s.webhooks",
        "Admission webhooks (validating, mutating): service, failurePolicy, rules.",
        NoArgs,
    ),
    ToolSpec(
        "k8s.rcareport",
        "One RCAReport (a submitted RCA) as stored, with the digest of its stored draft.",
        ReportArgs,
    ),
    ToolSpec(
        "prom.metric_names",
        'Metric names with series matching a selector (e.g. {namespace="shop"}) in a window.',
        MetricNamesArgs,
    ),
    ToolSpec("prom.query", "PromQL instant query.", InstantQueryArgs),
    ToolSpec("prom.range", "PromQL range query between unix timestamps.", RangeQueryArgs),
)
SPEC_BY_NAME = {s.name: s for s in SPECS}


class ReadTools(Protocol):
    """What a planner or the judge holds: call a read tool by name, nothing more."""

    def call(self, name: str, args: dict[str, Any]) -> ToolResult: ...


def canonical_args(args: dict[str, Any]) -> str:
    """A stable key for a call's arguments (drops None values)."""
    return json.dumps({k: v for k, v in args.items() if v is not None}, sort_keys=True)


def invalid_call(name: str, args: dict[str, Any], message: str) -> ToolResult:
    return ToolResult(
        tool=name,
        args=args,
        status=ToolStatus.ERROR,
        excerpt=truncate(message, 300),
        error_kind=ErrorKind.INVALID,
    )


def validate(name: str, args: dict[str, Any]) -> _Args | ToolResult:
    """The argument model for a call, or an `error/invalid` result naming the problem."""
    spec = SPEC_BY_NAME.get(name)
    if spec is None:
        return invalid_call(name, args, f"unknown read tool {name!r}")
    try:
        return spec.args.model_validate(args)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in e.errors()
        )
        return invalid_call(name, args, f"invalid arguments for {name}: {problems}")


class ReadRegistry:
    """Live read tools over a KubeReader and an optional PrometheusReader."""

    def __init__(self, kube: KubeReader, prometheus: PrometheusReader | None = None) -> None:
        self.kube = kube
        self.prometheus = prometheus
        k = kube
        self._dispatch: dict[str, Callable[[Any], ToolResult]] = {
            "k8s.namespace": lambda a: k.namespace(a.namespace),
            "k8s.pods": lambda a: k.pods(a.namespace, a.label_selector, a.field_selector),
            "k8s.events": lambda a: k.events(
                a.namespace, a.object_name, a.object_kind, a.warnings_only
            ),
            "k8s.logs": lambda a: k.logs(a.namespace, a.pod, a.container, a.previous, a.tail_lines),
            "k8s.deployments": lambda a: k.deployments(a.namespace, a.label_selector),
            "k8s.rollout_history": lambda a: k.rollout_history(a.namespace, a.deployment),
            "k8s.nodes": lambda a: k.nodes(a.label_selector),
            "k8s.node": lambda a: k.node(a.node),
            "k8s.find_pods": lambda a: k.find_pods(a.label_selector),
            "k8s.pods_on_node": lambda a: k.pods_on_node(a.node),
            "k8s.services": lambda a: k.services(a.namespace),
            "k8s.find_services": lambda a: k.find_services(a.service),
            "k8s.find_ingresses": lambda a: k.find_ingresses(a.host),
            "k8s.find_daemonsets": lambda a: k.find_daemonsets(),
            "k8s.endpoints": lambda a: k.endpoints(a.namespace, a.service),
            "k8s.pvcs": lambda a: k.pvcs(a.namespace),
            "k8s.storage_classes": lambda a: k.storage_classes(),
            "k8s.persistent_volumes": lambda a: k.persistent_volumes(),
            "k8s.hpas": lambda a: k.hpas(a.namespace),
            "k8s.jobs": lambda a: k.jobs(a.namespace),
            "k8s.configmap_names": lambda a: k.configmap_names(a.namespace),
            "k8s.configmap_keys": lambda a: k.configmap_keys(a.namespace, a.name),
            "k8s.statefulsets": lambda a: k.statefulsets(a.namespace),
            "k8s.daemonsets": lambda a: k.daemonsets(a.namespace),
            "k8s.cronjobs": lambda a: k.cronjobs(a.namespace),
            "k8s.pdbs": lambda a: k.pdbs(a.namespace),
            "k8s.ingresses": lambda a: k.ingresses(a.namespace),
            "k8s.ingress_classes": lambda a: k.ingress_classes(),
            "k8s.network_policies": lambda a: k.network_policies(a.namespace),
            "k8s.resource_quotas": lambda a: k.resource_quotas(a.namespace),
            "k8s.limit_ranges": lambda a: k.limit_ranges(a.namespace),
            "k8s.service_accounts": lambda a: k.service_accounts(a.namespace),
            "k8s.rbac": lambda a: k.rbac(a.namespace),
            "k8s.webhooks": lambda a: k.webhooks(),
            "prom.metric_names": self._prom_names,
            "k8s.rcareport": lambda a: k.rcareport(a.namespace, a.name),
            "prom.query": self._prom_query,
            "prom.range": self._prom_range,
        }

    def _no_prometheus(self, name: str, args: _Args) -> ToolResult:
        return ToolResult(
            tool=name,
            args=args.model_dump(exclude_none=True),
            status=ToolStatus.ERROR,
            excerpt="Prometheus is not configured (set TRIAGE_PROMETHEUS__URL or --prometheus-url)",
            error_kind=ErrorKind.UNREACHABLE,
        )

    def _prom_names(self, a: MetricNamesArgs) -> ToolResult:
        if self.prometheus is None:
            return self._no_prometheus("prom.metric_names", a)
        return self.prometheus.metric_names(a.selector, a.start, a.end)

    def _prom_query(self, a: InstantQueryArgs) -> ToolResult:
        if self.prometheus is None:
            return self._no_prometheus("prom.query", a)
        return self.prometheus.query(a.query, a.at)

    def _prom_range(self, a: RangeQueryArgs) -> ToolResult:
        if self.prometheus is None:
            return self._no_prometheus("prom.range", a)
        return self.prometheus.range(a.query, a.start, a.end, a.step_s)

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        """The call's result; a failure of any kind is a result, never an exception.

        Tools map the failures they know (HTTP statuses, timeouts) themselves; anything else
        (an unparseable answer, a bug) is an `error` with its type, and logged: invoked is not
        succeeded, and a bad answer must not end an investigation or a judgement.
        """
        parsed = validate(name, args)
        if isinstance(parsed, ToolResult):
            return parsed
        try:
            return self._dispatch[name](parsed)
        except Exception as e:  # recorded as a failed result: see the docstring
            log.warning("read tool %s failed unexpectedly: %s", name, e, exc_info=True)
            return ToolResult(
                tool=name,
                args=args,
                status=ToolStatus.ERROR,
                excerpt=clip(DEFAULT.text(f"{type(e).__name__}: {e}")),
                error_kind=ErrorKind.BACKEND,
            )
