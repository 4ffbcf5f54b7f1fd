"""A small path language over tool payloads, shared by who states a fact and who checks it.

    [name=api-1].containers[name=app].last_terminated.reason
    revisions[-1].template.containers[name=app].env[name=JAVA_TOOL_OPTIONS].value
    ready

Steps are separated by dots: `key` reads a mapping, `[field=value]` picks the first list item
whose field equals value, `[N]` (also negative) picks by position. `resolve` returns the value
or MISSING; `holds` applies a Fact's operator. Deliberately tiny: facts are written by the
rules planner from payloads it has just read, and checked by the judge on a fresh read.
"""

from __future__ import annotations

import re
from typing import Any

from triage.core.models import Fact

MISSING: Any = object()
_STEP = re.compile(r"([^.\[\]]+)|\[([^\]=]+)=([^\]]*)\]|\[(-?\d+)\]")


def steps(path: str) -> list[tuple[str, str | None, str | None, int | None]]:
    out: list[tuple[str, str | None, str | None, int | None]] = []
    for m in _STEP.finditer(path):
        key, field, value, index = m.group(1), m.group(2), m.group(3), m.group(4)
        out.append((key or "", field, value, int(index) if index is not None else None))
    return out


def resolve(data: Any, path: str) -> Any:
    current = data
    for key, field, value, index in steps(path):
        if key:
            if not isinstance(current, dict) or key not in current:
                return MISSING
            current = current[key]
        elif field is not None:
            if not isinstance(current, list):
                return MISSING
            current = next(
                (x for x in current if isinstance(x, dict) and str(x.get(field)) == value),
                MISSING,
            )
            if current is MISSING:
                return MISSING
        elif index is not None:
            if not isinstance(current, list) or not -len(current) <= index < len(current):
                return MISSING
            current = current[index]
    return current


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def holds(fact: Fact, data: Any) -> bool:
    """Does `fact` hold in `data` (a fresh read of its tool)?"""
    found = resolve(data, fact.path)
    if fact.op == "absent":
        return found is MISSING or found in (None, "", [], {})
    if found is MISSING:
        return False
    if fact.op == "present":
        return found not in (None, "", [], {})
    if fact.op == "eq":
        return bool(found == fact.value or str(found) == str(fact.value))
    if fact.op == "ne":
        return bool(found != fact.value and str(found) != str(fact.value))
    if fact.op == "contains":
        if isinstance(found, list):
            return any(str(fact.value) in str(x) for x in found)
        return str(fact.value) in str(found)
    a, b = _number(found), _number(fact.value)
    if a is None or b is None:
        return False
    return a >= b if fact.op == "ge" else a <= b
