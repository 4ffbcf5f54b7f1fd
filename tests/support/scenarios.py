"""Incident scenarios: the format, the loader and the pytest fixtures that apply them.

A scenario (tests/scenarios/*.yaml, format in tests/scenarios/README.md) is one incident an
engineer could ask Triage about: the Kubernetes objects that make it happen, the steps the
controllers would not take by themselves, the container logs, the metric series Prometheus
should hold, the question in the engineer's words and the root cause we expect back.

The decision this module embodies: a scenario *describes* a failure, the real control plane
*produces* it. Pods crash because kwok's sim stages make them crash, pods stay Pending because
the real scheduler cannot place them, a Job fails because the real Job controller counts its
failed pods. The loader only writes what a real cluster would have been written by something we
do not run (a kubelet's logs, an HPA controller's status, an event from an external system), and
`wait_for` proves the cluster reached the state the scenario claims before anyone investigates.

Metric series are relative to "now" and generated without a cluster (`scenario_series`), so
Prometheus can be backfilled independently of the apiserver.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import pytest
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tests.support.observability import PrometheusFactory, PrometheusServer, Series

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
NAMESPACE_PREFIX = "scn-"
DIGEST_ANNOTATION = "triage.dev/scenario-digest"

# The contract with the rules planner: the root cause classes a scenario may expect.
ROOT_CAUSE_CLASSES: frozenset[str] = frozenset(
    {
        "bad_config_crashloop",
        "oom_killed",
        "image_pull",
        "readiness_probe_failing",
        "insufficient_resources",
        "unschedulable_placement",
        "missing_config_reference",
        "service_selector_mismatch",
        "pvc_pending",
        "hpa_at_max",
        "bad_rollout",
        "job_backoff_limit",
        "error_rate_after_deploy",
        "no_fault",
    }
)

# The kwok sim contract (annotation on pod templates) and the pod states `wait_for` can name.
SIM_STATE_ANNOTATION = "sim.triage.dev/state"
SIM_STATES = frozenset(
    {"running", "crashloop", "oomkilled", "imagepull", "not-ready", "config-error", "fail"}
)
PodState = Literal[
    "ready",
    "running",
    "not-ready",
    "crashloop",
    "oomkilled",
    "imagepull",
    "config-error",
    "pending",
    "failed",
]


class ScenarioError(Exception):
    """A scenario file is invalid, or the cluster refused or never reached what it describes."""


# --------------------------------------------------------------------------------------------
# Durations and quantities
# --------------------------------------------------------------------------------------------

_DURATION = re.compile(r"^\s*(-)?\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, None: 1.0}
_QUANTITY = re.compile(r"^\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(Ki|Mi|Gi|Ti|k|M|G|T|m)?\s*$")
_QUANTITY_FACTORS = {
    None: 1.0,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2.0**10,
    "Mi": 2.0**20,
    "Gi": 2.0**30,
    "Ti": 2.0**40,
}


def parse_duration(value: str | float) -> float:
    """Seconds from `-3h`, `90s`, `1.5m`, `0` or a bare number (seconds); keeps the sign."""
    if isinstance(value, bool):
        raise ValueError(f"not a duration: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    match = _DURATION.match(value)
    if match is None:
        raise ValueError(f"not a duration: {value!r} (use e.g. -3h, -20m, 60s)")
    sign, number, unit = match.groups()
    seconds = float(number) * _UNITS[unit]
    return -seconds if sign else seconds


def parse_quantity(value: str | float) -> float:
    """A number from `256Mi`, `1.5G`, `250m` (Kubernetes quantity suffixes) or a plain number."""
    if isinstance(value, bool):
        raise ValueError(f"not a quantity: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    match = _QUANTITY.match(value)
    if match is None:
        raise ValueError(f"not a quantity: {value!r}")
    number, suffix = match.groups()
    return float(number) * _QUANTITY_FACTORS[suffix]


Duration = Annotated[float, Field(description="seconds; YAML may write -3h, 20m, 60s")]
Quantity = Annotated[float, Field(description="number; YAML may write 256Mi, 1.5G, 250m")]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


def _duration_fields(*names: str) -> Any:
    def convert(cls: type, value: Any) -> Any:
        return parse_duration(value) if isinstance(value, str) else value

    return field_validator(*names, mode="before")(convert)


def _quantity_fields(*names: str) -> Any:
    def convert(cls: type, value: Any) -> Any:
        return parse_quantity(value) if isinstance(value, str) else value

    return field_validator(*names, mode="before")(convert)


# --------------------------------------------------------------------------------------------
# Metric value generators (see README: "Metrics")
# --------------------------------------------------------------------------------------------


class Constant(_Model):
    constant: Quantity
    _q = _quantity_fields("constant")

    def at(self, t: float) -> float:
        return self.constant


class RampSpec(_Model):
    start: Quantity
    end: Quantity
    from_: Duration = Field(alias="from")
    to: Duration = 0.0
    _q = _quantity_fields("start", "end")
    _d = _duration_fields("from_", "to")

    @model_validator(mode="after")
    def _ordered(self) -> RampSpec:
        if not self.from_ < self.to <= 0:
            raise ValueError("ramp needs from < to <= 0")
        return self


class Ramp(_Model):
    ramp: RampSpec

    def at(self, t: float) -> float:
        r = self.ramp
        if t <= r.from_:
            return r.start
        if t >= r.to:
            return r.end
        return r.start + (r.end - r.start) * (t - r.from_) / (r.to - r.from_)


class StepAt(_Model):
    step_at: Duration
    before: Quantity
    after: Quantity
    _d = _duration_fields("step_at")
    _q = _quantity_fields("before", "after")

    def at(self, t: float) -> float:
        return self.after if t >= self.step_at else self.before


class SawtoothSpec(_Model):
    min: Quantity
    max: Quantity
    period: Duration
    _q = _quantity_fields("min", "max")
    _d = _duration_fields("period")

    @field_validator("period")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("period must be positive")
        return value


class Sawtooth(_Model):
    """Climbs linearly from min to max over each period, then drops; peaks at now, -period, ..."""

    sawtooth: SawtoothSpec

    def at(self, t: float) -> float:
        s = self.sawtooth
        into = (-t) % s.period  # seconds until the next peak
        frac = 1.0 if into == 0 else 1.0 - into / s.period
        return s.min + (s.max - s.min) * frac


class Explicit(_Model):
    """One value per point, from `from` on; the last value holds for the remaining points."""

    list: tuple[Quantity, ...] = Field(min_length=1)

    @field_validator("list", mode="before")
    @classmethod
    def _quantities(cls, value: Any) -> Any:
        if isinstance(value, Sequence) and not isinstance(value, str):
            return [parse_quantity(v) if isinstance(v, str) else v for v in value]
        return value


ValueSpec = Constant | Ramp | StepAt | Sawtooth | Explicit


class PointsSpec(_Model):
    from_: Duration = Field(alias="from")
    to: Duration = 0.0
    step: Duration = 60.0
    values: ValueSpec
    _d = _duration_fields("from_", "to", "step")

    @field_validator("values", mode="before")
    @classmethod
    def _bare_list(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {"list": value}
        return value

    @model_validator(mode="after")
    def _window(self) -> PointsSpec:
        if self.step <= 0:
            raise ValueError("step must be positive")
        if not self.from_ < self.to <= 0:
            raise ValueError("points need from < to <= 0 (offsets relative to now)")
        if (self.to - self.from_) / self.step > 20_000:
            raise ValueError("more than 20000 points in one series; use a larger step")
        return self

    def offsets(self) -> list[float]:
        count = math.floor((self.to - self.from_) / self.step + 1e-9) + 1
        return [self.from_ + i * self.step for i in range(count)]


_METRIC_NAME = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]*$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class MetricSpec(_Model):
    """One series. Gauges take the generated values; counters take them as per-second rates."""

    name: str
    type: Literal["counter", "gauge"]
    labels: dict[str, str] = Field(default_factory=dict)
    points: PointsSpec
    start: Quantity = 0.0
    integer: bool = False
    _q = _quantity_fields("start")

    @field_validator("name")
    @classmethod
    def _metric_name(cls, value: str) -> str:
        if not _METRIC_NAME.match(value):
            raise ValueError(f"invalid metric name {value!r}")
        return value

    @field_validator("labels", mode="before")
    @classmethod
    def _label_values_as_text(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): str(v) for k, v in value.items()}
        return value

    @field_validator("labels")
    @classmethod
    def _label_names(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not _LABEL_NAME.match(key) or key.startswith("__"):
                raise ValueError(f"invalid label name {key!r}")
        if "namespace" in value:
            raise ValueError("do not set 'namespace': every series gets the scenario namespace")
        return value

    def generate(self) -> list[tuple[float, float]]:
        """(offset seconds relative to now, value) pairs, oldest first."""
        offsets = self.points.offsets()
        spec = self.points.values
        if isinstance(spec, Explicit):
            raw = [spec.list[min(i, len(spec.list) - 1)] for i in range(len(offsets))]
        else:
            raw = [spec.at(t) for t in offsets]
        if self.type == "gauge":
            values = raw
        else:
            if any(rate < 0 for rate in raw):
                raise ScenarioError(f"{self.name}: a counter's rate cannot be negative")
            values = []
            total = self.start
            for i, rate in enumerate(raw):
                if i:
                    total += rate * (offsets[i] - offsets[i - 1])
                values.append(total)
        if self.integer:
            values = [float(math.floor(v + 1e-9)) for v in values]
        return list(zip(offsets, values, strict=True))


# --------------------------------------------------------------------------------------------
# Conditions: what "applied" means (wait_for) and what the cluster tests assert
# --------------------------------------------------------------------------------------------


class PodsCheck(_Model):
    selector: dict[str, str]
    state: PodState
    count: int = Field(default=1, ge=1, description="at least this many pods in that state")


class PodsCondition(_Model):
    pods: PodsCheck


class EventCheck(_Model):
    reason: str
    kind: str | None = Field(default=None, description="involvedObject.kind")
    name_prefix: str | None = Field(default=None, description="involvedObject.name prefix")
    type: Literal["Normal", "Warning"] | None = None
    message_contains: str | None = None


class EventCondition(_Model):
    event: EventCheck


class PvcCheck(_Model):
    name: str
    phase: Literal["Pending", "Bound", "Lost"]


class PvcCondition(_Model):
    pvc: PvcCheck


class JobCheck(_Model):
    name: str
    condition: str = "Failed"
    reason: str | None = None


class JobCondition(_Model):
    job: JobCheck


class EndpointsCheck(_Model):
    name: str
    ready: int = Field(ge=0, description="exact number of ready addresses")
    not_ready: int | None = Field(default=None, ge=0, description="exact number, if given")


class EndpointsCondition(_Model):
    endpoints: EndpointsCheck


class DeploymentCheck(_Model):
    name: str
    available: int | None = Field(default=None, ge=0, description="status.availableReplicas")
    revision: int | None = Field(default=None, ge=1, description="current revision annotation")
    replicasets: int | None = Field(default=None, ge=1, description="ReplicaSets it owns")


class DeploymentCondition(_Model):
    deployment: DeploymentCheck


class HpaCheck(_Model):
    name: str
    current_replicas: int = Field(ge=0)


class HpaCondition(_Model):
    hpa: HpaCheck


Condition = (
    PodsCondition
    | EventCondition
    | PvcCondition
    | JobCondition
    | EndpointsCondition
    | DeploymentCondition
    | HpaCondition
)


class WaitFor(_Model):
    timeout_s: float = Field(default=90.0, gt=0, le=600)
    conditions: tuple[Condition, ...] = Field(min_length=1)


# --------------------------------------------------------------------------------------------
# Steps after apply, logs, expectations, the scenario itself
# --------------------------------------------------------------------------------------------


class ObjectRef(_Model):
    kind: str
    name: str


class PatchStep(_Model):
    """A change a person or CD system makes after the objects exist (e.g. a new image)."""

    action: Literal["patch"]
    kind: str
    name: str
    patch: dict[str, Any]
    patch_type: Literal["strategic", "merge"] = "strategic"


class StatusStep(_Model):
    """A status only a controller we do not run would write (the HPA controller)."""

    action: Literal["status"]
    kind: str
    name: str
    status: dict[str, Any]


class EventStep(_Model):
    """An event from something outside the control plane (CD system, external controller)."""

    action: Literal["event"]
    involved: ObjectRef
    type: Literal["Normal", "Warning"] = "Normal"
    reason: str
    message: str
    age: Duration = Field(default=0.0, description="how long ago it happened (>= 0)")
    count: int = Field(default=1, ge=1)
    source: str = "triage-scenario"
    _d = _duration_fields("age")

    @field_validator("age")
    @classmethod
    def _not_future(cls, value: float) -> float:
        return abs(value)


class WaitStep(_Model):
    """Wait for conditions before the next step (e.g. revision 1 serving before revision 2)."""

    action: Literal["wait"]
    timeout_s: float = Field(default=90.0, gt=0, le=600)
    conditions: tuple[Condition, ...] = Field(min_length=1)


Step = Annotated[PatchStep | StatusStep | EventStep | WaitStep, Field(discriminator="action")]


class LogSpec(_Model):
    """Log lines for the container of every pod matching the selector ({pod}, {namespace})."""

    selector: dict[str, str]
    container: str
    previous: tuple[str, ...] | None = None
    current: tuple[str, ...] | None = None

    @model_validator(mode="after")
    def _some_lines(self) -> LogSpec:
        if self.previous is None and self.current is None:
            raise ValueError("a log entry needs previous or current lines")
        return self


class Expect(_Model):
    root_cause_class: str
    keywords: tuple[str, ...] = Field(min_length=2, max_length=4)

    @field_validator("root_cause_class")
    @classmethod
    def _known_class(cls, value: str) -> str:
        if value not in ROOT_CAUSE_CLASSES:
            raise ValueError(f"unknown root_cause_class {value!r}")
        return value


_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class Scenario(_Model):
    name: str = Field(max_length=63 - len(NAMESPACE_PREFIX))
    description: str
    question: str
    target: ObjectRef
    objects: tuple[dict[str, Any], ...] = Field(min_length=1)
    after_apply: tuple[Step, ...] = ()
    logs: tuple[LogSpec, ...] = ()
    metrics: tuple[MetricSpec, ...] = ()
    wait_for: WaitFor
    expect: Expect

    @field_validator("name")
    @classmethod
    def _dns_label(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"name {value!r} must be a DNS label (lower case, digits, '-')")
        return value

    @field_validator("objects")
    @classmethod
    def _manifests(cls, value: tuple[dict[str, Any], ...]) -> tuple[dict[str, Any], ...]:
        for obj in value:
            where = f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
            for key in ("apiVersion", "kind", "metadata"):
                if key not in obj:
                    raise ValueError(f"object {where} has no {key}")
            if "name" not in obj["metadata"]:
                raise ValueError(f"object {where} has no metadata.name")
            if "namespace" in obj["metadata"]:
                raise ValueError(f"object {where}: leave metadata.namespace out")
            if obj["kind"] not in KINDS:
                raise ValueError(f"object {where}: kind not in the loader's table")
            state = _template_annotations(obj).get(SIM_STATE_ANNOTATION)
            if state is not None and state not in SIM_STATES:
                raise ValueError(f"object {where}: unknown sim state {state!r}")
        return value

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        names = {(o["kind"], o["metadata"]["name"]) for o in self.objects}
        if (self.target.kind, self.target.name) not in names:
            raise ValueError(f"target {self.target.kind}/{self.target.name} is not in objects")
        for step in self.after_apply:
            ref = step.involved if isinstance(step, EventStep) else step
            if isinstance(ref, WaitStep):
                continue
            if (ref.kind, ref.name) not in names:
                raise ValueError(f"{step.action} step names {ref.kind}/{ref.name}, not in objects")
        if "{namespace}" not in self.question:
            raise ValueError("the question must mention {namespace}")
        return self

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.name}"

    @property
    def rendered_question(self) -> str:
        return self.question.replace("{namespace}", self.namespace)

    def digest(self) -> str:
        """Changes whenever the file's meaning changes; marks a namespace as holding it."""
        raw = json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _template_annotations(obj: Mapping[str, Any]) -> dict[str, str]:
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        return dict(obj.get("metadata", {}).get("annotations") or {})
    if obj.get("kind") == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    template = spec.get("template") or {}
    return dict((template.get("metadata") or {}).get("annotations") or {})


