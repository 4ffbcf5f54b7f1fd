"""The incident scenario format: what a tests/scenarios/*.yaml file may say, validated.

A scenario is one incident an engineer could ask Triage about: the Kubernetes objects that make
it happen, the steps the controllers would not take by themselves, the container logs, the metric
series Prometheus should hold, the question in the engineer's words and the root cause we expect
back (tests/scenarios/README.md is the reference).

Kept apart from the loader (tests/support/scenarios.py) because it needs no cluster: the format
and the metric generators are unit-tested on their own, and the series for the Prometheus
backfill are generated from files alone, relative to "now".
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from tests.support.observability import Series

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
NAMESPACE_PREFIX = "scn-"

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

    def lines(self) -> list[str]:
        return [*(self.previous or ()), *(self.current or ())]

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
        texts = [self.question, *(ln for spec in self.logs for ln in spec.lines())]
        texts += [s.message for s in self.after_apply if isinstance(s, EventStep)]
        texts += [
            text
            for s in self.after_apply
            if isinstance(s, PatchStep | StatusStep)
            for text in _strings(s.patch if isinstance(s, PatchStep) else s.status)
        ]
        for text in texts:
            render_text(text, namespace=self.namespace, pod="p")  # offsets must parse
        return self

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.name}"

    @property
    def rendered_question(self) -> str:
        """The question as the engineer types it now: namespace and clock times filled in."""
        return render_text(self.question, namespace=self.namespace)

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


def _strings(obj: Any) -> list[str]:
    if isinstance(obj, str):
        return [obj]
    if isinstance(obj, Mapping):
        return [t for v in obj.values() for t in _strings(v)]
    if isinstance(obj, list | tuple):
        return [t for v in obj for t in _strings(v)]
    return []


def render_obj(obj: Any, *, namespace: str) -> Any:
    """`render_text` on every string inside a manifest fragment (patches, statuses)."""
    if isinstance(obj, str):
        return render_text(obj, namespace=namespace)
    if isinstance(obj, Mapping):
        return {k: render_obj(v, namespace=namespace) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [render_obj(v, namespace=namespace) for v in obj]
    return obj


_PLACEHOLDER = re.compile(r"\{(namespace|pod|clock:[^{}]+|ts:[^{}]+)\}")


def render_text(
    text: str, *, namespace: str, pod: str | None = None, now: float | None = None
) -> str:
    """Fills the placeholders a question, log line or event message may hold.

    `{namespace}`, `{pod}` (log lines only), `{clock:-25m}` (UTC wall clock at that offset from
    now, `14:05`) and `{ts:-25m}` (RFC 3339 with milliseconds, as loggers print it). Anything
    else in braces (a JSON log line) is left alone.
    """
    moment = time.time() if now is None else now

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "namespace":
            return namespace
        if key == "pod":
            if pod is None:
                raise ValueError("{pod} is only known in log lines")
            return pod
        kind, offset = key.split(":", 1)
        when = moment + parse_duration(offset)
        if kind == "clock":
            return time.strftime("%H:%M", time.gmtime(when))
        millis = math.floor(when * 1000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000))
        return f"{stamp}.{millis % 1000:03d}Z"

    return _PLACEHOLDER.sub(fill, text)


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
