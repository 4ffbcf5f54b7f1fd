"""The rules planner compares the failing revision's pod template with the last healthy one
(triage/agent/planners/rules/diff.py). These are the changes a release makes and an SRE looks
for first; each must be named, and an unchanged template must yield nothing."""

from __future__ import annotations

import copy

from tools.read import payloads as p
from triage.agent.planners.rules.diff import diff


def _template() -> p.PodTemplate:
    return {
        "containers": [
            {
                "name": "app",
                "image": "shop/api:1.4.2",
                "command": ["/api"],
                "args": ["--port=8080"],
                "env": [
                    {"name": "DATABASE_URL", "secret": "api-db/url"},
                    {"name": "LOG_LEVEL", "value": "info"},
                ],
                "env_from": [],
                "ports": [{"name": "http", "port": 8080}],
                "limits": {"memory": "512Mi"},
                "requests": {"cpu": "100m"},
                "liveness": None,
                "readiness": {"kind": "http", "path": "/healthz", "port": 8080},
                "startup": None,
                "mounts": [],
            }
        ],
        "init_containers": [],
        "service_account": "api",
        "volumes": [{"name": "config", "kind": "configMap", "ref": "api-config"}],
        "node_selector": {},
        "annotations": {},
    }


def test_an_unchanged_template_has_no_changes() -> None:
    assert diff(_template(), _template()) == []


def test_each_kind_of_change_is_named() -> None:
    old, new = _template(), _template()
    app = new["containers"][0]
    app["image"] = "shop/api:1.5.0"
    app["env"][0] = {"name": "DB_URL", "secret": "api-db/url"}
    app["env"][1] = {"name": "LOG_LEVEL", "value": "debug"}
    app["args"] = ["--port=9090"]
    app["limits"] = {"memory": "256Mi"}
    app["readiness"] = {"kind": "http", "path": "/ready", "port": 8080}
    new["service_account"] = "default"
    new["volumes"] = [{"name": "config", "kind": "configMap", "ref": "api-config-v2"}]

    changes = {c.what: c for c in diff(old, new)}
    texts = [c.text for c in diff(old, new)]
    assert changes["image"].before == "shop/api:1.4.2"
    assert changes["image"].after == "shop/api:1.5.0"
    assert "env var DATABASE_URL renamed to DB_URL" in texts, "same secret, new name: a rename"
    assert any("LOG_LEVEL changed" in t for t in texts)
    assert changes["args"].after == "--port=9090"
    assert "limits.memory 512Mi → 256Mi" in texts
    assert any(t.startswith("readiness probe http /healthz") and "/ready" in t for t in texts)
    assert changes["service_account"].after == "default"
    assert "volume configMap:api-config removed" in texts
    assert "volume configMap:api-config-v2 added" in texts


def test_a_removed_setting_is_not_taken_for_a_rename_of_an_unrelated_one() -> None:
    old, new = _template(), copy.deepcopy(_template())
    new["containers"][0]["env"] = [
        {"name": "LOG_LEVEL", "value": "info"},
        {"name": "FEATURE_FLAGS", "value": "beta"},
    ]
    texts = [c.text for c in diff(old, new)]
    assert "env var DATABASE_URL removed" in texts
    assert "env var FEATURE_FLAGS added" in texts
    assert not any("renamed" in t for t in texts)
