"""Out of memory: the kernel kills a container at its limit. Why it got there decides the fix.

- The process was *told* it may use more than the limit (a JVM `-Xmx`, `MaxRAMPercentage`,
  Node's `--max-old-space-size`, Go's `GOMEMLIMIT`, in the args or the env): the setting and
  the limit disagree — the cause is that pair, not "memory".
- The working set grows steadily across restarts (no sawtooth back down): a leak.
- Otherwise the limit is below what the workload needs (its working set at the kills).
"""

from __future__ import annotations

import itertools
import re

from tools.read import payloads as p
from triage.agent.planners.rules import quantities, text
from triage.agent.planners.rules.analyzers.common import (
    container_fact,
    limit_source,
    pod_problem_pods,
)
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import series_values
from triage.core.causes import CauseClass
from triage.core.models import LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _oom(c: p.Container) -> bool:
    return (c["last_terminated"] or {}).get("reason") == "OOMKilled" or (c["state"] or {}).get(
        "reason"
    ) == "OOMKilled"


def _same_workload(series_pod: str, pod: p.Pod, workload: str) -> bool:
    """The series is of this pod, or of another pod of the same workload (the series outlive
    pods: a rollout or an eviction renames them; `<workload>-<hash>[-<id>]`)."""
    return series_pod == pod["name"] or series_pod.startswith(f"{workload}-")


def _trend(ctx: Ctx, pod: p.Pod, container: str) -> tuple[str | None, str | None, float | None]:
    """('leak'|'sawtooth'|None, evidence id, peak bytes) from the working-set series of the
    pod or, failing that, of another pod of its workload."""
    workload = ctx.workload_ref(pod).name
    for ev in ctx.facts.purpose("memory"):
        ordered = sorted(
            ev.data or [], key=lambda x: (x.get("labels") or {}).get("pod") != pod["name"]
        )
        for series in ordered:
            labels = series.get("labels") or {}
            if not _same_workload(str(labels.get("pod", "")), pod, workload) or labels.get(
                "container"
            ) not in (container, None):
                continue
            values = series_values(series)
            if len(values) < 6:
                continue
            peak = max(values)
            drops = sum(1 for a, b in itertools.pairwise(values) if b < a * 0.8)
            third = max(len(values) // 3, 1)
            first, last = sum(values[:third]) / third, sum(values[-third:]) / third
            if drops == 0 and last > first * 1.3:
                return "leak", ev.id, peak
            return ("sawtooth" if drops else None), ev.id, peak
    return None, None, None


_SIZED = re.compile(
    r"(bytes|_mb|_gb|size|items|entries|rows|objects)\b|\d(?:\.\d+)? ?(?:[KMGT]i?B|[KMGT]i)\b",
    re.I,
)
_SIZING = re.compile(
    r"(CACHE|MAX|POOL|BUFFER|QUEUE|BATCH|WORKERS|THREADS|CONCURRENCY)(?!PROCS)", re.I
)


_BOOTED = re.compile(
    r"\b(boot\w*|spawn\w*|start\w*|fork\w*)\s+(a\s+)?(new\s+)?(worker|child|process)\w*"
    r"[^\n]*?\bpid[:= ]+(?P<pid>\d+)",
    re.I,
)


def _workers(ctx: Ctx, pod: p.Pod, c: p.Container) -> tuple[str, str | None] | None:
    """How many worker processes the instance before the kill started (a pre-fork server
    says so per worker: gunicorn, puma, uwsgi, php-fpm), and when that number is the usual
    formula over the node's CPUs (n, 2n, 2n + 1) while the container's CPU limit is smaller,
    that the pool is sized from the node, not the container: each worker holds its own copy."""
    log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], True)
    pids = {m.group("pid") for ln in log if (m := _BOOTED.search(ln))}
    if len(pids) < 2:
        return None
    n = len(pids)
    server = next(
        (
            w
            for w in ("gunicorn", "puma", "uwsgi", "php-fpm", "unicorn")
            if any(w in ln.lower() for ln in log)
        ),
        "the server",
    )
    said = f"the instance before the kill booted {n} {server} workers (one process each)"
    node = next((x for x in ctx.facts.nodes()[0] if x["name"] == pod["node"]), None)
    cpus = quantities.cpu_cores(node["allocatable"].get("cpu")) if node else None
    limit = quantities.cpu_cores(c["limits"].get("cpu"))
    if cpus and n in (int(cpus), int(2 * cpus), int(2 * cpus + 1)):
        formula = {int(cpus): "the CPU count", int(2 * cpus): "2 x the CPU count"}.get(
            n, "2 x the CPU count + 1"
        )
        said += (
            f": {n} is {formula} of its node {pod['node']} ({cpus:g} CPUs)"
            + (f", not of its {limit:g}-CPU limit" if limit is not None and limit < cpus else "")
            + " — the pool is sized from the node's CPUs, and every worker holds its own memory"
        )
    return said, lid


