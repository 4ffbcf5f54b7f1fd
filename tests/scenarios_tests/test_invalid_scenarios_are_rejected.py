"""A scenario file that breaks the format is refused with a message naming the file."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.scenarios import ScenarioError, load_scenario, load_scenarios

BASE: dict[str, Any] = {
    "name": "tiny",
    "description": "d",
    "question": "is web in {namespace} ok?",
    "target": {"kind": "Deployment", "name": "web"},
    "objects": [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "app", "image": "x"}]},
                },
            },
        }
    ],
    "wait_for": {"conditions": [{"pods": {"selector": {"app": "web"}, "state": "ready"}}]},
    "expect": {"root_cause_class": "no_fault", "keywords": ["no fault", "web"]},
}


def write(tmp_path: Path, data: dict[str, Any], name: str = "tiny") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_minimal_scenario_loads(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, BASE))
    assert scenario.namespace == "scn-tiny"
    assert scenario.rendered_question == "is web in scn-tiny ok?"


def mutate(path: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    *parents, last = path.split(".")
    node: Any = data
    for key in parents:
        node = node[int(key)] if key.isdigit() else node[key]
    if value is None:
        del node[last]
    else:
        node[last] = value
    return data


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (mutate("expect.root_cause_class", "cosmic_rays"), "unknown root_cause_class"),
        (mutate("expect.keywords", ["one"]), "at least 2"),
        (mutate("expect.keywords", ["a", "b", "c", "d", "e"]), "at most 4"),
        (mutate("objects.0.metadata.namespace", "prod"), "leave metadata.namespace out"),
        (mutate("target.name", "api"), "not in objects"),
        (mutate("question", "is web ok?"), "namespace"),
        (mutate("name", "Tiny_1"), "DNS label"),
        (mutate("objects.0.kind", "Frobnicator"), "kind not in the loader"),
        (mutate("wait_for", None), "wait_for"),
        (mutate("surprise", 1), "surprise"),
        (
            mutate("objects.0.spec.template.metadata.annotations", {"sim.triage.dev/state": "x"}),
            "unknown sim state",
        ),
        (
            mutate("after_apply", [{"action": "patch", "kind": "Job", "name": "x", "patch": {}}]),
            "not in objects",
        ),
    ],
)
def test_broken_scenarios_are_rejected(tmp_path: Path, data: dict[str, Any], match: str) -> None:
    with pytest.raises(ScenarioError, match=match) as info:
        load_scenario(write(tmp_path, data))
    assert "tiny.yaml" in str(info.value)


def test_file_name_must_match_the_scenario_name(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="file name"):
        load_scenario(write(tmp_path, BASE, name="other"))


def test_an_empty_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no scenarios"):
        load_scenarios(tmp_path)


def test_the_digest_changes_with_the_content(tmp_path: Path) -> None:
    a = load_scenario(write(tmp_path, BASE))
    b = load_scenario(write(tmp_path, mutate("description", "other")))
    assert a.digest() != b.digest()
    assert a.digest() == load_scenario(write(tmp_path, BASE)).digest()
