"""What each identity of the chart can and cannot do, asked of the apiserver's RBAC.

    .venv/bin/python -m tests.helm.rbac_table

installs the chart (ci/mutations-values.yaml: restarts and scaling allowed in one namespace)
into the test control plane, asks one SubjectAccessReview per (check, identity), prints the
table, marks any answer that differs from what the chart promises, and uninstalls. Exit status
1 when an answer differs. The same CHECKS are the expectations of
tests/helm/test_identities_have_least_privilege.py.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kubernetes import client

from tests.helm.support import (
    MUTATIONS_VALUES,
    TEST_CLUSTER_VALUES,
    Helm,
    Release,
    ask,
    build,
    installed,
    sa_groups,
    sa_user,
)
from tests.support.controlplane import ControlPlane

Where = Literal["all", "release", "target", "other", "cluster"]
IDENTITIES = ("agent", "reader", "mutator")


@dataclass(frozen=True)
class Check:
    """One question, and the answer the chart promises for (agent, reader, mutator)."""

    what: str
    verb: str
    resource: str
    where: Where
    expect: tuple[bool, bool, bool]
    group: str = ""
    subresource: str = ""
    name: Callable[[Release], str] | None = None


Y, N = True, False
CHECKS: tuple[Check, ...] = (
    Check("list pods (all namespaces)", "list", "pods", "all", (Y, Y, N)),
    Check("read pod logs", "get", "pods", "target", (Y, Y, N), subresource="log"),
    Check("list events", "list", "events", "all", (Y, Y, N)),
    Check("list nodes", "list", "nodes", "cluster", (Y, Y, N)),
    Check("list deployments", "list", "deployments", "all", (Y, Y, N), group="apps"),
    Check("list endpointslices", "list", "endpointslices", "all", (Y, Y, N), "discovery.k8s.io"),
    Check("list HPAs", "list", "horizontalpodautoscalers", "all", (Y, Y, N), "autoscaling"),
    Check("list configmaps (names)", "list", "configmaps", "all", (Y, Y, N)),
    Check("get a secret", "get", "secrets", "target", (N, N, N)),
    Check("list secrets", "list", "secrets", "all", (N, N, N)),
    Check("create a pod", "create", "pods", "target", (N, N, N)),
    Check("exec into a pod", "create", "pods", "target", (N, N, N), subresource="exec"),
    Check("patch a deployment (policy ns)", "patch", "deployments", "target", (N, N, Y), "apps"),
    Check(
        "scale a deployment (policy ns)",
        "patch",
        "deployments",
        "target",
        (N, N, Y),
        group="apps",
        subresource="scale",
    ),
    Check("patch a deployment (other ns)", "patch", "deployments", "other", (N, N, N), "apps"),
    Check("delete a pod (not in policy)", "delete", "pods", "target", (N, N, N)),
    Check(
        "evict a pod (not in policy)", "create", "pods", "target", (N, N, N), subresource="eviction"
    ),
    Check("delete a deployment", "delete", "deployments", "target", (N, N, N), group="apps"),
    Check("get RCAReports", "get", "rcareports", "target", (Y, Y, N), group="triage.dev"),
    Check("create an RCAReport", "create", "rcareports", "target", (Y, N, N), group="triage.dev"),
    Check(
        "publish RCAReport status",
        "update",
        "rcareports",
        "target",
        (Y, N, N),
        group="triage.dev",
        subresource="status",
    ),
    Check("delete an RCAReport", "delete", "rcareports", "target", (N, N, N), group="triage.dev"),
    # The review page asks who a person is and what they may do (system:auth-delegator).
    Check(
        "review a token (TokenReview)",
        "create",
        "tokenreviews",
        "cluster",
        (Y, N, N),
        group="authentication.k8s.io",
    ),
    Check(
        "ask what a user may do (SubjectAccessReview)",
        "create",
        "subjectaccessreviews",
        "cluster",
        (Y, N, N),
        group="authorization.k8s.io",
    ),
    Check("list Operations (ledger)", "list", "operations", "release", (Y, N, Y), "triage.dev"),
    Check("create an Operation", "create", "operations", "release", (N, N, Y), "triage.dev"),
    Check("update an Operation", "update", "operations", "release", (N, N, Y), "triage.dev"),
    Check("delete an Operation", "delete", "operations", "release", (N, N, N), "triage.dev"),
    Check("list Approvals", "list", "approvals", "release", (Y, N, Y), "triage.dev"),
    Check("create an Approval", "create", "approvals", "release", (N, N, N), "triage.dev"),
    Check("update an Approval", "update", "approvals", "release", (N, N, N), "triage.dev"),
    Check(
        "impersonate the approval recorder SA",
        "impersonate",
        "serviceaccounts",
        "release",
        (Y, N, N),
        name=lambda r: r.recorder,
    ),
    Check(
        "impersonate the mutator SA",
        "impersonate",
        "serviceaccounts",
        "release",
        (Y, N, N),
        name=lambda r: r.mutator,
    ),
    Check(
        "impersonate the reader SA",
        "impersonate",
        "serviceaccounts",
        "release",
        (N, N, N),
        name=lambda r: r.reader,
    ),
    Check(
        "impersonate another SA",
        "impersonate",
        "serviceaccounts",
        "release",
        (N, N, N),
        name=lambda r: "default",
    ),
    Check(
        "impersonate a user", "impersonate", "users", "cluster", (N, N, N), name=lambda r: "admin"
    ),
    Check(
        "impersonate group system:masters",
        "impersonate",
        "groups",
        "cluster",
        (N, N, N),
        name=lambda r: "system:masters",
    ),
    Check(
        "create a rolebinding",
        "create",
        "rolebindings",
        "target",
        (N, N, N),
        "rbac.authorization.k8s.io",
    ),
    Check(
        "escalate a clusterrole",
        "escalate",
        "clusterroles",
        "cluster",
        (N, N, N),
        group="rbac.authorization.k8s.io",
    ),
)


@dataclass(frozen=True)
class Namespaces:
    release: str
    target: str  # listed in the policy
    other: str  # not listed

    def of(self, where: Where) -> str:
        return {"all": "", "cluster": "", "release": self.release, "target": self.target}.get(
            where, self.other
        )


def answers(api: client.ApiClient, rel: Release, ns: Namespaces) -> list[tuple[bool, ...]]:
    """The apiserver's answer for every check, per identity (agent, reader, mutator)."""
    users = (rel.agent, rel.reader, rel.mutator)
    rows = []
    for c in CHECKS:
        rows.append(
            tuple(
                ask(
                    api,
                    sa_user(rel.namespace, sa),
                    sa_groups(rel.namespace),
                    c.verb,
                    c.resource,
                    group=c.group,
                    subresource=c.subresource,
                    name=c.name(rel) if c.name else "",
                    namespace=ns.of(c.where),
                )
                for sa in users
            )
        )
    return rows


