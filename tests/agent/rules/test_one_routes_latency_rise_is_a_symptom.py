"""One route's p99 may rise while the whole service's p99 stays where it was (the other
routes' volume hides it, or the whole was slow all along): the route's rise is a symptom of
its own, named by its labels, so a release before it is still looked at. A route that stays
flat, or a whole-service rise already seen, adds nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tools.results import ToolStatus
from triage.agent.intake import parse
from triage.agent.planners.rules.analyzers.metrics import symptoms
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import Facts
from triage.core.models import Evidence

NS = "shop"
NOW = 1_800_000_000.0


def _series(labels: dict[str, str], before: float, after: float, n: int = 60) -> dict[str, Any]:
    values = [[NOW - (n - i) * 60, before if i < n * 2 // 3 else after] for i in range(n)]
    return {"labels": labels, "values": values}


def _ctx(*evidence: tuple[str, list[dict[str, Any]]]) -> Ctx:
    facts = Facts(
        Evidence(
            id=f"e{i}",
            tool="prom.range",
            args={"query": "q"},
            status=ToolStatus.OK,
            excerpt="",
            digest="",
            data=data,
            purpose=purpose,
        )
        for i, (purpose, data) in enumerate(evidence)
    )
    return Ctx(goal=parse("why is it slow?", now=NOW, namespace=NS), facts=facts, ns=NS, now=NOW)


routes = st.from_regex(r"/v1/[a-z]{2,8}(/\{id\})?", fullmatch=True)


@given(route=routes, before=st.floats(0.01, 0.15), factor=st.floats(4.0, 40.0))
def test_a_route_that_rose_is_named(route: str, before: float, factor: float) -> None:
    flat = _series({"handler": "/healthz"}, 0.01, 0.01)
    rose = _series({"handler": route}, before, max(before * factor, 0.6))
    ctx = _ctx(("latency_p99:" + NS, [_series({}, 5.0, 5.0)]), ("latency_p99_by:h", [flat, rose]))
    found = symptoms(ctx)
    assert [what for what, _, _ in found] == [f"p99 latency of handler={route}"]


@given(route=routes, level=st.floats(0.01, 0.4))
def test_a_flat_route_is_no_symptom(route: str, level: float) -> None:
    ctx = _ctx(("latency_p99_by:h", [_series({"handler": route}, level, level)]))
    assert symptoms(ctx) == []


def test_a_whole_service_rise_is_not_repeated_per_route() -> None:
    ctx = _ctx(
        ("latency_p99:" + NS, [_series({}, 0.1, 3.0)]),
        ("latency_p99_by:h", [_series({"handler": "/v1/x"}, 0.1, 3.0)]),
    )
    assert [what for what, _, _ in symptoms(ctx)] == ["p99 latency"]
