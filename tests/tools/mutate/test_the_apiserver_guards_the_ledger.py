"""The apiserver itself keeps the ledger honest, whatever our code does: an Operation's `spec`
never changes after creation (CRD validation), the mutator can execute but never approve (RBAC,
and the approvals admission policy as a second lock), an approver cannot edit arguments, and an
approval names the identity that created it (the Slack recorder: only `slack:` users).

The mutator is used with its own ServiceAccount token here (the control plane's
mutator.kubeconfig), not through the agent's impersonation: the rules hold for the identity,
not for our client.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes import client

from tests.tools.mutate.cluster import LEDGER_NS, as_user, create_deployment, policy_for
from tests.tools.mutate.rig import Rig
from tests.tools.mutate.wire import Wire
from tools.errors import Invalid
from tools.mutate.ledger import Decision, Phase, Target
from tools.mutate.records import decision_resource

pytestmark = pytest.mark.cluster

GROUP, VERSION = "triage.dev", "v1alpha1"


@pytest.fixture
def rig(ledger_cluster, target_ns):
    r = Rig(ledger_cluster, target_ns)
    r.policy = policy_for(target_ns, approval=("scale",))
    create_deployment(ledger_cluster, r.admin, target_ns, "web", replicas=2)
    yield r
    r.close()


@pytest.fixture
def mutator_token(ledger_cluster):
    api = ledger_cluster.api_client(ledger_cluster.mutator_kubeconfig)
    yield api
    api.close()


def _waiting(rig: Rig, replicas: int = 10) -> Any:
    target = Target(kind="Deployment", namespace=rig.ns, name="web")
    op = rig.registry().submit(rig.request("scale", target, {"replicas": replicas})).operation
    assert op is not None
    assert op.phase is Phase.AWAITING_APPROVAL
    return op


def _get(api: client.ApiClient, plural: str, name: str) -> dict[str, Any]:
    obj = client.CustomObjectsApi(api).get_namespaced_custom_object(
        GROUP, VERSION, LEDGER_NS, plural, name
    )
    assert isinstance(obj, dict)
    return obj


def _replace(api: client.ApiClient, obj: dict[str, Any]) -> None:
    client.CustomObjectsApi(api).replace_namespaced_custom_object(
        GROUP, VERSION, LEDGER_NS, "operations", obj["metadata"]["name"], obj
    )


def _approval(op_id: str, digest: str, approver: str) -> dict[str, Any]:
    d = Decision(
        name=Decision.name_for(op_id, True, approver),
        operation=op_id,
        approve=True,
        args_digest=digest,
        approver=approver,
    )
    return decision_resource(d, LEDGER_NS)


def _create_approval(api: client.ApiClient, body: dict[str, Any]) -> None:
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROUP, VERSION, LEDGER_NS, "approvals", body
    )


def _refused(fn: Any, status: int, *words: str) -> str:
    with pytest.raises(client.ApiException) as e:
        fn()
    assert e.value.status == status, e.value.body
    body = str(e.value.body)
    for w in words:
        assert w in body, body
    return body


def test_the_mutator_cannot_edit_what_was_asked(rig, mutator_token):
    op = _waiting(rig)
    edited = _get(mutator_token, "operations", op.id)
    edited["spec"]["args"]["replicas"] = 0  # keep the digest: the card said 10
    _refused(lambda: _replace(mutator_token, edited), 422, "spec is immutable")
    assert _get(rig.admin, "operations", op.id)["spec"]["args"] == {"replicas": 10}


def test_nobody_can_edit_what_was_asked_not_even_an_admin(rig):
    op = _waiting(rig)
    edited = _get(rig.admin, "operations", op.id)
    edited["spec"]["args"]["replicas"] = 25
    edited["spec"]["argsDigest"] = "sha256:" + "1" * 64
    _refused(lambda: _replace(rig.admin, edited), 422, "spec is immutable")


def test_an_approver_cannot_edit_operations_at_all(rig, ledger_cluster):
    op = _waiting(rig)
    with as_user(ledger_cluster, "alice") as alice:
        current = _get(alice, "operations", op.id)  # may read
        edited = copy.deepcopy(current)
        edited["spec"]["args"]["replicas"] = 3
        _refused(lambda: _replace(alice, edited), 403)
        status_only = copy.deepcopy(current)
        status_only["status"]["phase"] = "Pending"
        _refused(lambda: _replace(alice, status_only), 403)


def test_the_mutator_can_never_record_an_approval(rig, mutator_token, ledger_cluster):
    op = _waiting(rig)
    body = _approval(op.id, op.args_digest, "alice")
    _refused(lambda: _create_approval(mutator_token, body), 403)  # RBAC: no create
    as_mutator = _approval(
        op.id, op.args_digest, "system:serviceaccount:triage-system:triage-mutator"
    )
    _refused(lambda: _create_approval(mutator_token, as_mutator), 403)
    # The second lock: even granted the right by mistake, admission refuses the mutator.
    grant = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "test-mistaken-grant"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "triage-ledger-approver",
        },
        "subjects": [{"kind": "ServiceAccount", "name": "triage-mutator", "namespace": LEDGER_NS}],
    }
    ledger_cluster.apply(LEDGER_NS, [grant])
    rbac = client.RbacAuthorizationV1Api(rig.admin)
    try:
        authz = client.AuthorizationV1Api(mutator_token)

        def granted() -> bool:
            review = client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(
                    resource_attributes=client.V1ResourceAttributes(
                        group=GROUP, resource="approvals", verb="create", namespace=LEDGER_NS
                    )
                )
            )
            return bool(authz.create_self_subject_access_review(review).status.allowed)

        ledger_cluster.wait_for(granted, 30, "the mistaken grant to take effect")
        _refused(lambda: _create_approval(mutator_token, as_mutator), 422, "may never approve")
        _refused(lambda: _create_approval(mutator_token, body), 422, "may never approve")
    finally:
        rbac.delete_namespaced_role_binding("test-mistaken-grant", LEDGER_NS)
    assert rig.registry().ledger.decisions(op.id) == []


def test_an_approval_names_the_identity_that_creates_it(rig, ledger_cluster):
    op = _waiting(rig)
    with as_user(ledger_cluster, "alice") as alice:
        _refused(
            lambda: _create_approval(alice, _approval(op.id, op.args_digest, "bob")),
            422,
            "must name the identity",
        )
        _refused(
            lambda: _create_approval(alice, _approval(op.id, op.args_digest, "slack:T1/U1")),
            422,
        )
        _create_approval(alice, _approval(op.id, op.args_digest, "alice"))
    recorder = rig.recorder()
    with pytest.raises(Invalid, match=r"ValidatingAdmissionPolicy .triage-approvals"):
        recorder.decide(_decision(op.id, op.args_digest, "alice"))
    _, created = recorder.decide(_decision(op.id, op.args_digest, "slack:T1/U0ALICE"))
    assert created
    assert {d.approver for d in rig.registry().ledger.decisions(op.id)} == {
        "alice",
        "slack:T1/U0ALICE",
    }


def test_an_approval_cannot_be_edited(rig, ledger_cluster):
    op = _waiting(rig)
    rig.approve(op)
    name = Decision.name_for(op.id, True, "alice")
    obj = _get(rig.admin, "approvals", name)
    obj["spec"]["argsDigest"] = "sha256:" + "2" * 64
    _refused(
        lambda: client.CustomObjectsApi(rig.admin).replace_namespaced_custom_object(
            GROUP, VERSION, LEDGER_NS, "approvals", name, obj
        ),
        422,
        "immutable",
    )


def test_an_approval_the_mutator_wrote_on_the_operation_is_not_obeyed(rig, mutator_token):
    """The mutator (which may write Operations) forges the record of an approval and moves the
    operation on: the execution looks for the Approval object, finds none, writes nothing."""
    op = _waiting(rig)
    forged = _get(mutator_token, "operations", op.id)
    forged["status"]["phase"] = "Pending"
    forged["status"]["approval"] = {
        "name": Decision.name_for(op.id, True, "alice"),
        "approver": "alice",
        "approvedAt": "2026-01-01T00:00:00Z",
        "argsDigest": op.args_digest,
        "expiresAt": "2099-01-01T00:00:00Z",
        "usedAt": "2026-01-01T00:00:01Z",
    }
    _replace(mutator_token, forged)  # its own record: the apiserver lets it write status

    wire = Wire()
    outcome = rig.registry(wire, later_s=5).resume(op.id)
    assert outcome.phase is Phase.REFUSED
    assert "does not exist" in outcome.operation.message
    assert wire.landed("PATCH", r"/scale$") == 0
    dep = client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns)
    assert dep.spec.replicas == 2


def _decision(op_id: str, digest: str, approver: str) -> Decision:
    return Decision(
        name=Decision.name_for(op_id, True, approver),
        operation=op_id,
        approve=True,
        args_digest=digest,
        approver=approver,
    )
