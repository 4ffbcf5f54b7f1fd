"""The real helm CLI on the chart, and the RBAC questions the tests ask the apiserver about it.

`Helm` runs tests/helm/bin/helm (built by build_helm.sh, pinned) with its own config, cache and
data directories, so a developer's helm setup cannot change a result. `Release` is an installed
release and its three identities. `ask()` is one SubjectAccessReview: the apiserver's own RBAC
answers, not our reading of the YAML. `sa_client()` authenticates as a ServiceAccount with a
short-lived token from the TokenRequest API, as the pod's own token would.
"""

from __future__ import annotations

import os
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tests.support.controlplane import ControlPlane

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "triage"
CI_VALUES = tuple(sorted((CHART / "ci").glob("*-values.yaml")))
TEST_CLUSTER_VALUES = CHART / "ci" / "test-cluster-values.yaml"
MUTATIONS_VALUES = CHART / "ci" / "mutations-values.yaml"
HELM = Path(__file__).with_name("bin") / "helm"
BUILD_SCRIPT = Path(__file__).with_name("build_helm.sh")


class HelmError(RuntimeError):
    """helm exited non-zero; the message carries its stderr."""

    def __init__(self, args: Sequence[str], rc: int, stdout: str, stderr: str) -> None:
        super().__init__(f"helm {' '.join(args[:2])} failed ({rc}):\n{stderr[-4000:]}")
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr


def build(*, timeout_s: float = 1800.0) -> Path:
    """Run build_helm.sh: minutes when cold, milliseconds when bin/helm is the pinned version."""
    proc = subprocess.run(
        ["bash", str(BUILD_SCRIPT)], capture_output=True, text=True, timeout=timeout_s, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(f"build_helm.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    return HELM


@dataclass
class Helm:
    """The helm CLI with private state dirs, optionally bound to one cluster's kubeconfig."""

    home: Path
    kubeconfig: Path | None = None

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HELM_", "KUBECONFIG"))}
        for var, sub in (
            ("HELM_CACHE_HOME", "cache"),
            ("HELM_CONFIG_HOME", "config"),
            ("HELM_DATA_HOME", "data"),
        ):
            env[var] = str(self.home / sub)
        return env

    def run(self, *args: str, timeout_s: float = 120.0) -> str:
        cmd = [str(HELM), *args]
        if self.kubeconfig is not None:
            cmd += ["--kubeconfig", str(self.kubeconfig)]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout_s, env=self.env(), check=False
        )
        if proc.returncode != 0:
            raise HelmError(args, proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout

    def template(
        self,
        *values: Path,
        release: str = "triage",
        namespace: str = "triage-system",
        sets: Sequence[str] = (),
    ) -> list[dict[str, Any]]:
        """The rendered manifests (hooks and CRDs included), parsed."""
        args = ["template", release, str(CHART), "--namespace", namespace, "--include-crds"]
        for v in values:
            args += ["--values", str(v)]
        for s in sets:
            args += ["--set", s]
        return [d for d in yaml.safe_load_all(self.run(*args)) if d]


def sa_user(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def sa_groups(namespace: str) -> list[str]:
    return ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]


@dataclass(frozen=True)
class Release:
    """An installed release: its namespace and the names of its three identities."""

    name: str
    namespace: str

    @property
    def fullname(self) -> str:
        return self.name if "triage" in self.name else f"{self.name}-triage"

    @property
    def agent(self) -> str:
        return self.fullname

    @property
    def reader(self) -> str:
        return f"{self.fullname}-reader"

    @property
    def mutator(self) -> str:
        return f"{self.fullname}-mutator"

    @property
    def recorder(self) -> str:
        return f"{self.fullname}-approval-recorder"


def unique_release(prefix: str = "tr") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


@contextmanager
def installed(
    helm: Helm,
    namespace: str,
    *values: Path,
    release: str | None = None,
    sets: Sequence[str] = (),
) -> Iterator[Release]:
    """`helm install --wait` into `namespace`; `helm uninstall` afterwards, whatever happened."""
    rel = Release(release or unique_release(), namespace)
    args = ["install", rel.name, str(CHART), "--namespace", namespace, "--wait", "--timeout", "90s"]
    args += ["--rollback-on-failure"]  # a failed install leaves no cluster-scoped RBAC behind
    for v in values:
        args += ["--values", str(v)]
    for s in sets:
        args += ["--set", s]
    helm.run(*args, timeout_s=150)
    if helm.kubeconfig is not None:
        crds_served(helm.kubeconfig, namespace)
    try:
        yield rel
    finally:
        helm.run("uninstall", rel.name, "--namespace", namespace, "--timeout", "60s")


def crds_served(kubeconfig: Path, namespace: str, timeout_s: float = 30.0) -> None:
    """Wait until the chart's CRDs are served: right after a CRD is created the apiserver
    answers 429 "storage is (re)initializing" (with Retry-After) for a moment."""
    api = client.CustomObjectsApi(config.new_client_from_config(config_file=str(kubeconfig)))
    deadline = time.monotonic() + timeout_s
    for plural in ("operations", "rcareports"):
        while True:
            try:
                api.list_namespaced_custom_object("triage.dev", "v1alpha1", namespace, plural)
                break
            except ApiException as e:
                if e.status not in (404, 429, 503) or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)


def ask(
    api: client.ApiClient,
    user: str,
    groups: list[str],
    verb: str,
    resource: str,
    *,
    group: str = "",
    subresource: str = "",
    name: str = "",
    namespace: str = "",
) -> bool:
    """One SubjectAccessReview, answered by the apiserver's authorizer (RBAC)."""
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=user,
            groups=groups,
            resource_attributes=client.V1ResourceAttributes(
                verb=verb,
                group=group,
                resource=resource,
                subresource=subresource,
                name=name,
                namespace=namespace,
            ),
        )
    )
    answer: Any = client.AuthorizationV1Api(api).create_subject_access_review(
        review, _request_timeout=10
    )
    return bool(answer.status.allowed)


@contextmanager
def sa_client(cp: ControlPlane, namespace: str, name: str) -> Iterator[client.ApiClient]:
    """A client that authenticates as ServiceAccount namespace/name (a 10-minute token)."""
    with cp.api_client() as admin:
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=600)
        )
        token: Any = client.CoreV1Api(admin).create_namespaced_service_account_token(
            name, namespace, request, _request_timeout=10
        )
    cfg = client.Configuration()
    cfg.host = cp.server
    cfg.ssl_ca_cert = str(cp.ca_cert)
    cfg.api_key = {"authorization": token.status.token}
    cfg.api_key_prefix = {"authorization": "Bearer"}
    cfg.retries = False
    with client.ApiClient(cfg) as api:
        yield api


def acting_as(api: client.ApiClient, user: str) -> client.ApiClient:
    """`api`'s credentials, asking to act as any `user` (to show what is refused; the product's
    own path to the mutator is tools.k8s_mutate.impersonating)."""
    other = client.ApiClient(api.configuration)
    other.set_default_header("Impersonate-User", user)
    return other
