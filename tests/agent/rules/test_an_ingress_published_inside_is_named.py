"""An Ingress for a public host that its controller published only at private addresses is
on the internal controller's class; one with a public address, an internal host name, or no
other class to be on, is not said to be. The oracle for "private" is Python's `ipaddress`."""

from __future__ import annotations

import ipaddress
from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from triage.agent.planners.rules.analyzers.network import _published_inside

CLASSES = cast(
    list[p.IngressClass],
    [
        {"name": "internal", "controller": "k8s.io/internal-nginx", "default": False},
        {"name": "public", "controller": "k8s.io/ingress-nginx", "default": True},
    ],
)


def ingress(address: str, host: str = "shop.example.com", cls: str = "internal") -> p.Ingress:
    raw: dict[str, Any] = {
        "name": "site",
        "ingress_class": cls,
        "tls_secrets": [],
        "backends": [{"host": host, "path": "/", "service": "site", "port": 80}],
        "load_balancer": [address],
        "canary": {},
    }
    return cast(p.Ingress, raw)


octet = st.integers(0, 255)
ipv4 = st.tuples(octet, octet, octet, octet).map(lambda t: ".".join(map(str, t)))


@given(address=ipv4)
def test_said_exactly_when_every_address_is_private(address: str) -> None:
    said = _published_inside(ingress(address), CLASSES, "E1", "E2")
    assert (said is not None) == ipaddress.ip_address(address).is_private
    if said is not None:
        assert "ingressClassName internal" in said[0]
        assert address in said[0]


def test_an_internal_name_or_no_other_class_is_not_said() -> None:
    assert _published_inside(ingress("10.1.2.3", host="wiki.corp"), CLASSES, "E1", "E2") is None
    assert _published_inside(ingress("10.1.2.3"), CLASSES[:1], "E1", "E2") is None
    assert _published_inside(ingress("lb.example.net"), CLASSES, "E1", "E2") is None