def load_scenario(path: Path) -> Scenario:
    try:
        data = yaml.safe_load(path.read_text())
        scenario = Scenario.model_validate(data)
    except (yaml.YAMLError, ValueError) as e:
        raise ScenarioError(f"{path.name}: {e}") from e
    if path.stem != scenario.name:
        raise ScenarioError(f"{path.name}: file name must be <name>.yaml ({scenario.name})")
    return scenario


def load_scenarios(directory: Path = SCENARIO_DIR) -> list[Scenario]:
    """Every tests/scenarios/*.yaml, validated, sorted by name."""
    scenarios = [load_scenario(p) for p in sorted(Path(directory).glob("*.yaml"))]
    if not scenarios:
        raise ScenarioError(f"no scenarios in {directory}")
    return scenarios


# --------------------------------------------------------------------------------------------
# Metrics → Series for the Prometheus backfill
# --------------------------------------------------------------------------------------------


def series_points(
    scenario: Scenario,
) -> list[tuple[str, Literal["counter", "gauge"], dict[str, str], list[tuple[float, float]]]]:
    """(name, type, labels with namespace, points) for each metric: no Prometheus types needed."""
    out = []
    for metric in scenario.metrics:
        labels = {**metric.labels, "namespace": scenario.namespace}
        out.append((metric.name, metric.type, labels, metric.generate()))
    return out


