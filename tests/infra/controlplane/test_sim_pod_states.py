"""The sim contract: pod annotations make kwok play a failing kubelet, visible through the API.

Status, events and logs are read back exactly as Triage reads them: from the apiserver, which
proxies pods/log to the node's kubelet endpoint (kwok).
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.controlplane import ControlPlane

pytestmark = pytest.mark.cluster


def _pod(name: str, annotations: dict[str, str], **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"containers": [{"name": "app", "image": "registry.example/app:1.2.3"}], **spec},
    }


def _status(core: client.CoreV1Api, namespace: str, name: str) -> client.V1ContainerStatus | None:
    statuses = core.read_namespaced_pod(name, namespace).status.container_statuses
    return statuses[0] if statuses else None


def _warnings(core: client.CoreV1Api, namespace: str, pod: str) -> dict[str, str]:
    events = core.list_namespaced_event(namespace, field_selector=f"involvedObject.name={pod}")
    return {e.reason: e.message for e in events.items if e.type == "Warning"}


@pytest.mark.parametrize(
    ("state", "reason", "exit_code"),
    [("crashloop", "Error", 3), ("oomkilled", "OOMKilled", 137)],
)
def test_crashing_pod_shows_crashloopbackoff_and_serves_both_logs(
    control_plane: ControlPlane,
    k8s_admin: client.ApiClient,
    namespace: str,
    state: str,
    reason: str,
    exit_code: int,
) -> None:
    annotations = {"sim.triage.dev/state": state, "sim.triage.dev/exit-code": "3"}
    control_plane.apply(namespace, [_pod("worker", annotations)])
    core = client.CoreV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: _status(core, namespace, "worker") is not None, 30, "container status of worker"
    )
    status = _status(core, namespace, "worker")
    assert status is not None
    assert status.state.waiting.reason == "CrashLoopBackOff"
    assert status.last_state.terminated.reason == reason
    assert status.last_state.terminated.exit_code == exit_code
    assert status.restart_count == 5
    assert status.ready is False
    assert core.read_namespaced_pod("worker", namespace).status.phase == "Running"

    control_plane.wait_for(
        lambda: "BackOff" in _warnings(core, namespace, "worker"), 30, "BackOff event of worker"
    )
    backoff = _warnings(core, namespace, "worker")["BackOff"]
    assert backoff.startswith("Back-off restarting failed container app in pod worker_")

    control_plane.set_pod_logs(namespace, "worker", "app", ["serving on :8080", "ok"])
    control_plane.set_pod_logs(
        namespace, "worker", "app", ["loading config", "panic: DATABASE_URL unset"], previous=True
    )

    def logs(previous: bool) -> str | None:
        try:
            return str(
                core.read_namespaced_pod_log(
                    "worker", namespace, container="app", previous=previous
                )
            )
        except ApiException:
            return None  # kwok has not seen the Logs object yet

    control_plane.wait_for(lambda: logs(True) is not None, 10, "previous log of worker")
    assert logs(False) == "serving on :8080\nok\n"
    assert logs(True) == "loading config\npanic: DATABASE_URL unset\n"
    tail = core.read_namespaced_pod_log("worker", namespace, container="app", tail_lines=1)
    assert tail == "ok\n"


def test_reader_reads_logs_through_the_apiserver(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    control_plane.apply(namespace, [_pod("web", {})])
    core = client.CoreV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: core.read_namespaced_pod("web", namespace).status.phase == "Running",
        30,
        "pod web Running",
    )
    control_plane.set_pod_logs(namespace, "web", "app", ["GET /healthz 200"])
    with control_plane.api_client(control_plane.reader_kubeconfig) as reader:
        reader_core = client.CoreV1Api(reader)

        def read() -> str | None:
            try:
                return str(reader_core.read_namespaced_pod_log("web", namespace, container="app"))
            except ApiException as e:
                if e.status == 403:
                    raise
                return None

        control_plane.wait_for(lambda: read() is not None, 10, "log of web as reader")
        assert read() == "GET /healthz 200\n"


@pytest.mark.parametrize(
    ("state", "waiting_reason", "message", "event_reason", "event_message"),
    [
        (
            "imagepull",
            "ImagePullBackOff",
            "manifest for registry.example/app:1.2.3 not found: manifest unknown",
            "Failed",
            'Failed to pull image "registry.example/app:1.2.3": manifest for',
        ),
        (
            "config-error",
            "CreateContainerConfigError",
            'configmap "checkout-config" not found',
            "Failed",
            'Error: configmap "checkout-config" not found',
        ),
    ],
)
def test_pod_stuck_waiting(
    control_plane: ControlPlane,
    k8s_admin: client.ApiClient,
    namespace: str,
    state: str,
    waiting_reason: str,
    message: str,
    event_reason: str,
    event_message: str,
) -> None:
    annotations = {"sim.triage.dev/state": state, "sim.triage.dev/message": message}
    control_plane.apply(namespace, [_pod("stuck", annotations)])
    core = client.CoreV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: _status(core, namespace, "stuck") is not None, 30, "container status of stuck"
    )
    status = _status(core, namespace, "stuck")
    assert status is not None
    assert status.state.waiting.reason == waiting_reason
    assert status.state.waiting.message == message
    assert core.read_namespaced_pod("stuck", namespace).status.phase == "Pending"
    control_plane.wait_for(
        lambda: event_reason in _warnings(core, namespace, "stuck"), 30, "Warning event of stuck"
    )
    assert _warnings(core, namespace, "stuck")[event_reason].startswith(event_message)


def test_not_ready_pod_runs_but_fails_readiness(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    annotations = {
        "sim.triage.dev/state": "not-ready",
        "sim.triage.dev/message": "HTTP probe failed with statuscode: 503",
    }
    control_plane.apply(namespace, [_pod("probe", annotations)])
    core = client.CoreV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: _status(core, namespace, "probe") is not None, 30, "container status of probe"
    )
    pod = core.read_namespaced_pod("probe", namespace)
    assert pod.status.phase == "Running"
    assert pod.status.container_statuses[0].state.running is not None
    assert pod.status.container_statuses[0].ready is False
    ready = next(c for c in pod.status.conditions if c.type == "Ready")
    assert ready.status == "False"
    control_plane.wait_for(
        lambda: (
            "Unhandled" not in _warnings(core, namespace, "probe")
            and "Unhealthy" in _warnings(core, namespace, "probe")
        ),
        30,
        "Unhealthy event of probe",
    )
    assert (
        _warnings(core, namespace, "probe")["Unhealthy"]
        == "Readiness probe failed: HTTP probe failed with statuscode: 503"
    )


def test_failing_job_reaches_backoff_limit_exceeded(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "migrate"},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {
                    "annotations": {
                        "sim.triage.dev/state": "fail",
                        "sim.triage.dev/exit-code": "2",
                    }
                },
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "migrate", "image": "registry.example/migrate:7"}],
                },
            },
        },
    }
    control_plane.apply(namespace, [job])
    batch = client.BatchV1Api(k8s_admin)

    def failed_condition() -> client.V1JobCondition | None:
        conditions = batch.read_namespaced_job("migrate", namespace).status.conditions or []
        return next((c for c in conditions if c.type == "Failed" and c.status == "True"), None)

    control_plane.wait_for(lambda: failed_condition() is not None, 30, "job migrate Failed")
    condition = failed_condition()
    assert condition is not None
    assert condition.reason == "BackoffLimitExceeded"
    pods = client.CoreV1Api(k8s_admin).list_namespaced_pod(namespace).items
    assert [p.status.phase for p in pods] == ["Failed"]
    terminated = pods[0].status.container_statuses[0].state.terminated
    assert terminated.exit_code == 2


def test_healthy_job_completes(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "report"},
        "spec": {
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "report", "image": "registry.example/report:1"}],
                },
            },
        },
    }
    control_plane.apply(namespace, [job])
    batch = client.BatchV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: batch.read_namespaced_job("report", namespace).status.succeeded == 1,
        30,
        "job report to succeed",
    )
    conditions = batch.read_namespaced_job("report", namespace).status.conditions
    assert any(c.type == "Complete" and c.status == "True" for c in conditions)
