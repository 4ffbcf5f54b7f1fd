"""People on the real test control plane: ServiceAccounts with tokens from the TokenRequest
API, RoleBindings to the review roles (tests/support/manifests/review-rbac.yaml), and a
kubeconfig per person for the CLI. Nothing here decides anything: the apiserver does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.judge.support import install_reports

ROOT = Path(__file__).resolve().parents[2]
REVIEW_RBAC = ROOT / "tests" / "support" / "manifests" / "review-rbac.yaml"


def install_review(control_plane: Any) -> None:
    """The RCAReport CRD, the agent's report rights and the review page's RBAC."""
    install_reports(control_plane)
    docs = [d for d in yaml.safe_load_all(REVIEW_RBAC.read_text()) if d]
    control_plane.apply("default", docs)


def person(control_plane: Any, namespace: str, name: str) -> str:
    """A ServiceAccount `name` in `namespace` and a 10-minute token for it."""
    with control_plane.api_client() as api:
        core = client.CoreV1Api(api)
        try:
            core.create_namespaced_service_account(
                namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=name))
            )
        except ApiException as e:
            if e.status != 409:
                raise
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
        )
        token = core.create_namespaced_service_account_token(name, namespace, request)
        return str(token.status.token)


def bind(control_plane: Any, namespace: str, role: str, subject: dict[str, str]) -> None:
    """A RoleBinding in `namespace` of ClusterRole `role` to `subject` (kind, name[, namespace])."""
    kind = subject["kind"]
    entry = {"kind": kind, "name": subject["name"]}
    if kind == "ServiceAccount":
        entry["namespace"] = subject["namespace"]
    else:
        entry["apiGroup"] = "rbac.authorization.k8s.io"
    control_plane.apply(
        namespace,
        [
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "RoleBinding",
                "metadata": {"name": f"{role}-{subject['name']}"[:63]},
                "roleRef": {
                    "apiGroup": "rbac.authorization.k8s.io",
                    "kind": "ClusterRole",
                    "name": role,
                },
                "subjects": [entry],
            }
        ],
    )


def kubeconfig(control_plane: Any, token: str, path: Path) -> Path:
    """A kubeconfig that authenticates with `token` (what `kubectl create token` gives)."""
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "test",
                        "cluster": {
                            "server": control_plane.server,
                            "certificate-authority": str(control_plane.ca_cert),
                        },
                    }
                ],
                "users": [{"name": "person", "user": {"token": token}}],
                "contexts": [{"name": "test", "context": {"cluster": "test", "user": "person"}}],
                "current-context": "test",
            }
        )
    )
    return path
