"""Cluster-side helpers for the ledger and mutation tests: install the CRD and the RBAC from
the repository, build the agent's two clients, make Deployments, and count what changed.

The agent here is exactly what the product runs: the reader identity (a real ServiceAccount
token) for reads, and that same identity impersonating triage-mutator for writes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from policies.model import ActionRule, MutationAction, MutationPolicy
from tests.support.controlplane import ControlPlane
from tools.mutate.kube import KubeMutator, impersonating
from tools.mutate.ledger import KubeLedger

ROOT = Path(__file__).resolve().parents[3]
CRDS = [ROOT / "helm" / "triage" / "crds" / f for f in ("operation.yaml", "approval.yaml")]
RBAC = Path(__file__).with_name("rbac.yaml")
LEDGER_NS = "triage-system"
MUTATOR_SA = "triage-system/triage-mutator"
RECORDER_SA = "triage-system/triage-approval-recorder"


def install_ledger(cp: ControlPlane) -> None:
    """Apply the Operation and Approval CRDs and the test RBAC and admission policy; wait until
    both are served and the approvals policy is in force."""
    docs = [d for crd in CRDS for d in yaml.safe_load_all(crd.read_text()) if d]
    docs += [d for d in yaml.safe_load_all(RBAC.read_text()) if d]
    cp.apply(LEDGER_NS, docs)
    with cp.api_client() as api:
        ext = client.ApiextensionsV1Api(api)
        objs = client.CustomObjectsApi(api)

        def served() -> bool:
            for name, plural in (("operations", "operations"), ("approvals", "approvals")):
                crd: Any = ext.read_custom_resource_definition(f"{name}.triage.dev")
                conds = {c.type: c.status for c in (crd.status.conditions or [])}
                if conds.get("Established") != "True":
                    return False
                objs.list_namespaced_custom_object("triage.dev", "v1alpha1", LEDGER_NS, plural)
            return True

        cp.wait_for(served, 30, "the Operation and Approval CRDs to be established")
    with as_user(cp, "alice") as alice:
        objs = client.CustomObjectsApi(alice)
        forged = {
            "apiVersion": "triage.dev/v1alpha1",
            "kind": "Approval",
            "metadata": {"name": "probe-admission"},
            "spec": {
                "operation": "probe",
                "decision": "approve",
                "argsDigest": "sha256:" + "0" * 64,
                "approver": "bob",
            },
        }

        def enforced() -> bool:
            try:
                objs.create_namespaced_custom_object(
                    "triage.dev", "v1alpha1", LEDGER_NS, "approvals", forged, dry_run="All"
                )
            except client.ApiException as e:
                return e.status == 422 and "must name the identity" in str(e.body)
            return False

        cp.wait_for(enforced, 30, "the approvals admission policy to be in force")


def as_user(cp: ControlPlane, user: str) -> client.ApiClient:
    """A client that acts as `user` (the admin impersonating them, as `kubectl --as` does)."""
    api = cp.api_client()
    api.set_default_header("Impersonate-User", user)
    return api


def recorder_ledger(cp: ControlPlane) -> tuple[client.ApiClient, KubeLedger]:
    """The ledger as the product's Slack approval recorder (the reader impersonating it)."""
    reader = cp.api_client(cp.reader_kubeconfig)
    recorder = impersonating(reader, RECORDER_SA)
    reader.close()
    return recorder, KubeLedger(recorder, namespace=LEDGER_NS, timeout_s=5)


def bind_mutator(cp: ControlPlane, namespace: str) -> None:
    cp.apply(
        namespace,
        [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": "triage-mutator"},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": "triage-mutator",
                },
                "subjects": [
                    {"kind": "ServiceAccount", "name": "triage-mutator", "namespace": LEDGER_NS}
                ],
            }
        ],
    )


@dataclass
class Agent:
    reader: client.ApiClient
    mutator: client.ApiClient
    kube: KubeMutator
    ledger: KubeLedger

    def close(self) -> None:
        self.mutator.close()
        self.reader.close()