def scenario_series(scenarios: Sequence[Scenario]) -> list[Series]:
    """Every scenario's metrics as observability `Series`, ready for the backfill."""
    return [
        Series(name=name, type=kind, labels=labels, samples=points)
        for scenario in scenarios
        for name, kind, labels, points in series_points(scenario)
    ]


# --------------------------------------------------------------------------------------------
# Talking to the apiserver: a small raw REST helper over the official client
# --------------------------------------------------------------------------------------------

# kind -> (apiVersion, plural). Every kind a scenario may create, patch or wait on.
KINDS: dict[str, tuple[str, str]] = {
    "Pod": ("v1", "pods"),
    "Service": ("v1", "services"),
    "ConfigMap": ("v1", "configmaps"),
    "Secret": ("v1", "secrets"),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims"),
    "ServiceAccount": ("v1", "serviceaccounts"),
    "Endpoints": ("v1", "endpoints"),
    "Event": ("v1", "events"),
    "Deployment": ("apps/v1", "deployments"),
    "ReplicaSet": ("apps/v1", "replicasets"),
    "StatefulSet": ("apps/v1", "statefulsets"),
    "DaemonSet": ("apps/v1", "daemonsets"),
    "Job": ("batch/v1", "jobs"),
    "CronJob": ("batch/v1", "cronjobs"),
    "HorizontalPodAutoscaler": ("autoscaling/v2", "horizontalpodautoscalers"),
    "PodDisruptionBudget": ("policy/v1", "poddisruptionbudgets"),
    "NetworkPolicy": ("networking.k8s.io/v1", "networkpolicies"),
    "Ingress": ("networking.k8s.io/v1", "ingresses"),
}


