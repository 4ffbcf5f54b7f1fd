"""The deterministic gates: what can be decided from fields, before any model is asked.

Each gate reads the candidate, the recorded tool outcomes and — through the read registry, the
only tools the judge holds — the cluster as it is now, and adds to the three lists. They gate on
fields (statuses, reasons, phases, digests), never on the wording of a claim:

1. `named_things_exist`: what the request names exists; what does not goes to `nonexistent`.
2. `deliverable_stored`: the RCAReport exists and holds exactly what was drafted (digest).
3. `sections_present`: summary, impact, and a root cause. An honest "inconclusive" is kept
   as the candidate but does not meet a request to find out why: it is missing a cause.
4. `claims_cite_ok_evidence`: every claim cites recorded evidence whose status is ok.
5. `root_cause_matches_cluster`: the root-cause class is not contradicted by the cluster (an
   "OOMKilled" root cause needs a container whose last termination says OOMKilled).
6. `mutations_took_effect`: a requested change is visible (replicas as asked, rollout
   complete, pod gone).

A read the judge cannot make is never taken as success: it goes to `missing`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from judge.input import JudgeInput, PerformedMutation
from tools.read.registry import ReadTools, canonical_args
from tools.results import ErrorKind, ToolResult, ToolStatus
from triage.core.causes import CauseClass

Json = dict[str, Any]

_PULL = frozenset({"ErrImagePull", "ImagePullBackOff", "InvalidImageName"})
_CONFIG = frozenset({"CreateContainerConfigError", "CreateContainerError"})


@dataclass
class Findings:
    met: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    nonexistent: list[str] = field(default_factory=list)
    failed_gates: list[str] = field(default_factory=list)  # which gates added to `missing`


class Reads:
    """The judge's read registry with a per-judgement cache: each read is made once."""

    def __init__(self, tools: ReadTools) -> None:
        self._tools = tools
        self._cache: dict[str, ToolResult] = {}
        self.calls = 0

    def get(self, tool: str, **args: Any) -> ToolResult:
        key = f"{tool} {canonical_args(args)}"
        if key not in self._cache:
            self.calls += 1
            self._cache[key] = self._tools.call(tool, args)
        return self._cache[key]

    def forget(self, tool: str, **args: Any) -> None:
        """Drop a cached read, so the next `get` reads the cluster again."""
        self._cache.pop(f"{tool} {canonical_args(args)}", None)

    def items(self, tool: str, **args: Any) -> list[Json] | None:
        """The listed objects (empty when none exist), or None when the read failed."""
        result = self.get(tool, **args)
        if result.status is ToolStatus.NO_DATA:
            return []
        if result.status is ToolStatus.OK and isinstance(result.data, list):
            return [x for x in result.data if isinstance(x, dict)]
        return None


def _failed(result: ToolResult) -> str:
    return f"{result.tool} {result.status.value}: {result.excerpt}"


# -- 1. named things exist -------------------------------------------------------------------------

_LISTS_BY_KIND: dict[str | None, tuple[str, ...]] = {
    "Deployment": ("k8s.deployments",),
    "Service": ("k8s.services",),
    "Job": ("k8s.jobs",),
    "Pod": ("k8s.pods",),
    "HorizontalPodAutoscaler": ("k8s.hpas",),
    "PersistentVolumeClaim": ("k8s.pvcs",),
}
_ANY_KIND = ("k8s.deployments", "k8s.services", "k8s.jobs", "k8s.pods", "k8s.pvcs", "k8s.hpas")


def _pod_workload(pod: Json) -> set[str]:
    names = {str(pod.get("name") or "")}
    owner = pod.get("owner") or {}
    owner_name = str(owner.get("name") or "")
    names.add(owner_name)
    if owner.get("kind") == "ReplicaSet" and "-" in owner_name:
        names.add(owner_name.rsplit("-", 1)[0])
    labels = pod.get("labels") or {}
    names |= {str(labels.get(k)) for k in ("app", "app.kubernetes.io/name", "job-name")}
    return names


