"""Each scenario, applied to the real control plane, shows the failure it claims to simulate.

The fourteen original scenarios keep hand-written checks; every other one is checked by what its
root cause class means in the API (`tests.support.class_checks`), independently of the loader's
own `wait_for` conditions.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from kubernetes.client import ApiClient

from tests.support.class_checks import (
    check_by_class,
    endpoints,
    events,
    is_ready,
    log,
    status_code,
    statuses,
    unscheduled,
    waiting_reasons,
)
from tests.support.scenarios import (
    REUSE_FOR_S,
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


# The original scenarios keep their hand-written checks (by scenario name).
CHECKS: dict[str, Callable[[ApiClient, str], None]] = {
    "crashloop-bad-env": check_bad_config_crashloop,
    "oomkilled": check_oom_killed,
    "imagepull-tag-not-found": check_image_pull,
    "readiness-failing": check_readiness_probe_failing,
    "pending-insufficient-cpu": check_insufficient_resources,
    "pending-node-selector": check_unschedulable_placement,
    "missing-configmap": check_missing_config_reference,
    "service-no-endpoints": check_service_selector_mismatch,
    "pvc-pending-no-storageclass": check_pvc_pending,
    "hpa-maxed": check_hpa_at_max,
    "bad-rollout": check_bad_rollout,
    "job-backoff-limit": check_job_backoff_limit,
    "error-rate-after-deploy": check_error_rate_after_deploy,
    "healthy": check_no_fault,
}


@pytest.mark.parametrize("name", SCENARIO_NAMES)
def test_scenario_shows_the_failure_it_claims(
    name: str, loaded_scenarios: dict[str, LoadedScenario], api: ApiClient
) -> None:
    loaded = loaded_scenarios[name]
    scenario = loaded.scenario
    assert loaded.namespace == f"scn-{name}"
    if name in CHECKS:
        CHECKS[name](api, loaded.namespace)
    else:
        check_by_class(api, scenario)
    ok, missing = conditions_hold(
        api, loaded.namespace, scenario.wait_for.conditions, scenario.namespace_keys
    )
    assert ok, missing


def test_cluster_scoped_objects_belong_to_their_scenario(
    loaded_scenarios: dict[str, LoadedScenario], api: ApiClient
) -> None:
    owners = {}
    for path in (
        "/api/v1/nodes",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
    ):
        for item in get_json(api, path, labelSelector="triage.dev/scenario").get("items") or []:
            owners[item["metadata"]["name"]] = item["metadata"]["labels"]["triage.dev/scenario"]
    assert owners
    for name, owner in owners.items():
        assert owner in loaded_scenarios
        assert name.startswith(f"scn-{owner}")
    shared = get_json(api, "/api/v1/nodes", labelSelector="!triage.dev/scenario")["items"]
    assert {n["metadata"]["name"] for n in shared} >= {
        "node-general-1",
        "node-general-2",
        "node-gpu-1",
    }
    for node in shared:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True", node["metadata"]["name"]


def test_applying_a_loaded_scenario_again_reuses_its_namespace(
    loaded_scenarios: dict[str, LoadedScenario], control_plane: Any, api: ApiClient
) -> None:
    scenario: Scenario = loaded_scenarios["healthy"].scenario
    ns = get_json(api, f"/api/v1/namespaces/{scenario.namespace}")["metadata"]
    created = datetime.fromisoformat(ns["creationTimestamp"].replace("Z", "+00:00")).timestamp()
    if time.time() - created > REUSE_FOR_S - 300:
        # loaded near the end of its reuse window (a long session): it would be applied
        # afresh by design, so start the check from a fresh copy
        apply_scenario(control_plane, scenario, reuse=False)
    before = get_json(api, f"/api/v1/namespaces/{scenario.namespace}")["metadata"]["uid"]
    apply_scenario(control_plane, scenario)
    after = get_json(api, f"/api/v1/namespaces/{scenario.namespace}")["metadata"]["uid"]
    assert before == after