def _path(kind: str, namespace: str, name: str | None = None, sub: str | None = None) -> str:
    api_version, plural = KINDS[kind]
    base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    path = f"{base}/namespaces/{namespace}/{plural}"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


def _request(
    api: ApiClient,
    method: str,
    path: str,
    *,
    body: Any = None,
    content_type: str | None = None,
    query: Sequence[tuple[str, str]] | None = None,
    allow: Sequence[int] = (),
) -> dict[str, Any] | None:
    headers = {"Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    m, url, hdrs, payload, _ = api.param_serialize(
        method,
        path,
        query_params=list(query or []),
        header_params=headers,
        body=body,
        auth_settings=["BearerToken"],
    )
    resp = api.call_api(m, url, header_params=hdrs, body=payload, _request_timeout=30)
    data = resp.read()
    if resp.status in allow:
        return None
    if resp.status >= 300:
        raise ScenarioError(f"{method} {path}: HTTP {resp.status}: {data[:300]!r}")
    return json.loads(data) if data else {}


def get_json(api: ApiClient, path: str, **query: str) -> dict[str, Any]:
    out = _request(api, "GET", path, query=list(query.items()))
    assert out is not None
    return out


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def list_pods(api: ApiClient, namespace: str, selector: Mapping[str, str]) -> list[dict[str, Any]]:
    pods = get_json(api, _path("Pod", namespace), labelSelector=_selector(selector))
    return list(pods.get("items") or [])


