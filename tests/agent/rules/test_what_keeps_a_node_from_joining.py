"""A node that never becomes Ready because its network plugin (CNI) did not start: the
DaemonSets its own taints keep off it are named. Whether a template tolerates a taint follows
the Kubernetes rules (an empty key with Exists tolerates every taint, an empty effect matches
every effect, Equal compares the value), read from the template's tolerations as the
settings flatten them. And a program that fails on `tcp://IP:PORT` is read as the service
link the kubelet injects (`<SERVICE>_PORT`, upper case, dashes as underscores)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from triage.agent.planners.rules.analyzers.containers import link_variable
from triage.agent.planners.rules.analyzers.nodes import tolerates

TAINT: p.Taint = {"key": "workload", "value": "vector-search", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("tolerations", "expected"),
    [
        ("{operator: Exists}", True),  # tolerate everything (the chart default of many CNIs)
        ("{key: workload, operator: Exists}", True),
        ("{effect: NoSchedule, key: workload, operator: Equal, value: vector-search}", True),
        ("{key: workload, operator: Equal, value: vector-search}", True),  # any effect
        ("{effect: NoExecute, key: workload, operator: Exists}", False),  # another effect
        ("{key: workload, operator: Equal, value: gpu}", False),
        (
            "{effect: NoSchedule, key: node.kubernetes.io/not-ready, operator: Exists}, "
            "{key: CriticalAddonsOnly, operator: Exists}",
            False,
        ),
        ("", False),
    ],
)
def test_a_template_tolerates_a_taint(tolerations: str, expected: bool) -> None:
    assert tolerates(tolerations, TAINT) is expected


names = st.from_regex(r"[a-z]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)


@given(names)
def test_the_service_link_variable(name: str) -> None:
    var = link_variable(name)
    assert var.endswith("_PORT")
    assert var[: -len("_PORT")] == name.upper().replace("-", "_")


def test_a_service_link_of_the_docs() -> None:
    assert link_variable("redis-primary") == "REDIS_PRIMARY_PORT"
