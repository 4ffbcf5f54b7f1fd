"""The real controllers run: a Deployment gets Running pods, a restart gets a new ReplicaSet."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from kubernetes import client

from tests.support.controlplane import ControlPlane

pytestmark = pytest.mark.cluster


def _deployment(name: str, replicas: int) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/web:1.0"}]},
            },
        },
    }


def _running_ready(pod: client.V1Pod) -> bool:
    ready = [c for c in pod.status.conditions or [] if c.type == "Ready"]
    return pod.status.phase == "Running" and bool(ready) and ready[0].status == "True"


def _owned_replicasets(apps: client.AppsV1Api, namespace: str, name: str) -> list[str]:
    return sorted(
        rs.metadata.name
        for rs in apps.list_namespaced_replica_set(namespace, label_selector=f"app={name}").items
        if any(o.kind == "Deployment" and o.name == name for o in rs.metadata.owner_references)
    )


def test_deployment_yields_running_pods(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    control_plane.apply(namespace, [_deployment("web", 2)])
    core = client.CoreV1Api(k8s_admin)

    def two_running() -> bool:
        pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
        return len(pods) == 2 and all(_running_ready(p) for p in pods)

    control_plane.wait_for(two_running, 30, "2 Running and Ready pods of deployment web")
    pods = core.list_namespaced_pod(namespace, label_selector="app=web").items
    assert all(p.spec.node_name for p in pods)
    assert all(p.status.pod_ip for p in pods)
    assert {p.metadata.owner_references[0].kind for p in pods} == {"ReplicaSet"}
    apps = client.AppsV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: apps.read_namespaced_deployment("web", namespace).status.available_replicas == 2,
        30,
        "deployment web to report 2 available replicas",
    )


def test_rollout_restart_creates_a_new_replicaset(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    control_plane.apply(namespace, [_deployment("api", 1)])
    apps = client.AppsV1Api(k8s_admin)
    control_plane.wait_for(
        lambda: apps.read_namespaced_deployment("api", namespace).status.ready_replicas == 1,
        30,
        "deployment api ready",
    )
    before = _owned_replicasets(apps, namespace, "api")
    assert len(before) == 1

    # What `kubectl rollout restart` does.
    restarted_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    patch = {
        "spec": {
            "template": {
                "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": restarted_at}}
            }
        }
    }
    apps.patch_namespaced_deployment("api", namespace, patch)

    def rolled_out() -> bool:
        d = apps.read_namespaced_deployment("api", namespace)
        s = d.status
        return (
            s.observed_generation == d.metadata.generation
            and s.updated_replicas == 1
            and s.ready_replicas == 1
            and (s.replicas or 0) == 1
        )

    control_plane.wait_for(rolled_out, 60, "restart of deployment api to complete")
    after = _owned_replicasets(apps, namespace, "api")
    assert len(after) == 2
    (new,) = set(after) - set(before)
    new_rs = apps.read_namespaced_replica_set(new, namespace)
    old_rs = apps.read_namespaced_replica_set(before[0], namespace)
    assert new_rs.spec.template.metadata.annotations == {
        "kubectl.kubernetes.io/restartedAt": restarted_at
    }
    assert new_rs.metadata.annotations["deployment.kubernetes.io/revision"] == "2"
    assert new_rs.status.ready_replicas == 1
    assert old_rs.spec.replicas == 0