# --------------------------------------------------------------------------------------------
# Reading the cluster state: pod states and conditions
# --------------------------------------------------------------------------------------------


def pod_states(pod: Mapping[str, Any]) -> set[str]:
    """The PodState names that describe this pod (a pod can be e.g. running and crashloop)."""
    status = pod.get("status") or {}
    phase = status.get("phase")
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    states: set[str] = set()
    if phase == "Pending" and not (pod.get("spec") or {}).get("nodeName"):
        states.add("pending")
    if phase == "Failed":
        states.add("failed")
    if phase == "Running":
        states.add("running")
        states.add("ready" if conditions.get("Ready") == "True" else "not-ready")
    for cs in status.get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        last = (cs.get("lastState") or {}).get("terminated") or {}
        current = (cs.get("state") or {}).get("terminated") or {}
        reason = waiting.get("reason")
        if reason == "CrashLoopBackOff":
            states.add("crashloop")
        if reason in ("ImagePullBackOff", "ErrImagePull"):
            states.add("imagepull")
        if reason == "CreateContainerConfigError":
            states.add("config-error")
        if "OOMKilled" in (last.get("reason"), current.get("reason")):
            states.add("oomkilled")
    return states


def _event_matches(event: Mapping[str, Any], check: EventCheck) -> bool:
    involved = event.get("involvedObject") or {}
    return (
        event.get("reason") == check.reason
        and (check.kind is None or involved.get("kind") == check.kind)
        and (
            check.name_prefix is None or str(involved.get("name", "")).startswith(check.name_prefix)
        )
        and (check.type is None or event.get("type") == check.type)
        and (
            check.message_contains is None or check.message_contains in (event.get("message") or "")
        )
    )


