"""The chart exposes the review page on its own port, Service and (optionally) Ingress, never
the Slack endpoint; the agent may ask the apiserver who a user is and what they may do
(system:auth-delegator, nothing more); people get viewer and reviewer ClusterRoles."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helm.support import CHART, Helm

pytestmark = pytest.mark.cluster  # helm is built from source (Go)

FULL = CHART / "ci" / "full-values.yaml"


def _named(docs: list[dict[str, Any]], kind: str, suffix: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]


def _env(docs: list[dict[str, Any]]) -> dict[str, Any]:
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    container = dep["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}


def test_the_page_has_its_own_port_and_service(helm: Helm) -> None:
    docs = helm.template(namespace="triage-system")
    (svc,) = _named(docs, "Service", "-review")
    assert [p["targetPort"] for p in svc["spec"]["ports"]] == ["review"]
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    ports = {
        p["name"]: p["containerPort"]
        for p in dep["spec"]["template"]["spec"]["containers"][0]["ports"]
    }
    assert ports == {"http": 8080, "review": 8081}
    env = _env(docs)
    assert env["TRIAGE_REVIEW__PORT"] == "8081"
    assert env["TRIAGE_REVIEW__ENABLED"] == "true"
    # No Ingress unless asked; the Slack Service does not carry the page.
    assert [d for d in docs if d["kind"] == "Ingress"] == []
    (slack,) = [d for d in docs if d["kind"] == "Service" and d is not svc]
    assert [p["targetPort"] for p in slack["spec"]["ports"]] == ["http"]


def test_the_agent_may_only_delegate_authentication(helm: Helm) -> None:
    docs = helm.template(namespace="triage-system")
    (binding,) = _named(docs, "ClusterRoleBinding", "-auth-delegator")
    assert binding["roleRef"]["name"] == "system:auth-delegator"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "triage", "namespace": "triage-system"}
    ]
    (viewer,) = _named(docs, "ClusterRole", "-report-viewer")
    (reviewer,) = _named(docs, "ClusterRole", "-report-reviewer")
    assert viewer["rules"] == [
        {
            "apiGroups": ["triage.dev"],
            "resources": ["rcareports"],
            "verbs": ["get", "list", "watch"],
        }
    ]
    assert {
        "apiGroups": ["triage.dev"],
        "resources": ["rcareports/status"],
        "verbs": ["get", "patch"],
    } in reviewer["rules"]
    off = helm.template(sets=["review.enabled=false"])
    assert _named(off, "Service", "-review") == []
    assert _named(off, "ClusterRoleBinding", "-auth-delegator") == []
    assert _env(off)["TRIAGE_REVIEW__ENABLED"] == "false"


def test_an_ingress_and_a_sidecar_proxy_front_the_page(helm: Helm, tmp_path: Path) -> None:
    docs = helm.template(FULL, namespace="triage-system")
    (ingress,) = _named(docs, "Ingress", "-review")
    (rule,) = ingress["spec"]["rules"]
    assert rule["host"] == "triage.example.com"
    backend = rule["http"]["paths"][0]["backend"]["service"]
    assert backend["name"].endswith("-review")
    assert backend["port"] == {"name": "review"}
    (svc,) = _named(docs, "Service", "-review")
    assert svc["spec"]["ports"][0]["targetPort"] == "oauth2"  # through the sidecar only
    env = _env(docs)
    assert env["TRIAGE_REVIEW__HOST"] == "127.0.0.1"
    assert env["TRIAGE_REVIEW__TRUSTED_PROXY_USER_HEADER"] == "X-Forwarded-User"
    assert env["TRIAGE_REVIEW__TRUSTED_PROXY_CIDRS"] == '["127.0.0.1/32"]'
    assert env["TRIAGE_REVIEW__EXTERNAL_URL"] == "https://triage.example.com"
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    names = [c["name"] for c in dep["spec"]["template"]["spec"]["containers"]]
    assert names == ["triage", "oauth2-proxy"]
