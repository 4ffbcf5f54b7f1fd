"""Optimistic concurrency is the apiserver's: stale writes and duplicate creates get 409."""

from __future__ import annotations

import json

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

pytestmark = pytest.mark.cluster


def _configmap(name: str, value: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"k": value})


def test_update_with_stale_resource_version_is_a_conflict(
    k8s_admin: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(k8s_admin)
    created = core.create_namespaced_config_map(namespace, _configmap("settings", "v1"))
    stale_version = created.metadata.resource_version
    created.data = {"k": "v2"}
    core.replace_namespaced_config_map("settings", namespace, created)

    stale = _configmap("settings", "v3")
    stale.metadata.resource_version = stale_version
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_config_map("settings", namespace, stale)
    assert conflict.value.status == 409
    assert json.loads(conflict.value.body)["reason"] == "Conflict"
    assert core.read_namespaced_config_map("settings", namespace).data == {"k": "v2"}


def test_creating_an_existing_name_is_already_exists(
    k8s_admin: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(k8s_admin)
    core.create_namespaced_config_map(namespace, _configmap("claim", "first"))
    with pytest.raises(ApiException) as exists:
        core.create_namespaced_config_map(namespace, _configmap("claim", "second"))
    assert exists.value.status == 409
    assert json.loads(exists.value.body)["reason"] == "AlreadyExists"
    assert core.read_namespaced_config_map("claim", namespace).data == {"k": "first"}
