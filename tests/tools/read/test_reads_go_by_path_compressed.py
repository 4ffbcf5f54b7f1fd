"""Reads go by API path, ask for gzip and count what crossed the wire; names stay in their
segment; ConfigMaps are listed as metadata, so their data never arrives."""

from __future__ import annotations

import pytest

from tests.support.controlplane import ControlPlane
from tools.kube_call import METADATA_ONLY, get_raw
from tools.read.kube import KubeReader
from tools.results import ToolStatus

pytestmark = pytest.mark.cluster

PAYLOAD = "db-password=hunter2-" + "x" * 4000  # 4 KiB a ConfigMap: 40 of them pass the threshold


def _configmaps(control_plane: ControlPlane, namespace: str, n: int) -> None:
    control_plane.apply(
        namespace,
        [
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"settings-{i}"},
                "data": {"app.conf": PAYLOAD + str(i)},
            }
            for i in range(n)
        ],
    )


def test_a_large_list_crosses_the_wire_compressed(
    control_plane: ControlPlane, namespace: str
) -> None:
    _configmaps(control_plane, namespace, 60)  # ~240 KiB of JSON, over the apiserver's 128 KiB
    admin = control_plane.api_client()
    fetched = get_raw(admin, f"/api/v1/namespaces/{namespace}/configmaps", timeout_s=30)
    assert fetched.body.count(b"hunter2") == 60  # decoded: the whole list
    assert fetched.wire_bytes * 5 < len(fetched.body), (fetched.wire_bytes, len(fetched.body))

    reader = KubeReader(admin, page_size=500)
    reader._list("/api/v1/namespaces/{namespace}/configmaps", namespace=namespace)
    assert reader.stats.requests == 1
    assert reader.stats.wire_bytes * 5 < reader.stats.bytes


def test_configmap_names_never_carry_their_data(
    control_plane: ControlPlane, namespace: str
) -> None:
    _configmaps(control_plane, namespace, 3)
    admin = control_plane.api_client()
    body = get_raw(
        admin, f"/api/v1/namespaces/{namespace}/configmaps", timeout_s=30, accept=METADATA_ONLY
    ).body
    assert b"hunter2" not in body
    reader = KubeReader(admin)
    result = reader.configmap_names(namespace)
    assert result.status is ToolStatus.OK
    assert result.data == ["kube-root-ca.crt", "settings-0", "settings-1", "settings-2"]
    assert reader.stats.bytes < 4000  # three 4 KiB payloads were not sent


def test_configmap_keys_are_keys_only(control_plane: ControlPlane, namespace: str) -> None:
    _configmaps(control_plane, namespace, 2)
    reader = KubeReader(control_plane.api_client(control_plane.reader_kubeconfig))

    result = reader.configmap_keys(namespace, "settings-1")
    absent = reader.configmap_keys(namespace, "settings-9")

    assert result.status is ToolStatus.OK
    assert result.data == [{"name": "settings-1", "keys": ["app.conf"]}]
    assert "hunter2" not in repr(result.model_dump())  # the value never leaves the reader
    assert absent.status is ToolStatus.NO_DATA


def test_a_name_cannot_leave_its_path_segment(control_plane: ControlPlane, namespace: str) -> None:
    reader = KubeReader(control_plane.api_client(control_plane.reader_kubeconfig))
    for name in ("../../../api/v1/namespaces/kube-system/secrets", "web/../../secrets", "a?b=c"):
        result = reader.rollout_history(namespace, name)
        assert result.status is not ToolStatus.OK, name
        assert result.error_kind is not None
    pods = reader.logs(namespace, "../pods", container="x")
    assert pods.status is not ToolStatus.OK
