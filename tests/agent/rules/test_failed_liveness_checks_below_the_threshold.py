"""A liveness check that failed a few times without a restart is explained in a "no fault"
answer by the probe's failureThreshold: the kubelet restarts a container only after that
many failures in a row, so fewer did nothing but log Unhealthy. Said only of a container
that was not restarted, and only for a liveness probe."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass
from triage.core.models import RCADraft


def _answer(tmp_path: Path, probe: str, restarts: int = 0) -> RCADraft:
    recorded = recorded_bundle("healthy.json")
    now = recorded["now"]
    pod_name = ""
    for c in recorded["calls"]:
        result = c["result"]
        if c["tool"] == "k8s.pods":
            pod = result["data"][0]
            pod_name = pod["name"]
            spec = pod["containers"][0]["spec"]
            spec["liveness"] = {
                "kind": "http",
                "path": "/livez",
                "port": "http",
                "period_s": 10,
                "timeout_s": 3,
                "failure_threshold": 5,
            }
            pod["containers"][0]["restarts"] = restarts
    for c in recorded["calls"]:
        if c["tool"] == "k8s.events":
            last = datetime.fromtimestamp(now - 1500, UTC).isoformat().replace("+00:00", "Z")
            c["result"]["status"] = "ok"
            c["result"]["data"] = [
                {
                    "type": "Warning",
                    "reason": "Unhealthy",
                    "message": f'{probe} probe failed: Get "http://10.1.2.3:8080/livez": '
                    "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
                    "object": {"kind": "Pod", "name": pod_name},
                    "count": 2,
                    "last_seen": last,
                    "first_seen": last,
                    "source": "kubelet",
                }
            ]
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join(c.text for c in draft.root_cause)


def test_fewer_failures_than_the_threshold_are_said_to_restart_nothing(tmp_path: Path) -> None:
    draft = _answer(tmp_path, "Liveness")
    assert draft.root_cause_class is CauseClass.NO_FAULT, _said(draft)
    assert "failureThreshold 5 consecutive failed checks (every 10s)" in _said(draft)


def test_a_readiness_failure_is_not_read_against_the_liveness_threshold(tmp_path: Path) -> None:
    assert "failureThreshold" not in _said(_answer(tmp_path, "Readiness"))


def test_a_restarted_container_is_not_said_to_be_below_the_threshold(tmp_path: Path) -> None:
    assert "failureThreshold" not in _said(_answer(tmp_path, "Liveness", restarts=1))
