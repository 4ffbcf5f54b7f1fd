"""Read-only views over the evidence gathered so far, shared by the rules planner and diagnosis.

Only evidence whose status is `ok` is ever treated as fact; helpers return it together with
its id so whatever is concluded from it can cite it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from tools.read.registry import canonical_args
from tools.results import ErrorKind, ToolStatus
from triage.core.models import Evidence, Goal, Workload

Json = dict[str, Any]

_FATAL = re.compile(
    r"\b(fatal|panic|error|exception|invalid|not set|missing|refused|denied|failed|cannot|"
    r"could not|unable|no such|traceback)\b",
    re.I,
)


class Facts:
    def __init__(self, evidence: Iterable[Evidence]) -> None:
        self.evidence = list(evidence)
        self._by_key = {f"{e.tool} {canonical_args(e.args)}": e for e in self.evidence}

    def get(self, tool: str, **args: Any) -> Evidence | None:
        return self._by_key.get(f"{tool} {canonical_args(args)}")

    def ok(self, tool: str, **args: Any) -> Evidence | None:
        ev = self.get(tool, **args)
        return ev if ev is not None and ev.status is ToolStatus.OK else None

    def data(self, tool: str, **args: Any) -> tuple[Any, str | None]:
        """(data, evidence id) of an ok call, ([], None) otherwise."""
        ev = self.ok(tool, **args)
        return (ev.data, ev.id) if ev is not None else ([], None)

    def all(self, tool: str) -> list[Evidence]:
        return [e for e in self.evidence if e.tool == tool]

    def unavailable(self) -> list[Evidence]:
        """Calls that failed because a backend was down, slow or refused us."""
        return [
            e
            for e in self.evidence
            if e.status in (ToolStatus.ERROR, ToolStatus.DENIED)
            and e.error_kind
            in (ErrorKind.UNREACHABLE, ErrorKind.TIMEOUT, ErrorKind.DENIED, ErrorKind.BACKEND)
        ]


def belongs(pod: Json, workload: Workload) -> bool:
    """Does a pod belong to a named workload (Deployment, Job, StatefulSet, or a bare name)?"""
    name = workload.name
    owner = pod.get("owner") or {}
    owner_name = str(owner.get("name") or "")
    labels = pod.get("labels") or {}
    return (
        pod.get("name") == name
        or owner_name == name
        or owner_name.startswith(name + "-")
        or str(pod.get("name", "")).startswith(name + "-")
        or labels.get("app") == name
        or labels.get("app.kubernetes.io/name") == name
        or labels.get("job-name") == name
    )


def selects(selector: Json, labels: Json) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def focus_pods(goal: Goal, pods: list[Json], services: list[Json]) -> list[Json]:
    """The pods the request is about: those of named workloads, else all of them."""
    chosen: list[Json] = []
    for w in goal.scope.workloads:
        svc = next((s for s in services if s["name"] == w.name), None)
        for p in pods:
            matched = belongs(p, w) or (svc is not None and selects(svc["selector"], p["labels"]))
            if matched and p not in chosen:
                chosen.append(p)
    return chosen or pods


def pod_problem(pod: Json) -> str | None:
    """A one-word reason a pod is unhealthy, or None."""
    if pod.get("phase") == "Pending":
        return "Pending"
    if pod.get("phase") == "Failed":
        return "Failed"
    for c in pod.get("containers") or []:
        state = c.get("state") or {}
        if state.get("kind") == "waiting" and state.get("reason"):
            return str(state["reason"])
        if (c.get("last_terminated") or {}).get("reason") == "OOMKilled":
            return "OOMKilled"
    if pod.get("phase") == "Running" and not pod.get("ready"):
        return "NotReady"
    if pod.get("phase") == "Succeeded":
        return None
    return None


_SEVERITY = (
    (3, re.compile(r"\b(fatal|panic|traceback|segmentation)\b", re.I)),
    (2, re.compile(r"\b(error|exception|err)\b|level=error|\"level\":\"error\"", re.I)),
)


_LEADING_TS = re.compile(r"^\[?\d{4}-\d{2}-\d{2}[T ][\d:.,]+(Z|[+-]\d{2}:?\d{2})?\]?\s+")


def fatal_line(lines: list[str], window: int = 40) -> str | None:
    """The line a senior SRE would quote from a crashed container's log.

    The most severe line among the last `window` lines, and of those the *first*: the cause
    comes before its consequences ("upload failed: AccessDenied" before "export failed").
    """
    tail = [ln.strip() for ln in lines[-window:] if ln.strip()]
    best: tuple[int, str] | None = None
    for line in tail:
        severity = next((sev for sev, rx in _SEVERITY if rx.search(line)), 0)
        if severity == 0 and _FATAL.search(line):
            severity = 1
        if severity and (best is None or severity > best[0]):
            best = (severity, line)
    if best is not None:
        return _LEADING_TS.sub("", best[1])
    return tail[-1] if tail else None


def short(text: str, limit: int = 220) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
