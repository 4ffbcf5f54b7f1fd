"""A small path language over tool payloads, shared by who states a fact and who checks it.

    [name=api-1].containers[name=app].last_terminated.reason
    revisions[-1].template.containers[name=app].env[name=JAVA_TOOL_OPTIONS].value
    ready

Steps are separated by dots: `key` reads a mapping, `[field=value]` picks the list items whose
field equals value, `[N]` (also negative) picks by position. `resolve` returns the values the
path reaches (none: []), `holds` applies a Fact's operator: a fact holds when one of them
satisfies it (two Warning events share a reason; the fact is about one of them), and `absent`
when none is present. Deliberately tiny: facts are written by the
rules planner from payloads it has just read, and checked by the judge on a fresh read.
"""

from __future__ import annotations

import re
from typing import Any

from triage.core.models import Fact

_STEP = re.compile(r"([^.\[\]]+)|\[([^\]=]+)=([^\]]*)\]|\[(-?\d+)\]")


def steps(path: str) -> list[tuple[str, str | None, str | None, int | None]]:
    out: list[tuple[str, str | None, str | None, int | None]] = []
    for m in _STEP.finditer(path):
        key, field, value, index = m.group(1), m.group(2), m.group(3), m.group(4)
        out.append((key or "", field, value, int(index) if index is not None else None))
    return out


def resolve(data: Any, path: str) -> list[Any]:
    current = [data]
    for key, field, value, index in steps(path):
        picked: list[Any] = []
        for item in current:
            if key:
                if isinstance(item, dict) and key in item:
                    picked.append(item[key])
            elif field is not None and isinstance(item, list):
                picked += [x for x in item if isinstance(x, dict) and str(x.get(field)) == value]
            elif index is not None and isinstance(item, list) and -len(item) <= index < len(item):
                picked.append(item[index])
        current = picked
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
        return all(x in (None, "", [], {}) for x in found)
    return any(_holds(fact, x) for x in found)


def _holds(fact: Fact, found: Any) -> bool:
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
