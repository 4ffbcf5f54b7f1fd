"""`undo` applies the recorded inverse as an operation of its own: the previous state is back."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.tools.mutate.rig import Rig, silences_for
from tools.mutate.ledger import Phase
from tools.results import ToolStatus

pytestmark = pytest.mark.cluster


@pytest.fixture
def rig(request, ledger_cluster, target_ns):
    am_url = None
    if "silence" in request.node.name:
        am_url = request.getfixturevalue("alertmanager").url
    r = Rig(ledger_cluster, target_ns, am_url)
    yield r
    r.close()


def _dep(rig):
    return client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns)


def test_undo_a_scale_restores_the_replicas(rig):
    case = rig.case("scale")
    registry = rig.registry()
    done = registry.submit(case.request)
    assert _dep(rig).spec.replicas == 5

    undone = registry.undo(done.operation.id, requested_by="kube:alice")
    assert undone.phase is Phase.SUCCEEDED, undone.result.excerpt
    assert _dep(rig).spec.replicas == 2
    assert undone.operation.undoes == done.operation.id
    assert registry.ledger.get(done.operation.id).undone_by == undone.operation.id


def test_undo_a_rollback_puts_the_newer_template_back(rig):
    case = rig.case("rollback")
    registry = rig.registry()
    done = registry.submit(case.request)
    assert _dep(rig).spec.template.spec.containers[0].image == "shop/api:1.0"

    undone = registry.undo(done.operation.id, requested_by="kube:alice")
    assert undone.phase is Phase.SUCCEEDED, undone.result.excerpt
    assert _dep(rig).spec.template.spec.containers[0].image == "shop/api:2.0"
    # and undoing again is the same undo, not a flip back
    again = registry.undo(done.operation.id, requested_by="kube:alice")
    assert again.operation.id == undone.operation.id
    assert _dep(rig).spec.template.spec.containers[0].image == "shop/api:2.0"


@pytest.mark.prometheus
def test_undo_a_silence_expires_it(rig):
    case = rig.case("silence_create")
    registry = rig.registry()
    done = registry.submit(case.request)
    alertname = done.operation.target.name
    assert [s["status"]["state"] for s in silences_for(rig.am_url, alertname)] == ["active"]

    undone = registry.undo(done.operation.id, requested_by="kube:alice")
    assert undone.phase is Phase.SUCCEEDED, undone.result.excerpt
    assert [s["status"]["state"] for s in silences_for(rig.am_url, alertname)] == ["expired"]


def test_a_restart_cannot_be_undone_and_says_so(rig):
    case = rig.case("rollout_restart")
    registry = rig.registry()
    done = registry.submit(case.request)
    refused = registry.undo(done.operation.id, requested_by="kube:alice")
    assert refused.result.status is ToolStatus.DENIED
    assert "cannot be taken back" in refused.result.excerpt


def test_undo_refuses_to_overwrite_a_later_change(rig):
    case = rig.case("scale")
    registry = rig.registry()
    done = registry.submit(case.request)
    client.AppsV1Api(rig.admin).patch_namespaced_deployment_scale(
        "web", rig.ns, {"spec": {"replicas": 8}}
    )

    refused = registry.undo(done.operation.id, requested_by="kube:alice")
    assert refused.result.status is ToolStatus.DENIED
    assert "undoing it now would overwrite that change" in refused.result.excerpt
    assert _dep(rig).spec.replicas == 8