def named_things_exist(inp: JudgeInput, reads: Reads, out: Findings) -> bool:
    """Adds to `nonexistent`; returns False when nothing the request is about exists."""
    ns = inp.namespace
    if ns is None:
        out.missing.append("the request names no namespace, so nothing could be checked")
        return False
    ns_read = reads.get("k8s.namespace", namespace=ns)
    if ns_read.error_kind is ErrorKind.NOT_FOUND:
        out.nonexistent.append(f"namespace {ns}")
        return False
    if ns_read.status is not ToolStatus.OK:
        out.missing.append(f"could not confirm namespace {ns} exists ({_failed(ns_read)})")
        return True
    if not inp.named:
        return True
    found_any = False
    for workload in inp.named:
        lists = _LISTS_BY_KIND.get(workload.kind, _ANY_KIND)
        exists, unknown = False, []
        for tool in lists:
            items = reads.items(tool, namespace=ns)
            if items is None:
                unknown.append(tool)
                continue
            if tool == "k8s.pods":
                exists = any(workload.name in _pod_workload(p) for p in items)
            else:
                exists = any(x.get("name") == workload.name for x in items)
            if exists:
                break
        label = f"{workload.kind or 'workload'} {workload.name} in namespace {ns}"
        if exists:
            found_any = True
            out.met.append(f"{label} exists")
        elif unknown:
            out.missing.append(f"could not check that {label} exists ({', '.join(unknown)})")
            found_any = True
        else:
            out.nonexistent.append(label)
    return found_any


# -- 2. the deliverable is in the system of record -------------------------------------------------


