"""Each scenario, applied to the real control plane, shows the failure it claims to simulate.

The assertions here are written per root cause class against what the real controllers, the
scheduler and kwok put in the API (container states, events, endpoints, conditions, logs served
through pods/log), independently of the loader's own `wait_for` conditions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes.client import ApiClient, CoreV1Api

from tests.support.scenarios import (
    LoadedScenario,
    Scenario,
    apply_scenario,
    conditions_hold,
    get_json,
    list_pods,
    load_scenarios,
)

pytestmark = pytest.mark.cluster

SCENARIO_NAMES = [s.name for s in load_scenarios()]


@pytest.fixture(scope="module")
def api(control_plane: Any) -> ApiClient:
    client: ApiClient = control_plane.api_client()
    return client


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


def owned_replicasets(api: ApiClient, ns: str, deployment: str) -> list[dict[str, Any]]:
    dep = get_json(api, f"/apis/apps/v1/namespaces/{ns}/deployments/{deployment}")
    uid = dep["metadata"]["uid"]
    items = get_json(api, f"/apis/apps/v1/namespaces/{ns}/replicasets").get("items") or []
    return [
        rs
        for rs in items
        if any(o["uid"] == uid for o in rs["metadata"].get("ownerReferences") or [])
    ]


def revision(obj: dict[str, Any]) -> str | None:
    return (obj["metadata"].get("annotations") or {}).get("deployment.kubernetes.io/revision")


# ---- one check per root cause class ----------------------------------------------------------


def check_bad_config_crashloop(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "checkout-api"})
    assert pods
    assert set(waiting_reasons(pods)) == {"CrashLoopBackOff"}
    for cs in statuses(pods):
        assert cs["lastState"]["terminated"]["exitCode"] == 1
        assert cs["restartCount"] >= 1
    assert "FATAL env DATABASE_URL is not a valid URL" in log(api, ns, pods[0], "app", True)
    assert endpoints(api, ns, "checkout-api")[0] == 0


def check_oom_killed(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "image-resizer"})
    assert pods
    for cs in statuses(pods):
        terminated = cs["lastState"]["terminated"]
        assert (terminated["reason"], terminated["exitCode"]) == ("OOMKilled", 137)
    assert "cache warm" in log(api, ns, pods[0], "resizer", True)


def check_image_pull(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "payments"})
    assert pods
    for cs in statuses(pods):
        waiting = cs["state"]["waiting"]
        assert waiting["reason"] in ("ImagePullBackOff", "ErrImagePull")
        assert "registry.example.com/payments:v2.3.9" in waiting["message"]
        assert "manifest unknown" in waiting["message"]


def check_readiness_probe_failing(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "search-api"})
    assert len(pods) == 2
    assert all(p["status"]["phase"] == "Running" and not is_ready(p) for p in pods)
    assert all(cs["restartCount"] == 0 for cs in statuses(pods))
    assert endpoints(api, ns, "search-api") == (0, 2)


def check_insufficient_resources(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "analytics-worker"})
    assert len(pods) == 2
    assert all(unscheduled(p) for p in pods)
    messages = [e["message"] for e in events(api, ns) if e["reason"] == "FailedScheduling"]
    assert any("Insufficient cpu" in m for m in messages), messages


def check_unschedulable_placement(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "gpu-inference"})
    assert pods
    assert all(unscheduled(p) for p in pods)
    messages = [e["message"] for e in events(api, ns) if e["reason"] == "FailedScheduling"]
    assert any("untolerated taint" in m and "affinity/selector" in m for m in messages), messages


def check_missing_config_reference(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "notification-service"})
    assert pods
    for cs in statuses(pods):
        waiting = cs["state"]["waiting"]
        assert waiting["reason"] == "CreateContainerConfigError"
        assert 'configmap "notification-config" not found' in waiting["message"]
    assert status_code(api, f"/api/v1/namespaces/{ns}/configmaps/notification-config") == 404
    assert status_code(api, f"/api/v1/namespaces/{ns}/configmaps/notifier-config") == 200


def check_service_selector_mismatch(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "checkout-api"})
    assert len(pods) == 2
    assert all(is_ready(p) for p in pods)
    assert list_pods(api, ns, {"app": "checkout"}) == []
    assert endpoints(api, ns, "checkout") == (0, 0)


def check_pvc_pending(api: ApiClient, ns: str) -> None:
    pvc = get_json(api, f"/api/v1/namespaces/{ns}/persistentvolumeclaims/reporting-db-data")
    assert pvc["status"]["phase"] == "Pending"
    provisioning = [e for e in events(api, ns) if e["reason"] == "ProvisioningFailed"]
    assert any("fast-ssd" in e["message"] for e in provisioning), provisioning
    assert status_code(api, "/apis/storage.k8s.io/v1/storageclasses/fast-ssd") == 404
    pods = list_pods(api, ns, {"app": "reporting-db"})
    assert pods
    assert all(unscheduled(p) for p in pods)


def check_hpa_at_max(api: ApiClient, ns: str) -> None:
    hpa = get_json(
        api, f"/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers/api-gateway"
    )
    assert hpa["status"]["currentReplicas"] == hpa["spec"]["maxReplicas"] == 3
    limited = [c for c in hpa["status"]["conditions"] if c["type"] == "ScalingLimited"]
    assert limited[0]["status"] == "True"
    assert limited[0]["reason"] == "TooManyReplicas"
    pods = list_pods(api, ns, {"app": "api-gateway"})
    assert sum(is_ready(p) for p in pods) == 3


def check_bad_rollout(api: ApiClient, ns: str) -> None:
    dep = get_json(api, f"/apis/apps/v1/namespaces/{ns}/deployments/orders-api")
    assert revision(dep) == "2"
    by_revision = {revision(rs): rs for rs in owned_replicasets(api, ns, "orders-api")}
    assert set(by_revision) == {"1", "2"}
    assert by_revision["1"]["status"].get("readyReplicas") == 3
    assert not by_revision["2"]["status"].get("readyReplicas")
    images = {
        r: rs["spec"]["template"]["spec"]["containers"][0]["image"] for r, rs in by_revision.items()
    }
    assert images == {
        "1": "registry.example.com/orders-api:v1.4.2",
        "2": "registry.example.com/orders-api:v1.5.0",
    }
    new_pods = list_pods(api, ns, {"app": "orders-api", "version": "v1.5.0"})
    assert new_pods
    assert set(waiting_reasons(new_pods)) == {"CrashLoopBackOff"}
    assert "nil pointer dereference" in log(api, ns, new_pods[0], "api", True)


def check_job_backoff_limit(api: ApiClient, ns: str) -> None:
    job = get_json(api, f"/apis/batch/v1/namespaces/{ns}/jobs/invoice-export")
    failed = [c for c in job["status"]["conditions"] if c["type"] == "Failed"]
    assert failed[0]["status"] == "True"
    assert failed[0]["reason"] == "BackoffLimitExceeded"
    assert job["status"]["failed"] >= 3
    pods = list_pods(api, ns, {"app": "invoice-export"})
    assert len(pods) >= 3
    assert all(p["status"]["phase"] == "Failed" for p in pods)
    assert "AccessDenied" in log(api, ns, pods[0], "export", False)


def check_error_rate_after_deploy(api: ApiClient, ns: str) -> None:
    dep = get_json(api, f"/apis/apps/v1/namespaces/{ns}/deployments/cart-service")
    assert revision(dep) == "2"
    assert dep["status"].get("availableReplicas") == 2
    assert len(owned_replicasets(api, ns, "cart-service")) == 2
    pods = list_pods(api, ns, {"app": "cart-service"})
    new = [p for p in pods if p["metadata"]["labels"]["version"] == "v3.2.0"]
    assert len(new) == 2
    assert all(is_ready(p) for p in new)
    assert all(cs["restartCount"] == 0 for cs in statuses(new))


def check_no_fault(api: ApiClient, ns: str) -> None:
    pods = list_pods(api, ns, {"app": "inventory-service"})
    assert len(pods) == 2
    assert all(is_ready(p) for p in pods)
    assert all(cs["restartCount"] == 0 for cs in statuses(pods))
    assert endpoints(api, ns, "inventory-service") == (2, 0)
    assert [e for e in events(api, ns) if e.get("type") == "Warning"] == []


CHECKS: dict[str, Callable[[ApiClient, str], None]] = {
    "bad_config_crashloop": check_bad_config_crashloop,
    "oom_killed": check_oom_killed,
    "image_pull": check_image_pull,
    "readiness_probe_failing": check_readiness_probe_failing,
    "insufficient_resources": check_insufficient_resources,
    "unschedulable_placement": check_unschedulable_placement,
    "missing_config_reference": check_missing_config_reference,
    "service_selector_mismatch": check_service_selector_mismatch,
    "pvc_pending": check_pvc_pending,
    "hpa_at_max": check_hpa_at_max,
    "bad_rollout": check_bad_rollout,
    "job_backoff_limit": check_job_backoff_limit,
    "error_rate_after_deploy": check_error_rate_after_deploy,
    "no_fault": check_no_fault,
}


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_scenario_shows_the_failure_it_claims(
    name: str, loaded_scenarios: dict[str, LoadedScenario], api: ApiClient
) -> None:
    loaded = loaded_scenarios[name]
    assert loaded.namespace == f"scn-{name}"
    CHECKS[loaded.scenario.expect.root_cause_class](api, loaded.namespace)
    ok, missing = conditions_hold(api, loaded.namespace, loaded.scenario.wait_for.conditions)
    assert ok, missing


def test_applying_a_loaded_scenario_again_reuses_its_namespace(
    loaded_scenarios: dict[str, LoadedScenario], control_plane: Any, api: ApiClient
) -> None:
    scenario: Scenario = loaded_scenarios["healthy"].scenario
    before = get_json(api, f"/api/v1/namespaces/{scenario.namespace}")["metadata"]["uid"]
    apply_scenario(control_plane, scenario)
    after = get_json(api, f"/api/v1/namespaces/{scenario.namespace}")["metadata"]["uid"]
    assert before == after
