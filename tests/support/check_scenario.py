"""Check scenario files one by one, without loading the whole corpus.

    .venv/bin/python -m tests.support.check_scenario FILE.yaml [...] [--keep]

For each file: it validates (the format models), the per-file rules of the corpus tests hold
(2-4 facts, 1-2 wrong causes, the question names the namespace and gives no fact away, no
wrong phrase inside a fact, at most 5 replicas per workload, its metric series render once
each and keep one type per name),
and, applied to the test control plane (started or reused), the cluster reaches the state the
file claims and shows what its root cause class means in the API (the corpus test's
`check_by_class`). A failure prints what the namespace shows. The scenario is unloaded
afterwards unless --keep. Exit status: the number of files that failed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from tests.support.class_checks import check_by_class
from tests.support.controlplane import ControlPlane
from tests.support.observability import openmetrics_from_series
from tests.support.scenario_format import (
    Scenario,
    ScenarioError,
    load_scenario,
    load_scenarios,
    scenario_series,
)
from tests.support.scenarios import SCENARIO_DIR, apply_scenario, namespace_report, unload_scenario


def file_problems(scenario: Scenario, corpus: list[Scenario]) -> list[str]:
    """The corpus tests' per-file rules, as messages (empty when the file keeps them)."""
    problems = []
    if any(other.name == scenario.name for other in corpus):
        problems.append(f"the corpus already has a scenario named {scenario.name}")
    types = {m.name: m.type for other in corpus for m in other.metrics}
    for metric in scenario.metrics:
        if types.get(metric.name, metric.type) != metric.type:
            problems.append(f"{metric.name} is a {types[metric.name]} elsewhere in the corpus")
    expect = scenario.expect
    if not 2 <= len(expect.facts) <= 4:
        problems.append(f"{len(expect.facts)} facts (2-4)")
    if not 1 <= len(expect.wrong_causes) <= 2:
        problems.append(f"{len(expect.wrong_causes)} wrong causes (1-2)")
    if scenario.namespace not in scenario.rendered_question:
        problems.append("the question does not name {namespace}")
    question = scenario.rendered_question.replace(scenario.namespace, "").lower()
    target = scenario.target.name
    for fact in scenario.rendered_facts():
        for alt in fact:
            if alt.lower() in question and alt not in target:
                problems.append(f"the question gives a fact away: {alt!r}")
    for wrong in expect.wrong_causes:
        if wrong.phrase is None:
            if wrong.class_ in expect.accepted_classes:
                problems.append(f"wrong class {wrong.class_} is also accepted")
            continue
        for fact in scenario.rendered_facts():
            if any(wrong.phrase.lower() in alt.lower() for alt in fact):
                problems.append(f"wrong phrase {wrong.phrase!r} is inside a fact")
    for obj in scenario.objects:  # a handful of pods per workload (the corpus test's rule)
        replicas = (obj.get("spec") or {}).get("replicas")
        if replicas is not None and not 0 <= replicas <= 5:
            problems.append(f"{obj['kind']} {obj['metadata']['name']}: replicas {replicas} (0-5)")
    try:
        openmetrics_from_series(scenario_series([scenario]), time.time())
    except ValueError as e:  # a series given twice: the backfill of the whole corpus fails
        problems.append(f"its metrics: {e}")
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--keep", action="store_true", help="leave the scenarios loaded")
    args = parser.parse_args(argv)
    control_plane = ControlPlane.start_or_reuse()
    failed = 0
    try:
        failed = _check(control_plane, args.files, keep=args.keep)
    finally:
        control_plane.started_here = False  # left running for the next check or the bench
        control_plane.release()
    return failed


def _check(control_plane: ControlPlane, files: list[Path], *, keep: bool) -> int:
    failed = 0
    corpus = load_scenarios(split="dev")
    for path in files:
        try:
            scenario = load_scenario(path, heldout=False)
        except ScenarioError as e:
            print(f"FAIL {path}: {e}")
            failed += 1
            continue
        others = [s for s in corpus if SCENARIO_DIR / f"{s.name}.yaml" != path.resolve()]
        problems = file_problems(scenario, others)
        if problems:
            print(f"FAIL {scenario.name}: " + "; ".join(problems))
            failed += 1
            continue
        try:
            apply_scenario(control_plane, scenario, reuse=False)
            with control_plane.api_client() as api:
                shown = _class_shown(api, scenario)
        except ScenarioError as e:
            print(f"FAIL {scenario.name}: {e}\n{namespace_report(control_plane, scenario)}")
            failed += 1
        else:
            if shown:
                print(f"FAIL {scenario.name}: {shown}\n{namespace_report(control_plane, scenario)}")
                failed += 1
            else:
                print(f"ok   {scenario.name}: reached its claimed state")
        if not keep:
            unload_scenario(control_plane, scenario)
    return failed


def _class_shown(api: Any, scenario: Scenario) -> str:
    """Empty when the cluster shows what the scenario's class means, else what it lacks."""
    try:
        check_by_class(api, scenario)
    except AssertionError as e:
        cls = scenario.expect.root_cause_class.value
        return f"the cluster does not show what {cls} means in the API: {e or 'see check_by_class'}"
    return ""


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