# Fields that measure what a process holds (not an ID or a count of work done)
_HELD = re.compile(
    r"goroutine|heap|mem|rss|bytes|_[kmg]i?b$|size|entries|items|objects|listeners|handles|"
    r"fds|sessions|cache|buffer|threads|alloc|retained|live|open",
    re.I,
)


def _held_grows(ctx: Ctx, pod: p.Pod) -> tuple[list[str], str] | None:
    """A gauge of what the process holds (threads, goroutines, sessions) that grew at least
    fivefold in the window: what the memory is spent on."""
    workload = ctx.workload_ref(pod).name
    for ev in ctx.facts.evidence:
        if not ev.ok or not (ev.purpose or "").startswith("held:"):
            continue
        for series in ev.data or []:
            labels = series.get("labels") or {}
            if not _same_workload(str(labels.get("pod", "")), pod, workload):
                continue
            values = series_values(series)
            low, high = min(values, default=0), max(values, default=0)
            name = str(ev.purpose).split(":", 1)[1]
            exported = name == "scrape_samples_scraped"
            if len(values) >= 6 and high >= (2 if exported else 5) * max(low, 1):
                if exported:
                    return [
                        f"the series it exports grow with its memory (scrape_samples_scraped "
                        f"{low:.0f} → {high:.0f}): its metrics registry keeps every label set "
                        "it has seen, so a label with unbounded values (a raw URL, an id) is a "
                        "cardinality leak"
                    ], ev.id
                pool = f'{{id="{labels["id"]}"}}' if labels.get("id") else ""
                size = quantities.human if name.endswith("_bytes") else (lambda v: f"{v:.0f}")
                return [
                    f"{name}{pool} grows from {size(low)} to {size(high)} before each kill"
                ], ev.id
    return None


def _grew_until_the_kill(ctx: Ctx, pod: p.Pod, c: p.Container) -> tuple[list[str], str] | None:
    """What the killed instance's own periodic reports show growing without a drop until the
    kill (goroutines, heap, entries, listeners: at least three reports, at least doubled):
    a leak, whatever the working-set series in the window shows after the restart."""
    log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], True)
    if not lid:
        return None
    grown = [
        g
        for g in text.growing(log)
        if g.reports >= 3 and g.last >= 2 * max(g.first, 1) and _HELD.search(g.key)
    ]
    if not grown:
        return None
    return [f"{g} over {g.reports} reports before the kill" for g in grown[:2]], lid


def _held_before_the_kill(ctx: Ctx, pod: p.Pod, c: p.Container) -> tuple[str, str | None] | None:
    """What the killed instance said it held just before the kill (its last lines that give a
    size: a cache, an image, a batch) and the settings that size it (CACHE_MAX_ITEMS=50000)."""
    log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], True)
    sized = [ln.strip() for ln in log[-20:] if _SIZED.search(ln) and re.search(r"\d", ln)][-2:]
    env = c["spec"]["env"] if c["spec"] else []
    sizing = [
        f"{e['name']}={e.get('value')}"
        for e in env
        if _SIZING.search(e["name"]) and str(e.get("value") or "").isdigit()
    ][:2]
    if not sized and not sizing:
        return None
    parts = []
    if sized:
        parts.append(
            "just before the kill it logged " + "; ".join(f'"{short(x, 110)}"' for x in sized)
        )
    if sizing:
        parts.append(f"what it holds is sized by {', '.join(sizing)}")
    return ", and ".join(parts), lid or ctx.facts.pods(ctx.ns)[1]


