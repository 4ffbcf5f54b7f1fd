"""A server (a database proxy, a mesh agent) put into initContainers without restartPolicy:
Always: init containers run one at a time and each must exit first, and a server never does,
so the pod sits in Init for ever though the server says it is ready. The RCA says so and
names the native-sidecar form; the same container as a native sidecar, or an init container
that has not said it serves, is not blamed on that."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.models import RCADraft

NS = "scn-healthy"
READY = "2026/12/04 20:45:30 The proxy has started successfully and is ready for new connections!"


def _init(name: str, state: dict[str, Any], restart: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name,
        "image": f"registry.example.com/{name}:1.0",
        "command": [],
        "args": [],
        "env": [],
        "env_from": [],
        "ports": [],
        "limits": {},
        "requests": {},
        "liveness": None,
        "readiness": None,
        "startup": None,
        "mounts": [],
    }
    if restart:
        spec["restart_policy"] = restart
    return {
        "name": name,
        "image": spec["image"],
        "ready": False,
        "restarts": 0,
        "state": state,
        "last_terminated": None,
        "limits": {},
        "requests": {},
        "spec": spec,
    }


def _first_pod(recorded: dict[str, Any]) -> str:
    """The recorded bundle's first pod, whatever name the recording gave it."""
    pods = next(c for c in recorded["calls"] if c["tool"] == "k8s.pods")
    return str(pods["result"]["data"][0]["name"])


def _answer(tmp_path: Path, restart: str | None, proxy_log: list[str]) -> RCADraft:
    recorded = recorded_bundle("healthy.json")
    pod_name = _first_pod(recorded)
    for c in recorded["calls"]:
        if c["tool"] == "k8s.pods":
            pod = next(x for x in c["result"]["data"] if x["name"] == pod_name)
            pod.update(phase="Pending", ready=False)
            pod["containers"][0].update(
                ready=False, state={"kind": "waiting", "reason": "PodInitializing"}
            )
            pod["init_containers"] = [
                _init(
                    "db-proxy", {"kind": "running", "started_at": "2026-12-04T20:45:24Z"}, restart
                ),
                _init("migrate", {"kind": "waiting", "reason": "PodInitializing"}, None),
            ]
    log = next(c for c in recorded["calls"] if c["tool"] == "k8s.logs")
    args = {"namespace": NS, "pod": pod_name, "container": "db-proxy"}
    result = {**copy.deepcopy(log["result"]), "args": args, "data": proxy_log}
    recorded["calls"].append({"tool": "k8s.logs", "args": args, "result": result})
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join([draft.title, *(c.text for c in draft.root_cause)])


@pytest.mark.parametrize(
    "line",
    [READY, "Listening on 127.0.0.1:5432", "INFO envoy server started", "accepting connections"],
)
def test_a_plain_init_container_that_serves_blocks_the_pod(tmp_path: Path, line: str) -> None:
    said = _said(_answer(tmp_path, None, ["starting", line]))
    for part in ("db-proxy", "never exits", "restartPolicy: Always", "init container migrate"):
        assert part in said, (part, said)


def test_a_native_sidecar_is_not_blamed(tmp_path: Path) -> None:
    assert "never exits" not in _said(_answer(tmp_path, "Always", ["starting", READY]))


def test_an_init_container_that_has_not_said_it_serves_is_not_blamed(tmp_path: Path) -> None:
    assert "never exits" not in _said(_answer(tmp_path, None, ["waiting for lock"]))
