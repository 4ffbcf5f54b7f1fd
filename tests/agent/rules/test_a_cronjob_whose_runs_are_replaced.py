"""A CronJob with concurrencyPolicy Replace whose runs now take longer than its period: it is
scheduled on time and always has a run active, but the controller deletes each run at the next
schedule time and starts another, so none finishes. The RCA names the policy and the
deletions; a Replace CronJob whose runs do finish is not blamed on its policy."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass
from triage.core.models import RCADraft

NS = "scn-healthy"
NAME = "price-sync"


def _ts(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _answer(tmp_path: Path, policy: str, last_success_ago_s: float) -> RCADraft:
    recorded = recorded_bundle("healthy.json")
    now = recorded["now"]
    recorded["question"] = f"the {NAME} cronjob in {NS} runs every minute but prices never update"
    cron = {
        "name": NAME,
        "schedule": "* * * * *",
        "suspend": False,
        "concurrency_policy": policy,
        "starting_deadline_s": None,
        "last_schedule": _ts(now - 40),
        "last_success": _ts(now - last_success_ago_s),
        "active": [f"{NAME}-29941820"],
        "annotations": {},
    }
    for c in recorded["calls"]:
        if c["tool"] == "k8s.cronjobs":
            c["result"].update(status="ok", data=[cron])
    args = {"namespace": NS, "object_name": NAME, "object_kind": "CronJob"}
    events = next(c for c in recorded["calls"] if c["tool"] == "k8s.events")
    deleted = {
        "type": "Normal",
        "reason": "SuccessfulDelete",
        "message": f"Deleted job {NAME}-29941819",
        "object": {"kind": "CronJob", "name": NAME},
        "count": 1,
        "last_seen": _ts(now - 40),
        "source": "cronjob-controller",
    }
    result = {**copy.deepcopy(events["result"]), "args": args, "status": "ok", "data": [deleted]}
    recorded["calls"].append({"tool": "k8s.events", "args": args, "result": result})
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join([draft.title, *(c.text for c in draft.root_cause)])


def test_runs_replaced_for_hours_are_named(tmp_path: Path) -> None:
    draft = _answer(tmp_path, "Replace", 14 * 3600)
    assert draft.root_cause_class is CauseClass.CRONJOB_NOT_SCHEDULED
    said = _said(draft)
    for part in ("concurrencyPolicy Replace", "every minute", "Deleted job", "14.0 h ago"):
        assert part in said, (part, said)


def test_a_replace_cronjob_that_finishes_is_not_blamed_on_its_policy(tmp_path: Path) -> None:
    assert "concurrencyPolicy Replace" not in _said(_answer(tmp_path, "Replace", 90))


def test_allow_is_not_replace(tmp_path: Path) -> None:
    assert "concurrencyPolicy Replace" not in _said(_answer(tmp_path, "Allow", 14 * 3600))
