"""Controller behaviour the scenarios rely on: the PV binder explains a Pending claim, the
HPA controller is off so scenarios own HPA status, Services get EndpointSlices."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.support.controlplane import ControlPlane

pytestmark = pytest.mark.cluster


def test_claim_on_a_missing_storageclass_stays_pending_with_an_event(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "fast-ssd",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    control_plane.apply(namespace, [claim])
    core = client.CoreV1Api(k8s_admin)

    def events() -> list[client.CoreV1Event]:
        return core.list_namespaced_event(
            namespace,
            field_selector="involvedObject.name=data,involvedObject.kind=PersistentVolumeClaim",
        ).items

    control_plane.wait_for(lambda: bool(events()), 30, "an event on claim data")
    (event, *_) = events()
    assert event.reason == "ProvisioningFailed"
    assert 'storageclass.storage.k8s.io "fast-ssd" not found' in event.message
    assert core.read_namespaced_persistent_volume_claim("data", namespace).status.phase == (
        "Pending"
    )


def test_hpa_status_written_by_a_scenario_is_left_alone(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    hpa = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 4,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {
                        "name": "cpu",
                        "target": {"type": "Utilization", "averageUtilization": 70},
                    },
                }
            ],
        },
    }
    control_plane.apply(namespace, [hpa])
    autoscaling = client.AutoscalingV2Api(k8s_admin)
    status = {"status": {"currentReplicas": 4, "desiredReplicas": 4}}
    autoscaling.patch_namespaced_horizontal_pod_autoscaler_status("web", namespace, status)

    def untouched() -> bool:
        s = autoscaling.read_namespaced_horizontal_pod_autoscaler("web", namespace).status
        return s.current_replicas == 4 and not s.conditions

    # A running HPA controller syncs a new HPA at once (its informer's add event) and would
    # write AbleToScale/ScalingActive conditions, failing to reach the metrics API.
    with pytest.raises(TimeoutError):
        control_plane.wait_for(lambda: not untouched(), 5, "HPA controller to touch web")


def test_service_gets_endpointslices_for_ready_pods(
    control_plane: ControlPlane, k8s_admin: client.ApiClient, namespace: str
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "api-0", "labels": {"app": "api"}},
        "spec": {"containers": [{"name": "app", "image": "registry.example/api:3"}]},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "api"},
        "spec": {"selector": {"app": "api"}, "ports": [{"port": 80, "targetPort": 8080}]},
    }
    control_plane.apply(namespace, [pod, service])
    discovery = client.DiscoveryV1Api(k8s_admin)

    def ready_addresses() -> list[str]:
        slices = discovery.list_namespaced_endpoint_slice(
            namespace, label_selector="kubernetes.io/service-name=api"
        ).items
        return [
            address
            for s in slices
            for e in s.endpoints or []
            if e.conditions.ready
            for address in e.addresses
        ]

    control_plane.wait_for(lambda: bool(ready_addresses()), 30, "a ready endpoint for api")
    pod_ip = client.CoreV1Api(k8s_admin).read_namespaced_pod("api-0", namespace).status.pod_ip
    assert ready_addresses() == [pod_ip]
