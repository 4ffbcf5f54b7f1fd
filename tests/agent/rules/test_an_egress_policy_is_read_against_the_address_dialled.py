"""An egress NetworkPolicy is evaluated against the address a failing log line dialled, as
the network plugin would: policies selecting the pod add up, a rule admits when one of its
peers holds the address (an ipBlock outside its `except`) on one of its ports, and a selector
peer (which could be a pod with that address) never lets the planner claim a drop.

The oracle is Python's `ipaddress`, not our code: for any address, block and exception the
planner says "dropped" exactly when the block does not admit the address on that port."""

from __future__ import annotations

import ipaddress
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from triage.agent.planners.rules.analyzers.dependencies import _egress_refuses

POD = cast(p.Pod, {"name": "worker-1", "labels": {"app": "worker"}})


def policy(peers: list[dict[str, Any]], ports: list[str], **extra: Any) -> p.NetworkPolicy:
    return cast(
        p.NetworkPolicy,
        {
            "name": "worker-egress",
            "pod_selector": {"app": "worker"},
            "types": ["Egress"],
            "ingress": [],
            "ingress_ports": [],
            "egress": [peers],
            "egress_ports": [ports],
            **extra,
        },
    )


octet = st.integers(0, 255)
ipv4 = st.tuples(octet, octet, octet, octet).map(lambda t: ".".join(map(str, t)))


@given(ip=ipv4, base=ipv4, prefix=st.integers(8, 32), port=st.integers(1, 65535))
def test_a_block_admits_exactly_the_addresses_it_holds(
    ip: str, base: str, prefix: int, port: int
) -> None:
    block = str(ipaddress.ip_network(f"{base}/{prefix}", strict=False))
    line = f"dial tcp {ip}:{port}: i/o timeout"
    refused = _egress_refuses([policy([{"cidr": block}], [f"TCP/{port}"])], POD, line)
    holds = ipaddress.ip_address(ip) in ipaddress.ip_network(block)
    assert (refused is None) == holds
    if refused is not None:
        assert refused[1] == f"{ip}:{port}"


@given(ip=ipv4, base=ipv4, port=st.integers(1, 65535))
def test_an_exception_inside_the_block_is_not_admitted(ip: str, base: str, port: int) -> None:
    # the whole space, except the address's own /24 when base falls in it
    cut = str(ipaddress.ip_network(f"{base}/24", strict=False))
    peer = {"cidr": "0.0.0.0/0", "cidr_except": [cut]}
    refused = _egress_refuses([policy([peer], [])], POD, f"connect to {ip}:{port} failed")
    assert (refused is not None) == (ipaddress.ip_address(ip) in ipaddress.ip_network(cut))


def test_a_rule_on_other_ports_does_not_admit() -> None:
    pol = policy([{"cidr": "10.42.16.0/24"}], ["TCP/5432"])
    assert _egress_refuses([pol], POD, "dial tcp 10.42.16.9:6379: i/o timeout") is not None
    assert _egress_refuses([pol], POD, "dial tcp 10.42.16.9:5432: i/o timeout") is None


def test_policies_add_up_and_a_selector_peer_claims_nothing() -> None:
    narrow = policy([{"cidr": "10.42.16.0/24"}], ["TCP/5432"])
    wide = policy([{"cidr": "10.42.0.0/16"}], ["TCP/5432"], name="platform-egress")
    line = "dial tcp 10.42.17.88:5432: i/o timeout"
    assert _egress_refuses([narrow], POD, line) is not None
    assert _egress_refuses([narrow, wide], POD, line) is None  # another policy admits it
    by_label = policy([{"pods": {"app": "db"}}], ["TCP/5432"])
    assert _egress_refuses([by_label], POD, line) is None  # it may be that pod's address


def test_a_pod_no_policy_selects_and_a_line_without_an_address_are_left_alone() -> None:
    other = cast(p.Pod, {"name": "reports-1", "labels": {"app": "reports"}})
    pol = policy([{"cidr": "10.42.16.0/24"}], ["TCP/5432"])
    assert _egress_refuses([pol], other, "dial tcp 10.42.17.88:5432: i/o timeout") is None
    assert _egress_refuses([pol], POD, "could not connect to ledger-db: timeout") is None
