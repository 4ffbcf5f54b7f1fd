"""A container told to hold at most a size below its memory limit (a cache's `--maxmemory`,
varnish's `-s malloc,`, `--cache-size=`) levels off at that bound by design: a flat working set
there is explained with the flag and the eviction policy it is given, never when the bound is
above the limit (that one is a misconfiguration, not a design) or for a JVM heap flag."""

from __future__ import annotations

from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from tools.read.shapes import container_spec
from triage.agent.planners.rules.reasons import _own_bound

MIB = 1024**2
policies = st.sampled_from(["allkeys-lru", "allkeys-lfu", "volatile-ttl", "volatile-lru"])


def container(args: list[str]) -> p.Container:
    return cast(p.Container, {"spec": container_spec({"name": "c", "image": "x", "args": args})})


@given(cap=st.integers(16, 4000), headroom=st.integers(1, 2000), policy=policies)
def test_a_bound_below_the_limit_is_named_with_its_policy(
    cap: int, headroom: int, policy: str
) -> None:
    args = ["redis-server", "--maxmemory", f"{cap}mb", "--maxmemory-policy", policy]
    said = _own_bound(container(args), (cap + headroom) * MIB)
    assert f"--maxmemory {cap}mb" in said
    assert policy in said


@given(cap=st.integers(16, 4000), over=st.integers(0, 2000))
def test_a_bound_at_or_over_the_limit_or_a_heap_flag_is_not_a_design(cap: int, over: int) -> None:
    assert _own_bound(container(["--maxmemory", f"{cap}mb"]), max(cap - over, 1) * MIB) == ""
    assert _own_bound(container([f"-Xmx{cap}m", "-jar", "app.jar"]), (cap + 100) * MIB) == ""
