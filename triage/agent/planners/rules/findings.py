"""Shared pieces of diagnosis: the context detectors read and the Finding they return.

Each detector looks for one failure class and, when the evidence decides it, returns a
Finding whose claims cite the ids of `ok` evidence only. The most specific finding wins (a
failing rollout explains its crash-looping pods, a pending claim explains its pending pod);
others become contributing factors. With no finding the draft says "no fault found" when
everything checked was healthy, and "inconclusive" with what was checked otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from triage.agent.planners.rules.facts import Facts, Json, fatal_line
from triage.core.causes import CauseClass
from triage.core.models import Claim, Goal, MutationProposal, TimelineEntry

ERROR_RATIO_ALERT = 0.05
DEPLOY_WINDOW_S = (-300.0, 1200.0)  # a rise 5 min before to 20 min after a rollout


@dataclass
class Finding:
    cls: CauseClass
    score: int
    summary: str
    claims: list[Claim]
    impact: str = ""
    contributing: list[Claim] = field(default_factory=list)
    remediation: list[MutationProposal] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    timeline: list[TimelineEntry] = field(default_factory=list)


@dataclass
class Ctx:
    goal: Goal
    facts: Facts
    ns: str
    pods: list[Json]
    pods_id: str | None
    focus: list[Json]
    services: list[Json]
    services_id: str | None
    events: list[Json]
    events_id: str | None

    def logs(self, pod: str, container: str, previous: bool) -> tuple[list[str], str | None]:
        args: dict[str, Any] = {"namespace": self.ns, "pod": pod, "container": container}
        if previous:
            args["previous"] = True
        data, eid = self.facts.data("k8s.logs", **args)
        return list(data or []), eid

    def fatal(self, pod: str, container: str) -> tuple[str | None, str | None, bool]:
        """(line, evidence id, from previous instance?) quoting why a container died."""
        for previous in (True, False):
            lines, eid = self.logs(pod, container, previous)
            line = fatal_line(lines)
            if line and eid:
                return line, eid, previous
        return None, None, False

    def pod_events(self, pod: str) -> tuple[list[Json], str | None]:
        data, eid = self.facts.data("k8s.events", namespace=self.ns, object_name=pod)
        if data:
            return list(data), eid
        mine = [e for e in self.events if e["object"]["name"] == pod]
        return mine, self.events_id if mine else None


def unique_ids(*ids: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in ids if i))


def cite(text: str, *ids: str | None) -> Claim | None:
    cited = unique_ids(*ids)
    return Claim(text=text, evidence=cited) if cited else None


def present(*claims: Claim | None) -> list[Claim]:
    return [c for c in claims if c is not None]


def parse_ts(value: Any) -> float | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def fmt_time(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def workload_of(pod: Json) -> str:
    """checkout-api-7d9c6b-xk2p → checkout-api (ReplicaSet owner minus its hash)."""
    owner = pod.get("owner") or {}
    name = str(owner.get("name") or pod["name"])
    if owner.get("kind") == "ReplicaSet" and "-" in name:
        return name.rsplit("-", 1)[0]
    return name


def unhealthy(pods: list[Json], *reasons: str) -> list[tuple[Json, Json]]:
    """(pod, container) pairs whose waiting reason or last termination is one of `reasons`."""
    out = []
    for p in pods:
        for c in p["containers"]:
            state = c.get("state") or {}
            last = c.get("last_terminated") or {}
            if state.get("reason") in reasons or (
                "OOMKilled" in reasons and last.get("reason") == "OOMKilled"
            ):
                out.append((p, c))
    return out
