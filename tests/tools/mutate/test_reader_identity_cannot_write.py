"""The identity split is enforced by the apiserver: the reader is refused writes (403); the
mutator is reached only by impersonation, and the agent may impersonate no one else."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.tools.mutate.cluster import LEDGER_NS, create_deployment, policy_for
from tools.mutate.kube import KubeMutator, impersonating
from tools.mutate.ledger import KubeLedger, Target
from tools.mutate.registry import MutateRegistry, MutationRequest
from tools.results import ErrorKind, ToolStatus

WHO = {"requested_by": "kube:test", "requested_via": "test"}

pytestmark = pytest.mark.cluster


@pytest.fixture
def web(ledger_cluster, target_ns):
    with ledger_cluster.api_client() as admin:
        create_deployment(ledger_cluster, admin, target_ns, "web")
    return target_ns


def test_a_write_with_the_reader_identity_gets_403(ledger_cluster, web):
    with ledger_cluster.api_client(ledger_cluster.reader_kubeconfig) as reader:
        with pytest.raises(ApiException) as refused:
            client.AppsV1Api(reader).patch_namespaced_deployment_scale(
                "web", web, {"spec": {"replicas": 9}}
            )
        assert refused.value.status == 403
        with pytest.raises(ApiException) as refused_ledger:
            client.CustomObjectsApi(reader).create_namespaced_custom_object(
                "triage.dev",
                "v1alpha1",
                LEDGER_NS,
                "operations",
                {
                    "apiVersion": "triage.dev/v1alpha1",
                    "kind": "Operation",
                    "metadata": {"name": "x"},
                },
            )
        assert refused_ledger.value.status == 403


def test_the_registry_on_the_reader_client_is_denied_and_changes_nothing(ledger_cluster, web):
    with ledger_cluster.api_client(ledger_cluster.reader_kubeconfig) as reader:
        registry = MutateRegistry(
            policy_for(web), KubeLedger(reader, timeout_s=5), kube=KubeMutator(reader, timeout_s=5)
        )
        outcome = registry.submit(
            MutationRequest(
                **WHO,
                run="reader",
                step="0",
                action="scale",
                target=Target(kind="Deployment", namespace=web, name="web"),
                args={"replicas": 4},
            )
        )
    assert outcome.result.status is ToolStatus.DENIED  # refused by the apiserver
    assert outcome.result.error_kind is ErrorKind.DENIED
    assert "403" in outcome.result.excerpt
    with ledger_cluster.api_client() as admin:
        assert client.AppsV1Api(admin).read_namespaced_deployment("web", web).spec.replicas == 2


def test_the_reader_may_impersonate_the_mutator_and_nobody_else(ledger_cluster, web):
    with ledger_cluster.api_client(ledger_cluster.reader_kubeconfig) as reader:
        mutator = impersonating(reader, "triage-system/triage-mutator")
        client.AppsV1Api(mutator).patch_namespaced_deployment_scale(
            "web", web, {"spec": {"replicas": 3}}
        )
        mutator.close()
        for other in ("kube-system/default", f"{web}/default", "triage-system/triage-reader"):
            sneaky = impersonating(reader, other)
            with pytest.raises(ApiException) as refused:
                client.AppsV1Api(sneaky).read_namespaced_deployment("web", web)
            assert refused.value.status == 403
            sneaky.close()
    with ledger_cluster.api_client() as admin:
        assert client.AppsV1Api(admin).read_namespaced_deployment("web", web).spec.replicas == 3
