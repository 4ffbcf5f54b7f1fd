"""A CronJob that something suspends and resumes every day (a downscaler's off-hours window):
when its schedule time falls inside the window the run is never made, and when it is resumed
later than startingDeadlineSeconds the controller skips it. The RCA says so at any hour of the
day, also when the latest suspension came after the schedule time (the evening, when the
window has already begun again), and does not say so when the time fell outside the window."""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass
from triage.core.models import RCADraft

NS = "scn-healthy"
NAME = "staging-refresh"
DAY = 86400.0


def _ts(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _event(message: str, last: float, now: float) -> dict[str, Any]:
    return {
        "type": "Normal",
        "reason": "ScaleDown" if message.startswith("Suspending") else "ScaleUp",
        "message": message,
        "object": {"kind": "CronJob", "name": NAME},
        "count": 8,
        "last_seen": _ts(last),
        "first_seen": _ts(last - 7 * DAY),
        "source": "kube-downscaler",
    }


def _answer(tmp_path: Path, fired_ago_s: float) -> RCADraft:
    """Suspended daily from now-1h, resumed daily at now-13h (a 12 h window); the schedule
    fires once a day, `fired_ago_s` before now."""
    recorded = recorded_bundle("healthy.json")
    now = recorded["now"]
    at = datetime.fromtimestamp(now - fired_ago_s, UTC)
    recorded["question"] = f"the {NAME} cronjob in {NS} hasn't run for a week, why not?"
    cron = {
        "name": NAME,
        "schedule": f"{at.minute} {at.hour} * * *",
        "suspend": False,
        "concurrency_policy": "Forbid",
        "starting_deadline_s": 600,
        "last_schedule": _ts(now - 8 * DAY),
        "last_success": _ts(now - 8 * DAY),
        "active": [],
        "annotations": {},
    }
    for c in recorded["calls"]:
        if c["tool"] == "k8s.cronjobs":
            c["result"].update(status="ok", data=[cron])
    args = {"namespace": NS, "object_name": NAME, "object_kind": "CronJob"}
    events = next(c for c in recorded["calls"] if c["tool"] == "k8s.events")
    data = [
        _event("Unsuspending CronJob", now - 13 * 3600, now),
        _event("Suspending CronJob", now - 3600, now),
    ]
    result = {**copy.deepcopy(events["result"]), "args": args, "status": "ok", "data": data}
    recorded["calls"].append({"tool": "k8s.events", "args": args, "result": result})
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join([draft.title, *(c.text for c in draft.root_cause)])


def test_a_run_inside_an_earlier_turn_of_the_window_is_named(tmp_path: Path) -> None:
    # fired 20 h ago: inside yesterday's window (now-25h .. now-13h), before the latest
    # suspension (now-1h) — the evening case the last events alone get wrong
    draft = _answer(tmp_path, 20 * 3600)
    assert draft.root_cause_class is CauseClass.CRONJOB_NOT_SCHEDULED
    said = _said(draft)
    for part in ("suspends CronJob", "startingDeadlineSeconds 600"):
        assert part in said, (part, said)
    # resumed 7 h after the schedule time (the minute the schedule names, so up to a minute more)
    assert re.search(r"resumed 42[01] min after", said), said


def test_a_run_outside_the_window_is_not_blamed_on_it(tmp_path: Path) -> None:
    # fired 10 h ago: between the resumption (now-13h) and the next suspension (now-1h)
    assert "suspends CronJob" not in _said(_answer(tmp_path, 10 * 3600))
