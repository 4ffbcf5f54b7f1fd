"""The incident scenario format: what a tests/scenarios/**/*.yaml file may say, validated.

A scenario is one incident an engineer could ask Triage about: the Kubernetes objects that make
it happen (in one or more namespaces of its own, plus cluster-scoped objects it owns), the steps
the controllers would not take by themselves, the container logs, the metric series Prometheus
should hold, an optional Alertmanager notification, the question in the engineer's words and
what a correct RCA must say (tests/scenarios/README.md is the reference).

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
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from tests.support.observability import Series
from triage.core.causes import CauseClass, UnknownCauseClass

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
HELDOUT_DIRNAME = "heldout"
NAMESPACE_PREFIX = "scn-"
SCENARIO_LABEL = "triage.dev/scenario"

Split = Literal["dev", "heldout", "all"]

# The kwok sim contract (annotations on pod templates and scenario-owned Nodes) and the pod
# states `wait_for` can name. tests/controlplane/README.md ("The sim contract") is the reference.
SIM_STATE_ANNOTATION = "sim.triage.dev/state"
SIM_STATES = frozenset(
    {
        "running",
        "hang",
        "crashloop",
        "oomkilled",
        "imagepull",
        "not-ready",
        "config-error",
        "fail",
        "liveness-kill",
        "startup-kill",
        "init-crashloop",
        "init-running",
        "evicted",
        "mount-error",
    }
)
NODE_STATE_ANNOTATION = "sim.triage.dev/node-state"
NODE_STATES = frozenset({"ready", "not-ready", "memory-pressure", "disk-pressure", "pid-pressure"})
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
    "succeeded",
    "evicted",
    "init-crashloop",
    "init-running",
    "restarted",
    "container-creating",
]
Difficulty = Literal["easy", "medium", "hard"]


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
    peak_at: Duration = Field(default=0.0, description="one peak's offset (default now)")
    _q = _quantity_fields("min", "max")
    _d = _duration_fields("period", "peak_at")

    @field_validator("period")
    @classmethod
    def _positive(cls, value: float) -> float:
        if value <= 0:
            raise ValueError("period must be positive")
        return value


class Sawtooth(_Model):
    """Climbs linearly from min to max over each period, then drops; peaks at `peak_at` (default
    now) and every `period` before and after it."""

    sawtooth: SawtoothSpec

    def at(self, t: float) -> float:
        s = self.sawtooth
        into = (s.peak_at - t) % s.period  # seconds until the next peak
        frac = 1.0 if into == 0 else 1.0 - into / s.period
        return s.min + (s.max - s.min) * frac


class PulseSpec(_Model):
    base: Quantity
    peak: Quantity
    period: Duration
    width: Duration
    peak_at: Duration = Field(default=0.0, description="one pulse's start (default now)")
    _q = _quantity_fields("base", "peak")
    _d = _duration_fields("period", "width", "peak_at")

    @model_validator(mode="after")
    def _fits(self) -> PulseSpec:
        if not 0 < self.width < self.period:
            raise ValueError("a pulse needs 0 < width < period")
        return self


class Pulse(_Model):
    """`base`, except for `width` seconds every `period` (from `peak_at` on) where it is `peak`:
    a scheduled job's spike."""

    pulse: PulseSpec

    def at(self, t: float) -> float:
        p = self.pulse
        return p.peak if (t - p.peak_at) % p.period < p.width else p.base


class Explicit(_Model):
    """One value per point, from `from` on; the last value holds for the remaining points."""

    list: tuple[Quantity, ...] = Field(min_length=1)

    @field_validator("list", mode="before")
    @classmethod
    def _quantities(cls, value: Any) -> Any:
        if isinstance(value, Sequence) and not isinstance(value, str):
            return [parse_quantity(v) if isinstance(v, str) else v for v in value]
        return value


ValueSpec = Constant | Ramp | StepAt | Sawtooth | Pulse | Explicit


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
    namespace: str | None = Field(
        default=None, description="extra-namespace key for the namespace label (default: main)"
    )
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
            raise ValueError(
                "do not set the 'namespace' label: every series gets the scenario namespace "
                "(`namespace: <key>` on the metric picks an extra one)"
            )
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


class _Check(_Model):
    namespace: str | None = Field(
        default=None, description="key of one of the scenario's extra namespaces (default: main)"
    )


class PodsCheck(_Check):
    selector: dict[str, str]
    state: PodState
    count: int = Field(default=1, ge=1, description="at least this many pods in that state")


class PodsCondition(_Model):
    pods: PodsCheck


class EventCheck(_Check):
    reason: str
    kind: str | None = Field(default=None, description="involvedObject.kind")
    name_prefix: str | None = Field(default=None, description="involvedObject.name prefix")
    type: Literal["Normal", "Warning"] | None = None
    message_contains: str | None = None


