"""An egress NetworkPolicy is matched after the Service's DNAT: on the destination pod's own
port (the Service's targetPort), never on the port the caller dialled at the Service. A rule
admits when one of its peers selects the pod (by its labels, in the policy's namespace, or in
a namespace its namespace selector matches) and one of its ports is the pod's port, by number
or by the container port's name; policies add up, and an ipBlock peer is taken to admit.

The oracle is the NetworkPolicy API's own rule, written out here over plain sets."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from triage.agent.planners.rules.analyzers.dependencies import _egress_admits


def pod(labels: dict[str, str], ports: dict[str, int]) -> p.Pod:
    spec = {"ports": [{"name": n, "port": v} for n, v in ports.items()]}
    return cast(p.Pod, {"name": "catalog-1", "labels": labels, "containers": [{"spec": spec}]})


def policy(rules: list[tuple[list[dict[str, Any]], list[str]]]) -> p.NetworkPolicy:
    return cast(
        p.NetworkPolicy,
        {
            "name": "bff-egress",
            "pod_selector": {"app": "bff"},
            "types": ["Egress"],
            "ingress": [],
            "ingress_ports": [],
            "egress": [peers for peers, _ in rules],
            "egress_ports": [ports for _, ports in rules],
        },
    )


port = st.integers(1, 65535)
apps = st.sampled_from(["catalog", "allergen", "bff"])


@given(service_port=port, target_port=port, rule_port=port)
def test_a_rule_admits_the_pods_port_not_the_services(
    service_port: int, target_port: int, rule_port: int
) -> None:
    target = pod({"app": "catalog"}, {"http": target_port})
    pol = policy([([{"pods": {"app": "catalog"}}], [f"TCP/{rule_port}"])])
    assert _egress_admits([pol], target, True, None, target_port) == (rule_port == target_port)
    # the Service's port plays no part: only the pod's
    if service_port != target_port:
        assert _egress_admits([pol], target, True, None, service_port) == (
            rule_port == service_port
        )


@given(target_port=port, named=st.sampled_from(["http", "metrics"]))
def test_a_named_rule_port_is_the_pods_port_of_that_name(target_port: int, named: str) -> None:
    target = pod({"app": "catalog"}, {"http": target_port})
    pol = policy([([{"pods": {"app": "catalog"}}], [f"TCP/{named}"])])
    assert _egress_admits([pol], target, True, None, target_port) == (named == "http")


@given(wanted=apps, actual=apps, same_ns=st.booleans(), ns_selected=st.booleans())
def test_a_peer_admits_the_pods_it_selects_where_it_looks(
    wanted: str, actual: str, same_ns: bool, ns_selected: bool
) -> None:
    target = pod({"app": actual}, {"http": 8080})
    by_pods = policy([([{"pods": {"app": wanted}}], ["TCP/8080"])])
    assert _egress_admits([by_pods], target, same_ns, None, 8080) == (wanted == actual and same_ns)
    labels = {"team": "menu" if ns_selected else "other"}
    by_ns = policy([([{"namespaces": {"team": "menu"}, "pods": {"app": wanted}}], ["TCP/8080"])])
    assert _egress_admits([by_ns], target, False, labels, 8080) == (
        wanted == actual and ns_selected
    )


@given(first=port, second=port, target_port=port)
def test_policies_add_up_and_an_open_rule_admits(first: int, second: int, target_port: int) -> None:
    target = pod({"app": "catalog"}, {"http": target_port})
    one = policy([([{"pods": {"app": "catalog"}}], [f"TCP/{first}"])])
    two = policy([([{"pods": {"app": "catalog"}}], [f"TCP/{second}"])])
    assert _egress_admits([one, two], target, True, None, target_port) == (
        target_port in (first, second)
    )
    assert _egress_admits([policy([([], [])])], target, True, None, target_port)
    assert _egress_admits([policy([([{"cidr": "10.0.0.0/8"}], [])])], target, True, None, 1)
    assert not _egress_admits([policy([])], target, True, None, target_port)  # deny all
