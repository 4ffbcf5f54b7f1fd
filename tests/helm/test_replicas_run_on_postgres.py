"""More than one replica only with Postgres: the schema refuses replicas over SQLite; with
Postgres the chart rolls pods one at a time, keeps one up through a drain (a PDB), spreads them
over nodes, reads the DSN from an existing Secret (or the trial database's own), and installs
with `replicaCount: 2` into the test control plane's real apiserver. Behaviour across replicas
(one run per event, take-over after a kill) is shown by tests/slack/test_replicas_share_one_
postgres.py with real processes; kwok's pods run nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.helm.support import CHART, TEST_CLUSTER_VALUES, Helm, HelmError, installed
from tests.support.controlplane import ControlPlane

EXTERNAL = CHART / "ci" / "postgres-values.yaml"
TRIAL = CHART / "ci" / "postgres-trial-values.yaml"


def _kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _agent(docs: list[dict[str, Any]]) -> dict[str, Any]:
    return next(d for d in _kind(docs, "Deployment") if d["metadata"]["name"] == "triage")


def _env(dep: dict[str, Any]) -> dict[str, Any]:
    container = dep["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container["env"]}


def test_replicas_over_sqlite_are_refused(helm: Helm) -> None:
    with pytest.raises(HelmError) as refused:
        helm.template(sets=["replicaCount=2"])
    assert "'/replicaCount': maximum: got 2, want 1" in refused.value.stderr


def test_replicas_on_an_external_postgres_roll_spread_and_survive_a_drain(helm: Helm) -> None:
    docs = helm.template(EXTERNAL)
    dep = _agent(docs)
    selector = dep["spec"]["selector"]["matchLabels"]

    assert dep["spec"]["replicas"] == 2
    assert dep["spec"]["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1},
    }
    (pdb,) = _kind(docs, "PodDisruptionBudget")
    assert pdb["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": selector}}
    (term,) = dep["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == selector
    env = _env(dep)
    assert env["TRIAGE_STATE__CHECKPOINTER"] == "postgres"
    assert env["TRIAGE_STATE__POSTGRES_DSN"] == {
        "secretKeyRef": {"name": "triage-postgres", "key": "dsn"}
    }
    assert not _kind(docs, "PersistentVolumeClaim")
    assert not _kind(docs, "StatefulSet")  # no database of ours: the operator's own


def test_one_replica_has_no_pdb_and_no_forced_spreading(helm: Helm) -> None:
    docs = helm.template(
        sets=["checkpointer.kind=postgres", "checkpointer.postgres.existingSecret=db"]
    )
    assert not _kind(docs, "PodDisruptionBudget")
    assert "affinity" not in _agent(docs)["spec"]["template"]["spec"]


def test_the_trial_database_is_a_hardened_statefulset_with_its_own_secret(helm: Helm) -> None:
    docs = helm.template(TRIAL)
    (sts,) = _kind(docs, "StatefulSet")
    secret = next(d for d in _kind(docs, "Secret") if d["metadata"]["name"] == "triage-postgres")
    pod = sts["spec"]["template"]["spec"]

    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["containers"][0]["securityContext"]["readOnlyRootFilesystem"] is True
    assert pod["automountServiceAccountToken"] is False
    assert len(secret["stringData"]["password"]) == 32
    assert secret["stringData"]["dsn"].endswith("@triage-postgres:5432/triage")
    assert _env(_agent(docs))["TRIAGE_STATE__POSTGRES_DSN"] == {
        "secretKeyRef": {"name": "triage-postgres", "key": "dsn"}
    }
    assert any(s["metadata"]["name"] == "triage-postgres" for s in _kind(docs, "Service"))


@pytest.mark.cluster
def test_two_replicas_on_postgres_install_into_the_control_plane(
    helm_cluster: Helm, control_plane: ControlPlane, namespace: str, tmp_path: Path
) -> None:
    with control_plane.api_client() as api:
        client.CoreV1Api(api).create_namespaced_secret(
            namespace,
            client.V1Secret(
                metadata=client.V1ObjectMeta(name="triage-postgres"),
                string_data={"dsn": "postgresql://triage:x@db.example:5432/triage"},
            ),
        )
    with (
        installed(helm_cluster, namespace, TEST_CLUSTER_VALUES, EXTERNAL) as rel,
        control_plane.api_client() as api,
    ):
        dep: Any = client.AppsV1Api(api).read_namespaced_deployment(rel.fullname, namespace)
        pdb: Any = client.PolicyV1Api(api).read_namespaced_pod_disruption_budget(
            rel.fullname, namespace
        )
        pods: Any = client.CoreV1Api(api).list_namespaced_pod(
            namespace,
            label_selector=",".join(f"{k}={v}" for k, v in dep.spec.selector.match_labels.items()),
        )
    assert dep.spec.replicas == 2
    assert dep.status.available_replicas == 2  # --wait saw both ready (kwok runs them)
    assert pdb.spec.max_unavailable == 1
    assert len(pods.items) == 2
    assert all(p.spec.affinity.pod_anti_affinity is not None for p in pods.items)