def check_condition(api: ApiClient, namespace: str, condition: Condition) -> tuple[bool, str]:
    """Whether the cluster holds the condition now, and what was seen (for error messages)."""
    if isinstance(condition, PodsCondition):
        c = condition.pods
        pods = list_pods(api, namespace, c.selector)
        seen = {p["metadata"]["name"]: sorted(pod_states(p)) for p in pods}
        hits = sum(1 for states in seen.values() if c.state in states)
        return hits >= c.count, f"pods {_selector(c.selector)} want {c.count}x {c.state}: {seen}"
    if isinstance(condition, EventCondition):
        events = get_json(api, _path("Event", namespace)).get("items") or []
        ok = any(_event_matches(e, condition.event) for e in events)
        reasons = sorted({str(e.get("reason")) for e in events})
        return ok, f"event {condition.event.reason}: reasons seen {reasons}"
    if isinstance(condition, PvcCondition):
        pvc = get_json(api, _path("PersistentVolumeClaim", namespace, condition.pvc.name))
        phase = (pvc.get("status") or {}).get("phase")
        return phase == condition.pvc.phase, f"pvc {condition.pvc.name} phase {phase}"
    if isinstance(condition, JobCondition):
        c = condition.job
        job = get_json(api, _path("Job", namespace, c.name))
        conds = (job.get("status") or {}).get("conditions") or []
        ok = any(
            x.get("type") == c.condition
            and x.get("status") == "True"
            and (c.reason is None or x.get("reason") == c.reason)
            for x in conds
        )
        return ok, f"job {c.name} conditions {[(x.get('type'), x.get('reason')) for x in conds]}"
    if isinstance(condition, EndpointsCondition):
        c = condition.endpoints
        ep = _request(api, "GET", _path("Endpoints", namespace, c.name), allow=(404,)) or {}
        subsets = ep.get("subsets") or []
        ready = sum(len(s.get("addresses") or []) for s in subsets)
        not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
        ok = bool(ep) and ready == c.ready and (c.not_ready is None or not_ready == c.not_ready)
        return ok, f"endpoints {c.name}: found={bool(ep)} ready={ready} not_ready={not_ready}"
    if isinstance(condition, DeploymentCondition):
        c = condition.deployment
        dep = get_json(api, _path("Deployment", namespace, c.name))
        available = (dep.get("status") or {}).get("availableReplicas") or 0
        revision = (dep["metadata"].get("annotations") or {}).get(
            "deployment.kubernetes.io/revision"
        )
        uid = dep["metadata"]["uid"]
        rss = [
            rs
            for rs in get_json(api, _path("ReplicaSet", namespace)).get("items") or []
            if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
        ]
        ok = (
            (c.available is None or available == c.available)
            and (c.revision is None or revision == str(c.revision))
            and (c.replicasets is None or len(rss) == c.replicasets)
        )
        return ok, f"deployment {c.name}: available={available} rev={revision} rs={len(rss)}"
    c_hpa = condition.hpa
    hpa = get_json(api, _path("HorizontalPodAutoscaler", namespace, c_hpa.name))
    current = (hpa.get("status") or {}).get("currentReplicas")
    return current == c_hpa.current_replicas, f"hpa {c_hpa.name} currentReplicas={current}"