def deliverable_stored(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    delivery = inp.delivery
    if delivery is None:
        out.missing.append("the RCA was not submitted to the cluster (no RCAReport written)")
        return
    where = f"RCAReport {delivery.namespace}/{delivery.name}"
    if delivery.error is not None:
        out.missing.append(f"{where} could not be written: {delivery.error}")
        return
    result = reads.get("k8s.rcareport", namespace=delivery.namespace, name=delivery.name)
    if result.error_kind is ErrorKind.NOT_FOUND:
        out.missing.append(f"{where} does not exist in the cluster (deleted, or never written)")
        return
    if result.status is not ToolStatus.OK or not isinstance(result.data, dict):
        out.missing.append(f"{where} could not be read back ({_failed(result)})")
        return
    stored = result.data.get("draft_digest")
    declared = result.data.get("spec_digest")
    if stored != inp.digest or declared != inp.digest:
        out.missing.append(
            f"{where} does not hold the submitted draft (stored {str(stored)[:19]}…, "
            f"submitted {inp.digest[:19]}…): it was changed after submit"
        )
        return
    out.met.append(f"{where} exists and holds the submitted draft ({inp.digest[:19]}…)")


# -- 3. required sections --------------------------------------------------------------------------


def sections_present(inp: JudgeInput, out: Findings) -> None:
    draft = inp.candidate
    before = len(out.missing)
    for name, value in (("title", draft.title), ("summary", draft.summary)):
        if not value.strip():
            out.missing.append(f"required section missing: {name}")
    if not draft.impact.strip():
        out.missing.append("required section missing: impact")
    if draft.inconclusive:
        # Honest, but not what was asked: the request is met only by an established cause.
        out.missing.append(
            f"no root cause established (inconclusive: {draft.summary[:160]}); "
            f"{len(draft.checked)} calls checked"
            + (f", unavailable: {'; '.join(draft.unavailable)[:160]}" if draft.unavailable else "")
        )
    elif not draft.root_cause:
        out.missing.append("required section missing: root cause (no claim)")
    if len(out.missing) == before:
        out.met.append("required sections present (title, summary, impact, root cause)")


# -- 4. citations ----------------------------------------------------------------------------------


def claims_cite_ok_evidence(inp: JudgeInput, out: Findings) -> None:
    draft = inp.candidate
    sections = (
        ("root cause", draft.root_cause),
        ("contributing factor", draft.contributing_factors),
    )
    bad = 0
    for section, claims in sections:
        for claim in claims:
            for evidence_id in claim.evidence:
                outcome = inp.status_of(evidence_id)
                quoted = claim.text[:80] + ("…" if len(claim.text) > 80 else "")
                if outcome is None:
                    bad += 1
                    out.missing.append(
                        f"{section} '{quoted}' cites {evidence_id}, which was never recorded"
                    )
                elif outcome.status is not ToolStatus.OK:
                    bad += 1
                    out.missing.append(
                        f"{section} '{quoted}' cites {evidence_id} ({outcome.name}), whose "
                        f"result was {outcome.status.value}, not ok"
                    )
    for entry in draft.timeline:
        for evidence_id in entry.evidence:
            outcome = inp.status_of(evidence_id)
            if outcome is None or outcome.status is not ToolStatus.OK:
                bad += 1
                status = outcome.status.value if outcome else "never recorded"
                out.missing.append(
                    f"timeline entry '{entry.what[:60]}' cites {evidence_id} ({status})"
                )
    if not bad:
        count = len(draft.cited_ids())
        out.met.append(f"every claim cites evidence whose status is ok ({count} ids)")


# -- 5. the root cause is not contradicted by the cluster ------------------------------------------


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


# The cluster signature of each class the read tools can see. A class without one is checked
# by its citations only, and the verdict says so ("checked by citation only").
SIGNATURES: dict[CauseClass, Predicate] = {
    CauseClass.OOM_KILLED: _on_pods(_oom, "a container whose last termination was OOMKilled"),
    CauseClass.BAD_CONFIG: _on_pods(_crashing, "a crash-looping container"),
    CauseClass.APPLICATION_ERROR: _on_pods(
        lambda p: _crashing(p) or any(x.get("phase") == "Failed" for x in p),
        "a crashing or failed container",
    ),
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
    CauseClass.CLOUD_ACCESS_DENIED: _on("k8s.jobs", _job_failed, "a Job with failed pods"),
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
        pods = reads.items("k8s.pods", namespace=ns)
        if pods is None:
            out.missing.append("could not read pods to confirm 'no fault' (k8s.pods failed)")
        elif _unhealthy(pods):
            out.missing.append(
                f"the RCA says no fault, but pods in {ns} are failing (crash, OOM, image, "
                "pending or failed)"
            )
        else:
            out.met.append(f"'no fault' agrees with the cluster: no failing pod in {ns}")
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


# -- 6. requested mutations took effect ------------------------------------------------------------


def _deployment(reads: Reads, ns: str, name: str) -> Json | None:
    items = reads.items("k8s.deployments", namespace=ns)
    return next((d for d in items or [] if d.get("name") == name), None)


def _effect(m: PerformedMutation, reads: Reads) -> tuple[bool, str]:
    """Is the operation's own effect visible in the cluster (not merely "the call returned")?"""
    parts = m.target.split("/")
    if len(parts) != 3:
        return False, f"target {m.target!r} is not kind/namespace/name"
    _kind, ns, name = parts
    if m.action in ("scale", "rollout_restart", "rollback"):
        dep = _deployment(reads, ns, name)
        if dep is None:
            return False, f"Deployment {ns}/{name} not found"
        replicas = int(dep.get("replicas") or 0)
        observed = dep.get("observed_generation") == dep.get("generation")
        if m.action == "scale":
            if replicas != m.args.get("replicas"):
                return False, f"{name} has {replicas} replicas, {m.args.get('replicas')} were asked"
            return observed, f"{name} is set to {replicas} replicas" + (
                "" if observed else " (not yet observed by the controller)"
            )
        if m.action == "rollout_restart":
            stamped = dep.get("restart_stamp") == m.operation_id
            if not stamped:
                return False, f"{name}'s pod template does not carry the restart {m.operation_id}"
            rolled = int(dep.get("updated") or 0) == replicas
            return observed, (
                f"{name} restarted: a new revision carries {m.operation_id}"
                + ("" if rolled else f" ({dep.get('updated')}/{replicas} pods updated so far)")
            )
        done = observed and int(dep.get("updated") or 0) == replicas
        return done, f"{name} is at revision {dep.get('revision')}" + (
            "" if done else " (rollout in progress)"
        )
    if m.action == "delete_pod":
        pods = reads.items("k8s.pods", namespace=ns)
        if pods is None:
            return False, "could not list pods"
        gone = all(p.get("name") != name for p in pods)
        return gone, f"pod {ns}/{name} {'is gone' if gone else 'still exists'}"
    return m.status == "Succeeded", (
        f"the ledger records {m.operation_id} as {m.status}; the judge's read tools cannot see "
        f"the effect of {m.action} themselves"
    )


EFFECT_WAIT_S = 20.0
EFFECT_POLL_S = 0.5


def _settled_effect(m: PerformedMutation, reads: Reads) -> tuple[bool, str]:
    """The effect, waiting a bounded time for the controllers to act on a write that just
    landed (a Deployment's controller observes a new generation within seconds)."""
    deadline = time.monotonic() + EFFECT_WAIT_S
    ok, detail = _effect(m, reads)
    while not ok and time.monotonic() < deadline:
        time.sleep(EFFECT_POLL_S)
        ns = m.target.split("/")[1] if m.target.count("/") == 2 else ""
        reads.forget("k8s.deployments", namespace=ns)
        reads.forget("k8s.pods", namespace=ns)
        ok, detail = _effect(m, reads)
    return ok, detail


def mutations_took_effect(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    """Every change the request commands was executed through the ledger and shows in the
    cluster; a refused, failed or superseded operation is not done, whatever else holds."""
    for command in inp.commands:
        action = command.action.value
        done = [
            m
            for m in inp.mutations
            if m.action == action and m.target.rpartition("/")[2] == command.target.name
        ]
        if not done:
            out.missing.append(f"requested {command.sentence()} was not performed")
            continue
        for m in done:
            op = f" (operation {m.operation_id})" if m.operation_id else ""
            if m.status != "Succeeded":
                why = f": {m.detail}" if m.detail else ""
                out.missing.append(
                    f"{m.action} {m.target}{op} was not applied: {m.status or 'refused'}{why}"
                )
                continue
            ok, detail = _settled_effect(m, reads)
            if ok:
                out.met.append(f"{m.action} {m.target}{op} took effect: {detail}")
            else:
                out.missing.append(f"{m.action} {m.target}{op} did not take effect: {detail}")


def run_all(inp: JudgeInput, reads: Reads, *, record: bool) -> Findings:
    """Every gate, in order. `record`: also check the deliverable in the system of record."""
    out = Findings()

    def gate(name: str, check: Callable[[], object]) -> object:
        before = len(out.missing)
        result = check()
        if len(out.missing) > before:
            out.failed_gates.append(name)
        return result

    anything = gate("named_things_exist", lambda: named_things_exist(inp, reads, out))
    if not anything:
        return out  # nothing the request is about exists: nothing else can be checked
    if record:
        gate("deliverable_stored", lambda: deliverable_stored(inp, reads, out))
    gate("sections_present", lambda: sections_present(inp, out))
    gate("claims_cite_ok_evidence", lambda: claims_cite_ok_evidence(inp, out))
    gate("root_cause_matches_cluster", lambda: root_cause_matches_cluster(inp, reads, out))
    gate("mutations_took_effect", lambda: mutations_took_effect(inp, reads, out))
    return out
