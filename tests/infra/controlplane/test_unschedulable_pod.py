"""The real scheduler explains why a pod cannot run, as a FailedScheduling event."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.support.controlplane import ControlPlane

pytestmark = pytest.mark.cluster


def _failed_scheduling(core: client.CoreV1Api, namespace: str, pod: str) -> list[str]:
    events = core.list_namespaced_event(
        namespace, field_selector=f"involvedObject.name={pod},reason=FailedScheduling"
    ).items
    return [e.message for e in events if e.type == "Warning"]


def _pod(name: str, requests: dict[str, str] | None = None, **spec: object) -> dict[str, object]:
    container: dict[str, object] = {"name": "app", "image": "registry.example/batch:2"}
    if requests:
        container["resources"] = {"requests": requests}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [container], **spec},
    }


def test_pod_requesting_64_cpus_gets_failed_scheduling(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    control_plane.apply(namespace, [_pod("huge", requests={"cpu": "64"})])
    core = client.CoreV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: bool(_failed_scheduling(core, namespace, "huge")),
        30,
        "a FailedScheduling event for pod huge",
    )
    (message, *_) = _failed_scheduling(core, namespace, "huge")
    assert "Insufficient cpu" in message
    pod = core.read_namespaced_pod("huge", namespace)
    assert pod.status.phase == "Pending"
    assert pod.spec.node_name is None
    scheduled = [c for c in pod.status.conditions if c.type == "PodScheduled"]
    assert scheduled[0].status == "False"
    assert scheduled[0].reason == "Unschedulable"


def test_pod_selecting_the_tainted_pool_needs_a_toleration(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    toleration = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}
    control_plane.apply(
        namespace,
        [
            _pod("untolerated", nodeSelector={"pool": "gpu"}),
            _pod("tolerated", nodeSelector={"pool": "gpu"}, tolerations=[toleration]),
        ],
    )
    core = client.CoreV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: bool(_failed_scheduling(core, namespace, "untolerated")),
        30,
        "a FailedScheduling event for pod untolerated",
    )
    assert "untolerated taint" in _failed_scheduling(core, namespace, "untolerated")[0]
    control_plane.wait_for(
        lambda: core.read_namespaced_pod("tolerated", namespace).status.phase == "Running",
        30,
        "pod tolerated Running",
    )
    assert core.read_namespaced_pod("tolerated", namespace).spec.node_name == "node-gpu-1"
