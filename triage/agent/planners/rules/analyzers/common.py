"""Helpers every analyzer uses: the troubled containers of the asked-about pods, a crashed
container's telling log line, the facts the judge re-checks, and "what changed" since the last
healthy revision of a Deployment."""

from __future__ import annotations

import re
from collections.abc import Callable

from tools.read import payloads as p
from triage.agent.planners.rules import text
from triage.agent.planners.rules.chain import Finding, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.diff import Change, diff
from triage.agent.planners.rules.facts import Ref
from triage.agent.planners.rules.reads import epoch
from triage.agent.planners.rules.settings import explaining
from triage.core.models import Claim, Fact, FactOp, LinkRole, MutationProposal


def pod_problem_pods(
    ctx: Ctx, predicate: Callable[[p.Container], bool]
) -> list[tuple[p.Pod, p.Container]]:
    """(pod, container) pairs among the asked-about pods whose container matches, troubled
    owners first and one pair per container name and workload."""
    out: list[tuple[p.Pod, p.Container]] = []
    seen: set[tuple[str, str]] = set()
    for pod in ctx.focus_pods:
        for c in pod["containers"]:
            key = (str(ctx.workload_ref(pod)), c["name"])
            if key not in seen and predicate(c):
                seen.add(key)
                out.append((pod, c))
    return out


def fatal(ctx: Ctx, pod: p.Pod, container: str) -> tuple[text.Line | None, str | None, bool]:
    """(the telling line, evidence id, from the crashed instance?) for a container."""
    for previous in (True, False):
        log, eid = ctx.facts.logs(ctx.ns, pod["name"], container, previous)
        line = text.telling(log)
        if line is not None and eid:
            return line, eid, previous
    return None, None, False


RECOVERED_AFTER_S = 3600.0


def recovered(c: p.Container, now: float) -> bool:
    """Restarted, but long ago: running and ready for over an hour since its last exit — a
    past event to explain, not a failure to diagnose."""
    last = c["last_terminated"] or {}
    state = c["state"] or {}
    if not (c["ready"] and state.get("kind") == "running" and last.get("finished_at")):
        return False
    finished = _ts(str(last.get("finished_at")))
    return finished is not None and now - finished > RECOVERED_AFTER_S


_ts = epoch  # the one ISO timestamp parser (reads.py)


def probe_of(c: p.Container, kind: str) -> p.Probe:
    """The container's liveness, readiness or startup probe ({} when it has none)."""
    spec = c["spec"]
    if spec is None:
        return {}
    probes = {
        "liveness": spec["liveness"],
        "readiness": spec["readiness"],
        "startup": spec["startup"],
    }
    return probes.get(kind) or {}


def ports_of(c: p.Container) -> list[str]:
    """The container's port names and numbers, as strings."""
    spec = c["spec"]
    if spec is None:
        return []
    return [str(x[k]) for x in spec["ports"] for k in ("name", "port") if k in x]


def command_of(c: p.Container) -> str:
    spec = c["spec"]
    return " ".join([*spec["command"], *spec["args"]]) if spec else ""


def env_of(c: p.Container) -> dict[str, str]:
    spec = c["spec"]
    if spec is None:
        return {}
    return {
        e["name"]: str(e.get("value") or e.get("configmap") or e.get("secret") or "")
        for e in spec["env"]
    }


def container_fact(
    ctx: Ctx, pod: p.Pod, c: p.Container, path: str, value: object, *, op: FactOp = "eq"
) -> Fact:
    return fact(
        "k8s.pods",
        f"[name={pod['name']}].containers[name={c['name']}].{path}",
        op,
        value,
        namespace=ctx.ns,
    )


def _revisions(ctx: Ctx, ref: Ref) -> tuple[list[p.ReplicaSet], str | None]:
    if ref.kind != "Deployment":
        return [], None
    history, hid = ctx.facts.history(ref.namespace, ref.name)
    return (list(history["revisions"]) if history else []), hid


def last_healthy(ctx: Ctx, ref: Ref) -> tuple[p.ReplicaSet | None, p.ReplicaSet | None, str | None]:
    """(newest revision, the last revision before it that served, evidence id)."""
    revisions, hid = _revisions(ctx, ref)
    if len(revisions) < 2:
        return None, None, hid
    newest = revisions[-1]
    served = [r for r in revisions[:-1] if r["ready"] > 0 or r["available"] > 0]
    return newest, (served[-1] if served else revisions[-2]), hid


def release_changes(ctx: Ctx, ref: Ref) -> tuple[list[Change], str, str | None]:
    """What the failing revision changed against the last healthy one, the revision pair
    ("1 to 2") and the rollout history's evidence id; nothing when there is no pair."""
    newest, good, hid = last_healthy(ctx, ref)
    if newest is None or good is None or hid is None:
        return [], "", hid
    return (
        diff(good["template"], newest["template"]),
        f"{good['revision']} to {newest['revision']}",
        hid,
    )


def setting_explains(ctx: Ctx, ref: Ref, line: str) -> tuple[Claim, str] | None:
    """When the release changed a setting of the family that governs the failure `line`
    describes (rules/settings.py): the cause link naming that change, and the change's words."""
    changes, revisions, hid = release_changes(ctx, ref)
    found = explaining(line, changes)
    if found is None or hid is None:
        return None
    change, what = found
    claim = link(
        LinkRole.CAUSE,
        f"Revision {revisions.split(' to ')[1]} of {ref.name} changed {change.text} (revision "
        f"{revisions}); {what}, and the new pods fail with: {short(line, 200)}",
        hid,
        about=ref,
    )
    return (claim, change.text) if claim is not None else None


