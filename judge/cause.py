"""Gates on the root cause: the claimed cause agrees with the cluster and explains the symptom.

- `root_cause_matches_cluster`: the class's cluster signature holds (an OOM root cause needs a
  container whose last termination was OOMKilled); a class without one says "checked by
  citation only".
- `facts_hold`: every fact a claim carries (triage/core/models.py `Fact`) is re-read through
  the judge's own read tools and must still hold — the claim is checked on fields, not words.
- `chain_is_a_cause`: a chain with roles ends in a cause, and reaches what the user asked
  about (a symptom alone, or a cause about something else, does not answer "why").
- `no_fault_explained`: "no fault" is verified only when the pods, the warning events and the
  conditions of every kind read are healthy or explained by a claim about that object, the
  reads are complete (not capped), and what the user asked to be checked (logs, a pasted
  alert) was read and explained.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from judge.input import JudgeInput
from judge.reads import Findings, Json, Reads
from tools.results import ToolStatus
from triage.core.causes import CauseClass
from triage.core.models import LinkRole
from triage.core.paths import holds
from triage.core.signals import ERROR_MATCHERS, REQUEST_COUNTER_SELECTOR, timed

_PULL = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})
_CONFIG = frozenset({"CreateContainerConfigError", "CreateContainerError"})


def _containers(pods: list[Json]) -> list[Json]:
    return [c for p in pods for c in (p.get("containers") or []) if isinstance(c, dict)]


def _reason(state: Any) -> str | None:
    return str(state.get("reason")) if isinstance(state, dict) and state.get("reason") else None


def _waiting(pods: list[Json], reasons: frozenset[str]) -> bool:
    return any(
        (c.get("state") or {}).get("kind") == "waiting" and _reason(c.get("state")) in reasons
        for c in _containers(pods)
    )


def _oom(pods: list[Json]) -> bool:
    return any(
        _reason(c.get("last_terminated")) == "OOMKilled" or _reason(c.get("state")) == "OOMKilled"
        for c in _containers(pods)
    )


RECOVERED_AFTER_S = 3600.0


def _recovered(c: Json, now: float | None = None) -> bool:
    """Restarted long ago and running and ready for over an hour since: history, not a
    failure now."""
    finished = (c.get("last_terminated") or {}).get("finished_at")
    if not (c.get("ready") and (c.get("state") or {}).get("kind") == "running" and finished):
        return False
    try:
        at = datetime.fromisoformat(str(finished).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return False
    return (time.time() if now is None else now) - at > RECOVERED_AFTER_S


def _crashing(pods: list[Json]) -> bool:
    return _waiting(pods, frozenset({"CrashLoopBackOff"})) or any(
        int(c.get("restarts") or 0) > 0
        and (c.get("last_terminated") or {}).get("exit_code") not in (None, 0)
        for c in _containers(pods)
    )


def _pending(pods: list[Json]) -> bool:
    return any(p.get("phase") == "Pending" and not p.get("node") for p in pods)


def _not_ready(pods: list[Json]) -> bool:
    return any(p.get("phase") == "Running" and not p.get("ready") for p in pods)


def _unhealthy(pods: list[Json]) -> bool:
    return (
        _oom(pods)
        or _crashing(pods)
        or _waiting(pods, _PULL | _CONFIG)
        or _pending(pods)
        or any(p.get("phase") == "Failed" for p in pods)
    )


Predicate = Callable[[Reads, str], tuple[bool | None, str]]


def _on_pods(test: Callable[[list[Json]], bool], what: str) -> Predicate:
    def check(reads: Reads, ns: str) -> tuple[bool | None, str]:
        pods = reads.items("k8s.pods", namespace=ns)
        return (None if pods is None else test(pods)), what

    return check


def _on(tool: str, test: Callable[[list[Json]], bool], what: str) -> Predicate:
    def check(reads: Reads, ns: str) -> tuple[bool | None, str]:
        items = reads.items(tool, namespace=ns)
        return (None if items is None else test(items)), what

    return check


def _selector_matches_nothing(reads: Reads, ns: str) -> tuple[bool | None, str]:
    services = reads.items("k8s.services", namespace=ns)
    pods = reads.items("k8s.pods", namespace=ns)
    what = "a Service whose selector matches no pod"
    if services is None or pods is None:
        return None, what
    for svc in services:
        selector = svc.get("selector") or {}
        if selector and not any(
            all((p.get("labels") or {}).get(k) == v for k, v in selector.items()) for p in pods
        ):
            return True, what
    return False, what


def _rollout_stuck(deployments: list[Json]) -> bool:
    return any(
        int(d.get("updated") or 0) < int(d.get("replicas") or 0)
        or int(d.get("unavailable") or 0) > 0
        or int(d.get("available") or 0) < int(d.get("replicas") or 0)
        for d in deployments
    )


def _job_failed(jobs: list[Json]) -> bool:
    return any(
        int(j.get("failed") or 0) > 0
        or any(
            c.get("type") == "Failed" and c.get("status") == "True"
            for c in j.get("conditions") or []
        )
        for j in jobs
    )


def _hpa_at_max(hpas: list[Json]) -> bool:
    return any(
        h.get("max_replicas") is not None
        and int(h.get("current_replicas") or 0) >= int(h["max_replicas"])
        for h in hpas
    )


def _failing(pods: list[Json]) -> bool:
    """Something a cause of that kind shows as: a container that crashes, a pod that failed,
    cannot start, or runs without being ready."""
    return _unhealthy(pods) or _not_ready(pods) or any(p.get("phase") == "Pending" for p in pods)


def _failing_workload(reads: Reads, ns: str) -> tuple[bool | None, str]:
    what = "a failing container, pod or Job"
    pods = reads.items("k8s.pods", namespace=ns)
    jobs = reads.items("k8s.jobs", namespace=ns)
    if pods is None and jobs is None:
        return None, what
    return bool((pods and _failing(pods)) or (jobs and _job_failed(jobs))), what


# The cluster signature of each class the read tools can see. A class without one is checked
# by its citations only, and the verdict says so ("checked by citation only").
SIGNATURES: dict[CauseClass, Predicate] = {
    CauseClass.OOM_KILLED: _on_pods(_oom, "a container whose last termination was OOMKilled"),
    CauseClass.BAD_CONFIG: _failing_workload,
    CauseClass.APPLICATION_ERROR: _failing_workload,
    CauseClass.IMAGE_PULL: _on_pods(
        lambda p: _waiting(p, _PULL), "a container waiting on its image"
    ),
    CauseClass.MISSING_CONFIG_REFERENCE: _on_pods(
        lambda p: _waiting(p, _CONFIG) or any(x.get("phase") == "Pending" for x in p),
        "a container that cannot start for a missing reference",
    ),
    CauseClass.INSUFFICIENT_RESOURCES: _on_pods(_pending, "an unscheduled Pending pod"),
    CauseClass.UNSCHEDULABLE_PLACEMENT: _on_pods(_pending, "an unscheduled Pending pod"),
    CauseClass.READINESS_PROBE_FAILING: _on_pods(_not_ready, "a Running pod that is not ready"),
    CauseClass.PVC_PENDING: _on(
        "k8s.pvcs", lambda v: any(x.get("phase") == "Pending" for x in v), "a Pending PVC"
    ),
    CauseClass.CLOUD_ACCESS_DENIED: _failing_workload,
    CauseClass.HPA_AT_MAX: _on("k8s.hpas", _hpa_at_max, "an HPA at its maximum replicas"),
    CauseClass.SERVICE_SELECTOR_MISMATCH: _selector_matches_nothing,
}


def root_cause_matches_cluster(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    draft = inp.candidate
    ns = inp.namespace
    if ns is None or draft.inconclusive:
        return
    cls = draft.root_cause_class
    if cls is CauseClass.NO_FAULT:
        return
    signature = SIGNATURES.get(cls)
    if signature is None:
        out.met.append(f"root cause '{cls}' has no cluster signature: checked by citation only")
        return
    holds, what = signature(reads, ns)
    if holds is None:
        out.missing.append(f"could not read the cluster to confirm '{cls}' ({what})")
    elif holds:
        out.met.append(f"root cause '{cls}' agrees with the cluster: {what} in {ns}")
    else:
        out.missing.append(
            f"root cause '{cls}' contradicts the cluster: no {what.removeprefix('a ')} in {ns}"
        )


# -- the facts a claim rests on still hold -----------------------------------------------------


def facts_hold(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    draft = inp.candidate
    checked = 0
    for claim in (*draft.root_cause, *draft.what_changed):
        for f in claim.facts:
            result = reads.get(f.tool, **f.args)
            quoted = claim.text[:80] + ("…" if len(claim.text) > 80 else "")
            if result.status not in (ToolStatus.OK, ToolStatus.NO_DATA):
                out.missing.append(
                    f"could not re-check '{quoted}' ({f.tool}: {result.status.value})"
                )
                continue
            data = result.data if result.status is ToolStatus.OK else []
            checked += 1
            if not holds(f, data):
                out.missing.append(
                    f"'{quoted}' does not hold in the cluster now: {f.tool} {f.path} {f.op} "
                    f"{str(f.value)[:60]}"
                )
    if checked:
        out.met.append(f"the cause's {checked} fact(s) hold in the cluster on a fresh read")


# -- the chain names a cause, about what was asked -----------------------------------------------


def _names(subject: str) -> tuple[str, str]:
    kind, _, rest = subject.partition("/")
    return kind, rest.rpartition("/")[2]


def chain_is_a_cause(inp: JudgeInput, out: Findings) -> None:
    draft = inp.candidate
    if draft.inconclusive or draft.root_cause_class is CauseClass.NO_FAULT:
        return
    roles = [c.role for c in draft.root_cause if c.role is not None]
    if roles and roles[-1] is not LinkRole.CAUSE:
        out.missing.append(
            "the root cause is only a symptom: the chain ends in "
            f"'{draft.root_cause[-1].text[:100]}' and names no cause a human acts on"
        )
        return
    if roles:
        out.met.append("the causal chain ends in a cause")
    subjects = [c.subject for c in draft.root_cause if c.subject]
    asked = [w.name for w in inp.named]
    if not subjects or not asked:
        return
    reached = any(
        name == a or name.startswith(a + "-") or a.startswith(name + "-")
        for subject in subjects
        for name in [_names(subject)[1]]
        for a in asked
    )
    if reached:
        out.met.append(f"the chain starts from what was asked about ({', '.join(asked)})")
    else:
        out.missing.append(
            f"the chain does not reach what was asked about ({', '.join(asked)}): it is about "
            f"{', '.join(sorted({_names(s)[1] for s in subjects}))}"
        )


# -- "no fault" only when everything read is healthy or explained ---------------------------------


def _bad_conditions(reads: Reads, ns: str) -> list[tuple[str, str]]:
    """(Kind/ns/name, what is wrong) for unhealthy states of every kind the judge reads."""
    bad: list[tuple[str, str]] = []
    for d in reads.items("k8s.deployments", namespace=ns) or []:
        if int(d.get("available") or 0) < int(d.get("replicas") or 0):
            bad.append((f"Deployment/{ns}/{d['name']}", "fewer available replicas than asked"))
    for s in reads.items("k8s.statefulsets", namespace=ns) or []:
        if int(s.get("ready") or 0) < int(s.get("replicas") or 0):
            bad.append((f"StatefulSet/{ns}/{s['name']}", "fewer ready replicas than asked"))
    for j in reads.items("k8s.jobs", namespace=ns) or []:
        if any(
            c.get("type") == "Failed" and c.get("status") == "True"
            for c in j.get("conditions") or []
        ):
            bad.append((f"Job/{ns}/{j['name']}", "failed"))
    for h in reads.items("k8s.hpas", namespace=ns) or []:
        for c in h.get("conditions") or []:
            if c.get("type") in ("ScalingActive", "AbleToScale") and c.get("status") == "False":
                bad.append((f"HorizontalPodAutoscaler/{ns}/{h['name']}", f"{c.get('type')}=False"))
    for c in reads.items("k8s.cronjobs", namespace=ns) or []:
        if c.get("suspend"):
            bad.append((f"CronJob/{ns}/{c['name']}", "suspended"))
    for claim in reads.items("k8s.pvcs", namespace=ns) or []:
        if claim.get("phase") == "Pending":
            bad.append((f"PersistentVolumeClaim/{ns}/{claim['name']}", "Pending"))
    return bad


def _asked_pods(inp: JudgeInput, pods: list[Json]) -> list[Json]:
    asked = [w.name for w in inp.named]
    if not asked:
        return pods

    def mine(pod: Json) -> bool:
        names = pod_names(pod)
        return any(n == a or n.startswith(a + "-") for n in names for a in asked)

    return [p for p in pods if mine(p)] or pods


def pod_names(pod: Json) -> set[str]:
    """The names a pod answers to: its own, its owner's, its Deployment's (the ReplicaSet's
    name less its hash), and its app/job labels."""
    names = {str(pod.get("name") or "")}
    owner = pod.get("owner") or {}
    owner_name = str(owner.get("name") or "")
    names.add(owner_name)
    if owner.get("kind") == "ReplicaSet" and "-" in owner_name:
        names.add(owner_name.rsplit("-", 1)[0])
    labels = pod.get("labels") or {}
    names |= {str(labels.get(k)) for k in ("app", "app.kubernetes.io/name", "job-name")}
    return names - {"", "None"}


# The judge's own look at the symptom a 'no fault' must not hide: the share of server errors
# among the namespace's requests, from whatever request counters exist, over three hours.
WINDOW_S = 3 * 3600.0
ERROR_RATIO_FLOOR = 0.05


def _peak_if_rose(
    reads: Reads, query: str, end: float, floor: float, factor: float
) -> float | None:
    result = reads.get("prom.range", query=query, start=end - WINDOW_S, end=end)
    if result.status is not ToolStatus.OK or not isinstance(result.data, list) or not result.data:
        return None
    points = [
        float(v)
        for _, v in (result.data[0].get("values") or [])
        if isinstance(v, int | float | str) and str(v) not in ("NaN", "nan")
    ]
    if len(points) < 6:
        return None
    third = points[: len(points) // 3]
    base = sorted(third)[len(third) // 2]
    peak = max(points[len(points) // 3 :])
    return peak if peak > max(floor, base * factor) else None


def _symptoms_rose(reads: Reads, ns: str, now: float | None) -> list[str]:
    """What rose well above its start in the window: the server-error ratio, and the mean
    latency of any timed histogram or summary (`X_sum`/`X_count`). Empty also when Prometheus
    cannot be read: the gate speaks only to what it saw."""
    end = time.time() if now is None else now
    out = []
    sel = f'{REQUEST_COUNTER_SELECTOR},namespace="{ns}"'
    errors = " or ".join(f"rate({{{sel},{m}}}[5m])" for m in ERROR_MATCHERS)
    ratio = _peak_if_rose(
        reads, f"sum({errors}) / sum(rate({{{sel}}}[5m]))", end, ERROR_RATIO_FLOOR, 3.0
    )
    if ratio:
        out.append(f"the server-error ratio rose to {ratio:.1%}")
    names = reads.get(
        "prom.metric_names", selector=f'{{namespace="{ns}"}}', start=end - WINDOW_S, end=end
    )
    listed = {str(n) for n in names.data or []} if names.status is ToolStatus.OK else set()
    for base in timed(listed)[:2]:
        sel_ns = f'{{namespace="{ns}"}}'
        q = f"sum(rate({base}_sum{sel_ns}[5m])) / sum(rate({base}_count{sel_ns}[5m]))"
        mean = _peak_if_rose(reads, q, end, 0.1, 2.0)
        if mean:
            out.append(f"the mean latency of {base} rose to {mean:.2f}s")
    return out


def no_fault_explained(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    draft = inp.candidate
    ns = inp.namespace
    if ns is None or draft.root_cause_class is not CauseClass.NO_FAULT or draft.inconclusive:
        return
    explained = {c.subject for c in (*draft.root_cause, *draft.contributing_factors) if c.subject}
    missing_before = len(out.missing)
    pods_read = reads.get("k8s.pods", namespace=ns)
    events_read = reads.get("k8s.events", namespace=ns, warnings_only=True)
    for result, what in ((pods_read, "pods"), (events_read, "warning events")):
        if result.status not in (ToolStatus.OK, ToolStatus.NO_DATA):
            out.missing.append(f"'no fault' needs the {what} of {ns}, which could not be read")
        elif result.truncated:
            out.missing.append(
                f"the {what} of {ns} were capped: 'no fault' cannot rest on a partial list"
            )
    if any(o.truncated for o in inp.outcomes if o.name in ("k8s.pods", "k8s.events")):
        out.missing.append("the investigation's own pod or event list was capped: incomplete")
    pods = reads.items("k8s.pods", namespace=ns) or []

    def history(p: Json) -> bool:
        """Its only trouble is a restart long ago, and the answer says so."""
        containers = [c for c in p.get("containers") or [] if isinstance(c, dict)]
        return (
            f"Pod/{ns}/{p.get('name')}" in explained
            and bool(p.get("ready"))
            and all(_recovered(c, inp.now) or not c.get("restarts") for c in containers)
        )

    failing = [p for p in _asked_pods(inp, pods) if _unhealthy([p]) and not history(p)]
    if failing:
        out.missing.append(
            f"the RCA says no fault, but {failing[0]['name']} is failing (crash, OOM, image, "
            "pending or failed)"
        )
    for e in reads.items("k8s.events", namespace=ns, warnings_only=True) or []:
        obj = e.get("object") or {}
        subject = f"{obj.get('kind')}/{ns}/{obj.get('name')}"
        if subject not in explained:
            out.missing.append(
                f"warning event {e.get('reason')} on {obj.get('kind')} {obj.get('name')} is not "
                "explained by the 'no fault' answer"
            )
    for subject, what in _bad_conditions(reads, ns):
        if subject not in explained:
            out.missing.append(
                f"{subject.replace(f'/{ns}/', ' ')} is {what}, which 'no fault' does not explain"
            )
    for rose in _symptoms_rose(reads, ns, inp.now):
        out.missing.append(f"{rose} in {ns} in the last hours, which 'no fault' does not explain")
    if "logs" in inp.checks and not any(
        o.name == "k8s.logs" and o.status is ToolStatus.OK for o in inp.outcomes
    ):
        out.missing.append("the request asked to check the logs, and no log was read")
    if inp.alert is not None and not any(
        (c.subject or "").startswith("Alert/") and (c.subject or "").endswith(f"/{inp.alert}")
        for c in draft.root_cause
    ):
        out.missing.append(
            f"the pasted alert {inp.alert} is not explained by the 'no fault' answer"
        )
    if len(out.missing) == missing_before:
        out.met.append(
            f"'no fault' is complete: the pods, warning events and conditions read in {ns} are "
            "healthy or explained"
        )
