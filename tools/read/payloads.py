"""The typed payloads the read tools return: one TypedDict per kind of object, in one module.

`tools/read/shapes.py` builds them from the apiserver's JSON; detectors, the judge and the
renderers read them through these types (`Facts` in the rules planner casts an ok result's
data to the payload of its tool). TypedDicts, not models: evidence travels through the
checkpointer as plain JSON, and a payload read back is the same dict it was when it was made,
so typing it costs nothing at run time while mypy checks every field a reader touches.

Secrets never appear here: env *names* and the ConfigMaps/Secrets *referenced*, never values;
ConfigMap names, never data.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict


class ContainerState(TypedDict, total=False):
    kind: Literal["waiting", "running", "terminated"]
    reason: str
    message: str
    exit_code: int
    started_at: str
    finished_at: str


class Resources(TypedDict):
    limits: dict[str, str]
    requests: dict[str, str]


class Container(TypedDict):
    name: str
    image: str | None
    ready: bool
    restarts: int
    state: ContainerState | None
    last_terminated: ContainerState | None
    limits: dict[str, str]
    requests: dict[str, str]


class Owner(TypedDict):
    kind: str | None
    name: str | None


class Condition(TypedDict, total=False):
    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str


class Toleration(TypedDict, total=False):
    key: str
    operator: str
    value: str
    effect: str


class Pod(TypedDict):
    name: str
    phase: str | None
    node: str | None
    created: str | None
    labels: dict[str, str]
    owner: Owner | None
    ready: bool
    conditions: list[Condition]
    containers: list[Container]
    node_selector: dict[str, str]
    tolerations: list[Toleration]
    configmaps: list[str]
    secrets_referenced: list[str]
    claims: list[str]
    reason: str | None
    message: str | None


class EventObject(TypedDict):
    kind: str | None
    name: str | None


class Event(TypedDict):
    type: str | None
    reason: str | None
    message: str | None
    object: EventObject
    count: int
    last_seen: str | None
    source: str | None


class TemplateContainer(TypedDict):
    name: str | None
    image: str | None
    limits: dict[str, str]
    requests: dict[str, str]
    env_names: list[str]
    configmaps: list[str]
    secrets: list[str]


class Deployment(TypedDict):
    name: str
    created: str | None
    revision: str | None
    generation: int | None
    observed_generation: int | None
    replicas: int | None
    ready: int
    updated: int
    available: int
    unavailable: int
    selector: dict[str, str]
    template_labels: dict[str, str]
    containers: list[TemplateContainer]
    strategy: str | None
    conditions: list[Condition]
    paused: bool
    restart_stamp: str | None  # the triage.dev/restart template annotation (operation id)


class ReplicaSet(TypedDict):
    name: str
    created: str | None
    owner: Owner | None
    revision: str | None
    template_hash: str | None
    replicas: int
    ready: int
    available: int
    images: list[str]


class RolloutHistory(TypedDict):
    deployment: Deployment
    revisions: list[ReplicaSet]


class Taint(TypedDict, total=False):
    key: str
    value: str
    effect: str


class Node(TypedDict):
    name: str
    labels: dict[str, str]
    unschedulable: bool
    taints: list[Taint]
    allocatable: dict[str, str]
    conditions: list[Condition]


class ServicePort(TypedDict, total=False):
    name: str
    port: int
    targetPort: int | str
    protocol: str


class Service(TypedDict):
    name: str
    type: str | None
    selector: dict[str, str]
    ports: list[ServicePort]


class Endpoints(TypedDict):
    service: str
    ready: int
    not_ready: int
    pods: list[str]


class PVC(TypedDict):
    name: str
    phase: str | None
    storage_class: str | None
    requested: str | None
    volume: str | None


class StorageClass(TypedDict):
    name: str
    provisioner: str | None
    default: bool


class MetricValue(TypedDict):
    name: str | None
    utilization: int | None
    value: str | None


class MetricTarget(TypedDict):
    name: str | None
    utilization: int | None


class ScaleTarget(TypedDict):
    kind: str | None
    name: str | None


class HPA(TypedDict):
    name: str
    target: ScaleTarget
    min_replicas: int
    max_replicas: int | None
    current_replicas: int | None
    desired_replicas: int | None
    current_metrics: list[MetricValue]
    target_metrics: list[MetricTarget]
    conditions: list[Condition]


class Job(TypedDict):
    name: str
    created: str | None
    backoff_limit: int
    active: int
    succeeded: int
    failed: int
    conditions: list[Condition]


class NamespaceInfo(TypedDict):
    name: str
    phase: str | None


class RCAReportRead(TypedDict):
    name: str
    uid: str | None
    resource_version: str | None
    spec_digest: str | None
    draft_digest: str | None
    attempt: int | None
    draft: dict[str, Any] | None
    outcome: str | None


class RangeSeries(TypedDict):
    labels: dict[str, str]
    values: list[tuple[float, float]]


class InstantSample(TypedDict):
    labels: dict[str, str]
    value: float


LogLines = list[str]
