"""`python -m tests.support.check_scenario FILE` checks a new file before it joins the corpus:
the per-file rules of the corpus tests, said as messages a writer can act on, and a series
given twice (which would stop the backfill of the whole corpus)."""

from __future__ import annotations

from tests.support.check_scenario import file_problems
from tests.support.scenario_format import Scenario, load_scenarios

CORPUS = load_scenarios(split="dev")


def _changed(base: Scenario, **expect: object) -> Scenario:
    data = base.model_dump(by_alias=True, exclude_none=True)
    data.update({k: v for k, v in expect.items() if k != "expect"})
    if "expect" in expect:
        data["expect"] = {**data["expect"], **expect["expect"]}  # type: ignore[dict-item]
    return Scenario.model_validate(data)


def test_every_dev_file_keeps_the_rules_when_checked_alone() -> None:
    for scenario in CORPUS[:60]:
        others = [s for s in CORPUS if s.name != scenario.name]
        assert file_problems(scenario, others) == [], scenario.name


def test_a_name_taken_a_fact_in_the_question_and_a_type_clash_are_said() -> None:
    base = next(s for s in CORPUS if s.name == "job-wrong-db-port")
    assert any("already has" in m for m in file_problems(base, CORPUS))
    fact = base.rendered_facts()[0][0]
    leaky = _changed(base, question=f"{{namespace}}: is {fact} the problem?")
    others = [s for s in CORPUS if s.name != base.name]
    assert any("gives a fact away" in m and fact in m for m in file_problems(leaky, others))
    with_metrics = next(s for s in CORPUS if s.metrics)
    metric = with_metrics.metrics[0]
    flipped = "gauge" if metric.type == "counter" else "counter"
    clash = _changed(
        with_metrics,
        metrics=[{**metric.model_dump(by_alias=True, exclude_none=True), "type": flipped}],
    )
    others = [s for s in CORPUS if s.name != with_metrics.name]
    assert any(f"{metric.name} is a {metric.type}" in m for m in file_problems(clash, others))
    twice = _changed(
        with_metrics, metrics=[metric.model_dump(by_alias=True, exclude_none=True)] * 2
    )
    assert any("given twice" in m for m in file_problems(twice, others))
