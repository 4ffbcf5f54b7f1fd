"""Applying incident scenarios to the real test control plane, and the fixtures that do it.

The decision this module embodies: a scenario *describes* a failure, the real control plane
*produces* it. Pods crash because kwok's sim stages make them crash, pods stay Pending because
the real scheduler cannot place them, a Job fails because the real Job controller counts its
failed pods, a rollout's pods are refused because the real ResourceQuota admission or a real
webhook call refuses them. The loader only writes what something we do not run would have
written (a container's log lines, the HPA controller's status, a kubelet event, an event from
an external system), and `wait_for` proves the cluster reached the state the scenario claims
before anyone investigates.

A scenario owns its namespaces (`scn-<name>`, `scn-<name>-<key>`) and the cluster-scoped
objects it declares (named `scn-<name>-...`, labelled `triage.dev/scenario: <name>`); applying
it again replaces all of them, `unload_scenario` removes them.

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
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.support.observability import PrometheusFactory, PrometheusServer
from tests.support.scenario_format import (
    CLUSTER_KINDS,
    KINDS,
    NAMESPACE_PREFIX,
    NODE_STATE_ANNOTATION,
    NODE_STATES,
    SCENARIO_DIR,
    SCENARIO_LABEL,
    SIM_STATE_ANNOTATION,
    SIM_STATES,
    ApplyStep,
    Condition,
    CronJobCondition,
    DeploymentCondition,
    EndpointsCondition,
    EventCheck,
    EventCondition,
    EventStep,
    EvictStep,
    Expect,
    HpaCondition,
    JobCondition,
    LogSpec,
    MetricSpec,
    NodeCondition,
    PatchStep,
    PdbCondition,
    PodsCondition,
    PvcCondition,
    Scenario,
    ScenarioError,
    SleepStep,
    StatefulSetCondition,
    StatusStep,
    WaitStep,
    condition_namespace_key,
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
    "CLUSTER_KINDS",
    "KINDS",
    "NAMESPACE_PREFIX",
    "NODE_STATES",
    "NODE_STATE_ANNOTATION",
    "SCENARIO_DIR",
    "SIM_STATES",
    "SIM_STATE_ANNOTATION",
    "Expect",
    "LoadedScenario",
    "MetricSpec",
    "Scenario",
    "ScenarioError",
    "apply_scenario",
    "check_condition",
    "conditions_hold",
    "get_json",
    "list_pods",
    "load_all",
    "load_scenario",
    "load_scenarios",
    "parse_duration",
    "parse_quantity",
    "pod_states",
    "render_text",
    "scenario_series",
    "unload_scenario",
]

DIGEST_ANNOTATION = "triage.dev/scenario-digest"
DIGEST_LABEL = "triage.dev/scenario-digest"  # on the scenario's cluster-scoped objects
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
NODE_EVENTS_NAMESPACE = "default"  # where kubelets and node controllers record Node events
STAGES_FILE = Path(__file__).resolve().parents[1] / "controlplane" / "kwok" / "stages.yaml"

# --------------------------------------------------------------------------------------------
# Talking to the apiserver: a small raw REST helper over the official client
# --------------------------------------------------------------------------------------------


def _path(kind: str, namespace: str | None, name: str | None = None, sub: str | None = None) -> str:
    if kind in CLUSTER_KINDS:
        api_version, plural = CLUSTER_KINDS[kind]
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        path = f"{base}/{plural}"
    else:
        api_version, plural = KINDS[kind]
        base = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        path = f"{base}/namespaces/{namespace}/{plural}"
    if name:
        path += f"/{name}"
    if sub:
        path += f"/{sub}"
    return path


def _api_version(kind: str) -> str:
    return (CLUSTER_KINDS.get(kind) or KINDS[kind])[0]


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
    status, data = _raw_request(
        api, method, path, body=body, content_type=content_type, query=query
    )
    if status in allow:
        return None
    if status == 404:
        raise _NotFound(f"{method} {path}: HTTP 404: {data[:300]!r}")
    if status >= 300:
        raise ScenarioError(f"{method} {path}: HTTP {status}: {data[:300]!r}")
    return json.loads(data) if data else {}


class _NotFound(ScenarioError):
    """The object is not there (yet): a condition on it does not hold."""


def _raw_request(
    api: ApiClient,
    method: str,
    path: str,
    *,
    body: Any = None,
    content_type: str | None = None,
    query: Sequence[tuple[str, str]] | None = None,
) -> tuple[int, bytes]:
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
    return int(resp.status), resp.read()


def get_json(api: ApiClient, path: str, **query: str) -> dict[str, Any]:
    out = _request(api, "GET", path, query=list(query.items()))
    assert out is not None
    return out


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _parse_selector(text: str) -> dict[str, str]:
    out = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise ScenarioError(f"not a label selector: {text!r} (use app=web,tier=api)")
        out[key.strip()] = value.strip()
    return out


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
        if status.get("reason") == "Evicted":
            states.add("evicted")
    if phase == "Succeeded":
        states.add("succeeded")
    if phase == "Running":
        states.add("running")
        states.add("ready" if conditions.get("Ready") == "True" else "not-ready")
    for cs in status.get("initContainerStatuses") or []:
        state = cs.get("state") or {}
        if ((state.get("waiting") or {}).get("reason")) == "CrashLoopBackOff":
            states.add("init-crashloop")
        if "running" in state and phase == "Pending":
            states.add("init-running")
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
        if reason == "ContainerCreating":
            states.add("container-creating")
        if "OOMKilled" in (last.get("reason"), current.get("reason")):
            states.add("oomkilled")
        if (cs.get("restartCount") or 0) > 0:
            states.add("restarted")
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


def check_condition(
    api: ApiClient,
    namespace: str,
    condition: Condition,
    namespaces: Mapping[str, str] | None = None,
) -> tuple[bool, str]:
    """Whether the cluster holds the condition now, and what was seen (for error messages).

    `namespace` is the scenario's main namespace; `namespaces` maps its extra-namespace keys
    (a condition's `namespace`) to real names. An object that does not exist (yet) fails it."""
    try:
        return _check_condition(api, namespace, condition, namespaces)
    except _NotFound as e:
        return False, str(e)


def _check_condition(
    api: ApiClient,
    namespace: str,
    condition: Condition,
    namespaces: Mapping[str, str] | None,
) -> tuple[bool, str]:
    key = condition_namespace_key(condition)
    if key:
        if namespaces is None or key not in namespaces:
            raise ScenarioError(f"condition names namespace {key!r}, unknown here")
        ns = namespaces[key]
    else:
        ns = namespace
    if isinstance(condition, PodsCondition):
        c = condition.pods
        pods = list_pods(api, ns, c.selector)
        seen = {p["metadata"]["name"]: sorted(pod_states(p)) for p in pods}
        hits = sum(1 for states in seen.values() if c.state in states)
        return hits >= c.count, f"pods {_selector(c.selector)} want {c.count}x {c.state}: {seen}"
    if isinstance(condition, EventCondition):
        where = NODE_EVENTS_NAMESPACE if condition.event.kind == "Node" else ns
        events = get_json(api, _path("Event", where)).get("items") or []
        check = condition.event
        if check.name_prefix is not None:
            check = check.model_copy(
                update={
                    "name_prefix": render_text(
                        check.name_prefix, namespace=namespace, namespaces=namespaces
                    )
                }
            )
        ok = any(_event_matches(e, check) for e in events)
        reasons = sorted({str(e.get("reason")) for e in events})
        return ok, f"event {condition.event.reason}: reasons seen {reasons}"
    if isinstance(condition, PvcCondition):
        pvc = get_json(api, _path("PersistentVolumeClaim", ns, condition.pvc.name))
        phase = (pvc.get("status") or {}).get("phase")
        return phase == condition.pvc.phase, f"pvc {condition.pvc.name} phase {phase}"
    if isinstance(condition, JobCondition):
        jc = condition.job
        job = get_json(api, _path("Job", ns, jc.name))
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
        ep = _request(api, "GET", _path("Endpoints", ns, ec.name), allow=(404,)) or {}
        subsets = ep.get("subsets") or []
        ready = sum(len(s.get("addresses") or []) for s in subsets)
        not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
        ok = bool(ep) and ready == ec.ready and (ec.not_ready is None or not_ready == ec.not_ready)
        return ok, f"endpoints {ec.name}: found={bool(ep)} ready={ready} not_ready={not_ready}"
    if isinstance(condition, DeploymentCondition):
        return _check_deployment(api, ns, condition)
    if isinstance(condition, HpaCondition):
        c_hpa = condition.hpa
        hpa = get_json(api, _path("HorizontalPodAutoscaler", ns, c_hpa.name))
        current = (hpa.get("status") or {}).get("currentReplicas")
        return current == c_hpa.current_replicas, f"hpa {c_hpa.name} currentReplicas={current}"
    if isinstance(condition, StatefulSetCondition):
        sc = condition.statefulset
        sts = get_json(api, _path("StatefulSet", ns, sc.name))
        st = sts.get("status") or {}
        replicas, ready = st.get("replicas") or 0, st.get("readyReplicas") or 0
        ok = (sc.replicas is None or replicas == sc.replicas) and (
            sc.ready is None or ready == sc.ready
        )
        return ok, f"statefulset {sc.name}: replicas={replicas} ready={ready}"
    if isinstance(condition, PdbCondition):
        pc = condition.pdb
        pdb = get_json(api, _path("PodDisruptionBudget", ns, pc.name))
        st = pdb.get("status") or {}
        allowed = st.get("disruptionsAllowed")
        healthy = st.get("currentHealthy")
        observed = st.get("observedGeneration") == pdb["metadata"].get("generation")
        ok = (
            observed
            and allowed == pc.disruptions_allowed
            and (pc.current_healthy is None or healthy == pc.current_healthy)
        )
        return ok, f"pdb {pc.name}: disruptionsAllowed={allowed} currentHealthy={healthy}"
    if isinstance(condition, CronJobCondition):
        cc = condition.cronjob
        cj = get_json(api, _path("CronJob", ns, cc.name))
        active = len((cj.get("status") or {}).get("active") or [])
        suspended = bool((cj.get("spec") or {}).get("suspend"))
        ok = (cc.active is None or active == cc.active) and (
            cc.suspended is None or suspended == cc.suspended
        )
        return ok, f"cronjob {cc.name}: active={active} suspended={suspended}"
    return _check_node(api, namespace, condition, namespaces)


def _check_deployment(api: ApiClient, ns: str, condition: DeploymentCondition) -> tuple[bool, str]:
    dc = condition.deployment
    dep = get_json(api, _path("Deployment", ns, dc.name))
    status = dep.get("status") or {}
    available = status.get("availableReplicas") or 0
    revision = (dep["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision")
    uid = dep["metadata"]["uid"]
    rss = [
        rs
        for rs in get_json(api, _path("ReplicaSet", ns)).get("items") or []
        if any(o.get("uid") == uid for o in rs["metadata"].get("ownerReferences") or [])
    ]
    conds = {c.get("type"): c for c in status.get("conditions") or []}
    cond_ok = True
    if dc.condition is not None:
        found = conds.get(dc.condition) or {}
        cond_ok = found.get("status") == dc.condition_status and (
            dc.condition_reason is None or found.get("reason") == dc.condition_reason
        )
    ok = (
        (dc.available is None or available == dc.available)
        and (dc.revision is None or revision == str(dc.revision))
        and (dc.replicasets is None or len(rss) == dc.replicasets)
        and cond_ok
    )
    shown = {t: (c.get("status"), c.get("reason")) for t, c in conds.items()}
    return ok, (
        f"deployment {dc.name}: available={available} rev={revision} rs={len(rss)} "
        f"conditions={shown}"
    )


def _check_node(
    api: ApiClient, namespace: str, condition: NodeCondition, namespaces: Mapping[str, str] | None
) -> tuple[bool, str]:
    nc = condition.node
    name = render_text(nc.name, namespace=namespace, namespaces=namespaces)
    node = _request(api, "GET", _path("Node", None, name), allow=(404,))
    if node is None:
        return False, f"node {name}: not found"
    conds = {
        c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or []
    }
    taints = [t.get("key") for t in (node.get("spec") or {}).get("taints") or []]
    unschedulable = bool((node.get("spec") or {}).get("unschedulable"))
    ok = (
        (nc.condition is None or conds.get(nc.condition) == nc.status)
        and (nc.taint is None or nc.taint in taints)
        and (nc.no_taint is None or nc.no_taint not in taints)
        and (nc.unschedulable is None or unschedulable == nc.unschedulable)
    )
    return ok, f"node {name}: conditions={conds} taints={taints} unschedulable={unschedulable}"


def conditions_hold(
    api: ApiClient,
    namespace: str,
    conditions: Sequence[Condition],
    namespaces: Mapping[str, str] | None = None,
) -> tuple[bool, list[str]]:
    results = [check_condition(api, namespace, c, namespaces) for c in conditions]
    return all(ok for ok, _ in results), [detail for ok, detail in results if not ok]


def wait_conditions(
    api: ApiClient,
    namespace: str,
    conditions: Sequence[Condition],
    timeout_s: float,
    what: str,
    on_poll: Callable[[], None] | None = None,
    namespaces: Mapping[str, str] | None = None,
) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if on_poll is not None:
            on_poll()
        ok, missing = conditions_hold(api, namespace, conditions, namespaces)
        if ok:
            return
        if time.monotonic() > deadline:
            raise ScenarioError(
                f"{what}: not reached in {timeout_s:.0f}s: {'; '.join(missing)}{_stale_hint()}"
            )
        time.sleep(0.5)


def _stale_hint(state_dir: Path | None = None) -> str:
    """A control plane started before kwok/stages.yaml changed plays the old sim contract."""
    state = (state_dir or STAGES_FILE.parents[1] / ".run") / "state.json"
    try:
        if STAGES_FILE.stat().st_mtime > state.stat().st_mtime:
            return (
                " (the running control plane started before tests/controlplane/kwok/stages.yaml "
                "last changed, so kwok plays the old sim contract: restart it with "
                "tests/controlplane/down.sh once no session uses it)"
            )
    except OSError:
        pass
    return ""


# --------------------------------------------------------------------------------------------
# Applying a scenario
# --------------------------------------------------------------------------------------------


class _Context:
    """What a step needs: the client, the scenario's namespaces, and a live-pod resolver."""

    def __init__(self, api: ApiClient, scenario: Scenario) -> None:
        self.api = api
        self.scenario = scenario

    def ns(self, key: str | None) -> str:
        return self.scenario.namespace_for(key)

    def resolve_pod(self, key: str | None) -> Callable[[str], str]:
        def resolve(selector: str) -> str:
            pods = list_pods(self.api, self.ns(key), _parse_selector(selector))
            if not pods:
                raise ScenarioError(
                    f"scenario {self.scenario.name}: no pod matches {{pod:{selector}}}"
                )
            return str(sorted(p["metadata"]["name"] for p in pods)[0])

        return resolve

    def render(self, obj: Any, key: str | None = None) -> Any:
        return render_obj(
            obj,
            namespace=self.scenario.namespace,
            namespaces=self.scenario.namespace_keys,
            resolve_pod=self.resolve_pod(key),
        )


def _apply_step(ctx: _Context, step: PatchStep | StatusStep | EventStep | EvictStep) -> None:
    """One step other than `wait` and `apply` (those are run by `_apply` itself)."""
    api = ctx.api
    if isinstance(step, PatchStep):
        content = (
            "application/strategic-merge-patch+json"
            if step.patch_type == "strategic"
            else "application/merge-patch+json"
        )
        _request(
            api,
            "PATCH",
            _path(step.kind, ctx.ns(step.namespace), ctx.render(step.name)),
            body=ctx.render(step.patch, step.namespace),
            content_type=content,
        )
    elif isinstance(step, StatusStep):
        _request(
            api,
            "PATCH",
            _path(step.kind, ctx.ns(step.namespace), ctx.render(step.name), "status"),
            body={"status": ctx.render(step.status, step.namespace)},
            content_type="application/merge-patch+json",
        )
    elif isinstance(step, EvictStep):
        _evict(ctx, step)
    else:
        create_event(ctx, step)


def _evict(ctx: _Context, step: EvictStep) -> None:
    ns = ctx.ns(step.namespace)
    pods = list_pods(ctx.api, ns, step.selector)
    if not pods:
        raise ScenarioError(f"scenario {ctx.scenario.name}: evict step matches no pod")
    for pod in pods:
        name = pod["metadata"]["name"]
        status, data = _raw_request(
            ctx.api,
            "POST",
            _path("Pod", ns, name, "eviction"),
            body={
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": name, "namespace": ns},
            },
            content_type="application/json",
        )
        if status != step.expect_status:
            raise ScenarioError(
                f"scenario {ctx.scenario.name}: evicting {ns}/{name} answered {status}, "
                f"expected {step.expect_status}: {data[:300]!r}"
            )


def _rfc3339(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def create_event(ctx: _Context, step: EventStep) -> None:
    api, scenario = ctx.api, ctx.scenario
    if step.pod_selector is not None:
        ns = ctx.ns(step.namespace)
        pods = list_pods(api, ns, step.pod_selector)
        if not pods:
            raise ScenarioError(f"scenario {scenario.name}: event step matches no pod")
        pod = sorted(pods, key=lambda p: p["metadata"]["name"])[0]
        kind, name, target = "Pod", pod["metadata"]["name"], pod
        event_ns, involved_ns = ns, ns
    else:
        assert step.involved is not None
        kind = step.involved.kind
        name = ctx.render(step.involved.name)
        cluster = kind in CLUSTER_KINDS
        involved_ns = "" if cluster else ctx.ns(step.involved.namespace)
        event_ns = NODE_EVENTS_NAMESPACE if kind == "Node" else (involved_ns or scenario.namespace)
        target = get_json(api, _path(kind, involved_ns or None, name))
    now = time.time()
    first_at, last_at = step.seen(now)
    last, first = _rfc3339(last_at), _rfc3339(first_at)
    digest = hashlib.sha256(f"{scenario.name}:{step.model_dump_json()}".encode()).hexdigest()
    involved: dict[str, Any] = {
        "apiVersion": _api_version(kind),
        "kind": kind,
        "name": name,
        "uid": target["metadata"]["uid"],
    }
    if involved_ns:
        involved["namespace"] = involved_ns
    if step.field_path:
        involved["fieldPath"] = step.field_path
    source: dict[str, str] = {"component": step.source}
    host = step.host
    if host is None and kind == "Pod":
        host = (target.get("spec") or {}).get("nodeName")
    if host:
        source["host"] = ctx.render(host)
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": f"{name}.{digest[:12]}",
            "namespace": event_ns,
            "labels": {SCENARIO_LABEL: scenario.name},
        },
        "involvedObject": involved,
        "type": step.type,
        "reason": step.reason,
        "message": ctx.render(step.message, step.namespace),
        "source": source,
        "reportingComponent": step.source,
        "firstTimestamp": first,
        "lastTimestamp": last,
        "count": step.count,
    }
    if host:
        event["reportingInstance"] = source["host"]
    _request(api, "POST", _path("Event", event_ns), body=event, allow=(409,))


def write_logs(
    control_plane: Any,
    api: ApiClient,
    namespace: str,
    spec: LogSpec,
    done: set[str] | None = None,
    *,
    render: Callable[[str, str], str] | None = None,
) -> int:
    """Writes the spec's lines for every matching pod in `namespace` not in `done` (pod UIDs,
    updated). Returns how many pods got lines now. `render(line, pod)` fills placeholders
    (default: `render_text` with {namespace} and {pod})."""
    written = 0

    def default_render(line: str, pod: str) -> str:
        return render_text(line, namespace=namespace, pod=pod)

    fill = render or default_render
    for pod in list_pods(api, namespace, spec.selector):
        name, uid = pod["metadata"]["name"], pod["metadata"]["uid"]
        if done is not None and uid in done:
            continue
        for previous, lines in ((True, spec.previous), (False, spec.current)):
            if lines is None:
                continue
            rendered = [fill(ln, name) for ln in lines]
            control_plane.set_pod_logs(namespace, name, spec.container, rendered, previous=previous)
        if done is not None:
            done.add(uid)
        written += 1
    return written


def _namespace_state(api: ApiClient, namespace: str) -> dict[str, Any] | None:
    ns = _request(api, "GET", f"/api/v1/namespaces/{namespace}", allow=(404,))
    if not ns or (ns.get("status") or {}).get("phase") == "Terminating":
        return None
    return ns


def _namespace_digest(api: ApiClient, namespace: str) -> str | None:
    ns = _namespace_state(api, namespace)
    if ns is None:
        return None
    return str((ns["metadata"].get("annotations") or {}).get(DIGEST_ANNOTATION, ""))


def apply_scenario(control_plane: Any, scenario: Scenario, *, reuse: bool = True) -> None:
    """Applies the scenario into its own namespaces and waits until it is in its claimed state.

    Idempotent: a scenario whose main namespace is marked with this scenario's digest, whose
    other namespaces and cluster-scoped objects exist and whose `wait_for` still holds is
    reused as it is; anything else it owns is deleted and applied again.
    """
    cp = _Serialized(control_plane)
    with _scenario_lock(control_plane, scenario), control_plane.api_client() as api:
        _apply(cp, api, scenario, reuse=reuse)


def unload_scenario(control_plane: Any, scenario: Scenario) -> None:
    """Deletes everything the scenario owns: namespaces, cluster-scoped objects, Node events."""
    cp = _Serialized(control_plane)
    with _scenario_lock(control_plane, scenario), control_plane.api_client() as api:
        _remove(cp, api, scenario)


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


def _cluster_objects(scenario: Scenario) -> list[tuple[str, str]]:
    return [
        (o["kind"], render_text(str(o["metadata"]["name"]), namespace=scenario.namespace))
        for o in scenario.all_objects
        if o["kind"] in CLUSTER_KINDS
    ]


# The apiserver keeps events for --event-ttl (1h); the simulated kubelet emits a state's events
# once, where a real one repeats them while the state lasts. A scenario older than this has
# lost the events it claims, so it is applied again rather than reused.
REUSE_FOR_S = 40 * 60


def _reusable(api: ApiClient, scenario: Scenario, digest: str) -> bool:
    if _namespace_digest(api, scenario.namespace) != digest:
        return False
    ns = _namespace_state(api, scenario.namespace) or {}
    created = str((ns.get("metadata") or {}).get("creationTimestamp") or "")
    try:
        age = time.time() - datetime.fromisoformat(created.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return False
    if age > REUSE_FOR_S:
        return False
    if any(_namespace_state(api, ns) is None for ns in scenario.all_namespaces[1:]):
        return False
    for kind, name in _cluster_objects(scenario):
        obj = _request(api, "GET", _path(kind, None, name), allow=(404,))
        if obj is None or (obj["metadata"].get("labels") or {}).get(DIGEST_LABEL) != digest:
            return False
    ok, _ = conditions_hold(
        api, scenario.namespace, scenario.wait_for.conditions, scenario.namespace_keys
    )
    return ok


def _remove(cp: Any, api: ApiClient, scenario: Scenario) -> None:
    """Deletes what the scenario owns (also what an older version of it left behind)."""
    label = f"{SCENARIO_LABEL}={scenario.name}"
    # webhooks first: nothing they guard should be refused while the rest goes away
    order = sorted(
        CLUSTER_KINDS,
        key=lambda k: (not k.startswith("Validating") and not k.startswith("Mutating"), k),
    )
    cluster: list[tuple[str, str]] = []
    for kind in order:
        items = get_json(api, _path(kind, None), labelSelector=label).get("items") or []
        for item in items:
            if kind != "Node":
                _request(api, "DELETE", _path(kind, None, item["metadata"]["name"]), allow=(404,))
            cluster.append((kind, item["metadata"]["name"]))
    owned = {
        item["metadata"]["name"]
        for item in get_json(api, "/api/v1/namespaces", labelSelector=label).get("items") or []
    }
    namespaces = sorted(set(scenario.all_namespaces) | owned)
    present = [
        ns
        for ns in namespaces
        if _request(api, "GET", f"/api/v1/namespaces/{ns}", allow=(404,)) is not None
    ]
    for ns in present:
        cp.delete_namespace(ns)
    for ns in present:
        _wait_gone(api, f"/api/v1/namespaces/{ns}", f"namespace {ns}", timeout_s=120)
    # Nodes last: their pods are gone with the namespaces
    for kind, name in cluster:
        if kind == "Node":
            _request(api, "DELETE", _path(kind, None, name), allow=(404,))
    for kind, name in cluster:
        _wait_gone(api, _path(kind, None, name), f"{kind} {name}", timeout_s=60)
    events = get_json(api, _path("Event", NODE_EVENTS_NAMESPACE), labelSelector=label)
    for event in events.get("items") or []:
        path = _path("Event", NODE_EVENTS_NAMESPACE, event["metadata"]["name"])
        _request(api, "DELETE", path, allow=(404,))


def _apply(cp: Any, api: ApiClient, scenario: Scenario, *, reuse: bool) -> None:
    digest = scenario.digest()
    ctx = _Context(api, scenario)
    if reuse and _reusable(api, scenario, digest):
        _log_writer(cp, api, scenario)()
        return
    _remove(cp, api, scenario)
    labels_for = {n.name: n.labels for n in scenario.namespaces}
    for key in [None, *labels_for]:
        ns = scenario.namespace_for(key)
        cp.create_namespace(ns)
        labels = {
            **(scenario.namespace_labels if key is None else labels_for[key]),
            SCENARIO_LABEL: scenario.name,
        }
        _request(
            api,
            "PATCH",
            f"/api/v1/namespaces/{ns}",
            body={"metadata": {"labels": labels}},
            content_type="application/merge-patch+json",
        )
    write_logs_once = _log_writer(cp, api, scenario)

    def apply_object(obj: Mapping[str, Any]) -> None:
        key = obj["metadata"].get("namespace")
        body = _owned(ctx.render(_without_namespace(obj)), scenario, digest)
        cp.apply(ctx.ns(key), [body])

    for obj in scenario.objects:
        apply_object(obj)
    namespaces = scenario.namespace_keys
    for step in scenario.after_apply:
        if isinstance(step, ApplyStep):
            apply_object(step.object)
        elif isinstance(step, SleepStep):
            time.sleep(step.seconds)
        elif isinstance(step, WaitStep):
            wait_conditions(
                api,
                scenario.namespace,
                step.conditions,
                step.timeout_s,
                f"scenario {scenario.name}: wait step",
                on_poll=write_logs_once,
                namespaces=namespaces,
            )
        else:
            _apply_step(ctx, step)
    wait_conditions(
        api,
        scenario.namespace,
        scenario.wait_for.conditions,
        scenario.wait_for.timeout_s,
        f"scenario {scenario.name}",
        on_poll=write_logs_once,
        namespaces=namespaces,
    )
    write_logs_once()
    _request(
        api,
        "PATCH",
        f"/api/v1/namespaces/{scenario.namespace}",
        body={"metadata": {"annotations": {DIGEST_ANNOTATION: digest}}},
        content_type="application/merge-patch+json",
    )


def _wait_gone(api: ApiClient, path: str, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _request(api, "GET", path, allow=(404,)) is not None:
        if time.monotonic() > deadline:
            raise ScenarioError(f"{what} still there (terminating?) after {timeout_s:.0f}s")
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
            write_logs(
                control_plane,
                api,
                scenario.namespace_for(spec.namespace),
                spec,
                seen,
                render=lambda line, pod: scenario.render(line, pod=pod),
            )

    return write


def _without_namespace(obj: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(obj))
    out["metadata"].pop("namespace", None)
    return out


def _owned(obj: dict[str, Any], scenario: Scenario, digest: str) -> dict[str, Any]:
    labels = obj["metadata"].setdefault("labels", {})
    labels.setdefault(SCENARIO_LABEL, scenario.name)
    if obj["kind"] in CLUSTER_KINDS:
        labels[DIGEST_LABEL] = digest
    if obj["kind"] == "Node":
        obj["metadata"].setdefault("annotations", {})[KWOK_NODE_ANNOTATION] = "fake"
        status = obj.setdefault("status", {})
        default = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        status.setdefault("capacity", default)
        status.setdefault("allocatable", status["capacity"])
    return obj


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
    control_plane: Any, scenarios: Sequence[Scenario], *, workers: int = 12
) -> dict[str, LoadedScenario]:
    """Applies every scenario; one that did not reach its state is applied once more from
    scratch (a loaded 2-core machine can starve one controller's round for longer than a
    scenario's timeout), with what its namespace held the first time printed, and the
    failures of that second try are raised together."""
    # the slowest first, so the pool is not left waiting on them at the end
    ordered = sorted(scenarios, key=lambda s: -s.wait_for.timeout_s)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="scenario") as pool:
        futures = {s.name: pool.submit(apply_scenario, control_plane, s) for s in ordered}
    failed = [s for s in ordered if futures[s.name].exception() is not None]
    errors: list[str] = []
    for s in failed:
        first = f"{s.name}: {futures[s.name].exception()}\n{namespace_report(control_plane, s)}"
        print(f"scenario not loaded, applying it once more from scratch: {first}", flush=True)
        try:
            apply_scenario(control_plane, s, reuse=False)
        except Exception as e:  # every failure is reported with its scenario
            errors.append(f"{first}\nagain: {e}")
    if errors:
        raise ScenarioError("scenarios not loaded:\n" + "\n".join(errors))
    return {s.name: LoadedScenario(s.namespace, s) for s in scenarios}


def namespace_report(control_plane: Any, scenario: Scenario, *, events: int = 12) -> str:
    """What the scenario's main namespace holds: each pod's node, phase and states, each
    ReplicaSet's wanted and ready replicas, and its latest events — for a load error."""
    ns = scenario.namespace
    lines: list[str] = []
    try:
        with control_plane.api_client() as api:
            for pod in get_json(api, _path("Pod", ns)).get("items") or []:
                meta, spec = pod["metadata"], pod.get("spec") or {}
                gone = " deleting" if meta.get("deletionTimestamp") else ""
                lines.append(
                    f"  pod {meta['name']} node={spec.get('nodeName') or '-'} "
                    f"phase={(pod.get('status') or {}).get('phase')} "
                    f"{sorted(pod_states(pod))}{gone}"
                )
            for rs in get_json(api, _path("ReplicaSet", ns)).get("items") or []:
                st = rs.get("status") or {}
                lines.append(
                    f"  replicaset {rs['metadata']['name']} want={rs['spec'].get('replicas')} "
                    f"have={st.get('replicas')} ready={st.get('readyReplicas')}"
                )
            items = get_json(api, _path("Event", ns)).get("items") or []
            items.sort(key=lambda e: str(e.get("lastTimestamp") or e.get("eventTime") or ""))
            for e in items[-events:]:
                lines.append(
                    f"  event {e.get('type')} {e.get('reason')} "
                    f"{(e.get('involvedObject') or {}).get('name')}: {e.get('message')}"
                )
    except Exception as e:  # a report must not hide the error it explains
        lines.append(f"  (namespace {ns} not read: {e})")
    return "\n".join(lines)