def conditions_hold(
    api: ApiClient, namespace: str, conditions: Sequence[Condition]
) -> tuple[bool, list[str]]:
    results = [check_condition(api, namespace, c) for c in conditions]
    return all(ok for ok, _ in results), [detail for ok, detail in results if not ok]


def wait_conditions(
    api: ApiClient,
    namespace: str,
    conditions: Sequence[Condition],
    timeout_s: float,
    what: str,
    on_poll: Callable[[], None] | None = None,
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if on_poll is not None:
            on_poll()
        ok, missing = conditions_hold(api, namespace, conditions)
        if ok:
            return
        if time.monotonic() > deadline:
            raise ScenarioError(f"{what}: not reached in {timeout_s:.0f}s: {'; '.join(missing)}")
        time.sleep(0.5)


# --------------------------------------------------------------------------------------------
# Applying a scenario
# --------------------------------------------------------------------------------------------


def _apply_step(api: ApiClient, namespace: str, step: PatchStep | StatusStep | EventStep) -> None:
    if isinstance(step, PatchStep):
        content = (
            "application/strategic-merge-patch+json"
            if step.patch_type == "strategic"
            else "application/merge-patch+json"
        )
        _request(
            api,
            "PATCH",
            _path(step.kind, namespace, step.name),
            body=step.patch,
            content_type=content,
        )
    elif isinstance(step, StatusStep):
        _request(
            api,
            "PATCH",
            _path(step.kind, namespace, step.name, "status"),
            body={"status": step.status},
            content_type="application/merge-patch+json",
        )
    else:
        create_event(api, namespace, step)


def _rfc3339(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def create_event(api: ApiClient, namespace: str, step: EventStep) -> None:
    target = get_json(api, _path(step.involved.kind, namespace, step.involved.name))
    api_version = KINDS[step.involved.kind][0]
    when = _rfc3339(time.time() - step.age)
    name = (
        f"{step.involved.name}.{hashlib.sha256(step.model_dump_json().encode()).hexdigest()[:12]}"
    )
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": {
            "apiVersion": api_version,
            "kind": step.involved.kind,
            "name": step.involved.name,
            "namespace": namespace,
            "uid": target["metadata"]["uid"],
        },
        "type": step.type,
        "reason": step.reason,
        "message": step.message.replace("{namespace}", namespace),
        "source": {"component": step.source},
        "reportingComponent": step.source,
        "firstTimestamp": when,
        "lastTimestamp": when,
        "count": step.count,
    }
    _request(api, "POST", _path("Event", namespace), body=event, allow=(409,))


