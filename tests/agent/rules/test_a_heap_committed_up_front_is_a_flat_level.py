"""A JVM told to commit its heap at start-up (-Xms as large as -Xmx, or -XX:+AlwaysPreTouch)
holds the whole heap resident from the first second: a working set near its limit and flat is
its flags, not a leak. A heap that may grow from a smaller start says nothing of the kind."""

from __future__ import annotations

from typing import Any

import pytest

from triage.agent.planners.rules.reasons import _committed_heap


def _container(options: str, where: str = "env") -> Any:
    spec = {
        "name": "api",
        "image": "registry.example.com/api:1",
        "command": ["java"] if where == "args" else [],
        "args": [*options.split(), "-jar", "app.jar"] if where == "args" else [],
        "env": [{"name": "JAVA_TOOL_OPTIONS", "value": options}] if where == "env" else [],
    }
    return {"name": "api", "spec": spec}


@pytest.mark.parametrize(
    ("options", "where"),
    [
        ("-Xms3g -Xmx3g", "env"),
        ("-Xmx3g -XX:+AlwaysPreTouch", "env"),
        ("-Xms2048m -Xmx2048m -XX:+UseG1GC", "args"),
    ],
)
def test_a_heap_committed_up_front_is_said_to_set_the_level(options: str, where: str) -> None:
    said = _committed_heap(_container(options, where))
    assert "commit its heap up front" in said
    assert "not a leak" in said


@pytest.mark.parametrize("options", ["-Xms512m -Xmx3g", "-XX:MaxRAMPercentage=75", ""])
def test_a_heap_that_may_grow_says_nothing(options: str) -> None:
    assert _committed_heap(_container(options)) == ""
