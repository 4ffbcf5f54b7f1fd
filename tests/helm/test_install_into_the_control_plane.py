"""`helm install` into the real apiserver of the test control plane: the release's objects exist,
the agent becomes available, `helm test` passes, the CRDs from crds/ are served, and
`kubectl get rcareports,operations` shows a report the agent wrote and an operation the mutator
wrote, each with the identity's own credentials. `helm uninstall` leaves no RBAC behind."""

from __future__ import annotations

import hashlib
import subprocess
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.helm.support import CHART, TEST_CLUSTER_VALUES, Helm, installed, sa_client
from tests.support.controlplane import CONTROLPLANE_DIR, ControlPlane
from tools.mutate.kube import impersonating

pytestmark = pytest.mark.cluster

KUBECTL = CONTROLPLANE_DIR / "bin" / "triage-cp"


def _kubectl(cp: ControlPlane, *args: str) -> str:
    proc = subprocess.run(
        [str(KUBECTL), "kubectl", "--kubeconfig", str(cp.admin_kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _report(name: str) -> dict[str, Any]:
    draft: dict[str, Any] = {"summary": "api crash-loops on a bad env var"}
    return {
        "apiVersion": "triage.dev/v1alpha1",
        "kind": "RCAReport",
        "metadata": {"name": name},
        "spec": {
            "request": "why is api down",
            "rootCause": "bad DATABASE_URL",
            "draft": draft,
            "digest": "sha256:" + hashlib.sha256(b"draft").hexdigest(),
        },
    }


def _operation(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "triage.dev/v1alpha1",
        "kind": "Operation",
        "metadata": {"name": name},
        "spec": {
            "run": "cli:helm-test",
            "step": "mutate",
            "action": "rollout_restart",
            "target": {"kind": "Deployment", "namespace": namespace, "name": "api"},
            "targetRef": f"Deployment/{namespace}/api",
            "args": {},
            "argsDigest": "sha256:" + hashlib.sha256(b"{}").hexdigest(),
            "requestedBy": "kube:helm-test",
            "requestedVia": "cli",
        },
        "status": {"phase": "Pending"},
    }


def test_install_creates_the_release_and_helm_test_passes(
    helm_cluster: Helm, control_plane: ControlPlane, namespace: str
) -> None:
    with (
        installed(helm_cluster, namespace, TEST_CLUSTER_VALUES) as rel,
        control_plane.api_client() as api,
    ):
        core = client.CoreV1Api(api)
        apps = client.AppsV1Api(api)
        rbac = client.RbacAuthorizationV1Api(api)
        sas = {sa.metadata.name for sa in core.list_namespaced_service_account(namespace).items}
        assert {rel.agent, rel.reader, rel.mutator, rel.recorder} <= sas
        dep: Any = apps.read_namespaced_deployment(rel.fullname, namespace)
        assert dep.status.available_replicas == 1  # --wait saw it ready
        assert dep.spec.template.spec.service_account_name == rel.agent
        svc: Any = core.read_namespaced_service(rel.fullname, namespace)
        assert svc.spec.selector == dep.spec.selector.match_labels
        review: Any = core.read_namespaced_service(f"{rel.fullname}-review", namespace)
        assert review.spec.selector == dep.spec.selector.match_labels
        cms = {cm.metadata.name for cm in core.list_namespaced_config_map(namespace).items}
        assert {f"{rel.fullname}-policy", f"{rel.fullname}-kubeconfig"} <= cms
        roles = {r.metadata.name for r in rbac.list_namespaced_role(namespace).items}
        assert roles == {
            f"{rel.fullname}-{n}"
            for n in (
                "ledger-reader",
                "ledger-writer",
                "ledger-approver",
                "impersonate-mutator",
                "impersonate-approval-recorder",
            )
        }
        cluster_roles = {
            r.metadata.name
            for r in rbac.list_cluster_role(
                label_selector=f"app.kubernetes.io/instance={rel.name}"
            ).items
        }
        # Named "<namespace>-<fullname>-<role>", cut to 63 characters with a hash when longer.
        assert sorted(n.rsplit("-", 1)[1] for n in cluster_roles) == [
            "reader",
            "reports",
            "reviewer",  # report-reviewer and report-viewer: for people (the review page)
            "viewer",
        ]
        assert all(len(n) <= 63 for n in cluster_roles)
        # The hook: a Job as the reader, which kwok (the fake kubelet) completes.
        out = helm_cluster.run("test", rel.name, "--namespace", namespace, "--timeout", "60s")
        assert "Phase:          Succeeded" in out
    # helm uninstall removed the cluster-scoped RBAC too.
    assert rbac_left_behind(control_plane, rel.name) == []


def rbac_left_behind(cp: ControlPlane, release: str) -> list[str]:
    with cp.api_client() as api:
        rbac = client.RbacAuthorizationV1Api(api)
        selector = f"app.kubernetes.io/instance={release}"
        roles: Any = rbac.list_cluster_role(label_selector=selector)
        bindings: Any = rbac.list_cluster_role_binding(label_selector=selector)
        return [str(o.metadata.name) for o in [*roles.items, *bindings.items]]


def test_kubectl_gets_rcareports_and_operations_written_by_the_identities(
    helm_cluster: Helm, control_plane: ControlPlane, namespace: str
) -> None:
    with installed(helm_cluster, namespace, TEST_CLUSTER_VALUES) as rel:
        with control_plane.api_client() as admin:
            ext = client.ApiextensionsV1Api(admin)
            for crd in ("rcareports.triage.dev", "operations.triage.dev"):
                got: Any = ext.read_custom_resource_definition(crd)
                conds = {c.type: c.status for c in got.status.conditions or []}
                assert conds.get("Established") == "True", crd
        with sa_client(control_plane, namespace, rel.agent) as agent:
            # The agent writes its report as itself...
            objs = client.CustomObjectsApi(agent)
            objs.create_namespaced_custom_object(
                "triage.dev", "v1alpha1", namespace, "rcareports", _report("rca-helm")
            )
            # ...and may not write the ledger as itself...
            with pytest.raises(ApiException) as refused:
                objs.create_namespaced_custom_object(
                    "triage.dev", "v1alpha1", namespace, "operations", _operation("op-a", namespace)
                )
            assert refused.value.status == 403
            # ...only as the mutator, through the product's impersonating client.
            with impersonating(agent, f"{namespace}/{rel.mutator}") as mutator:
                client.CustomObjectsApi(mutator).create_namespaced_custom_object(
                    "triage.dev",
                    "v1alpha1",
                    namespace,
                    "operations",
                    _operation("op-helm", namespace),
                )
        out = _kubectl(control_plane, "get", "rcareports,operations", "-n", namespace)
        assert "rcareport.triage.dev/rca-helm" in out
        assert "bad DATABASE_URL" in out
        assert "operation.triage.dev/op-helm" in out
        assert "rollout_restart" in out


def test_a_policy_change_on_upgrade_rolls_the_agent(
    helm_cluster: Helm, control_plane: ControlPlane, namespace: str
) -> None:
    with installed(helm_cluster, namespace, TEST_CLUSTER_VALUES) as rel:

        def replicasets() -> set[str]:
            with control_plane.api_client() as api:
                items: Any = client.AppsV1Api(api).list_namespaced_replica_set(namespace)
            return {rs.metadata.name for rs in items.items}

        before = replicasets()
        helm_cluster.run(
            "upgrade",
            rel.name,
            str(CHART),
            "--namespace",
            namespace,
            "--reuse-values",
            "--set",
            "policy.mutations.max_replicas=5",
            "--wait",
            "--timeout",
            "90s",
            timeout_s=150,
        )
        after = replicasets()
        with control_plane.api_client() as api:
            cm: Any = client.CoreV1Api(api).read_namespaced_config_map(
                f"{rel.fullname}-policy", namespace
            )
        assert "max_replicas: 5" in cm.data["policy.yaml"]
        assert len(after - before) == 1  # a new ReplicaSet: the pods were rolled