class EventCondition(_Model):
    event: EventCheck


class PvcCheck(_Check):
    name: str
    phase: Literal["Pending", "Bound", "Lost"]


class PvcCondition(_Model):
    pvc: PvcCheck


class JobCheck(_Check):
    name: str
    condition: str = "Failed"
    reason: str | None = None


class JobCondition(_Model):
    job: JobCheck


class EndpointsCheck(_Check):
    name: str
    ready: int = Field(ge=0, description="exact number of ready addresses")
    not_ready: int | None = Field(default=None, ge=0, description="exact number, if given")


class EndpointsCondition(_Model):
    endpoints: EndpointsCheck


class DeploymentCheck(_Check):
    name: str
    available: int | None = Field(default=None, ge=0, description="status.availableReplicas")
    revision: int | None = Field(default=None, ge=1, description="current revision annotation")
    replicasets: int | None = Field(default=None, ge=1, description="ReplicaSets it owns")
    condition: str | None = Field(default=None, description="a status condition type ...")
    condition_status: Literal["True", "False", "Unknown"] = "True"
    condition_reason: str | None = None


class DeploymentCondition(_Model):
    deployment: DeploymentCheck


class HpaCheck(_Check):
    name: str
    current_replicas: int = Field(ge=0)


class HpaCondition(_Model):
    hpa: HpaCheck


class StatefulSetCheck(_Check):
    name: str
    replicas: int | None = Field(default=None, ge=0, description="status.replicas")
    ready: int | None = Field(default=None, ge=0, description="status.readyReplicas")


class StatefulSetCondition(_Model):
    statefulset: StatefulSetCheck


class PdbCheck(_Check):
    name: str
    disruptions_allowed: int = Field(ge=0)
    current_healthy: int | None = Field(default=None, ge=0)


class PdbCondition(_Model):
    pdb: PdbCheck


class CronJobCheck(_Check):
    name: str
    active: int | None = Field(default=None, ge=0, description="len(status.active)")
    suspended: bool | None = None


class CronJobCondition(_Model):
    cronjob: CronJobCheck


class NodeCheck(_Model):
    """A scenario-owned Node (cluster-scoped; `name` may use {namespace})."""

    name: str
    condition: str | None = Field(default=None, description="a condition type, e.g. Ready")
    status: Literal["True", "False", "Unknown"] = "True"
    taint: str | None = Field(default=None, description="a taint key the node must carry")
    no_taint: str | None = Field(default=None, description="a taint key it must not carry")
    unschedulable: bool | None = None


class NodeCondition(_Model):
    node: NodeCheck


Condition = (
    PodsCondition
    | EventCondition
    | PvcCondition
    | JobCondition
    | EndpointsCondition
    | DeploymentCondition
    | HpaCondition
    | StatefulSetCondition
    | PdbCondition
    | CronJobCondition
    | NodeCondition
)


class WaitFor(_Model):
    timeout_s: float = Field(default=90.0, gt=0, le=600)
    conditions: tuple[Condition, ...] = Field(min_length=1)


def condition_namespace_key(condition: Condition) -> str | None:
    """The extra-namespace key a condition is checked in (None: main; nodes: cluster)."""
    (field,) = type(condition).model_fields
    return getattr(getattr(condition, field), "namespace", None)


# --------------------------------------------------------------------------------------------
# Steps after apply, logs, alert, expectations, the scenario itself
# --------------------------------------------------------------------------------------------


class ObjectRef(_Model):
    kind: str
    name: str
    namespace: str | None = Field(default=None, description="extra-namespace key")


class PatchStep(_Model):
    """A change a person or CD system makes after the objects exist (e.g. a new image, a
    cordon). Cluster-scoped kinds (a scenario-owned Node) are patched without a namespace."""

    action: Literal["patch"]
    kind: str
    name: str
    namespace: str | None = None
    patch: dict[str, Any]
    patch_type: Literal["strategic", "merge"] = "strategic"


class StatusStep(_Model):
    """A status only a controller we do not run would write (the HPA controller)."""

    action: Literal["status"]
    kind: str
    name: str
    namespace: str | None = None
    status: dict[str, Any]


