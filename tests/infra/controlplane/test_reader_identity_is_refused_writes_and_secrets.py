"""The reader ServiceAccount is refused writes and Secrets by the apiserver itself (RBAC)."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.support.controlplane import ControlPlane

pytestmark = pytest.mark.cluster


def _deployment(name: str) -> dict[str, object]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]},
            },
        },
    }


def _secret(name: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name},
        "stringData": {"password": "hunter2"},
    }


def test_reader_cannot_patch_a_deployment(control_plane: ControlPlane, namespace: str) -> None:
    control_plane.apply(namespace, [_deployment("web")])
    patch = {"spec": {"replicas": 3}}
    with control_plane.api_client(control_plane.reader_kubeconfig) as reader:
        apps = client.AppsV1Api(reader)
        # The reader does authenticate and may read: the refusal below is about the verb.
        assert apps.read_namespaced_deployment("web", namespace).spec.replicas == 1
        with pytest.raises(ApiException) as refused:
            apps.patch_namespaced_deployment("web", namespace, patch)
    assert refused.value.status == 403
    with control_plane.api_client() as admin:
        patched = client.AppsV1Api(admin).patch_namespaced_deployment("web", namespace, patch)
    assert patched.spec.replicas == 3


def test_reader_cannot_get_a_secret(control_plane: ControlPlane, namespace: str) -> None:
    control_plane.apply(namespace, [_secret("db-password")])
    with control_plane.api_client(control_plane.reader_kubeconfig) as reader:
        core = client.CoreV1Api(reader)
        with pytest.raises(ApiException) as get_refused:
            core.read_namespaced_secret("db-password", namespace)
        with pytest.raises(ApiException) as list_refused:
            core.list_namespaced_secret(namespace)
    assert get_refused.value.status == 403
    assert list_refused.value.status == 403
    with control_plane.api_client() as admin:
        secret = client.CoreV1Api(admin).read_namespaced_secret("db-password", namespace)
    assert secret.data is not None
    assert "password" in secret.data


def test_mutator_has_no_rights_yet(control_plane: ControlPlane, namespace: str) -> None:
    with (
        control_plane.api_client(control_plane.mutator_kubeconfig) as mutator,
        pytest.raises(ApiException) as refused,
    ):
        client.CoreV1Api(mutator).list_namespaced_pod(namespace)
    assert refused.value.status == 403