# A frame of a stack trace (Java's "\tat a.b.C.m(C.java:12)", Netty's records without "at")
_FRAME = re.compile(r"(?:^|\\n|\n)\s*(?:\\t|\t)*(?:at\s+)?(?P<frame>[\w$]+(?:\.[\w$<>]+){2,})\(")


def leak_said(log: list[str]) -> str | None:
    """The runtime's own report of a leak (Netty's ResourceLeakDetector "LEAK: …", Node's
    MaxListenersExceededWarning, "memory leak detected"), with the frame that allocated what
    leaked: the last one under "Created at:", the outermost caller the report shows."""
    for ln in reversed(log):
        if not re.search(r"\bLEAK:|memory leak|leak detected|MaxListeners", ln, re.I):
            continue
        head = re.split(r"\\n|\n", ln.split('"message":"', 1)[-1], maxsplit=1)[0]
        created = ln.split("Created at:", 1)[1] if "Created at:" in ln else ""
        frames = [m.group("frame") for m in _FRAME.finditer(created)]
        return short(head, 140) + (f" — allocated by {frames[-1]}" if frames else "")
    return None


def _what_grows(ctx: Ctx, pod: p.Pod, container: str) -> tuple[list[str], str] | None:
    """The log's own account of the leak: fields that only grow, and the runtime's warnings
    that name a leak (Node's MaxListenersExceededWarning, "memory leak detected")."""
    for previous in (False, True):
        log, lid = ctx.facts.logs(ctx.ns, pod["name"], container, previous)
        if not lid:
            continue
        said = [str(g) for g in text.growing(log)][:2]
        leak = leak_said(log)
        said += [f'"{leak}"'] if leak else []
        if said:
            return said, lid
    return None


def _memory_backed(pod: p.Pod, c: p.Container) -> tuple[str, str, str] | None:
    """(volume, mount path, sizeLimit) of a memory-backed emptyDir the container mounts."""
    tmpfs = {v["name"]: v for v in pod["volumes"] if v.get("medium") == "Memory"}
    for mount in c["spec"]["mounts"] if c["spec"] else []:
        name, _, path = mount.partition(" -> ")
        if name in tmpfs and not path.rstrip("/").endswith("shm"):  # shm: IPC, not files
            return name, path, str(tmpfs[name].get("size_limit") or "")
    return None


def _gc_off(c: p.Container) -> str:
    """'; and env GOGC=off turns Go's garbage collector off …': with GOGC=off a Go heap is
    collected only when it nears GOMEMLIMIT (never, without one), so it grows to that
    limit rather than staying near its live data."""
    spec = c["spec"]
    env = {e.get("name"): str(e.get("value") or "") for e in (spec["env"] if spec else [])}
    if env.get("GOGC", "").strip().lower() != "off":
        return ""
    return (
        "; and env GOGC=off turns Go's proportional garbage collector off: the heap is "
        "collected only when it nears GOMEMLIMIT"
        + ("" if "GOMEMLIMIT" in env else " (unset here: never)")
        + ", so it grows all the way to it instead of staying near the live data"
    )