def render(rel: Release, ns: Namespaces, rows: list[tuple[bool, ...]]) -> str:
    """The table, with any answer that differs from the promise marked `!`."""
    width = max(len(c.what) for c in CHECKS) + 2
    where = {
        "all": "all namespaces",
        "cluster": "cluster",
        "release": f"{ns.release} (release)",
        "target": f"{ns.target} (in policy)",
        "other": f"{ns.other} (not in policy)",
    }
    lines = [
        f"release {rel.name} in {rel.namespace}; policy allows rollout_restart and scale in "
        f"{ns.target} only (helm/triage/ci/mutations-values.yaml)",
        f"  agent   = {sa_user(rel.namespace, rel.agent)}",
        f"  reader  = {sa_user(rel.namespace, rel.reader)}",
        f"  mutator = {sa_user(rel.namespace, rel.mutator)}",
        "",
        f"{'check':<{width}}{'agent':<8}{'reader':<8}{'mutator':<9}where",
        "-" * (width + 25 + 30),
    ]
    for c, got in zip(CHECKS, rows, strict=True):
        cells = "".join(
            f"{('yes' if g else 'no') + ('' if g == e else ' !'):<{n}}"
            for g, e, n in zip(got, c.expect, (8, 8, 9), strict=True)
        )
        lines.append(f"{c.what:<{width}}{cells}{where[c.where]}")
    return "\n".join(lines)


def main() -> int:
    build()
    cp = ControlPlane.start_or_reuse()
    suffix = uuid.uuid4().hex[:6]
    ns = Namespaces(f"triage-rbac-{suffix}", f"shop-{suffix}", f"other-{suffix}")
    try:
        for name in (ns.release, ns.target, ns.other):
            cp.create_namespace(name)
        with tempfile.TemporaryDirectory(prefix="helm-home-") as home:
            helm = Helm(Path(home), cp.admin_kubeconfig)
            with (
                installed(
                    helm,
                    ns.release,
                    TEST_CLUSTER_VALUES,
                    MUTATIONS_VALUES,
                    release="triage",
                    sets=[f"policy.mutations.namespaces={{{ns.target}}}"],
                ) as rel,
                cp.api_client() as api,
            ):
                rows = answers(api, rel, ns)
                print(render(rel, ns, rows))
        wrong = [c.what for c, got in zip(CHECKS, rows, strict=True) if got != c.expect]
        if wrong:
            print(f"\nDIFFERS from the chart's promise: {', '.join(wrong)}")
        return 1 if wrong else 0
    finally:
        for name in (ns.release, ns.target, ns.other):
            cp.delete_namespace(name)
        cp.release()


if __name__ == "__main__":
    sys.exit(main())
