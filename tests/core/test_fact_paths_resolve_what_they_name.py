"""Fact paths (triage/core/paths.py): what the rules planner states and the judge re-checks.

A fact the planner writes from a payload must hold on that payload, and stop holding when
the value it names changes: otherwise the judge's re-read proves nothing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from triage.core.models import Fact
from triage.core.paths import holds, resolve

POD: dict[str, Any] = {
    "name": "api-1",
    "containers": [
        {"name": "init", "restarts": 0},
        {"name": "app", "restarts": 7, "last_terminated": {"reason": "OOMKilled", "exit": 137}},
    ],
    "events": ["Back-off restarting failed container"],
}


def _fact(path: str, op: str, value: Any = None) -> Fact:
    return Fact(tool="k8s.pods", args={"namespace": "shop"}, path=path, op=op, value=value)  # type: ignore[arg-type]


def test_paths_pick_by_name_and_by_position() -> None:
    assert resolve(POD, "containers[name=app].last_terminated.reason") == ["OOMKilled"]
    assert resolve(POD, "containers[-1].restarts") == [7]
    assert resolve(POD, "containers[0].name") == ["init"]
    assert resolve(POD, "containers[name=sidecar].restarts") == []
    assert resolve(POD, "containers[5]") == []
    assert resolve(POD, "name.first") == []


EVENTS: list[dict[str, Any]] = [
    {"reason": "FailedCreate", "message": 'serviceaccount "api" not found'},
    {"reason": "FailedCreate", "message": 'failed calling webhook "vault.hashicorp.com"'},
    {"reason": "BackOff", "message": "Back-off restarting failed container"},
]


def test_a_selector_picks_every_item_it_matches() -> None:
    """Two Warning events share a reason: a fact about the second holds, though the first
    comes first (a ReplicaSet refused once for its ServiceAccount, then by a webhook)."""
    path = "[reason=FailedCreate].message"
    assert resolve(EVENTS, path) == [EVENTS[0]["message"], EVENTS[1]["message"]]
    assert holds(_fact(path, "contains", "vault.hashicorp.com"), EVENTS)
    assert not holds(_fact(path, "contains", "quota"), EVENTS)
    assert holds(_fact("[reason=Evicted]", "absent"), EVENTS)
    assert not holds(_fact("[reason=BackOff]", "absent"), EVENTS)


def test_operators() -> None:
    assert holds(_fact("containers[name=app].last_terminated.reason", "eq", "OOMKilled"), POD)
    assert not holds(_fact("containers[name=app].last_terminated.reason", "eq", "Error"), POD)
    assert holds(_fact("containers[name=app].restarts", "ge", 5), POD)
    assert not holds(_fact("containers[name=app].restarts", "le", 5), POD)
    assert holds(_fact("events", "contains", "Back-off"), POD)
    assert holds(_fact("containers[name=sidecar]", "absent"), POD)
    assert not holds(_fact("containers[name=sidecar]", "present"), POD)
    assert not holds(_fact("containers[name=sidecar].restarts", "ne", 1), POD), (
        "a value that is not there does not differ from anything: the fact fails"
    )
    assert not holds(_fact("name", "ge", 1), POD), "a number compared with text fails"


names = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
scalars = st.one_of(st.integers(-5, 10**6), names, st.booleans())


@st.composite
def item_with_path(draw: st.DrawFn) -> tuple[Any, str, Any]:
    """A nested payload, a path into it (by key, by name, by index) and the value there."""
    leaf = draw(scalars)
    data: Any = leaf
    path: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["key", "name", "index"]))
        key = draw(names)
        if kind == "key":
            data = {key: data, "other": draw(scalars)}
            path.insert(0, key)
        else:
            if not isinstance(data, dict):
                data = {"value": data}
                path.insert(0, "value")
            others = [{"name": f"{key}-x", "value": 0}]
            data = {**data, "name": key}
            items = [*others, data] if draw(st.booleans()) else [data, *others]
            if kind == "name":
                step = f"[name={key}]"
            else:
                step = f"[{items.index(data) - (len(items) if draw(st.booleans()) else 0)}]"
            data = {"items": items}
            path[:0] = ["items", step]
    text = ".".join(path).replace(".[", "[")
    return data, text, leaf


@given(item_with_path())
def test_a_fact_read_from_a_payload_holds_on_it_and_fails_when_the_value_changes(
    case: tuple[Any, str, Any],
) -> None:
    data, path, leaf = case
    assert resolve(data, path) == [leaf]
    assert holds(_fact(path, "eq", leaf), data)
    changed = resolve(data, path.rsplit(".", 1)[0]) if "." in path else None
    if isinstance(changed, dict):
        key = path.rsplit(".", 1)[1]
        if key in changed:
            changed[key] = f"not-{leaf}"
            assert not holds(_fact(path, "eq", leaf), data)


@given(
    st.recursive(
        scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(names, c, max_size=3)
    ),
    st.text(max_size=40),
)
def test_any_path_on_any_payload_resolves_or_is_missing(data: Any, path: str) -> None:
    resolve(data, path)  # never raises
    for op in ("eq", "ne", "contains", "ge", "le", "present", "absent"):
        holds(_fact(path, op, 1), data)