def make_agent(cp: ControlPlane, *, timeout_s: float = 5.0) -> Agent:
    reader = cp.api_client(cp.reader_kubeconfig)
    mutator = impersonating(reader, MUTATOR_SA)
    return Agent(
        reader=reader,
        mutator=mutator,
        kube=KubeMutator(mutator, timeout_s=timeout_s),
        ledger=KubeLedger(mutator, namespace=LEDGER_NS, timeout_s=timeout_s),
    )


def policy_for(namespace: str, *, approval: tuple[str, ...] = (), **kw: Any) -> MutationPolicy:
    """Everything allowed in `namespace`; the actions in `approval` need alice's approval (the
    rest are relaxed to `approval: false`, as an operator would)."""
    return MutationPolicy(
        namespaces=(namespace,),
        actions={a: ActionRule(approval=a.value in approval) for a in MutationAction},
        approvers=("alice",),
        **kw,
    )


def deployment(name: str, *, replicas: int = 2, image: str = "shop/api:1.0") -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "replicas": replicas,
            "revisionHistoryLimit": 10,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "containers": [{"name": "app", "image": image}],
                    "tolerations": [{"operator": "Exists"}],
                },
            },
        },
    }


def replicasets(api: client.ApiClient, namespace: str, name: str) -> list[Any]:
    items: list[Any] = client.AppsV1Api(api).list_namespaced_replica_set(namespace).items
    return [
        rs
        for rs in items
        if any(
            o.name == name and o.kind == "Deployment" for o in rs.metadata.owner_references or []
        )
    ]


def wait_rollout(cp: ControlPlane, api: client.ApiClient, namespace: str, name: str) -> None:
    """Wait until the Deployment's controller caught up with its spec (observedGeneration)."""
    apps = client.AppsV1Api(api)

    def caught_up() -> bool:
        d: Any = apps.read_namespaced_deployment(name, namespace)
        return (d.status.observed_generation or 0) >= (d.metadata.generation or 0)

    cp.wait_for(caught_up, 30, f"deployment {namespace}/{name} to be observed")


def create_deployment(
    cp: ControlPlane, api: client.ApiClient, namespace: str, name: str, **kw: Any
) -> None:
    body: Any = deployment(name, **kw)
    client.AppsV1Api(api).create_namespaced_deployment(namespace, body)
    wait_rollout(cp, api, namespace, name)
    cp.wait_for(lambda: len(replicasets(api, namespace, name)) == 1, 30, f"{name}'s ReplicaSet")


def set_image(
    cp: ControlPlane, api: client.ApiClient, namespace: str, name: str, image: str
) -> None:
    """A human's change: a new image (a new revision)."""
    client.AppsV1Api(api).patch_namespaced_deployment(
        name,
        namespace,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": image}]}}}},
    )
    wait_rollout(cp, api, namespace, name)


def wait_until(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture(scope="session")
def ledger_cluster(control_plane: ControlPlane) -> ControlPlane:
    """The control plane with the Operation CRD and the mutation RBAC installed."""
    install_ledger(control_plane)
    return control_plane


def forget_operations(cp: ControlPlane, namespace: str) -> None:
    """Delete the ledger records of changes made in `namespace`, and their approvals (test
    hygiene only)."""
    with cp.api_client() as api:
        objs = client.CustomObjectsApi(api)
        listed: Any = objs.list_namespaced_custom_object(
            "triage.dev",
            "v1alpha1",
            LEDGER_NS,
            "operations",
            label_selector=f"triage.dev/target-namespace={namespace}",
        )
        for item in listed.get("items") or []:
            objs.delete_collection_namespaced_custom_object(
                "triage.dev",
                "v1alpha1",
                LEDGER_NS,
                "approvals",
                label_selector=f"triage.dev/operation={item['metadata']['name']}",
            )
        objs.delete_collection_namespaced_custom_object(
            "triage.dev",
            "v1alpha1",
            LEDGER_NS,
            "operations",
            label_selector=f"triage.dev/target-namespace={namespace}",
        )


@pytest.fixture
def target_ns(ledger_cluster: ControlPlane, namespace: str):
    """A fresh namespace the mutator may change; its ledger records go with it."""
    bind_mutator(ledger_cluster, namespace)
    yield namespace
    forget_operations(ledger_cluster, namespace)


@pytest.fixture
def agent(ledger_cluster: ControlPlane):
    a = make_agent(ledger_cluster)
    yield a
    a.close()
