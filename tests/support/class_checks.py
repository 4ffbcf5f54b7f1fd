"""What each root cause class means in the API, checked from the raw objects a scenario leaves.

Written per class against what the real controllers, the scheduler and kwok put in the API
(container states, events, endpoints, conditions, logs served through pods/log), independently
of a scenario's own `wait_for` conditions. The corpus test runs `check_by_class` on every
scenario without a hand-written check, and `tests.support.check_scenario` on each file it checks,
so a writer sees the same failure the suite would.
"""

from __future__ import annotations

from typing import Any

from kubernetes.client import ApiClient, CoreV1Api
from kubernetes.client.exceptions import ApiException

from tests.support.scenario_format import Scenario
from tests.support.scenarios import get_json, list_pods
from triage.core.causes import CauseClass


def statuses(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [cs for p in pods for cs in (p.get("status") or {}).get("containerStatuses") or []]


def waiting_reasons(pods: list[dict[str, Any]]) -> list[str | None]:
    return [((cs.get("state") or {}).get("waiting") or {}).get("reason") for cs in statuses(pods)]


def events(api: ApiClient, ns: str) -> list[dict[str, Any]]:
    return list(get_json(api, f"/api/v1/namespaces/{ns}/events").get("items") or [])


def endpoints(api: ApiClient, ns: str, name: str) -> tuple[int, int]:
    ep = get_json(api, f"/api/v1/namespaces/{ns}/endpoints/{name}")
    subsets = ep.get("subsets") or []
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    return ready, sum(len(s.get("notReadyAddresses") or []) for s in subsets)


def is_ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def unscheduled(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return pod["status"].get("phase") == "Pending" and any(
        c["type"] == "PodScheduled" and c["status"] == "False" for c in conditions
    )


def unclaimed(pod: dict[str, Any]) -> bool:
    """Pending, unbound and waiting for a scheduler other than the default one."""
    spec = pod.get("spec") or {}
    return (
        pod["status"].get("phase") == "Pending"
        and not spec.get("nodeName")
        and spec.get("schedulerName", "default-scheduler") != "default-scheduler"
    )


def exhausted_quotas(api: ApiClient, scenario: Scenario) -> list[str]:
    """Quotas in the scenario's namespaces with some resource used up to its hard limit."""
    out = []
    for ns in scenario.all_namespaces:
        for quota in get_json(api, f"/api/v1/namespaces/{ns}/resourcequotas").get("items") or []:
            status = quota.get("status") or {}
            hard, used = status.get("hard") or {}, status.get("used") or {}
            if any(k in used and used[k] == v for k, v in hard.items()):
                out.append(quota["metadata"]["name"])
    return out


def log(api: ApiClient, ns: str, pod: dict[str, Any], container: str, previous: bool) -> str:
    text: str = CoreV1Api(api).read_namespaced_pod_log(
        pod["metadata"]["name"], ns, container=container, previous=previous
    )
    return text


def status_code(api: ApiClient, path: str) -> int:
    method, url, headers, _, _ = api.param_serialize(
        "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
    )
    resp = api.call_api(method, url, header_params=headers)
    resp.read()
    return int(resp.status)


def _all_pods(api: ApiClient, scenario: Scenario) -> list[dict[str, Any]]:
    return [
        p
        for ns in scenario.all_namespaces
        for p in get_json(api, f"/api/v1/namespaces/{ns}/pods").get("items") or []
    ]


def _all_events(api: ApiClient, scenario: Scenario) -> list[dict[str, Any]]:
    return [e for ns in [*scenario.all_namespaces, "default"] for e in events(api, ns)]


def _messages(api: ApiClient, scenario: Scenario, reason: str) -> list[str]:
    own = set(scenario.all_namespaces)
    out = []
    for e in _all_events(api, scenario):
        involved = e.get("involvedObject") or {}
        mine = involved.get("namespace") in own or str(involved.get("name", "")).startswith(
            scenario.namespace
        )
        if e.get("reason") == reason and mine:
            out.append(str(e.get("message")))
    return out


def _terminations(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        t
        for cs in statuses(pods)
        for t in (
            ((cs.get("lastState") or {}).get("terminated")),
            ((cs.get("state") or {}).get("terminated")),
        )
        if t
    ]


def check_by_class(api: ApiClient, scenario: Scenario) -> None:
    cls = scenario.expect.root_cause_class
    pods = _all_pods(api, scenario)
    reasons = set(waiting_reasons(pods))
    if cls in (CauseClass.OOM_KILLED, CauseClass.MEMORY_LEAK):
        assert any(
            t.get("reason") == "OOMKilled" and t["exitCode"] == 137 for t in _terminations(pods)
        )
    elif cls is CauseClass.LIVENESS_PROBE_FAILING:
        assert any("failed liveness probe" in m for m in _messages(api, scenario, "Killing"))
        assert any(
            m.startswith("Liveness probe failed") for m in _messages(api, scenario, "Unhealthy")
        )
    elif cls is CauseClass.STARTUP_PROBE_FAILING:
        assert any("failed startup probe" in m for m in _messages(api, scenario, "Killing"))
    elif cls is CauseClass.READINESS_PROBE_FAILING:
        assert any(p["status"]["phase"] == "Running" and not is_ready(p) for p in pods)
        assert any(
            m.startswith("Readiness probe failed") for m in _messages(api, scenario, "Unhealthy")
        )
    elif cls is CauseClass.IMAGE_PULL:
        assert reasons & {"ImagePullBackOff", "ErrImagePull"}
    elif cls is CauseClass.MISSING_CONFIG_REFERENCE:
        assert reasons & {"CreateContainerConfigError", "ContainerCreating"}
        assert _messages(api, scenario, "Failed") or _messages(api, scenario, "FailedMount")
    elif cls is CauseClass.INIT_CONTAINER_FAILING:
        init = [
            cs for p in pods for cs in (p.get("status") or {}).get("initContainerStatuses") or []
        ]
        assert any("terminated" not in (cs.get("state") or {}) for cs in init)
        assert any(p["status"]["phase"] == "Pending" for p in pods)
    elif cls in (CauseClass.INSUFFICIENT_RESOURCES, CauseClass.UNSCHEDULABLE_PLACEMENT):
        # the default scheduler marks a pod it cannot place and says why; a pod that names a
        # scheduler nobody runs stays unbound with no condition and no event at all
        refused = any(unscheduled(p) for p in pods) and _messages(api, scenario, "FailedScheduling")
        assert refused or any(unclaimed(p) for p in pods), "no pod the scheduler refused"
    elif cls in (CauseClass.QUOTA_EXCEEDED, CauseClass.LIMIT_RANGE_VIOLATION):
        # a controller records the refusal as an event; an application that creates objects
        # itself only gets the 403, and the quota shows what is used up
        forbidden = any("is forbidden" in m for m in _messages(api, scenario, "FailedCreate"))
        spent = cls is CauseClass.QUOTA_EXCEEDED and exhausted_quotas(api, scenario)
        assert forbidden or spent, "no refused create and no quota used up"
    elif cls is CauseClass.ADMISSION_WEBHOOK:
        failed = _messages(api, scenario, "FailedCreate")
        assert any("webhook" in m or "ValidatingAdmissionPolicy" in m for m in failed), failed
    elif cls is CauseClass.CRONJOB_NOT_SCHEDULED:
        kinds = {o["kind"] for o in scenario.all_objects}
        assert "CronJob" in kinds
    elif cls is CauseClass.PDB_BLOCKING:
        pdbs = get_json(
            api, f"/apis/policy/v1/namespaces/{scenario.namespace}/poddisruptionbudgets"
        )["items"]
        # a budget that allows nothing, or a pod two budgets select: the eviction API
        # refuses to evict such a pod whatever each allows
        selectors = [(p["spec"].get("selector") or {}).get("matchLabels") or {} for p in pdbs]
        overlapping = any(
            sum(bool(sel) and _selects(sel, pod) for sel in selectors) >= 2 for pod in pods
        )
        blocking = [
            p["metadata"]["name"] for p in pdbs if p["status"].get("disruptionsAllowed") == 0
        ]
        if scenario.target.kind == "PodDisruptionBudget":
            assert overlapping or scenario.render(scenario.target.name) in blocking, blocking
        else:
            assert overlapping or blocking, "no budget allows 0 disruptions"
    elif cls is CauseClass.NODE_NOT_READY:
        nodes = [o for o in scenario.all_objects if o["kind"] == "Node"]
        name = scenario.render(nodes[0]["metadata"]["name"])
        node = get_json(api, f"/api/v1/nodes/{name}")
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "False"
    elif cls is CauseClass.NODE_PRESSURE:
        nodes = [o for o in scenario.all_objects if o["kind"] == "Node"]
        node = get_json(api, f"/api/v1/nodes/{scenario.render(nodes[0]['metadata']['name'])}")
        pressure = {c["type"] for c in node["status"]["conditions"] if c["status"] == "True"}
        assert pressure & {"MemoryPressure", "DiskPressure", "PIDPressure"}
    elif cls is CauseClass.PVC_PENDING:
        assert any(unscheduled(p) for p in pods)
    elif cls is CauseClass.SERVICE_SELECTOR_MISMATCH:
        assert any(is_ready(p) for p in pods)
    elif cls is CauseClass.NO_FAULT:
        target = scenario.target
        if target.kind == "Deployment":
            dep = get_json(
                api, f"/apis/apps/v1/namespaces/{scenario.namespace}/deployments/{target.name}"
            )
            assert dep["status"].get("availableReplicas") == dep["spec"]["replicas"]
    # every log the scenario writes is served by the apiserver through pods/log
    for spec in scenario.logs:
        ns = scenario.namespace_for(spec.namespace)
        matching = list_pods(api, ns, spec.selector)
        if _scheduled_pods(scenario, spec.selector):
            # a CronJob's pods come at its schedule and go with its Jobs' history limit: those
            # of the loader's time may all be gone, and later ones have no lines yet
            continue
        assert matching, (scenario.name, spec.selector)
        # a pod that runs somewhere: a replacement still Pending (a NotReady node's pod evicted
        # since the scenario loaded) has no log yet, and one being deleted (the last pod of an
        # old ReplicaSet) may have lost it: the one beside it has the scenario's
        running = [
            p
            for p in matching
            if (p.get("spec") or {}).get("nodeName") and not p["metadata"].get("deletionTimestamp")
        ]
        # a pod created since the scenario loaded (a Job's retry) has no lines yet: one of
        # the pods must serve them
        candidates = running or matching
        if spec.current:
            assert any(_served(api, ns, p, spec.container, False) for p in candidates), spec
        if spec.previous:
            assert any(_served(api, ns, p, spec.container, True) for p in candidates), spec


def _scheduled_pods(scenario: Scenario, selector: dict[str, str]) -> bool:
    """A CronJob of the scenario makes pods the selector selects (they come at its schedule)."""
    for obj in scenario.all_objects:
        if obj["kind"] != "CronJob":
            continue
        template = obj["spec"]["jobTemplate"]["spec"]["template"]
        labels = (template.get("metadata") or {}).get("labels") or {}
        if all(labels.get(k) == v for k, v in selector.items()):
            return True
    return False


def _selects(selector: dict[str, str], pod: dict[str, Any]) -> bool:
    labels = pod["metadata"].get("labels") or {}
    return all(labels.get(k) == v for k, v in selector.items())


def _served(api: ApiClient, ns: str, pod: dict[str, Any], container: str, previous: bool) -> bool:
    try:
        return bool(log(api, ns, pod, container, previous).strip())
    except ApiException as e:
        if e.status == 400:  # "no logs found for container"
            return False
        raise
