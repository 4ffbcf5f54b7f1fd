"""Applying incident scenarios to the real test control plane, and the fixtures that do it.

The decision this module embodies: a scenario *describes* a failure, the real control plane
*produces* it. Pods crash because kwok's sim stages make them crash, pods stay Pending because
the real scheduler cannot place them, a Job fails because the real Job controller counts its
failed pods. The loader only writes what something we do not run would have written (a
container's log lines, the HPA controller's status, an event from an external system), and
`wait_for` proves the cluster reached the state the scenario claims before anyone investigates.

The format itself (pydantic models, metric generators, `load_scenarios`, `scenario_series`)
lives in tests/support/scenario_format.py and is re-exported here.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.observability import PrometheusFactory, PrometheusServer
from tests.support.scenario_format import (
    KINDS,
    NAMESPACE_PREFIX,
    ROOT_CAUSE_CLASSES,
    SCENARIO_DIR,
    SIM_STATE_ANNOTATION,
    SIM_STATES,
    Condition,
    DeploymentCondition,
    EndpointsCondition,
    EventCheck,
    EventCondition,
    EventStep,
    JobCondition,
    LogSpec,
    MetricSpec,
    PatchStep,
    PodsCondition,
    PvcCondition,
    Scenario,
    ScenarioError,
    StatusStep,
    WaitStep,
    load_scenario,
    load_scenarios,
    parse_duration,
    parse_quantity,
    render_obj,
    render_text,
    scenario_series,
)

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

__all__ = [
    "KINDS",
    "NAMESPACE_PREFIX",
    "ROOT_CAUSE_CLASSES",
    "SCENARIO_DIR",
    "SIM_STATES",
    "SIM_STATE_ANNOTATION",
    "LoadedScenario",
    "MetricSpec",
    "Scenario",
    "ScenarioError",
    "apply_scenario",
    "check_condition",
    "conditions_hold",
    "get_json",
    "list_pods",
    "load_scenario",
    "load_scenarios",
    "parse_duration",
    "parse_quantity",
    "pod_states",
    "render_text",
    "scenario_series",
]

DIGEST_ANNOTATION = "triage.dev/scenario-digest"

# --------------------------------------------------------------------------------------------
# Talking to the apiserver: a small raw REST helper over the official client
# --------------------------------------------------------------------------------------------


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
        jc = condition.job
        job = get_json(api, _path("Job", namespace, jc.name))
        conds = (job.get("status") or {}).get("conditions") or []
        ok = any(
            x.get("type") == jc.condition
            and x.get("status") == "True"
            and (jc.reason is None or x.get("reason") == jc.reason)
            for x in conds
        )
        return ok, f"job {jc.name} conditions {[(x.get('type'), x.get('reason')) for x in conds]}"
    if isinstance(condition, EndpointsCondition):
        ec = condition.endpoints
        ep = _request(api, "GET", _path("Endpoints", namespace, ec.name), allow=(404,)) or {}
        subsets = ep.get("subsets") or []
        ready = sum(len(s.get("addresses") or []) for s in subsets)
        not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
        ok = bool(ep) and ready == ec.ready and (ec.not_ready is None or not_ready == ec.not_ready)
        return ok, f"endpoints {ec.name}: found={bool(ep)} ready={ready} not_ready={not_ready}"
    if isinstance(condition, DeploymentCondition):
        dc = condition.deployment
        dep = get_json(api, _path("Deployment", namespace, dc.name))
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
            (dc.available is None or available == dc.available)
            and (dc.revision is None or revision == str(dc.revision))
            and (dc.replicasets is None or len(rss) == dc.replicasets)
        )
        return ok, f"deployment {dc.name}: available={available} rev={revision} rs={len(rss)}"
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
            body=render_obj(step.patch, namespace=namespace),
            content_type=content,
        )
    elif isinstance(step, StatusStep):
        _request(
            api,
            "PATCH",
            _path(step.kind, namespace, step.name, "status"),
            body={"status": render_obj(step.status, namespace=namespace)},
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
        "message": render_text(step.message, namespace=namespace),
        "source": {"component": step.source},
        "reportingComponent": step.source,
        "firstTimestamp": when,
        "lastTimestamp": when,
        "count": step.count,
    }
    _request(api, "POST", _path("Event", namespace), body=event, allow=(409,))


def write_logs(
    control_plane: Any,
    api: ApiClient,
    namespace: str,
    spec: LogSpec,
    done: set[str] | None = None,
) -> int:
    """Writes the spec's lines for every matching pod not in `done` (pod UIDs, updated).

    Returns how many pods got lines now. Placeholders are filled by `render_text`.
    """
    written = 0
    for pod in list_pods(api, namespace, spec.selector):
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        if done is not None and uid in done:
            continue
        for previous, lines in ((True, spec.previous), (False, spec.current)):
            if lines is None:
                continue
            rendered = [render_text(ln, namespace=namespace, pod=name) for ln in lines]
            control_plane.set_pod_logs(namespace, name, spec.container, rendered, previous=previous)
        if done is not None:
            done.add(uid)
        written += 1
    return written


def _namespace_digest(api: ApiClient, namespace: str) -> str | None:
    ns = _request(api, "GET", f"/api/v1/namespaces/{namespace}", allow=(404,))
    if not ns or (ns.get("status") or {}).get("phase") == "Terminating":
        return None
    return str((ns["metadata"].get("annotations") or {}).get(DIGEST_ANNOTATION, ""))


def apply_scenario(control_plane: Any, scenario: Scenario, *, reuse: bool = True) -> None:
    """Applies the scenario into its own namespace and waits until it is in its claimed state.

    Idempotent: a namespace already marked with this scenario's digest whose `wait_for` still
    holds is reused as it is; anything else there is deleted and applied again.
    """
    cp = _Serialized(control_plane)
    with _scenario_lock(control_plane, scenario), control_plane.api_client() as api:
        _apply(cp, api, scenario, reuse=reuse)


@contextlib.contextmanager
def _scenario_lock(control_plane: Any, scenario: Scenario) -> Iterator[None]:
    """One loader per scenario per control plane, across pytest processes sharing it: two
    sessions reusing one cluster would otherwise race on deleting and creating its namespace."""
    state_dir = getattr(control_plane, "state_dir", None)
    if state_dir is None:
        yield
        return
    lock_dir = Path(state_dir) / "scenario-locks"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with (lock_dir / f"{scenario.name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _apply(cp: Any, api: ApiClient, scenario: Scenario, *, reuse: bool) -> None:
    namespace = scenario.namespace
    digest = scenario.digest()
    existing = _namespace_digest(api, namespace)
    if reuse and existing == digest:
        ok, _ = conditions_hold(api, namespace, scenario.wait_for.conditions)
        if ok:
            _log_writer(cp, api, scenario)()
            return
    if _request(api, "GET", f"/api/v1/namespaces/{namespace}", allow=(404,)) is not None:
        cp.delete_namespace(namespace)
        _wait_namespace_gone(api, namespace, timeout_s=120)
    cp.create_namespace(namespace)
    write_logs_once = _log_writer(cp, api, scenario)
    cp.apply(namespace, [_with_scenario_label(o, scenario) for o in scenario.objects])
    for step in scenario.after_apply:
        if isinstance(step, WaitStep):
            wait_conditions(
                api,
                namespace,
                step.conditions,
                step.timeout_s,
                f"scenario {scenario.name}: wait step",
                on_poll=write_logs_once,
            )
        else:
            _apply_step(api, namespace, step)
    wait_conditions(
        api,
        namespace,
        scenario.wait_for.conditions,
        scenario.wait_for.timeout_s,
        f"scenario {scenario.name}",
        on_poll=write_logs_once,
    )
    write_logs_once()
    _request(
        api,
        "PATCH",
        f"/api/v1/namespaces/{namespace}",
        body={"metadata": {"annotations": {DIGEST_ANNOTATION: digest}}},
        content_type="application/merge-patch+json",
    )


def _wait_namespace_gone(api: ApiClient, namespace: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _request(api, "GET", f"/api/v1/namespaces/{namespace}", allow=(404,)) is not None:
        if time.monotonic() > deadline:
            raise ScenarioError(f"namespace {namespace} still terminating after {timeout_s:.0f}s")
        time.sleep(0.5)


class _Serialized:
    """Calls into the ControlPlane one at a time: its dynamic client is shared, and scenarios
    load concurrently. Waiting (our own polling with our own client) stays concurrent."""

    _lock = threading.Lock()

    def __init__(self, control_plane: Any) -> None:
        self._cp = control_plane

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._cp, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attr(*args, **kwargs)

        return call


def _log_writer(control_plane: Any, api: ApiClient, scenario: Scenario) -> Callable[[], None]:
    """Writes each log spec once per pod, however often it is called (pods appear over time)."""
    done: list[set[str]] = [set() for _ in scenario.logs]

    def write() -> None:
        for spec, seen in zip(scenario.logs, done, strict=True):
            write_logs(control_plane, api, scenario.namespace, spec, seen)

    return write


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
    """Every scenario applied once per session into scn-<name>, each in its claimed state.

    Scenarios are applied concurrently (each waits on its own controllers); the first failure
    is raised after the others finished, naming its scenario.
    """
    return load_all(control_plane, scenarios)


def load_all(
    control_plane: Any, scenarios: Sequence[Scenario], *, workers: int = 8
) -> dict[str, LoadedScenario]:
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scenario") as pool:
        futures = {s.name: pool.submit(apply_scenario, control_plane, s) for s in scenarios}
    errors = [f"{name}: {f.exception()}" for name, f in futures.items() if f.exception()]
    if errors:
        raise ScenarioError("scenarios not loaded:\n" + "\n".join(errors))
    return {s.name: LoadedScenario(s.namespace, s) for s in scenarios}