def oom(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    for pod, c in pod_problem_pods(ctx, _oom):
        ref = ctx.workload_ref(pod)
        pods_id = ctx.facts.pods(ctx.ns)[1]
        limit_text = c["limits"].get("memory")
        limit = quantities.quantity_bytes(limit_text)
        last = c["last_terminated"] or c["state"] or {}
        symptom = link(
            S,
            f"Container {c['name']} of pod {pod['name']} was OOMKilled (exit code "
            f"{last.get('exit_code', 137)}), {c['restarts']} restarts; its memory limit is "
            f"{limit_text or 'unset'}.",
            pods_id,
            about=ctx.pod_ref(pod),
            facts=(container_fact(ctx, pod, c, "last_terminated.reason", "OOMKilled"),),
        )
        settings = quantities.memory_settings(c["spec"])
        over = [s for s in settings if s.bytes and limit and s.bytes >= limit * 0.9]
        pct = [s for s in settings if s.percent and s.percent > 90]
        trend, mid, peak = _trend(ctx, pod, c["name"])
        if over or pct:
            s = (over or pct)[0]
            told = quantities.human(s.bytes) if s.bytes else f"{s.percent:g}% of the limit"
            said_in = "its command line" if s.where == "args" else s.where
            cause = (
                f"{said_in} sets {s.flag} ({told}) "
                f"for container {c['name']}, "
                f"{'more than' if s.bytes and limit and s.bytes > limit else 'about'} its "
                f"{limit_text} memory limit: the process is allowed to grow past the limit, "
                "so the kernel OOM-kills it before the runtime's own limit applies"
            ) + _gc_off(c)
            value_path = (
                f"[name={pod['name']}].containers[name={c['name']}].spec.env"
                f"[name={s.where.removeprefix('env ')}].value"
                if s.where.startswith("env ")
                else f"[name={pod['name']}].containers[name={c['name']}].spec.args"
            )
            finding = Finding(
                cls=CauseClass.OOM_KILLED,
                cause=cause,
                summary=f"{ref.name} is OOM-killed: {s.flag} in {s.where} exceeds the "
                f"{limit_text} memory limit",
                impact=f"{ref.name} restarts whenever its heap grows past {limit_text}.",
                chain=chain(
                    symptom,
                    link(
                        C,
                        f"{said_in[:1].upper() + said_in[1:]} gives {s.flag} ({told}) while "
                        f"limits.memory is {limit_text}.",
                        pods_id,
                        about=ref,
                        facts=(
                            # args are a list of words: the fact names the word with the size
                            fact(
                                "k8s.pods",
                                value_path,
                                "contains",
                                # an env's own value (GOMEMLIMIT=900MiB is 900MiB there)
                                s.flag.removeprefix(s.where.removeprefix("env ") + "=")
                                if s.where.startswith("env ")
                                else s.flag.split()[-1],
                                namespace=ctx.ns,
                            ),
                            container_fact(ctx, pod, c, "limits.memory", limit_text),
                        ),
                    ),
                ),
                explains={str(ref)},
                follow_ups=[
                    f"Set {s.flag.split('=')[0].rstrip('0123456789kKmMgG')} below the limit (e.g. "
                    f"75% of {limit_text}) or raise the limit above it."
                ],
            )
        elif (tmpfs := _memory_backed(pod, c)) is not None:
            name, path, size = tmpfs
            finding = Finding(
                cls=CauseClass.OOM_KILLED,
                cause=f"container {c['name']} writes into emptyDir {name} at {path}, which is "
                f"memory-backed (medium: Memory, a tmpfs{f', sizeLimit {size}' if size else ''})"
                f": files there are RAM charged to the container, so what it keeps there counts "
                f"against its {limit_text} memory limit and the kernel kills it when they fill it",
                summary=f"{ref.name} is OOM-killed at {limit_text}: its scratch files live in a "
                "memory-backed emptyDir",
                impact=f"{ref.name} restarts whenever its files in {path} and its heap reach "
                f"{limit_text}.",
                chain=chain(
                    symptom,
                    link(
                        M,
                        f"The working set grows with what is written to {path} (peak "
                        f"{quantities.human(peak or 0)}) until the kill at {limit_text}.",
                        mid,
                        about=ref,
                    )
                    if trend
                    else None,
                    link(
                        C,
                        f"Volume {name} is an emptyDir with medium: Memory mounted at {path}: a "
                        f"tmpfs whose pages count against limits.memory {limit_text}.",
                        pods_id,
                        about=ref,
                    ),
                ),
                explains={str(ref)},
                follow_ups=[
                    f"Use a disk-backed emptyDir for {path} (drop medium: Memory), or give it a "
                    "sizeLimit well below the memory limit and raise the limit by as much."
                ],
            )
        elif (
            trend == "leak"
            or (grew := _grew_until_the_kill(ctx, pod, c))
            # a slow sawtooth to the limit: each cycle grows until the kill, while what the
            # process holds (its threads) grows with it
            or (
                trend == "sawtooth"
                and limit
                and (peak or 0) >= 0.9 * limit
                and (grew := _held_grows(ctx, pod))
            )
        ):
            held = (
                _what_grows(ctx, pod, c["name"]) or _held_grows(ctx, pod)
                if trend == "leak"
                else grew
            )
            if held and trend != "leak":
                # the runtime's own report of what leaks, beside the gauge that grows
                reports = _what_grows(ctx, pod, c["name"])
                reported = [x for x in (reports[0] if reports else []) if x.startswith('"')]
                held = ([*held[0], *reported[:1]], held[1])
            finding = Finding(
                cls=CauseClass.MEMORY_LEAK,
                cause=f"{ref.name}'s memory grows steadily "
                + (f"(to {quantities.human(peak or 0)}) " if trend == "leak" else "")
                + f"until the {limit_text} limit kills it: a leak, not a limit set too low"
                + (f" ({'; '.join(held[0])})" if held and trend != "leak" else ""),
                summary=f"{ref.name} leaks memory and is OOM-killed at {limit_text}",
                impact=f"{ref.name} restarts every time the leak reaches the limit.",
                chain=chain(
                    symptom,
                    link(
                        M if held else C,
                        f"The working set rises steadily with no drop back (peak "
                        f"{quantities.human(peak or 0)}) until the kill at {limit_text}.",
                        mid,
                        about=ref,
                    )
                    if trend == "leak"
                    else None,
                    link(
                        C,
                        "What it holds on to, in its log: " + "; ".join(held[0]) + ".",
                        held[1],
                        about=ref,
                    )
                    if held
                    else None,
                ),
                strength=Strength.INFERRED,
                explains={str(ref)},
                follow_ups=[
                    "Take a heap profile before the limit; raising it only delays the kill."
                ],
            )
        else:
            at = f" (working set up to {quantities.human(peak)})" if peak else ""
            holds = _workers(ctx, pod, c) or _held_before_the_kill(ctx, pod, c)
            unread = [
                ref_.split(":", 1)[1]
                for ref_ in (c["spec"]["env_from"] if c["spec"] else [])
                if ref_.startswith("configmap:")
            ]
            finding = Finding(
                cls=CauseClass.OOM_KILLED,
                cause=f"container {c['name']} needs more memory than its {limit_text} limit"
                f"{limit_source(ctx, pod, c['name'], 'memory')}{at}: the kernel kills it at "
                "the limit"
                + (f"; {holds[0]}" if holds else "")
                + (
                    f"; its env also comes from ConfigMap {', '.join(unread)}, whose values "
                    "Triage does not read — a runtime heap setting there (NODE_OPTIONS "
                    "--max-old-space-size, JAVA_TOOL_OPTIONS -Xmx) larger than the limit would "
                    "explain it: check it"
                    if unread
                    else ""
                ),
                summary=f"{ref.name} is OOM-killed at its {limit_text} memory limit",
                impact=f"{ref.name} restarts repeatedly.",
                chain=chain(
                    symptom,
                    link(
                        C,
                        f"limits.memory of {c['name']} is {limit_text}{at}"
                        + (
                            " — the sawtooth reaches it before every kill."
                            if trend == "sawtooth"
                            else "."
                        ),
                        pods_id,
                        mid,
                        about=ref,
                    ),
                ),
                strength=Strength.INFERRED,
                explains={str(ref)},
                follow_ups=[
                    "Raise the memory limit to what the working set needs, or reduce what it holds."
                ],
            )
            if holds:
                said = link(M, holds[0][0].upper() + holds[0][1:] + ".", holds[1], about=ref)
                if said is not None:
                    finding.chain.insert(len(finding.chain) - 1, said)
        for line_pod in (pod,):
            log, lid = ctx.facts.logs(ctx.ns, line_pod["name"], c["name"], True)
            runtime = [ln for ln in text.failures(log) if ln.family is text.Family.RUNTIME_OOM]
            if runtime and finding.cls is CauseClass.OOM_KILLED and not over:
                finding.contributing.append(
                    link(M, f"The runtime also says: {short(runtime[-1].text)}", lid, about=ref)
                    or finding.chain[-1]
                )
        out.append(finding)
    return out
