"""A Service port forwards one protocol: one whose targetPort reaches only container ports of
another protocol (TCP, the default, in front of a UDP listener) loses that traffic, and is said
so; a TCP and a UDP Service port to the same listener (DNS's 53) are not a mismatch."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from tools.read.shapes import pod as shaped_pod
from triage.agent.planners.rules.analyzers.network import _other_protocol

ports = st.integers(1024, 65535)


def _pod(port: int, protocol: str) -> p.Pod:
    obj = {
        "metadata": {"name": "exp-1", "namespace": "obs"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "ports": [{"name": "listen", "containerPort": port, "protocol": protocol}],
                }
            ]
        },
        "status": {"phase": "Running"},
    }
    return shaped_pod(obj)


def _service(*specs: tuple[int, Any, str]) -> p.Service:
    return cast(
        p.Service,
        {
            "name": "exp",
            "ports": [{"port": a, "targetPort": t, "protocol": proto} for a, t, proto in specs],
        },
    )


@given(port=ports, by_name=st.booleans(), theirs=st.sampled_from(["UDP", "SCTP"]))
def test_a_tcp_port_before_another_protocols_listener_is_found(
    port: int, by_name: bool, theirs: str
) -> None:
    target = "listen" if by_name else port
    found = _other_protocol(_service((port, target, "TCP")), [_pod(port, theirs)])
    assert found is not None
    assert found[1]["protocol"] == theirs


@given(port=ports, proto=st.sampled_from(["TCP", "UDP"]))
def test_the_same_protocol_or_both_protocols_are_no_mismatch(port: int, proto: str) -> None:
    assert _other_protocol(_service((port, port, proto)), [_pod(port, proto)]) is None
    both = _service((port, port, "TCP"), (port, port, "UDP"))
    assert _other_protocol(both, [_pod(port, "UDP")]) is None
