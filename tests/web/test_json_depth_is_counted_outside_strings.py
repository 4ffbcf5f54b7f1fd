"""The nesting check a Slack body passes before it is parsed (triage/web/limits.py `depth`)
agrees with the depth of what the JSON parses to, whatever the strings hold: brackets, quotes,
escaped quotes and backslashes inside a string are text, not structure."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from triage.web.limits import depth

_TRICKY = st.text(alphabet='[]{}"\\ ab:,\n', max_size=12)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | _TRICKY,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TRICKY, inner, max_size=3),
    max_leaves=25,
)


def _nesting(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((_nesting(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_nesting(v) for v in value.values()), default=0)
    return 0


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_depth_is_the_parsed_nesting(value: Any) -> None:
    text = json.dumps(value)
    assert depth(text, 1000) == _nesting(value)


@settings(max_examples=100, deadline=None)
@given(_JSON, st.integers(min_value=0, max_value=4))
def test_depth_stops_counting_past_the_limit(value: Any, limit: int) -> None:
    got = depth(json.dumps(value), limit)
    assert got == min(_nesting(value), limit + 1)


def test_an_unclosed_string_hides_the_brackets_after_it() -> None:
    assert depth('[["abc [[[[', 10) == 2
    assert depth("[" * 100_000, 64) == 65
