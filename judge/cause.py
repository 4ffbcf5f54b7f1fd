"""Gates on the root cause: the claimed cause agrees with the cluster and explains the symptom.

- `root_cause_matches_cluster`: the class's cluster signature holds (an OOM root cause needs a
  container whose last termination was OOMKilled); a class without one says "checked by
  citation only".
- `facts_hold`: every fact a claim carries (triage/core/models.py `Fact`) is re-read through
  the judge's own read tools and must still hold — the claim is checked on fields, not words.
- `chain_is_a_cause`: a chain with roles ends in a cause, and reaches what the user asked
  about (a symptom alone, or a cause about something else, does not answer "why").
("No fault" has its own gate: judge/no_fault.py.)
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from judge import symptoms
from judge.input import JudgeInput
from judge.reads import Findings, Json, Reads, selects_any
from tools.results import ToolStatus
from triage.core.causes import CauseClass
from triage.core.models import LinkRole
from triage.core.paths import holds

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


def recovered(c: Json, now: float | None = None) -> bool:
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


def not_ready(pods: list[Json]) -> bool:
    return any(p.get("phase") == "Running" and not p.get("ready") for p in pods)


def unhealthy(pods: list[Json]) -> bool:
    return (
        _oom(pods)
        or _crashing(pods)
        or _waiting(pods, _PULL | _CONFIG)
        or _pending(pods)
        or any(p.get("phase") == "Failed" for p in pods)
    )


@dataclass(frozen=True)
class Claimed:
    """What the chain is about, for a signature: its pods (read when first asked for), the
    Jobs it names (None when it names no workload: then any Job in the namespace), and the
    namespaces of the Services it names (a dependency's, in another namespace)."""

    pods: Callable[[], list[Json] | None]
    jobs: frozenset[str] | None
    service_namespaces: frozenset[str] = frozenset()
    quoted: tuple[str, ...] = ()  # log lines the chain quotes ("… fail with: <line>")


Predicate = Callable[[Reads, str, Claimed], tuple[bool | None, str]]

_WORKLOAD_LISTS = {
    "deployment": "k8s.deployments",
    "statefulset": "k8s.statefulsets",
    "daemonset": "k8s.daemonsets",
}
_POD_KINDS = frozenset({"pod", "job", "replicaset", *_WORKLOAD_LISTS})


def _owned_by(pod: Json, kind: str, name: str) -> bool:
    owner = pod.get("owner") or {}
    owner_kind, owner_name = str(owner.get("kind") or "").lower(), str(owner.get("name") or "")
    if kind == "deployment":
        return owner_kind == "replicaset" and owner_name.rsplit("-", 1)[0] == name
    return owner_kind == kind and owner_name == name


def _pods_of(reads: Reads, kind: str, ns: str, name: str) -> list[Json] | None:
    """The pods of one workload, read as narrowly as its kind allows; [] when it names
    nothing; None when a read failed."""
    if kind == "pod":
        return reads.items("k8s.pods", namespace=ns, field_selector=f"metadata.name={name}")
    if kind == "job":  # the controller sets both labels; an older one only job-name
        found: dict[str, Json] = {}
        for label in ("batch.kubernetes.io/job-name", "job-name"):
            got = reads.items("k8s.pods", namespace=ns, label_selector=f"{label}={name}")
            if got is None:
                return None
            found.update((str(p.get("name")), p) for p in got)
        return list(found.values())
    selector = ""
    if kind in _WORKLOAD_LISTS:
        workloads = reads.items(_WORKLOAD_LISTS[kind], namespace=ns)
        if workloads is None:
            return None
        workload = next((w for w in workloads if w.get("name") == name), None)
        if workload is None:
            return []
        labels = workload.get("selector") or {}
        selector = ",".join(f"{k}={v}" for k, v in sorted(labels.items()))
    # by its labels where it has them (matchExpressions are not in the payload: then the
    # whole namespace), and always by ownership: labels another workload shares do not count
    pods = reads.items(
        "k8s.pods", namespace=ns, **({"label_selector": selector} if selector else {})
    )
    return None if pods is None else [p for p in pods if _owned_by(p, kind, name)]


def _subjects(inp: JudgeInput) -> list[tuple[str, str, str]]:
    """(kind in lower case, namespace, name) of each pod-bearing object the chain names."""
    out = []
    for claim in inp.candidate.root_cause:
        kind, _, rest = (claim.subject or "").partition("/")
        claim_ns, _, name = rest.partition("/")
        if kind.lower() in _POD_KINDS and claim_ns and name:
            out.append((kind.lower(), claim_ns, name))
    return out


def claimed_pods(inp: JudgeInput, reads: Reads, ns: str) -> list[Json] | None:
    """The pods the causal chain is about: those of every Pod, Deployment, StatefulSet,
    DaemonSet, ReplicaSet and Job its links name (in whatever namespace), read by the
    workload's own selector and owned by it. A named workload that does not exist has no
    pods. A chain that names no workload: the pods of what was asked about, else the
    namespace's. None when a read failed.

    A signature is checked here, not anywhere in the namespace: an OOMKilled pod of another
    workload does not make "checkout was OOMKilled" true, and a namespace of a thousand
    healthy pods is not re-read to check one workload."""
    subjects = _subjects(inp)
    if not subjects:
        pods = reads.items("k8s.pods", namespace=ns)
        return None if pods is None else asked_pods(inp, pods)
    found: dict[tuple[str, str], Json] = {}
    for kind, claim_ns, name in subjects:
        got = _pods_of(reads, kind, claim_ns, name)
        if got is None:
            return None
        found.update(((claim_ns, str(p.get("name"))), p) for p in got)
    return list(found.values())


def _on_pods(test: Callable[[list[Json]], bool], what: str) -> Predicate:
    def check(reads: Reads, ns: str, claimed: Claimed) -> tuple[bool | None, str]:
        pods = claimed.pods()
        return (None if pods is None else test(pods)), what

    return check


def _on(tool: str, test: Callable[[list[Json]], bool], what: str) -> Predicate:
    def check(reads: Reads, ns: str, claimed: Claimed) -> tuple[bool | None, str]:
        items = reads.items(tool, namespace=ns)
        return (None if items is None else test(items)), what

    return check


def _workload_name(pod: Json) -> str:
    """The workload a pod belongs to (a ReplicaSet's Deployment, else its owner); '' for a
    bare pod."""
    owner = pod.get("owner") or {}
    name = str(owner.get("name") or "")
    if owner.get("kind") == "ReplicaSet" and "-" in name:
        return name.rsplit("-", 1)[0]
    return name


def _owner_of(pod: Json) -> str:
    """The workload a pod belongs to, or the pod itself."""
    return _workload_name(pod) or f"pod {pod.get('name')}"


def _selector_misdirects(reads: Reads, ns: str, claimed: Claimed) -> tuple[bool | None, str]:
    """In the namespace asked about or one whose Service the chain names: a selector that
    matches no pod, or pods of more than one owner (a stray pod among the endpoints)."""
    what = "a Service whose selector matches no pod, or pods of more than one owner"
    unread = False
    for where in sorted({ns, *claimed.service_namespaces}):
        services = reads.items("k8s.services", namespace=where)
        pods = reads.items("k8s.pods", namespace=where)
        if services is None or pods is None:
            unread = True
            continue
        for svc in services:
            selector = svc.get("selector") or {}
            if not selector:
                continue
            if not selects_any(selector, pods):
                return True, what
            owners = {_owner_of(x) for x in pods if selects_any(selector, [x])}
            if len(owners) > 1:
                return True, what
    return (None if unread else False), what


def _job_failed(jobs: list[Json]) -> bool:
    return any(
        int(j.get("failed") or 0) > 0
        or any(
            c.get("type") == "Failed" and c.get("status") == "True"
            for c in j.get("conditions") or []
        )
        for j in jobs
    )


def hpa_at_max(hpas: list[Json]) -> bool:
    return any(
        h.get("max_replicas") is not None
        and int(h.get("current_replicas") or 0) >= int(h["max_replicas"])
        for h in hpas
    )


def _failing(pods: list[Json]) -> bool:
    """Something a cause of that kind shows as: a container that crashes, a pod that failed,
    cannot start, or runs without being ready."""
    return unhealthy(pods) or not_ready(pods) or any(p.get("phase") == "Pending" for p in pods)


def _failing_workload(reads: Reads, ns: str, claimed: Claimed) -> tuple[bool | None, str]:
    what = "a failing container, pod or Job"
    pods = claimed.pods()
    jobs = reads.items("k8s.jobs", namespace=ns)
    if jobs is not None and claimed.jobs is not None:
        jobs = [j for j in jobs if j.get("name") in claimed.jobs]
    if pods is None and jobs is None:
        return None, what
    return bool((pods and _failing(pods)) or (jobs and _job_failed(jobs))), what


# A cloud API's refusal as the clouds word it (AWS, Google Cloud, Azure): a Ready pod that
# logs one fails the calls that need the permission and serves the rest.
_CLOUD_REFUSED = re.compile(
    r"AccessDenied|is not authorized to perform|does not have [\w.]+ access to"
    r"|PERMISSION_DENIED|does not have authorization to perform action|AuthorizationFailed",
    re.I,
)


def _refused_or_failing(reads: Reads, ns: str, claimed: Claimed) -> tuple[bool | None, str]:
    holds, what = _failing_workload(reads, ns, claimed)
    if holds:
        return holds, what
    pods = claimed.pods()
    if pods:
        seen, _ = symptoms.first_logged(reads, ns, pods, _CLOUD_REFUSED, previous=False)
        if seen:
            return True, "a pod whose current log says a cloud API refused it"
        if seen is None and holds is False:
            holds = None  # no log to read: not shown either way
    return holds, f"{what}, or a pod whose log says a cloud API refused it"


QUOTE_CHARS = 40  # how much of a quoted log line the judge looks for in the logs itself


def quoted_lines(texts: list[str]) -> tuple[str, ...]:
    """The log lines a chain quotes after "…: " ("its pods log: <line>", "fail with: <line>"),
    their first QUOTE_CHARS characters: what the judge looks for in the pods' logs itself."""
    out = []
    for t in texts:
        for marker in ("fail with: ", "pods log: ", "log the failure: ", "exits with: "):
            if marker in t:
                quote = t.split(marker, 1)[1].strip()[:QUOTE_CHARS].strip()
                if len(quote) >= 12:
                    out.append(quote)
    return tuple(dict.fromkeys(out))


def _failing_or_logged(reads: Reads, ns: str, claimed: Claimed) -> tuple[bool | None, str]:
    """A setting or a bug can fail requests while the pods stay Ready (the probe does not
    touch what fails): then the judge's own read of their current log must show the line the
    chain quotes."""
    holds, what = _failing_workload(reads, ns, claimed)
    if holds or not claimed.quoted:
        return holds, what
    pods = claimed.pods()
    if pods:
        pattern = re.compile("|".join(re.escape(q) for q in claimed.quoted))
        seen, _ = symptoms.first_logged(reads, ns, pods, pattern, previous=False)
        if seen:
            return True, "a pod whose current log has the failure the chain quotes"
        if seen is None and holds is False:
            holds = None
    return holds, f"{what}, or a pod whose log has the failure the chain quotes"


SIGNATURES: dict[CauseClass, Predicate] = {
    CauseClass.OOM_KILLED: _on_pods(_oom, "a container whose last termination was OOMKilled"),
    CauseClass.BAD_CONFIG: _failing_or_logged,
    CauseClass.APPLICATION_ERROR: _failing_or_logged,
    CauseClass.IMAGE_PULL: _on_pods(
        lambda p: _waiting(p, _PULL), "a container waiting on its image"
    ),
    CauseClass.MISSING_CONFIG_REFERENCE: _on_pods(
        lambda p: _waiting(p, _CONFIG) or any(x.get("phase") == "Pending" for x in p),
        "a container that cannot start for a missing reference",
    ),
    CauseClass.INSUFFICIENT_RESOURCES: _on_pods(_pending, "an unscheduled Pending pod"),
    CauseClass.UNSCHEDULABLE_PLACEMENT: _on_pods(_pending, "an unscheduled Pending pod"),
    CauseClass.READINESS_PROBE_FAILING: _on_pods(not_ready, "a Running pod that is not ready"),
    CauseClass.PVC_PENDING: _on(
        "k8s.pvcs", lambda v: any(x.get("phase") == "Pending" for x in v), "a Pending PVC"
    ),
    CauseClass.CLOUD_ACCESS_DENIED: _refused_or_failing,
    CauseClass.HPA_AT_MAX: _on("k8s.hpas", hpa_at_max, "an HPA at its maximum replicas"),
    CauseClass.SERVICE_SELECTOR_MISMATCH: _selector_misdirects,
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
    subjects = _subjects(inp)
    jobs = frozenset(n for k, _, n in subjects if k == "job") if subjects else None
    service_ns = frozenset(
        rest.partition("/")[0]
        for c in draft.root_cause
        if c.subject
        for kind, _, rest in [c.subject.partition("/")]
        if kind == "Service" and rest.partition("/")[0]
    )
    quoted = quoted_lines([c.text for c in draft.root_cause])
    holds, what = signature(
        reads, ns, Claimed(lambda: claimed_pods(inp, reads, ns), jobs, service_ns, quoted)
    )
    if holds is None:
        out.missing.append(f"could not read the cluster to confirm '{cls}' ({what})")
    elif holds:
        out.met.append(f"root cause '{cls}' agrees with the cluster: {what} in {ns}")
    else:
        out.missing.append(
            f"root cause '{cls}' contradicts the cluster: no {what.removeprefix('a ')} in {ns}"
        )


# -- the facts a claim rests on still hold -----------------------------------------------------


_ONE_POD = re.compile(r"\[name=([a-z0-9][a-z0-9.-]{0,252})\]")


def _narrowed(tool: str, args: dict[str, Any], path: str) -> dict[str, Any]:
    """A fact about one pod of a namespace's pod list (`[name=api-1]…`) is re-read as that
    pod alone: the same fact, without listing a thousand pods to find it."""
    one = _ONE_POD.match(path)
    if tool != "k8s.pods" or one is None or set(args) - {"namespace", "label_selector"}:
        return args
    if args.get("label_selector"):
        return args
    return {"namespace": args.get("namespace"), "field_selector": f"metadata.name={one[1]}"}


def facts_hold(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    draft = inp.candidate
    checked = 0
    for claim in (*draft.root_cause, *draft.what_changed):
        for f in claim.facts:
            result = reads.get(f.tool, **_narrowed(f.tool, f.args, f.path))
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


def _named_after(name: str, asked: str) -> bool:
    """`name` is `asked`, or one is named after the other as Kubernetes names things: a pod
    or ReplicaSet after its workload (api-7d9f-x), a claim after its StatefulSet
    (data-timeseries-0), a Job after its CronJob — the name holds it between hyphens."""
    return name == asked or f"-{asked}-" in f"-{name}-" or f"-{name}-" in f"-{asked}-"


def chain_is_a_cause(inp: JudgeInput, out: Findings, asked: list[str]) -> None:
    """`asked`: what the request is about, as the cluster resolved it (a word that names
    nothing is not something the chain must reach)."""
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
    if not subjects or not asked:
        return
    reached = any(
        _named_after(name, a)
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


def asked_pods(inp: JudgeInput, pods: list[Json]) -> list[Json]:
    """The pods among `pods` that answer to a name the request gives (by name or prefix);
    all of them when it names none, or when no pod answers to those names."""
    asked = [w.name for w in inp.named]
    if not asked:
        return pods
    mine = [
        p for p in pods if any(n == a or n.startswith(a + "-") for n in pod_names(p) for a in asked)
    ]
    return mine or pods


def pod_names(pod: Json) -> set[str]:
    """The names a pod answers to: its own, its owner's, its Deployment's (the ReplicaSet's
    name less its hash), and its app/job labels."""
    owner = pod.get("owner") or {}
    names = {str(pod.get("name") or ""), str(owner.get("name") or ""), _workload_name(pod)}
    labels = pod.get("labels") or {}
    names |= {str(labels.get(k)) for k in ("app", "app.kubernetes.io/name", "job-name")}
    return names - {"", "None"}


# -- a release is blamed for what it does, not for when it happened ------------------------------

_ROLLOUT_READS = frozenset({"k8s.rollout_history", "k8s.deployments", "k8s.replicasets"})


def release_does_it(inp: JudgeInput, out: Findings) -> None:
    """`regression_after_deploy` says the new code causes the symptom. A deploy that only came
    before the rise is a correlation: the cause link must rest on what the new revision does
    (its log, a series that stepped with it), not only on the rollout's own record."""
    draft = inp.candidate
    if draft.root_cause_class is not CauseClass.REGRESSION_AFTER_DEPLOY or not draft.root_cause:
        return
    names = {o.id: o.name for o in inp.outcomes}
    cited = {names.get(e, "") for e in draft.root_cause[-1].evidence}
    if cited <= _ROLLOUT_READS:
        out.missing.append(
            "the release is blamed on timing alone: nothing the new revision does (a failure "
            "in its log, a series that stepped with it, a setting it changed) is shown"
        )
    else:
        out.met.append("the release is blamed for what its new revision does, not only for when")