class EventStep(_Model):
    """An event only a kubelet, a controller we do not run or an outside system would write.

    Worded exactly as that component words it. `involved` names an object in `objects`, or a
    pod by label selector (`pod_selector`, the first matching pod: kubelet events name a pod).
    Events about a cluster-scoped object (a Node) go into the main namespace."""

    action: Literal["event"]
    involved: ObjectRef | None = None
    pod_selector: dict[str, str] | None = None
    namespace: str | None = Field(default=None, description="for pod_selector: extra ns key")
    field_path: str | None = Field(default=None, description="involvedObject.fieldPath")
    type: Literal["Normal", "Warning"] = "Normal"
    reason: str
    message: str
    age: Duration = Field(default=0.0, description="how long ago it happened (>= 0)")
    first_age: Duration | None = Field(default=None, description="first seen (>= age)")
    count: int = Field(default=1, ge=1)
    daily_at: str | None = Field(
        default=None,
        description="'HH:MM Zone': last seen at the latest such wall-clock time (instead of "
        "age), and a repeated event (count > 1) recurs daily, first seen count-1 days before",
    )
    source: str = "triage-scenario"
    host: str | None = Field(default=None, description="source.host (kubelet events: a node)")
    _d = _duration_fields("age", "first_age")

    @field_validator("daily_at")
    @classmethod
    def _wall_clock(cls, value: str | None) -> str | None:
        if value is not None:
            daily_times(value)
        return value

    @field_validator("age", "first_age")
    @classmethod
    def _not_future(cls, value: float | None) -> float | None:
        return None if value is None else abs(value)

    @model_validator(mode="after")
    def _one_target(self) -> EventStep:
        if (self.involved is None) == (self.pod_selector is None):
            raise ValueError("an event step needs exactly one of involved or pod_selector")
        if self.daily_at is not None and (self.age or self.first_age is not None):
            raise ValueError("an event step gives daily_at or age/first_age, not both")
        return self

    def seen(self, now: float) -> tuple[float, float]:
        """(first, last) seen, as epoch seconds, for an event applied at `now`."""
        if self.daily_at is None:
            return now - max(self.first_age or self.age, self.age), now - self.age
        last = daily_times(self.daily_at)(now)
        return last - (self.count - 1) * 86400.0, last


def daily_times(spec: str) -> Callable[[float], float]:
    """'19:30 Europe/Berlin' (or '19:30', UTC) -> the latest such wall-clock time <= now."""
    m = re.fullmatch(r"([01]\d|2[0-3]):([0-5]\d)(?: (\S+))?", spec.strip())
    if m is None:
        raise ValueError(f"daily_at {spec!r}: expected 'HH:MM' or 'HH:MM Zone'")
    try:
        zone = ZoneInfo(m.group(3) or "UTC")
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"daily_at {spec!r}: unknown time zone") from None
    hour, minute = int(m.group(1)), int(m.group(2))

    def latest(now: float) -> float:
        local = datetime.fromtimestamp(now, zone)
        at = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if at.timestamp() > now:
            at = (at - timedelta(days=1)).replace(hour=hour, minute=minute)
        return at.timestamp()

    return latest


class WaitStep(_Model):
    """Wait for conditions before the next step (e.g. revision 1 serving before revision 2)."""

    action: Literal["wait"]
    timeout_s: float = Field(default=90.0, gt=0, le=600)
    conditions: tuple[Condition, ...] = Field(min_length=1)


class EvictStep(_Model):
    """Ask the Eviction API to evict every pod matching the selector, as `kubectl drain` does,
    and require the apiserver's answer (429: a PodDisruptionBudget refuses)."""

    action: Literal["evict"]
    selector: dict[str, str]
    namespace: str | None = None
    expect_status: int = Field(default=429, ge=200, le=599)


class ApplyStep(_Model):
    """Create (or replace) one more object at this point, e.g. a webhook configuration that
    must only exist once revision 1 is serving. Same rules as `objects`."""

    action: Literal["apply"]
    object: dict[str, Any]

    @field_validator("object")
    @classmethod
    def _manifest(cls, value: dict[str, Any]) -> dict[str, Any]:
        _check_manifest(value)
        return value


class SleepStep(_Model):
    """Let something asynchronous settle that no condition can observe (an admission policy
    the apiserver has stored but not yet compiled)."""

    action: Literal["sleep"]
    seconds: float = Field(gt=0, le=30)


Step = Annotated[
    PatchStep | StatusStep | EventStep | WaitStep | EvictStep | ApplyStep | SleepStep,
    Field(discriminator="action"),
]


class LogSpec(_Model):
    """Log lines for the container of every pod matching the selector ({pod}, {namespace})."""

    selector: dict[str, str]
    container: str
    namespace: str | None = Field(default=None, description="extra-namespace key")
    previous: tuple[str, ...] | None = None
    current: tuple[str, ...] | None = None

    def lines(self) -> list[str]:
        return [*(self.previous or ()), *(self.current or ())]

    @model_validator(mode="after")
    def _some_lines(self) -> LogSpec:
        if self.previous is None and self.current is None:
            raise ValueError("a log entry needs previous or current lines")
        return self


