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


# Where a framework serves its health checks, by the line it logs at start (each framework's
# documented default): Quarkus' SmallRye Health (a feature in its "Installed features" line),
# Spring Boot's Actuator ("Exposing N endpoints beneath base path '/actuator'"), Micronaut's
# management endpoints, Helidon 4's observe feature. Per probe kind: the path for it.
_HEALTH_HOMES: tuple[tuple[re.Pattern[str], str, dict[str, str]], ...] = (
    (
        re.compile(r"Installed features: \[[^\]]*\bsmallrye-health\b"),
        "Quarkus (SmallRye Health)",
        {
            "startup": "/q/health/started",
            "liveness": "/q/health/live",
            "readiness": "/q/health/ready",
        },
    ),
    (
        re.compile(r"endpoints? beneath base path '(?P<base>/[^']*)'"),
        "Spring Boot Actuator",
        {
            "startup": "{base}/health/liveness",
            "liveness": "{base}/health/liveness",
            "readiness": "{base}/health/readiness",
        },
    ),
    (
        re.compile(r"\bio\.micronaut\b|\bMicronaut\b.{0,40}\bStartup completed\b"),
        "Micronaut",
        {"startup": "/health", "liveness": "/health/liveness", "readiness": "/health/readiness"},
    ),
    (
        re.compile(r"\bHelidon (?:SE|MP) 4\."),
        "Helidon 4",
        {
            "startup": "/observe/health/started",
            "liveness": "/observe/health/live",
            "readiness": "/observe/health/ready",
        },
    ),
)
# A route a server logs as registered: Gin's debug listing ("[GIN-debug] GET /healthz --> …"),
# and the "Mapped" / "route" lines of other routers, for GET or HEAD.
_ROUTE = re.compile(
    r"(?:\[GIN-debug\]|\bMapped\b|\broutes?\b|\bregistered\b)[^\n]{0,20}?\b(?:GET|HEAD)\b"
    r"[\s:\"'\[{]+(?P<path>/[\w./{}:-]*)"
)


def health_home(log: list[str], kind: str, asked: str) -> tuple[str, str, str] | None:
    """(the path the app serves for a `kind` probe, who says so, the log line) when a probe
    of `asked` is answered 404: the framework the app's log announces serves its health checks
    elsewhere, or the app lists the routes it registered and a health-like one is not `asked`."""
    for line in log:
        for pattern, who, paths in _HEALTH_HOMES:
            if m := pattern.search(line):
                path = paths[kind].format(base=(m.groupdict().get("base") or "").rstrip("/"))
                if path != asked:
                    return path, who, line.strip()
    routes = [(m.group("path"), line.strip()) for line in log if (m := _ROUTE.search(line))]
    if routes and asked not in {r for r, _ in routes}:
        healthy = [r for r in routes if re.search(r"health|live|ready|status|ping", r[0], re.I)]
        if healthy:
            word = {"startup": "start", "liveness": "live", "readiness": "ready"}[kind]
            path, line = max(healthy, key=lambda r: word in r[0].lower())
            return path, "the app's registered routes", line
    return None


# A duration as settings write it: "3600", "3600s", "60m", "1h", "1h30m", "90min", "2 hours".
_SPAN = re.compile(r"(\d+(?:\.\d+)?)\s*([a-z]*)")
_SPAN_UNITS = {
    **dict.fromkeys(("", "s", "sec", "secs", "second", "seconds"), 1.0),
    "ms": 0.001,
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), 60.0),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), 3600.0),
    **dict.fromkeys(("d", "day", "days"), 86400.0),
}
# a setting that bounds how long a worker runs before it exits on its own
_LIFETIME_WORDS = re.compile(r"max|life|ttl|recycl|rotat|age|time|restart|expir", re.I)
CLEAN_RUN_S = 300.0  # a clean exit after a run this long is the program ending by itself


def span_seconds(value: str) -> float | None:
    """Seconds in a duration written as a number with an optional unit, or Go's "1h30m"."""
    value = value.strip().lower()
    parts = list(_SPAN.finditer(value))
    if not parts or "".join(m.group(0) for m in parts).replace(" ", "") != value.replace(" ", ""):
        return None
    total = 0.0
    for m in parts:
        unit = _SPAN_UNITS.get(m.group(2))
        if unit is None or (len(parts) > 1 and not m.group(2)):
            return None
        total += float(m.group(1)) * unit
    return total


def clean_exit_run(c: p.Container) -> float | None:
    """How long the container's previous instance ran when it exited 0 (Completed) after at
    least CLEAN_RUN_S and the container runs and is Ready again: a program that ended itself
    (a worker's lifetime, a scheduled recycle), which a Deployment's restartPolicy Always
    restarts; None otherwise."""
    last = c["last_terminated"] or {}
    state = c["state"] or {}
    if last.get("exit_code") != 0 or not c["ready"] or state.get("kind") != "running":
        return None
    start, end = _ts(str(last.get("started_at") or "")), _ts(str(last.get("finished_at") or ""))
    if start is None or end is None or end - start < CLEAN_RUN_S:
        return None
    return end - start


def lifetime_setting(c: p.Container, run_s: float) -> tuple[str, float] | None:
    """(the setting as written, its seconds) among the container's args and env that bounds a
    worker's run and matches `run_s` within 15%: `--max-time=3600`, `MAX_LIFETIME=1h`."""
    spec = c["spec"]
    if spec is None:
        return None
    words = [*spec["command"], *spec["args"]]
    pairs: list[tuple[str, str, str]] = []
    for i, w in enumerate(words):
        if w.startswith("-"):
            name, eq, value = w.partition("=")
            if not eq and i + 1 < len(words):
                value = words[i + 1]
            pairs.append((name, value, w if eq else f"{w} {value}"))
    pairs += [(k, v, f"{k}={v}") for k, v in env_of(c).items()]
    for name, value, said in pairs:
        if not _LIFETIME_WORDS.search(name):
            continue
        seconds = span_seconds(value)
        if seconds and abs(seconds - run_s) <= 0.15 * run_s:
            return said, seconds
    return None


def recycled(ctx: Ctx, pod: p.Pod, c: p.Container) -> tuple[float, tuple[str, float] | None] | None:
    """(run seconds, the lifetime setting that ended it) when the container's restarts are the
    program ending itself by design: a clean exit after a long run (clean_exit_run), which a
    lifetime setting explains or after which its previous instance logged no failure."""
    run = clean_exit_run(c)
    if run is None:
        return None
    setting = lifetime_setting(c, run)
    if setting is None:
        log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], True)
        if lid is None or text.telling(log) is not None:
            return None
    return run, setting
