"""A scenario file that breaks the format is refused with a message naming the file."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.scenario_format import EventStep
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
    "expect": {
        "root_cause_class": "no_fault",
        "facts": [{"any": ["no fault", "healthy"]}, {"any": ["ready"]}],
        "wrong_causes": [{"class": "oom_killed"}],
        "difficulty": "easy",
    },
}

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {
        "name": "{namespace}-worker",
        "annotations": {"sim.triage.dev/node-state": "ready"},
    },
    "spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]},
}

WEBHOOK: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1",
    "kind": "ValidatingWebhookConfiguration",
    "metadata": {"name": "{namespace}-policy"},
    "webhooks": [
        {
            "name": "pods.policy.example.com",
            "namespaceSelector": {"matchLabels": {"triage.dev/scenario": "tiny"}},
        }
    ],
}


def write(tmp_path: Path, data: dict[str, Any], name: str = "tiny") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_minimal_scenario_loads(tmp_path: Path) -> None:
    scenario = load_scenario(write(tmp_path, BASE))
    assert scenario.namespace == "scn-tiny"
    assert scenario.rendered_question == "is web in scn-tiny ok?"


def mutate(path: str, value: Any, base: dict[str, Any] | None = None) -> dict[str, Any]:
    data = copy.deepcopy(BASE if base is None else base)
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
        (mutate("expect.root_cause_class", "bad_config_crashloop"), "unknown root_cause_class"),
        (mutate("expect.facts", ["one"]), "at least 2"),
        (mutate("expect.facts", ["a", "b", "c", "d", "e"]), "at most 4"),
        (mutate("expect.facts", [{"any": []}, "b"]), "at least 1"),
        (mutate("expect.wrong_causes", []), "at least 1"),
        (mutate("expect.wrong_causes", [{"class": "no_fault"}]), "accepted class"),
        (mutate("expect.wrong_causes", [{"class": "oom_killed", "phrase": "x y z"}]), "either"),
        (mutate("expect.also_accept", ["no_fault"]), "repeats"),
        (mutate("expect.difficulty", "trivial"), "difficulty"),
        (mutate("expect.outcome", "rejected"), "outcome"),
        (mutate("expect.keywords", ["a"]), "at least 2"),
        (mutate("objects.0.metadata.namespace", "prod"), "leave metadata.namespace out"),
        (
            mutate("namespaces", ["db"], mutate("objects.0.metadata.namespace", "cache")),
            "not one of the scenario's namespaces",
        ),
        (mutate("objects", [*BASE["objects"], mutate("metadata.name", "worker", NODE)]), "start"),
        (mutate("objects", [*BASE["objects"], mutate("spec", {}, NODE)]), "taint"),
        (
            mutate("objects", [*BASE["objects"], mutate("metadata.annotations", {}, NODE)]),
            "node-state",
        ),
        (
            mutate(
                "objects",
                [*BASE["objects"], mutate("webhooks.0.namespaceSelector", {}, WEBHOOK)],
            ),
            "scoped to the scenario",
        ),
        (mutate("alert", {"labels": {"severity": "page"}, "startsAt": "-5m"}), "alertname"),
        (mutate("alert", {"labels": {"alertname": "X"}, "startsAt": "5m"}), "offsets"),
        (mutate("question", "is web in {namespace:db} ok? {namespace}"), "no extra namespace"),
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
        (
            mutate(
                "after_apply",
                [
                    {
                        "action": "event",
                        "involved": {"kind": "Deployment", "name": "web"},
                        "reason": "R",
                        "message": "m",
                        "daily_at": "25:00",
                    }
                ],
            ),
            "HH:MM",
        ),
        (
            mutate(
                "after_apply",
                [
                    {
                        "action": "event",
                        "involved": {"kind": "Deployment", "name": "web"},
                        "reason": "R",
                        "message": "m",
                        "daily_at": "07:30 Mars/Olympus",
                    }
                ],
            ),
            "time zone",
        ),
        (
            mutate(
                "after_apply",
                [
                    {
                        "action": "event",
                        "involved": {"kind": "Deployment", "name": "web"},
                        "reason": "R",
                        "message": "m",
                        "daily_at": "07:30",
                        "age": "2h",
                    }
                ],
            ),
            "not both",
        ),
    ],
)
def test_broken_scenarios_are_rejected(tmp_path: Path, data: dict[str, Any], match: str) -> None:
    with pytest.raises(ScenarioError, match=match) as info:
        load_scenario(write(tmp_path, data))
    assert "tiny.yaml" in str(info.value)


def test_extra_namespaces_cluster_objects_and_an_alert_load(tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    data["namespaces"] = ["db", {"name": "policy", "labels": {"team": "sec"}}]
    data["question"] = "web in {namespace} calls {namespace:db}, why is it slow?"
    data["objects"] = [*data["objects"], NODE, WEBHOOK]
    data["objects"][0]["metadata"]["namespace"] = "db"
    data["target"]["namespace"] = "db"
    data["alert"] = {
        "labels": {"alertname": "HighLatency", "namespace": "{namespace}", "severity": "page"},
        "annotations": {"summary": "p99 above 2s in {namespace:db}"},
        "startsAt": "-20m",
    }
    scenario = load_scenario(write(tmp_path, data))
    assert scenario.all_namespaces == ["scn-tiny", "scn-tiny-db", "scn-tiny-policy"]
    assert scenario.rendered_question == "web in scn-tiny calls scn-tiny-db, why is it slow?"
    payload = scenario.alert_payload(now=1_800_000_000)
    assert payload is not None
    assert payload["version"] == "4"
    assert payload["status"] == "firing"
    assert payload["groupLabels"] == {"alertname": "HighLatency", "namespace": "scn-tiny"}
    (alert,) = payload["alerts"]
    assert alert["annotations"]["summary"] == "p99 above 2s in scn-tiny-db"
    assert alert["startsAt"] == "2027-01-15T07:40:00Z"
    assert alert["endsAt"] == "0001-01-01T00:00:00Z"
    assert scenario.expect.keywords == ("no fault", "ready")


def test_the_held_out_split_is_its_own_directory(tmp_path: Path) -> None:
    write(tmp_path, BASE)
    (tmp_path / "heldout").mkdir()
    write(tmp_path / "heldout", mutate("name", "hidden"), name="hidden")
    every = load_scenarios(tmp_path)
    assert [(s.name, s.heldout) for s in every] == [("hidden", True), ("tiny", False)]
    assert [s.name for s in load_scenarios(tmp_path, split="dev")] == ["tiny"]
    assert [s.name for s in load_scenarios(tmp_path, split="heldout")] == ["hidden"]
    write(tmp_path / "heldout", BASE)
    with pytest.raises(ScenarioError, match="also in"):
        load_scenarios(tmp_path)


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


def test_a_daily_event_is_last_seen_at_the_latest_such_wall_clock_time() -> None:
    step = EventStep.model_validate(
        {
            "action": "event",
            "involved": {"kind": "Deployment", "name": "web"},
            "reason": "R",
            "message": "m",
            "daily_at": "19:30 Europe/Berlin",
            "count": 8,
        }
    )
    # 2026-12-06 19:10 UTC is 20:10 in Berlin: the latest 19:30 there was 18:30 UTC that day
    now = datetime(2026, 12, 6, 19, 10, tzinfo=UTC).timestamp()
    first, last = step.seen(now)
    assert last == datetime(2026, 12, 6, 18, 30, tzinfo=UTC).timestamp()
    assert first == last - 7 * 86400
    # at 18:00 UTC (19:00 in Berlin) it was the day before
    first, last = step.seen(datetime(2026, 12, 6, 18, 0, tzinfo=UTC).timestamp())
    assert last == datetime(2026, 12, 5, 18, 30, tzinfo=UTC).timestamp()
