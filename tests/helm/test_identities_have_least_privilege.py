"""With the RBAC the chart installed, the apiserver itself says what each identity may do.

SubjectAccessReviews answer the whole table (tests/helm/rbac_table.py: the same checks and
promises that `python -m tests.helm.rbac_table` prints), and real requests made with each
ServiceAccount's own token show it in practice: the reader lists pods and reads logs but cannot
patch a Deployment or get a Secret; the agent can impersonate the mutator and no one else; the
mutator, reached through the product's own impersonating client, makes exactly the changes the
policy allows, in the policy's namespaces only.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from policies import load_policy
from tests.helm.rbac_table import CHECKS, Namespaces, answers
from tests.helm.support import (
    MUTATIONS_VALUES,
    TEST_CLUSTER_VALUES,
    Helm,
    Release,
    acting_as,
    ask,
    installed,
    sa_client,
    sa_groups,
    sa_user,
)
from tests.support.controlplane import ControlPlane
from tools.errors import Denied
from tools.mutate.kube import KubeMutator, impersonating
from tools.mutate.ledger import KubeLedger, Phase, Target
from tools.mutate.registry import MutateRegistry, MutationRequest
from tools.results import ToolStatus

pytestmark = pytest.mark.cluster


@pytest.fixture
def other_ns(control_plane: ControlPlane) -> Iterator[str]:
    """A namespace the policy does not list."""
    name = f"t-other-{uuid.uuid4().hex[:6]}"
    control_plane.create_namespace(name)
    yield name
    control_plane.delete_namespace(name)


@pytest.fixture
def target_ns(control_plane: ControlPlane) -> Iterator[str]:
    """A namespace the policy lists."""
    name = f"t-shop-{uuid.uuid4().hex[:6]}"
    control_plane.create_namespace(name)
    yield name
    control_plane.delete_namespace(name)


@pytest.fixture
def release(helm_cluster: Helm, namespace: str, target_ns: str) -> Iterator[Release]:
    """The chart with ci/mutations-values.yaml (restart and scale), policy namespace target_ns."""
    with installed(
        helm_cluster,
        namespace,
        TEST_CLUSTER_VALUES,
        MUTATIONS_VALUES,
        sets=[f"policy.mutations.namespaces={{{target_ns}}}"],
    ) as rel:
        yield rel


def _deployment(name: str, replicas: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "shop/api:1.0"}]},
            },
        },
    }


def _running_pod(cp: ControlPlane, namespace: str, app: str) -> str:
    with cp.api_client() as api:
        core = client.CoreV1Api(api)
        found: list[str] = []

        def running() -> bool:
            pods = core.list_namespaced_pod(namespace, label_selector=f"app={app}").items
            found[:] = [p.metadata.name for p in pods if p.status.phase == "Running"]
            return bool(found)

        cp.wait_for(running, 30, f"a running {app} pod")
    return found[0]


def test_every_identity_can_do_exactly_what_the_table_promises(
    control_plane: ControlPlane, release: Release, target_ns: str, other_ns: str
) -> None:
    ns = Namespaces(release.namespace, target_ns, other_ns)
    with control_plane.api_client() as api:
        got = answers(api, release, ns)
    wrong = [
        (c.what, dict(zip(("agent", "reader", "mutator"), g, strict=True)))
        for c, g in zip(CHECKS, got, strict=True)
        if g != c.expect
    ]
    assert wrong == []


def test_the_reader_lists_pods_and_reads_logs_but_cannot_patch_or_read_secrets(
    control_plane: ControlPlane, release: Release, target_ns: str
) -> None:
    control_plane.apply(
        target_ns,
        [
            _deployment("web", replicas=1),
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "db-password"},
                "stringData": {"password": "hunter2"},
            },
        ],
    )
    pod = _running_pod(control_plane, target_ns, "web")
    control_plane.set_pod_logs(target_ns, pod, "app", ["GET /healthz 200", "db timeout"])
    with sa_client(control_plane, release.namespace, release.reader) as reader:
        core = client.CoreV1Api(reader)
        assert pod in [p.metadata.name for p in core.list_namespaced_pod(target_ns).items]
        assert "db timeout" in core.read_namespaced_pod_log(pod, target_ns, container="app")
        with pytest.raises(ApiException) as secret:
            core.read_namespaced_secret("db-password", target_ns)
        with pytest.raises(ApiException) as patch:
            client.AppsV1Api(reader).patch_namespaced_deployment(
                "web", target_ns, {"spec": {"replicas": 3}}
            )
    assert (secret.value.status, patch.value.status) == (403, 403)


def _approval(op: str, approver: str) -> dict[str, Any]:
    return {
        "apiVersion": "triage.dev/v1alpha1",
        "kind": "Approval",
        "metadata": {
            "name": f"{op}-{uuid.uuid4().hex[:8]}",
            "labels": {"triage.dev/operation": op},
        },
        "spec": {
            "operation": op,
            "decision": "approve",
            "argsDigest": "sha256:" + "0" * 64,
            "approver": approver,
        },
    }


def test_only_approvers_record_approvals_and_only_in_their_own_name(
    control_plane: ControlPlane, release: Release
) -> None:
    """The installed chart's RBAC and admission policy: the mutator can never record an
    approval; an approver only in their own name; the Slack recorder only for slack: users."""
    ns = release.namespace

    def create(api: client.ApiClient, approver: str) -> int:
        try:
            client.CustomObjectsApi(api).create_namespaced_custom_object(
                "triage.dev", "v1alpha1", ns, "approvals", _approval("scale-helm", approver)
            )
        except ApiException as e:
            return int(e.status or 0)
        return 201

    with control_plane.api_client() as admin:
        admin.set_default_header("Impersonate-User", "alice")
        # the admission policy of a fresh release is in force within moments
        control_plane.wait_for(lambda: create(admin, "bob") == 422, 30, "the approvals policy")
        assert create(admin, "slack:T1/U0ALICE") == 422
        assert create(admin, "alice") == 201
    with sa_client(control_plane, ns, release.agent) as agent:
        assert create(agent, sa_user(ns, release.agent)) == 403  # the agent itself: no right
        with impersonating(agent, f"{ns}/{release.mutator}") as mutator:
            assert create(mutator, "alice") == 403
            assert create(mutator, sa_user(ns, release.mutator)) == 403
        with impersonating(agent, f"{ns}/{release.recorder}") as recorder:
            assert create(recorder, "alice") == 422  # a kube user: not the recorder's to name
            assert create(recorder, "slack:T1/U0ALICE") == 201


def test_the_agent_can_impersonate_the_mutator_and_no_one_else(
    control_plane: ControlPlane, release: Release
) -> None:
    ns = release.namespace
    with sa_client(control_plane, ns, release.agent) as agent:
        # As the mutator: the ledger is readable (a right only the mutator's Role gives here).
        with impersonating(agent, f"{ns}/{release.mutator}") as mutator:
            client.CustomObjectsApi(mutator).list_namespaced_custom_object(
                "triage.dev", "v1alpha1", ns, "operations"
            )
        refused = {}
        for who in (
            sa_user(ns, release.reader),
            sa_user(ns, "default"),
            "admin",
            "system:admin",
            sa_user("kube-system", "replicaset-controller"),
        ):
            with acting_as(agent, who) as other, pytest.raises(ApiException) as denied:
                client.CoreV1Api(other).list_namespaced_pod(ns)
            refused[who] = denied.value.status
        with acting_as(agent, sa_user(ns, release.mutator)) as m:
            m.set_default_header("Impersonate-Group", "system:masters")
            with pytest.raises(ApiException) as masters:
                client.CoreV1Api(m).list_namespaced_pod(ns)
    assert set(refused.values()) == {403}
    assert masters.value.status == 403
    with control_plane.api_client() as api:
        # And the reader and the mutator cannot impersonate anyone at all.
        for sa in (release.reader, release.mutator):
            assert not ask(
                api,
                sa_user(ns, sa),
                sa_groups(ns),
                "impersonate",
                "serviceaccounts",
                name=release.mutator,
                namespace=ns,
            )


def test_the_mutator_makes_only_the_changes_the_policy_allows_where_it_allows_them(
    control_plane: ControlPlane, release: Release, target_ns: str, other_ns: str
) -> None:
    policy = yaml.safe_load(Path(MUTATIONS_VALUES).read_text())["policy"]["mutations"]["actions"]
    assert {a for a, rule in policy.items() if rule is not None} == {"rollout_restart", "scale"}
    for ns in (target_ns, other_ns):
        control_plane.apply(ns, [_deployment("api")])
    pod = _running_pod(control_plane, target_ns, "api")
    with (
        sa_client(control_plane, release.namespace, release.agent) as agent,
        impersonating(agent, f"{release.namespace}/{release.mutator}") as as_mutator,
    ):
        kube = KubeMutator(as_mutator, timeout_s=10)
        # Allowed: scale (through the scale subresource) in the policy's namespace.
        kube.scale(target_ns, "api", expected=2, replicas=3)
        kube.stamp(target_ns, "api", "op-helm-1")
        # Not in the policy's namespaces: refused by RBAC, not by our code.
        with pytest.raises(Denied) as elsewhere:
            kube.scale(other_ns, "api", expected=2, replicas=3)
        # delete_pod is not in this policy: the mutator may not read, delete or evict pods.
        with pytest.raises(Denied):
            kube.pod(target_ns, pod)
        for evict in (False, True):
            with pytest.raises(Denied):
                kube.delete_pod(target_ns, pod, uid="any", evict=evict)
    assert elsewhere.value.http_status == 403
    with control_plane.api_client() as api:
        apps = client.AppsV1Api(api)
        scaled: Any = apps.read_namespaced_deployment("api", target_ns)
        untouched: Any = apps.read_namespaced_deployment("api", other_ns)
    assert scaled.spec.replicas == 3
    assert scaled.metadata.annotations["triage.dev/operation"] == "op-helm-1"
    assert untouched.spec.replicas == 2


def test_a_ledgered_restart_runs_end_to_end_with_the_installed_identities(
    control_plane: ControlPlane, release: Release, target_ns: str, tmp_path: Path
) -> None:
    """The product's mutation path, configured as the Deployment configures it: the policy read
    from the release's ConfigMap, the ledger in the release namespace, every write as the
    mutator impersonated from the agent's own token."""
    control_plane.apply(target_ns, [_deployment("api")])
    with control_plane.api_client() as api:
        cm: Any = client.CoreV1Api(api).read_namespaced_config_map(
            f"{release.fullname}-policy", release.namespace
        )
    (tmp_path / "policy.yaml").write_text(cm.data["policy.yaml"])
    policy = load_policy(tmp_path / "policy.yaml").mutations
    with (
        sa_client(control_plane, release.namespace, release.agent) as agent,
        impersonating(agent, f"{release.namespace}/{release.mutator}") as as_mutator,
    ):
        registry = MutateRegistry(
            policy,
            KubeLedger(as_mutator, namespace=release.namespace, timeout_s=10),
            kube=KubeMutator(as_mutator, timeout_s=10),
        )
        target = Target(kind="Deployment", namespace=target_ns, name="api")
        done = registry.submit(
            MutationRequest(
                run="cli:helm",
                step="1",
                action="rollout_restart",
                target=target,
                requested_by="kube:helm-test",
                requested_via="cli",
            )
        )
        refused = registry.submit(
            MutationRequest(
                run="cli:helm",
                step="2",
                action="delete_pod",
                target=Target(kind="Pod", namespace=target_ns, name="api-x"),
                requested_by="kube:helm-test",
                requested_via="cli",
            )
        )
        ops = KubeLedger(agent, namespace=release.namespace, timeout_s=10).list()
    assert done.phase == Phase.SUCCEEDED, done.result
    assert refused.result.status == ToolStatus.DENIED  # policy first, before any request
    assert [o.id for o in ops] == [done.operation.id if done.operation else None]
    with control_plane.api_client() as api:
        dep: Any = client.AppsV1Api(api).read_namespaced_deployment("api", target_ns)
    assert dep.spec.template.metadata.annotations["triage.dev/restart"] == ops[0].id
