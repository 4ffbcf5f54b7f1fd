"""Every mutation from the states where it is easiest to get wrong: zero replicas, a paused
Deployment, no previous revision, a pod already gone, a silence already expired. Each either
does exactly what was asked or refuses plainly with nothing written."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from tests.tools.mutate.cluster import create_deployment, wait_rollout, wait_until
from tests.tools.mutate.rig import Rig, silence
from tests.tools.mutate.wire import Fault, Wire
from tools.mutate.kube import RESTART_STAMP
from tools.mutate.ledger import Phase, Target
from tools.results import ErrorKind, ToolStatus

pytestmark = pytest.mark.cluster


@pytest.fixture
def rig(ledger_cluster, target_ns):
    r = Rig(ledger_cluster, target_ns)
    yield r
    r.close()


def _dep(rig: Rig, name: str = "web"):
    return client.AppsV1Api(rig.admin).read_namespaced_deployment(name, rig.ns)


def _target(rig: Rig, name: str = "web", kind: str = "Deployment") -> Target:
    return Target(kind=kind, namespace=rig.ns, name=name)


def _writes(wire: Wire) -> int:
    return sum(
        1
        for e in wire.log
        if e.method in ("PATCH", "POST", "DELETE", "PUT") and ("/operations" not in e.path)
    )


def test_scale_from_zero_to_three_and_back(rig):
    create_deployment(rig.cp, rig.admin, rig.ns, "web", replicas=0)
    registry = rig.registry()

    up = registry.submit(rig.request("scale", _target(rig), {"replicas": 3}))
    assert up.phase is Phase.SUCCEEDED, up.result.excerpt
    assert _dep(rig).spec.replicas == 3
    assert up.operation.inverse is not None
    assert up.operation.inverse.args == {"replicas": 0}

    down = registry.undo(up.operation.id, requested_by="kube:test", requested_via="test")
    assert down.phase is Phase.SUCCEEDED, down.result.excerpt
    assert _dep(rig).spec.replicas == 0
    again = registry.submit(rig.request("scale", _target(rig), {"replicas": 3}, step="1"))
    assert again.phase is Phase.SUCCEEDED, again.result.excerpt
    assert _dep(rig).spec.replicas == 3


def test_scale_to_zero(rig):
    create_deployment(rig.cp, rig.admin, rig.ns, "web", replicas=2)
    done = rig.registry().submit(rig.request("scale", _target(rig), {"replicas": 0}))
    assert done.phase is Phase.SUCCEEDED, done.result.excerpt
    assert _dep(rig).spec.replicas == 0


def test_restart_at_zero_replicas_stamps_the_template(rig):
    create_deployment(rig.cp, rig.admin, rig.ns, "web", replicas=0)
    done = rig.registry().submit(rig.request("rollout_restart", _target(rig), {}))
    assert done.phase is Phase.SUCCEEDED, done.result.excerpt
    assert _dep(rig).spec.template.metadata.annotations[RESTART_STAMP] == done.operation.id


@pytest.mark.parametrize("action", ["rollout_restart", "rollback"])
def test_a_paused_deployment_is_refused_plainly(rig, action):
    create_deployment(rig.cp, rig.admin, rig.ns, "web", replicas=1)
    client.AppsV1Api(rig.admin).patch_namespaced_deployment(
        "web", rig.ns, {"spec": {"paused": True}}
    )
    wait_rollout(rig.cp, rig.admin, rig.ns, "web")
    before = _dep(rig).metadata.resource_version
    wire = Wire()
    outcome = rig.registry(wire).submit(rig.request(action, _target(rig), {}))

    assert outcome.result.status is ToolStatus.ERROR
    assert outcome.result.error_kind is ErrorKind.INVALID
    assert "is paused" in outcome.result.excerpt
    assert "kubectl rollout resume" in outcome.result.excerpt
    assert outcome.operation is None  # nothing recorded, nothing written
    assert _writes(wire) == 0
    assert _dep(rig).metadata.resource_version == before


def test_a_paused_deployment_still_scales(rig):
    create_deployment(rig.cp, rig.admin, rig.ns, "web", replicas=1)
    client.AppsV1Api(rig.admin).patch_namespaced_deployment(
        "web", rig.ns, {"spec": {"paused": True}}
    )
    done = rig.registry().submit(rig.request("scale", _target(rig), {"replicas": 2}))
    assert done.phase is Phase.SUCCEEDED, done.result.excerpt
    assert _dep(rig).spec.replicas == 2


def test_a_pod_that_vanishes_before_its_eviction_is_not_evicted_twice(rig):
    create_deployment(rig.cp, rig.admin, rig.ns, "web", replicas=1)
    core = client.CoreV1Api(rig.admin)
    wait_until(
        lambda: len(core.list_namespaced_pod(rig.ns, label_selector="app=web").items) == 1,
        20,
        "the pod",
    )
    pod = core.list_namespaced_pod(rig.ns, label_selector="app=web").items[0].metadata.name
    eviction = rf"/pods/{pod}/eviction$"
    wire = Wire()
    wire.arm(
        Fault(
            "POST",
            eviction,
            "call_before",
            callback=lambda: core.delete_namespaced_pod(pod, rig.ns, grace_period_seconds=0),
        )
    )
    outcome = rig.registry(wire).submit(rig.request("delete_pod", _target(rig, pod, "Pod"), {}))

    assert outcome.phase is Phase.SUCCEEDED, outcome.result.excerpt  # the pod is gone, as asked
    assert wire.landed("POST", eviction) == 0  # the eviction was refused (404), never repeated
    assert len([e for e in wire.log if e.method == "POST" and eviction[:-1] in e.path]) <= 1


def test_a_rollback_without_a_previous_revision_is_refused_plainly(rig):
    create_deployment(rig.cp, rig.admin, rig.ns, "web", replicas=1)  # revision 1 only
    wire = Wire()
    outcome = rig.registry(wire).submit(rig.request("rollback", _target(rig), {}))

    assert outcome.result.error_kind is ErrorKind.INVALID
    assert "has no previous revision to roll back to" in outcome.result.excerpt
    assert outcome.operation is None
    assert _writes(wire) == 0


def test_deleting_a_pod_that_is_already_gone(rig):
    wire = Wire()
    outcome = rig.registry(wire).submit(
        rig.request("delete_pod", _target(rig, "web-5c9f7b8d6-gone1", "Pod"), {})
    )
    assert outcome.result.error_kind is ErrorKind.NOT_FOUND
    assert "does not exist" in outcome.result.excerpt
    assert outcome.operation is None
    assert _writes(wire) == 0


@pytest.mark.prometheus
def test_expiring_a_silence_that_already_expired(ledger_cluster, target_ns, alertmanager):
    rig = Rig(ledger_cluster, target_ns, am_url=alertmanager.url)
    silence_id = silence(rig.am_url, "AlreadyOver", target_ns)
    rig.registry().submit(
        rig.request(
            "silence_expire", _target(rig, silence_id, "Silence"), {"silence_id": silence_id}
        )
    )
    time.sleep(0.1)
    wire = Wire()
    outcome = rig.registry(wire).submit(
        rig.request(
            "silence_expire",
            _target(rig, silence_id, "Silence"),
            {"silence_id": silence_id},
            step="1",
        )
    )
    assert outcome.result.error_kind is ErrorKind.INVALID
    assert "already expired" in outcome.result.excerpt
    assert [e for e in wire.log if e.method == "DELETE"] == []
    rig.close()
