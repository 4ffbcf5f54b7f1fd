"""Behind a Service that selects no pod, the pods it *nearly* selects are followed: those
carrying every key of its selector with exactly one value different (an operator's
role=replica where the Service wants role=primary). A pod missing a key, or differing in two,
is another workload, and a selector that selects any pod is followed as it is."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from triage.agent.planners.rules.facts import nearly_selects, pods_behind, selects

keys = st.sampled_from(["app", "role", "cluster-name", "tier", "version"])
values = st.sampled_from(["a", "b", "primary", "replica"])
labels = st.dictionaries(keys, values, max_size=5)


@given(selector=st.dictionaries(keys, values, min_size=1, max_size=4), pod=labels)
def test_one_value_off_on_every_key(selector: dict[str, str], pod: dict[str, str]) -> None:
    off = [k for k in selector if pod.get(k) != selector[k]]
    expected = len(selector) >= 2 and all(k in pod for k in selector) and len(off) == 1
    assert nearly_selects(selector, pod) == expected
    assert not (nearly_selects(selector, pod) and selects(selector, pod))


@given(selector=st.dictionaries(keys, values, min_size=2, max_size=4), pods=st.lists(labels))
def test_what_is_behind_a_selector(selector: dict[str, str], pods: list[dict[str, str]]) -> None:
    objs: list[Any] = [{"labels": x} for x in pods]
    chosen = pods_behind(selector, objs)
    if any(selects(selector, x) for x in pods):
        assert chosen == [o for o in objs if selects(selector, o["labels"])]
    else:
        assert chosen == [o for o in objs if nearly_selects(selector, o["labels"])]


def test_an_operator_label_that_nobody_carries() -> None:
    want = {"application": "patroni", "cluster-name": "pg", "role": "primary"}
    replicas = [{"labels": {**want, "role": "replica"}}, {"labels": {**want, "role": "replica"}}]
    other = [{"labels": {"application": "patroni", "cluster-name": "other", "role": "standby"}}]
    assert pods_behind(want, [*replicas, *other]) == replicas