def write_logs(control_plane: Any, api: ApiClient, namespace: str, spec: LogSpec) -> int:
    """Writes the spec's lines for every matching pod; returns how many pods got them."""
    pods = list_pods(api, namespace, spec.selector)
    for pod in pods:
        name = pod["metadata"]["name"]
        for previous, lines in ((True, spec.previous), (False, spec.current)):
            if lines is None:
                continue
            rendered = [ln.replace("{pod}", name).replace("{namespace}", namespace) for ln in lines]
            control_plane.set_pod_logs(namespace, name, spec.container, rendered, previous=previous)
    return len(pods)


def _namespace_digest(api: ApiClient, namespace: str) -> str | None:
    ns = _request(api, "GET", f"/api/v1/namespaces/{namespace}", allow=(404,))
    if not ns or (ns.get("status") or {}).get("phase") == "Terminating":
        return None
    return (ns["metadata"].get("annotations") or {}).get(DIGEST_ANNOTATION, "")


def apply_scenario(control_plane: Any, scenario: Scenario, *, reuse: bool = True) -> None:
    """Applies the scenario into its own namespace and waits until it is in its claimed state.

    Idempotent: a namespace already marked with this scenario's digest whose `wait_for` still
    holds is reused as it is; anything else there is deleted and applied again.
    """
    api = control_plane.api_client()
    namespace = scenario.namespace
    digest = scenario.digest()
    existing = _namespace_digest(api, namespace)
    if reuse and existing == digest:
        ok, _ = conditions_hold(api, namespace, scenario.wait_for.conditions)
        if ok:
            _write_all_logs(control_plane, api, scenario)
            return
    if existing is not None or _request(
        api, "GET", f"/api/v1/namespaces/{namespace}", allow=(404,)
    ):
        control_plane.delete_namespace(namespace)
    control_plane.create_namespace(namespace)
    control_plane.apply(namespace, [_with_scenario_label(o, scenario) for o in scenario.objects])
    for step in scenario.after_apply:
        if isinstance(step, WaitStep):
            wait_conditions(
                api,
                namespace,
                step.conditions,
                step.timeout_s,
                f"scenario {scenario.name}: wait step",
            )
        else:
            _apply_step(api, namespace, step)
    wait_conditions(
        api,
        namespace,
        scenario.wait_for.conditions,
        scenario.wait_for.timeout_s,
        f"scenario {scenario.name}",
        on_poll=lambda: _write_all_logs(control_plane, api, scenario),
    )
    _write_all_logs(control_plane, api, scenario)
    _request(
        api,
        "PATCH",
        f"/api/v1/namespaces/{namespace}",
        body={"metadata": {"annotations": {DIGEST_ANNOTATION: digest}}},
        content_type="application/merge-patch+json",
    )


def _write_all_logs(control_plane: Any, api: ApiClient, scenario: Scenario) -> None:
    for spec in scenario.logs:
        write_logs(control_plane, api, scenario.namespace, spec)


def _with_scenario_label(obj: Mapping[str, Any], scenario: Scenario) -> dict[str, Any]:
    out = json.loads(json.dumps(obj))
    labels = out["metadata"].setdefault("labels", {})
    labels.setdefault("triage.dev/scenario", scenario.name)
    return dict(out)


# --------------------------------------------------------------------------------------------
# pytest fixtures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadedScenario:
    namespace: str
    scenario: Scenario


@pytest.fixture(scope="session")
def scenarios() -> list[Scenario]:
    return load_scenarios()


@pytest.fixture(scope="session")
def scenario_prometheus(
    prometheus_factory: PrometheusFactory, scenarios: list[Scenario]
) -> PrometheusServer:
    """One real Prometheus holding every scenario's series (backfilled, relative to now)."""
    return prometheus_factory(scenario_series(scenarios), name="prom-scenarios")


@pytest.fixture(scope="session")
def loaded_scenarios(control_plane: Any, scenarios: list[Scenario]) -> dict[str, LoadedScenario]:
    """Every scenario applied once per session into scn-<name>, each in its claimed state."""
    loaded = {}
    for scenario in scenarios:
        apply_scenario(control_plane, scenario)
        loaded[scenario.name] = LoadedScenario(scenario.namespace, scenario)
    return loaded
