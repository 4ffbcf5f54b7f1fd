"""The chart's reach, rendered per values: a NetworkPolicy that lets in only the peers named
and lets out only what the agent is configured to use; an Ingress for /slack/events (and the
Alertmanager receiver) and nothing else; the receiver's settings; three probes.

Rendering only (the real helm CLI): enforcement needs a CNI the test control plane does not
have; that the apiserver admits these objects is tests/helm/test_rendered_objects_are_admitted.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.helm.support import CHART, Helm

pytestmark = pytest.mark.cluster  # helm is built from source (Go)

ISOLATED = CHART / "ci" / "isolated-values.yaml"
FULL = CHART / "ci" / "full-values.yaml"


def _kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _egress_ports(policy: dict[str, Any]) -> list[tuple[int, str]]:
    return sorted(
        (p["port"], p.get("protocol", "TCP"))
        for rule in policy["spec"]["egress"]
        for p in rule["ports"]
    )


def test_no_policy_and_no_ingress_unless_asked(helm: Helm) -> None:
    docs = helm.template()
    assert _kind(docs, "NetworkPolicy") == []
    assert _kind(docs, "Ingress") == []


def test_the_isolated_agent_talks_to_dns_the_apiserver_and_slack_only(helm: Helm) -> None:
    docs = helm.template(ISOLATED)
    (policy,) = _kind(docs, "NetworkPolicy")
    (dep,) = _kind(docs, "Deployment")
    assert policy["spec"]["podSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    (ingress,) = policy["spec"]["ingress"]  # the http port, from the ingress controller only
    assert ingress["ports"] == [{"port": "http", "protocol": "TCP"}]
    assert ingress["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
    ]
    assert _egress_ports(policy) == [(53, "TCP"), (53, "UDP"), (443, "TCP"), (443, "TCP")]
    apiserver = next(
        r for r in policy["spec"]["egress"] if {"ipBlock": {"cidr": "10.96.0.1/32"}} in r["to"]
    )
    assert apiserver["ports"] == [{"port": 443, "protocol": "TCP"}]
    slack = next(
        r for r in policy["spec"]["egress"] if r is not apiserver and r["ports"][0]["port"] == 443
    )
    assert slack["to"][0]["ipBlock"]["except"]  # public addresses only


def test_every_configured_endpoint_gets_its_egress_rule(helm: Helm) -> None:
    (policy,) = _kind(helm.template(FULL), "NetworkPolicy")
    ports = [p for p, _ in _egress_ports(policy)]
    assert 6443 in ports  # the apiserver
    assert 9090 in ports  # Prometheus
    assert 9093 in ports  # Alertmanager
    assert 8000 in ports  # the model endpoint
    review = [r for r in policy["spec"]["ingress"] if r["ports"][0]["port"] == "oauth2"]
    assert len(review) == 1  # the review page's proxy, from its own peers


def test_the_ingress_routes_slack_and_the_receiver_only(helm: Helm) -> None:
    docs = helm.template(ISOLATED)
    (ingress,) = _kind(docs, "Ingress")
    paths = ingress["spec"]["rules"][0]["http"]["paths"]
    assert [(p["path"], p["pathType"]) for p in paths] == [
        ("/slack/events", "Exact"),
        ("/alertmanager", "Exact"),
    ]
    assert {p["backend"]["service"]["port"]["name"] for p in paths} == {"http"}
    both = _kind(helm.template(FULL), "Ingress")
    assert sorted(i["metadata"]["name"] for i in both) == ["triage", "triage-review"]


def test_the_receiver_is_configured_from_values(helm: Helm) -> None:
    (dep,) = _kind(helm.template(ISOLATED), "Deployment")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert (
        env["TRIAGE_ALERTS__BEARER_TOKEN_FILE"] == "/etc/triage/secrets/alertmanager-webhook-token"
    )
    assert env["TRIAGE_ALERTS__PATH"] == "/alertmanager"
    assert "C0SHOP" in env["TRIAGE_ALERTS__ROUTES"]
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    keys = [i["path"] for i in volumes["credentials"]["secret"]["items"]]
    assert "alertmanager-webhook-token" in keys
    (plain,) = _kind(helm.template(), "Deployment")
    names = {e["name"] for e in plain["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert not any(n.startswith("TRIAGE_ALERTS__") for n in names)