def changed_since_healthy(ctx: Ctx, ref: Ref, finding: Finding, field: str | None = None) -> None:
    """Add the diff between the failing revision and the last healthy one (cited)."""
    newest, good, hid = last_healthy(ctx, ref)
    if newest is None or good is None or hid is None:
        return
    changes = diff(good["template"], newest["template"])
    if field is not None:
        changes = [c for c in changes if c.what == field] or changes
    if not changes:
        return
    listed = "; ".join(c.text for c in changes[:6])
    claim = link(
        LinkRole.MECHANISM,
        f"What changed from revision {good['revision']} to {newest['revision']} of {ref.name}: "
        f"{short(listed, 400)}.",
        hid,
        about=ref,
    )
    if claim is not None:
        finding.what_changed.append(claim)


def healthy_revision_note(ctx: Ctx, ref: Ref, finding: Finding, *, note: bool = True) -> None:
    """When an older revision still serves: say so (unless the chain already does), and
    propose rolling back to it."""
    newest, good, hid = last_healthy(ctx, ref)
    if newest is None or good is None or hid is None or not good["ready"]:
        return
    claim = link(
        LinkRole.MECHANISM,
        f"Revision {newest['revision']} ({', '.join(newest['images'])}) fails while revision "
        f"{good['revision']} ({', '.join(good['images'])}) still serves {good['ready']} pod(s).",
        hid,
        about=ref,
    )
    if claim is not None and note:
        finding.contributing.append(claim)
    finding.remediation.append(
        MutationProposal(
            action="rollback",
            target=f"Deployment/{ref.namespace}/{ref.name}",
            args={"to_revision": int(good["revision"] or 0)},
            rationale=f"revision {good['revision']} is the last one that served",
        )
    )


def limit_source(
    ctx: Ctx,
    pod: p.Pod,
    container: str,
    resource: str,
    field: str = "limits",
    ns: str | None = None,
) -> str:
    """' (LimitRange defaults set it: the container declares none)' when the pod's value for
    `resource` was not written by its workload but filled in at admission by a LimitRange's
    default: the number to change lives in the LimitRange, not in the manifest."""
    ns = ns or ctx.ns
    ref = ctx.workload_ref(pod, ns)
    templates: list[tuple[str, p.PodTemplate]] = []
    if ref.kind == "Deployment":
        templates = [(d["name"], d["template"]) for d in ctx.facts.deployments(ns)[0]]
    elif ref.kind == "StatefulSet":
        templates = [(x["name"], x["template"]) for x in ctx.facts.statefulsets(ns)[0]]
    elif ref.kind == "DaemonSet":
        templates = [(x["name"], x["template"]) for x in ctx.facts.daemonsets(ns)[0]]
    template = next((t for name, t in templates if name == ref.name), None)
    if template is None:
        return ""
    spec = next((c for c in template["containers"] if c["name"] == container), None)
    declared = (spec["limits"] if field == "limits" else spec["requests"]) if spec else {}
    if spec is None or declared.get(resource) is not None:
        return ""
    key = "default" if field == "limits" else "defaultRequest"
    for lr in ctx.facts.limit_ranges(ns)[0]:
        for entry in lr["limits"]:
            value = (
                (entry.get(key) or {}).get(resource) if entry.get("type") == "Container" else None
            )
            if value is not None:
                return (
                    f" (LimitRange {lr['name']}'s {key} sets it to {value}: the container "
                    f"declares no {resource} {field[:-1]})"
                )
    return ""


def _volume_of(path: str) -> str | None:
    """The volume a template setting is about: `volumes[aws-token].projected.sources` and
    `containers[app].volumeMounts[aws-token].mountPath` are both about aws-token."""
    for head in ("volumes[", "].volumeMounts["):
        if head in path:
            return path.split(head, 1)[1].split("]", 1)[0]
    return None


_CONTAINER = re.compile(r"^(containers|initContainers)\[[^\]]*\]")


def _any_container(settings: dict[str, str]) -> dict[str, str]:
    """Settings with the container's name left out: two workloads name their containers as
    they like (archiver, exporter), and what they mount is compared all the same."""
    return {_CONTAINER.sub(r"\1[*]", k): v for k, v in settings.items()}


def working_neighbour(ctx: Ctx, ref: Ref) -> Claim | None:
    """A workload beside the failing one that mounts a volume of the same name and works (its
    pods are ready), and how that volume's settings differ between the two: a copy of a
    working pattern with one field dropped (a token's audience, a socket's path) shows itself
    next to the original."""
    deployments, did = ctx.facts.deployments(ctx.ns)
    mine = next((d for d in deployments if d["name"] == ref.name), None)
    if mine is None or did is None:
        return None
    own = _any_container(mine["template"].get("settings") or {})
    own_volumes = {v for path in own if (v := _volume_of(path))}
    for other in deployments:
        if other["name"] == ref.name or not other["ready"]:
            continue
        theirs = _any_container(other["template"].get("settings") or {})
        shared = own_volumes & {v for path in theirs if (v := _volume_of(path))}
        differ = [
            path
            for path in sorted(own.keys() | theirs.keys())
            if _volume_of(path) in shared and own.get(path) != theirs.get(path)
        ]
        if not differ:
            continue
        said = "; ".join(
            f"{path} is {theirs.get(path) or 'unset'} in {other['name']} and "
            f"{own.get(path) or 'unset'} in {ref.name}"
            for path in differ[:3]
        )
        return link(
            LinkRole.MECHANISM,
            f"{other['name']}, beside it, mounts the same volume "
            f"{', '.join(sorted(shared))} and works ({other['ready']} ready); the two differ "
            f"in it: {short(said, 420)}.",
            did,
            about=ref,
        )
    return None
