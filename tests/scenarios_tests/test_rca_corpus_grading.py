"""The corpus bench reads any shape of `investigate -o json` and grades answers as documented."""

from __future__ import annotations

from typing import Any

import pytest

from bench.rca_corpus import Result, grade, graded_fields, pasted_alert
from tests.support.scenario_format import Scenario, load_scenarios

SCENARIOS = {s.name: s for s in load_scenarios(split="dev")}


def today(cls: str, summary: str, *links: str, outcome: str = "verified") -> dict[str, Any]:
    return {
        "draft": {
            "root_cause_class": cls,
            "summary": summary,
            "root_cause": [{"text": t, "evidence": ["e1"]} for t in links],
            "contributing_factors": [],
        },
        "evidence": [{"id": "e1", "status": "ok"}],
        "verification": {"outcome": outcome, "met": [], "missing": []},
    }


def result_for(scenario: Scenario) -> Result:
    return Result(
        scenario=scenario.name,
        split="dev",
        root_cause_class=scenario.expect.root_cause_class.value,
        difficulty=scenario.expect.difficulty,
        multi_hop=scenario.expect.multi_hop,
    )


def test_todays_shape() -> None:
    g = graded_fields(today("bad_config", "checkout-api crashes", "symptom", "DATABASE_URL bad"))
    assert g.root_cause_class == "bad_config"
    assert g.outcome == "verified"
    assert g.cause == "DATABASE_URL bad"  # no cause line yet: the chain's last link
    assert "checkout-api crashes" in g.root_cause_text
    assert "symptom" in g.root_cause_text


def test_a_cause_line_and_api_wrappers_are_read() -> None:
    doc = {
        "apiVersion": "triage.dev/v1",
        "kind": "InvestigationResult",
        "spec": {
            "draft": {
                "root_cause_class": "oom_killed",
                "cause": "The JVM heap (-Xmx1536m) is larger than the 1Gi limit.",
                "summary": "pricing-engine restarts",
                "root_cause": [{"text": "OOMKilled, exit 137"}],
            }
        },
        "status": {"outcome": "rejected"},
    }
    g = graded_fields(doc)
    assert g.root_cause_class == "oom_killed"
    assert g.cause.startswith("The JVM heap")
    assert g.outcome == "rejected"
    assert "OOMKilled" in g.root_cause_text


def test_an_answer_without_a_draft_has_no_class() -> None:
    g = graded_fields({"error": "namespace not found"})
    assert g.root_cause_class is None
    assert g.outcome is None


def test_a_correct_answer_passes() -> None:
    sc = SCENARIOS["jvm-xmx-above-limit"]
    doc = today(
        "oom_killed",
        "pricing-engine is OOMKilled under load",
        "containers terminate with OOMKilled (137)",
        "JAVA_TOOL_OPTIONS sets -Xmx1536m, above the container memory limit of 1Gi",
    )
    r = result_for(sc)
    grade(sc, graded_fields(doc), r)
    assert (r.class_ok, r.facts_missing, r.wrong_asserted, r.outcome_ok) == (True, [], [], True)
    assert r.passed
    assert not r.wrong_but_verified


def test_a_missing_fact_fails_and_a_verified_wrong_answer_is_counted() -> None:
    sc = SCENARIOS["jvm-xmx-above-limit"]
    r = result_for(sc)
    grade(sc, graded_fields(today("oom_killed", "it runs out of memory", "OOMKilled")), r)
    assert r.class_ok
    assert r.facts_missing  # neither the flag nor the limit was named
    assert not r.passed
    assert r.wrong_but_verified


def test_a_wrong_class_or_phrase_is_a_wrong_cause() -> None:
    sc = SCENARIOS["job-wrong-db-port"]
    text = "billing-db is down: port 5433 refused, DB_PORT should be 5432"
    r = result_for(sc)
    grade(sc, graded_fields(today("dependency_unavailable", text, text)), r)
    assert not r.class_ok
    assert "class dependency_unavailable" in r.wrong_asserted
    r2 = result_for(sc)
    line = "The database is down on port 5433 instead of 5432 (DB_PORT)."
    grade(sc, graded_fields(today("bad_config", line, line)), r2)
    assert r2.class_ok
    assert r2.facts_missing == []
    assert r2.wrong_asserted == ["phrase 'database is down'"]
    assert not r2.passed


def test_also_accepted_classes_pass_and_facts_render_placeholders() -> None:
    sc = SCENARIOS["upstream-db-down-other-namespace"]
    db = sc.namespace_for("db")
    text = f"orders-postgres in {db} was scaled to 0 by the downscaler; no endpoints"
    r = result_for(sc)
    grade(sc, graded_fields(today("dependency_unavailable", text, text)), r)
    assert r.passed, r


@pytest.mark.parametrize("name", ["upstream-db-down-other-namespace", "watchdog-alert-pasted"])
def test_alerts_paste_like_a_notification(name: str) -> None:
    payload = SCENARIOS[name].alert_payload(now=1_800_000_000)
    assert payload is not None
    text = pasted_alert(payload)
    assert text.startswith("[FIRING:1] ")
    assert payload["alerts"][0]["labels"]["alertname"] in text