class AlertSpec(_Model):
    """The Alertmanager notification that started the incident (webhook payload, version 4).

    One alert; the payload's group labels are `alertname` and `namespace` when present. Label
    and annotation values may use placeholders; `startsAt` is an offset from now (<= 0)."""

    status: Literal["firing", "resolved"] = "firing"
    receiver: str = "triage"
    labels: dict[str, str]
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: Duration = Field(alias="startsAt")
    ends_at: Duration | None = Field(default=None, alias="endsAt")
    fingerprint: str | None = Field(default=None, pattern=r"^[0-9a-f]{16}$")
    group_key: str | None = Field(default=None, alias="groupKey")
    generator_url: str | None = Field(default=None, alias="generatorURL")
    _d = _duration_fields("starts_at", "ends_at")

    @field_validator("labels", "annotations", mode="before")
    @classmethod
    def _as_text(cls, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {str(k): str(v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _valid(self) -> AlertSpec:
        if "alertname" not in self.labels:
            raise ValueError("an alert needs an alertname label")
        if self.starts_at > 0 or (self.ends_at is not None and self.ends_at > 0):
            raise ValueError("alert times are offsets from now (<= 0)")
        if self.status == "resolved" and self.ends_at is None:
            raise ValueError("a resolved alert needs endsAt")
        return self


class Fact(_Model):
    """Something a correct RCA must state in its root-cause text: any one of `any`
    (case-insensitive substrings; placeholders such as {namespace:db} are filled)."""

    any: tuple[str, ...] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _bare_string(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"any": [value]}
        return value

    @field_validator("any")
    @classmethod
    def _not_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(not a.strip() for a in value):
            raise ValueError("a fact alternative cannot be blank")
        return value


class WrongCause(_Model):
    """A plausible wrong cause a correct RCA must not assert: a class (compared with the
    answer's class) or a phrase (checked only against the answer's one-sentence cause line)."""

    class_: CauseClass | None = Field(default=None, alias="class")
    phrase: str | None = Field(default=None, min_length=3)

    @field_validator("class_", mode="before")
    @classmethod
    def _parse_class(cls, value: Any) -> Any:
        return None if value is None else _parse_cause(value)

    @model_validator(mode="after")
    def _exactly_one(self) -> WrongCause:
        if (self.class_ is None) == (self.phrase is None):
            raise ValueError("a wrong cause is either {class: X} or {phrase: '...'}")
        return self


def _parse_cause(value: Any) -> CauseClass:
    try:
        return CauseClass.parse(value)
    except UnknownCauseClass as e:
        raise ValueError(f"unknown root_cause_class: {e}") from None


class Expect(_Model):
    root_cause_class: CauseClass
    also_accept: tuple[CauseClass, ...] = ()
    facts: tuple[Fact, ...] = Field(min_length=2, max_length=4)
    wrong_causes: tuple[WrongCause, ...] = Field(min_length=1, max_length=2)
    difficulty: Difficulty
    multi_hop: bool = False
    outcome: Literal["verified"] = "verified"
    legacy_keywords: tuple[str, ...] | None = Field(
        default=None,
        alias="keywords",
        min_length=2,
        max_length=4,
        description="deprecated: the words older tests and recorded bundles check; graders "
        "use facts",
    )

    @field_validator("root_cause_class", mode="before")
    @classmethod
    def _known_class(cls, value: Any) -> Any:
        return _parse_cause(value)

    @field_validator("also_accept", mode="before")
    @classmethod
    def _known_classes(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return tuple(_parse_cause(v) for v in value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Expect:
        accepted = self.accepted_classes
        if len(set(self.also_accept)) != len(self.also_accept):
            raise ValueError("also_accept lists a class twice")
        if self.root_cause_class in self.also_accept:
            raise ValueError("also_accept repeats root_cause_class")
        for wrong in self.wrong_causes:
            if wrong.class_ is not None and wrong.class_ in accepted:
                raise ValueError(f"wrong cause {wrong.class_} is an accepted class")
        return self

    @property
    def accepted_classes(self) -> frozenset[CauseClass]:
        return frozenset({self.root_cause_class, *self.also_accept})

    @property
    def keywords(self) -> tuple[str, ...]:
        """Compatibility for code written against the old `keywords`: the file's legacy
        `keywords` where it keeps them (the first scenarios, whose recorded bundles check them),
        else the first alternative of each fact."""
        if self.legacy_keywords is not None:
            return self.legacy_keywords
        return tuple(f.any[0] for f in self.facts)


class NamespaceSpec(_Model):
    """An extra namespace of the scenario: `scn-<scenario>-<name>`."""

    name: str = Field(min_length=1, max_length=20)
    labels: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        return value

    @field_validator("name")
    @classmethod
    def _dns(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"namespace key {value!r} must be a DNS label")
        return value


_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_WEBHOOK_KINDS = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")


class Scenario(_Model):
    name: str = Field(max_length=63 - len(NAMESPACE_PREFIX))
    description: str
    question: str
    target: ObjectRef
    namespaces: tuple[NamespaceSpec, ...] = ()
    namespace_labels: dict[str, str] = Field(default_factory=dict)
    objects: tuple[dict[str, Any], ...] = Field(min_length=1)
    after_apply: tuple[Step, ...] = ()
    logs: tuple[LogSpec, ...] = ()
    metrics: tuple[MetricSpec, ...] = ()
    alert: AlertSpec | None = None
    wait_for: WaitFor
    expect: Expect
    _heldout: bool = PrivateAttr(default=False)

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
            _check_manifest(obj)
        return value

    @property
    def all_objects(self) -> list[dict[str, Any]]:
        """`objects` and the objects `apply` steps create, in order."""
        return [*self.objects, *(s.object for s in self.after_apply if isinstance(s, ApplyStep))]

    @model_validator(mode="after")
    def _references(self) -> Scenario:
        keys = [n.name for n in self.namespaces]
        if len(set(keys)) != len(keys):
            raise ValueError("two extra namespaces share a name")
        for key in keys:
            if len(self.namespace_for(key)) > 63:
                raise ValueError(f"namespace {self.namespace_for(key)} is longer than 63")
        known = set(keys)

        def check_key(key: str | None, where: str) -> None:
            if key is not None and key not in known:
                raise ValueError(
                    f"{where}: namespace {key!r} is not one of the scenario's namespaces "
                    f"(declare it under `namespaces:`; leave the main one out)"
                )

        names: set[tuple[str, str, str | None]] = set()
        for obj in self.all_objects:
            where = f"object {obj['kind']}/{obj['metadata']['name']}"
            ns_key = obj["metadata"].get("namespace")
            if ns_key is not None and not known:
                raise ValueError(f"{where}: leave metadata.namespace out")
            check_key(ns_key, where)
            if obj["kind"] in CLUSTER_KINDS:
                self._check_cluster_object(obj, where)
                ns_key = None
            names.add((obj["kind"], obj["metadata"]["name"], ns_key))
        check_key(self.target.namespace, "target")
        if (self.target.kind, self.target.name, self.target.namespace) not in names:
            raise ValueError(f"target {self.target.kind}/{self.target.name} is not in objects")
        for step in self.after_apply:
            if isinstance(step, WaitStep):
                for c in step.conditions:
                    check_key(condition_namespace_key(c), "wait step")
                continue
            if isinstance(step, EvictStep):
                check_key(step.namespace, "evict step")
                continue
            if isinstance(step, ApplyStep | SleepStep):
                continue
            if isinstance(step, EventStep):
                check_key(step.namespace, "event step")
                if step.involved is None:
                    continue
                ref: ObjectRef | PatchStep | StatusStep = step.involved
            else:
                ref = step
            check_key(ref.namespace, f"{step.action} step")
            ns = None if ref.kind in CLUSTER_KINDS else ref.namespace
            if (ref.kind, ref.name, ns) not in names:
                raise ValueError(f"{step.action} step names {ref.kind}/{ref.name}, not in objects")
        for c in self.wait_for.conditions:
            check_key(condition_namespace_key(c), "wait_for")
        for spec in self.logs:
            check_key(spec.namespace, "logs")
        for metric in self.metrics:
            check_key(metric.namespace, f"metric {metric.name}")
        if "{namespace}" not in self.question:
            raise ValueError("the question must mention {namespace}")
        for text in self._texts():
            self.render(text, pod="p", resolve_pod=lambda _: "p")  # offsets and keys must parse
        if self.alert is not None:
            self.alert_payload()
        return self

    def _check_cluster_object(self, obj: Mapping[str, Any], where: str) -> None:
        name = self.render(str(obj["metadata"]["name"]))
        if not name.startswith(self.namespace):
            raise ValueError(
                f"{where}: a cluster-scoped object's name must start with the scenario's "
                f"namespace (write it as '{{namespace}}-...')"
            )
        kind = obj["kind"]
        if kind == "Node":
            annotations = obj["metadata"].get("annotations") or {}
            state = annotations.get(NODE_STATE_ANNOTATION)
            if state not in NODE_STATES:
                raise ValueError(f"{where}: a Node needs {NODE_STATE_ANNOTATION} in {NODE_STATES}")
            taints = (obj.get("spec") or {}).get("taints") or []
            if not any(t.get("effect") in ("NoSchedule", "NoExecute") for t in taints):
                raise ValueError(
                    f"{where}: a scenario Node needs a NoSchedule/NoExecute taint, so that "
                    "nothing but the scenario's own pods (which tolerate it) lands on it"
                )
        if kind in _WEBHOOK_KINDS:
            for hook in obj.get("webhooks") or []:
                selector = (hook.get("namespaceSelector") or {}).get("matchLabels") or {}
                if selector.get(SCENARIO_LABEL) != self.name:
                    raise ValueError(
                        f"{where}: webhook {hook.get('name')} must be scoped to the scenario's "
                        f"namespaces: namespaceSelector.matchLabels {{{SCENARIO_LABEL}: "
                        f"{self.name}}}"
                    )
        if kind == "ValidatingAdmissionPolicyBinding":
            match = (obj.get("spec") or {}).get("matchResources") or {}
            selector = (match.get("namespaceSelector") or {}).get("matchLabels") or {}
            if selector.get(SCENARIO_LABEL) != self.name:
                raise ValueError(
                    f"{where}: the binding must be scoped to the scenario's namespaces: "
                    f"spec.matchResources.namespaceSelector.matchLabels "
                    f"{{{SCENARIO_LABEL}: {self.name}}}"
                )
        if kind in ("StorageClass", "IngressClass"):
            annotations = obj["metadata"].get("annotations") or {}
            default_keys = (
                "storageclass.kubernetes.io/is-default-class",
                "ingressclass.kubernetes.io/is-default-class",
            )
            if any(str(annotations.get(k)).lower() == "true" for k in default_keys):
                raise ValueError(f"{where}: a scenario may not make its {kind} the default")

    def _texts(self) -> list[str]:
        texts = [self.question, *(ln for spec in self.logs for ln in spec.lines())]
        texts += [s.message for s in self.after_apply if isinstance(s, EventStep)]
        texts += [
            text
            for s in self.after_apply
            if isinstance(s, PatchStep | StatusStep)
            for text in _strings(s.patch if isinstance(s, PatchStep) else s.status)
        ]
        texts += [t for obj in self.all_objects for t in _strings(obj)]
        texts += [a for f in self.expect.facts for a in f.any]
        return texts

    # -- namespaces and placeholders ----------------------------------------------------------

    @property
    def namespace(self) -> str:
        return f"{NAMESPACE_PREFIX}{self.name}"

    def namespace_for(self, key: str | None) -> str:
        """The real namespace for an extra-namespace key (None or "": the main one)."""
        return self.namespace if not key else f"{self.namespace}-{key}"

    @property
    def all_namespaces(self) -> list[str]:
        return [self.namespace, *(self.namespace_for(n.name) for n in self.namespaces)]

    @property
    def namespace_keys(self) -> dict[str, str]:
        return {n.name: self.namespace_for(n.name) for n in self.namespaces}

    @property
    def heldout(self) -> bool:
        """Whether the file is in tests/scenarios/heldout/ (set by the loader)."""
        return self._heldout

    def render(
        self,
        text: str,
        *,
        pod: str | None = None,
        resolve_pod: Callable[[str], str] | None = None,
        now: float | None = None,
    ) -> str:
        return render_text(
            text,
            namespace=self.namespace,
            pod=pod,
            now=now,
            namespaces=self.namespace_keys,
            resolve_pod=resolve_pod,
        )

    @property
    def rendered_question(self) -> str:
        """The question as the engineer types it now: namespace and clock times filled in."""
        return self.render(self.question)

    def rendered_facts(self) -> list[tuple[str, ...]]:
        """Each fact's alternatives with placeholders filled (what graders compare)."""
        return [tuple(self.render(a) for a in f.any) for f in self.expect.facts]

    def alert_payload(self, now: float | None = None) -> dict[str, Any] | None:
        """The Alertmanager webhook (version 4) notification, or None without an alert."""
        if self.alert is None:
            return None
        a = self.alert
        moment = time.time() if now is None else now
        labels = {k: self.render(v, now=moment) for k, v in a.labels.items()}
        annotations = {k: self.render(v, now=moment) for k, v in a.annotations.items()}
        group_labels = {k: labels[k] for k in ("alertname", "namespace") if k in labels}
        group_key = a.group_key or (
            '{}/{receiver="'
            + a.receiver
            + '"}:{'
            + ", ".join(f'{k}="{v}"' for k, v in sorted(group_labels.items()))
            + "}"
        )
        fingerprint = (
            a.fingerprint
            or hashlib.sha256(json.dumps(labels, sort_keys=True).encode()).hexdigest()[:16]
        )
        ends = "0001-01-01T00:00:00Z" if a.ends_at is None else _rfc3339(moment + a.ends_at)
        return {
            "version": "4",
            "groupKey": group_key,
            "truncatedAlerts": 0,
            "status": a.status,
            "receiver": a.receiver,
            "groupLabels": group_labels,
            "commonLabels": labels,
            "commonAnnotations": annotations,
            "externalURL": "http://alertmanager.monitoring.svc:9093",
            "alerts": [
                {
                    "status": a.status,
                    "labels": labels,
                    "annotations": annotations,
                    "startsAt": _rfc3339(moment + a.starts_at),
                    "endsAt": ends,
                    "generatorURL": a.generator_url
                    or "http://prometheus.monitoring.svc:9090/graph?g0.expr=" + labels["alertname"],
                    "fingerprint": fingerprint,
                }
            ],
        }

    def digest(self) -> str:
        """Changes whenever the file's meaning changes; marks a namespace as holding it."""
        raw = json.dumps(self.model_dump(mode="json", by_alias=True), sort_keys=True)
        return hashlib.sha256(raw.encode()).hexdigest()[:16]


def _rfc3339(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def _check_manifest(obj: Mapping[str, Any]) -> None:
    where = f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"
    for key in ("apiVersion", "kind", "metadata"):
        if key not in obj:
            raise ValueError(f"object {where} has no {key}")
    if "name" not in obj["metadata"]:
        raise ValueError(f"object {where} has no metadata.name")
    if obj["kind"] not in KINDS and obj["kind"] not in CLUSTER_KINDS:
        raise ValueError(f"object {where}: kind not in the loader's table")
    if obj["kind"] in CLUSTER_KINDS and "namespace" in obj["metadata"]:
        raise ValueError(f"object {where}: a cluster-scoped object has no namespace")
    state = _template_annotations(obj).get(SIM_STATE_ANNOTATION)
    if state is not None and state not in SIM_STATES:
        raise ValueError(f"object {where}: unknown sim state {state!r}")


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


def render_obj(
    obj: Any,
    *,
    namespace: str,
    namespaces: Mapping[str, str] | None = None,
    resolve_pod: Callable[[str], str] | None = None,
) -> Any:
    """`render_text` on every string inside a manifest fragment (objects, patches, statuses)."""
    if isinstance(obj, str):
        return render_text(obj, namespace=namespace, namespaces=namespaces, resolve_pod=resolve_pod)
    if isinstance(obj, Mapping):
        return {
            k: render_obj(v, namespace=namespace, namespaces=namespaces, resolve_pod=resolve_pod)
            for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [
            render_obj(v, namespace=namespace, namespaces=namespaces, resolve_pod=resolve_pod)
            for v in obj
        ]
    return obj


_PLACEHOLDER = re.compile(
    r"\{(namespace|namespace:[a-z0-9-]+|pod|pod:[^{}]+|clock:[^{}]+|ts:[^{}]+)\}"
)


def render_text(
    text: str,
    *,
    namespace: str,
    pod: str | None = None,
    now: float | None = None,
    namespaces: Mapping[str, str] | None = None,
    resolve_pod: Callable[[str], str] | None = None,
) -> str:
    """Fills the placeholders a question, log line, event message or manifest may hold.

    `{namespace}` (the main namespace), `{namespace:db}` (the extra namespace `db`), `{pod}`
    (log lines only), `{pod:app=web}` (the name of a live pod matching the selector, filled by
    the loader when it runs a step), `{clock:-25m}` (UTC wall clock at that offset from now,
    `14:05`) and `{ts:-25m}` (RFC 3339 with milliseconds, as loggers print it). Anything else in
    braces (a JSON log line) is left alone.
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
        kind, arg = key.split(":", 1)
        if kind == "namespace":
            if namespaces is None or arg not in namespaces:
                raise ValueError(f"{{namespace:{arg}}}: no extra namespace {arg!r}")
            return namespaces[arg]
        if kind == "pod":
            if resolve_pod is None:
                raise ValueError(f"{{pod:{arg}}} is only known while the loader runs a step")
            return resolve_pod(arg)
        when = moment + parse_duration(arg)
        if kind == "clock":
            return time.strftime("%H:%M", time.gmtime(when))
        millis = math.floor(when * 1000)
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(millis // 1000))
        return f"{stamp}.{millis % 1000:03d}Z"

    return _PLACEHOLDER.sub(fill, text)


def load_scenario(path: Path, *, heldout: bool | None = None) -> Scenario:
    """One file, validated. `heldout` defaults to whether it lies in a `heldout/` directory."""
    try:
        data = yaml.safe_load(path.read_text())
        scenario = Scenario.model_validate(data)
    except (yaml.YAMLError, ValueError) as e:
        raise ScenarioError(f"{path.name}: {e}") from e
    if path.stem != scenario.name:
        raise ScenarioError(f"{path.name}: file name must be <name>.yaml ({scenario.name})")
    scenario._heldout = path.parent.name == HELDOUT_DIRNAME if heldout is None else heldout
    return scenario


def load_scenarios(directory: Path = SCENARIO_DIR, *, split: Split = "all") -> list[Scenario]:
    """Every scenario, validated, sorted by name: `<dir>/*.yaml` (the dev split) and
    `<dir>/heldout/*.yaml` (the held-out split, `Scenario.heldout` True). `split` picks one."""
    if split not in ("dev", "heldout", "all"):
        raise ScenarioError(f"unknown split {split!r} (dev, heldout, all)")
    directory = Path(directory)
    paths: list[tuple[Path, bool]] = []
    if split in ("dev", "all"):
        paths += [(p, False) for p in sorted(directory.glob("*.yaml"))]
    if split in ("heldout", "all"):
        paths += [(p, True) for p in sorted((directory / HELDOUT_DIRNAME).glob("*.yaml"))]
    scenarios = [load_scenario(p, heldout=h) for p, h in paths]
    if not scenarios:
        raise ScenarioError(f"no scenarios in {directory} (split {split})")
    seen: dict[str, Path] = {}
    for (path, _), scenario in zip(paths, scenarios, strict=True):
        if scenario.name in seen:
            raise ScenarioError(f"{path}: name {scenario.name} also in {seen[scenario.name]}")
        seen[scenario.name] = path
    return sorted(scenarios, key=lambda s: s.name)


# --------------------------------------------------------------------------------------------
# Metrics → Series for the Prometheus backfill
# --------------------------------------------------------------------------------------------


def series_points(
    scenario: Scenario,
) -> list[tuple[str, Literal["counter", "gauge"], dict[str, str], list[tuple[float, float]]]]:
    """(name, type, labels with namespace, points) for each metric: no Prometheus types needed."""
    out = []
    for metric in scenario.metrics:
        labels = {
            **{k: scenario.render(v) for k, v in metric.labels.items()},
            "namespace": scenario.namespace_for(metric.namespace),
        }
        out.append((metric.name, metric.type, labels, metric.generate()))
    return out


def scenario_series(scenarios: Sequence[Scenario]) -> list[Series]:
    """Every scenario's metrics as observability `Series`, ready for the backfill."""
    return [
        Series(name=name, type=kind, labels=labels, samples=points)
        for scenario in scenarios
        for name, kind, labels, points in series_points(scenario)
    ]


# kind -> (apiVersion, plural). Every namespaced kind a scenario may create, patch or wait on.
KINDS: dict[str, tuple[str, str]] = {
    "Pod": ("v1", "pods"),
    "Service": ("v1", "services"),
    "ConfigMap": ("v1", "configmaps"),
    "Secret": ("v1", "secrets"),
    "PersistentVolumeClaim": ("v1", "persistentvolumeclaims"),
    "ServiceAccount": ("v1", "serviceaccounts"),
    "Endpoints": ("v1", "endpoints"),
    "Event": ("v1", "events"),
    "ResourceQuota": ("v1", "resourcequotas"),
    "LimitRange": ("v1", "limitranges"),
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
    "Role": ("rbac.authorization.k8s.io/v1", "roles"),
    "RoleBinding": ("rbac.authorization.k8s.io/v1", "rolebindings"),
}

# Cluster-scoped kinds a scenario may own. Their names start with the scenario's namespace
# ("{namespace}-..."), they carry the scenario label, and the loader deletes them with it.
CLUSTER_KINDS: dict[str, tuple[str, str]] = {
    "Node": ("v1", "nodes"),
    "PersistentVolume": ("v1", "persistentvolumes"),
    "StorageClass": ("storage.k8s.io/v1", "storageclasses"),
    "IngressClass": ("networking.k8s.io/v1", "ingressclasses"),
    "PriorityClass": ("scheduling.k8s.io/v1", "priorityclasses"),
    "ClusterRole": ("rbac.authorization.k8s.io/v1", "clusterroles"),
    "ClusterRoleBinding": ("rbac.authorization.k8s.io/v1", "clusterrolebindings"),
    "ValidatingWebhookConfiguration": (
        "admissionregistration.k8s.io/v1",
        "validatingwebhookconfigurations",
    ),
    "MutatingWebhookConfiguration": (
        "admissionregistration.k8s.io/v1",
        "mutatingwebhookconfigurations",
    ),
    "ValidatingAdmissionPolicy": (
        "admissionregistration.k8s.io/v1",
        "validatingadmissionpolicies",
    ),
    "ValidatingAdmissionPolicyBinding": (
        "admissionregistration.k8s.io/v1",
        "validatingadmissionpolicybindings",
    ),
}
