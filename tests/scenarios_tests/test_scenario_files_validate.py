"""Every shipped scenario file parses, validates and covers the planner's root cause classes."""

from __future__ import annotations

import re

import pytest

from tests.support.scenarios import (
    ROOT_CAUSE_CLASSES,
    SCENARIO_DIR,
    SIM_STATE_ANNOTATION,
    SIM_STATES,
    Scenario,
    load_scenario,
    load_scenarios,
)

SCENARIO_FILES = sorted(SCENARIO_DIR.glob("*.yaml"))


def test_at_least_fourteen_scenarios_ship() -> None:
    assert len(SCENARIO_FILES) >= 14


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.stem)
def test_scenario_file_validates(path: object) -> None:
    scenario = load_scenario(path)  # type: ignore[arg-type]
    assert scenario.namespace == f"scn-{scenario.name}"
    assert 2 <= len(scenario.expect.keywords) <= 4
    assert scenario.expect.root_cause_class in ROOT_CAUSE_CLASSES
    assert scenario.namespace in scenario.rendered_question
    assert not re.search(r"[{}]", scenario.rendered_question)
    assert len(scenario.namespace) <= 63


def test_every_root_cause_class_has_a_scenario() -> None:
    classes = [s.expect.root_cause_class for s in load_scenarios()]
    assert sorted(set(classes)) == sorted(ROOT_CAUSE_CLASSES)


def test_names_and_namespaces_are_unique() -> None:
    scenarios = load_scenarios()
    assert len({s.namespace for s in scenarios}) == len(scenarios)


def test_questions_do_not_give_the_answer_away() -> None:
    for scenario in load_scenarios():
        question = scenario.question.replace("{namespace}", "").lower()
        named = [k for k in scenario.expect.keywords if k.lower() in question]
        # the workload's own name may appear (the user names what is broken), nothing else
        assert all(k == scenario.target.name or k in scenario.target.name for k in named), (
            scenario.name,
            named,
        )


def _pod_templates(scenario: Scenario) -> list[dict[str, object]]:
    out = []
    for obj in scenario.objects:
        template = (obj.get("spec") or {}).get("template")
        if template:
            out.append(template)
    return out


def test_sim_annotations_use_the_kwok_contract() -> None:
    seen = set()
    for scenario in load_scenarios():
        for template in _pod_templates(scenario):
            annotations = (template.get("metadata") or {}).get("annotations") or {}  # type: ignore[attr-defined]
            state = annotations.get(SIM_STATE_ANNOTATION, "running")
            assert state in SIM_STATES
            seen.add(state)
            if state in ("imagepull", "config-error"):
                assert annotations.get("sim.triage.dev/message"), scenario.name
    assert seen >= {"crashloop", "oomkilled", "imagepull", "not-ready", "config-error", "fail"}


def test_small_fixtures_except_where_the_scenario_needs_big_ones() -> None:
    for scenario in load_scenarios():
        for obj in scenario.objects:
            replicas = (obj.get("spec") or {}).get("replicas")
            if replicas is not None:
                assert 1 <= replicas <= 3, scenario.name
