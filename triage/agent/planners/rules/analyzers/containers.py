"""Containers that crash or are killed (images and references: references.py; readiness:
readiness.py).

The chain always starts from what the container's status says (a waiting reason, a
termination reason and exit code, a restart count), goes through what the kubelet or the
program said about it (events, the crashed instance's last words), and ends at the setting,
probe, image, reference or code that a human changes. What the program's line means is
decided by its *family* (triage/agent/planners/rules/text.py): a missing or malformed setting,
a command that is not there, a refused connection (followed to the dependency by the network
analyzers), a refused credential, a full disk, a crash.
"""

from __future__ import annotations

import re

from tools.read import payloads as p
from triage.agent.planners.rules import text
from triage.agent.planners.rules.analyzers.common import (
    changed_since_healthy,
    container_fact,
    env_of,
    fatal,
    health_home,
    healthy_revision_note,
    last_healthy,
    pod_problem_pods,
    ports_of,
    probe_of,
    recovered,
    setting_explains,
    working_neighbour,
)
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.core.causes import CauseClass
from triage.core.models import Claim, LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _state(c: p.Container) -> p.ContainerState:
    state: p.ContainerState = c["state"] or {}
    return state


def _last(c: p.Container) -> p.ContainerState:
    last: p.ContainerState = c["last_terminated"] or {}
    return last


# -- images and references ---------------------------------------------------------------------


# -- crashes ---------------------------------------------------------------------------------


def _crashing(c: p.Container) -> bool:
    last, state = _last(c), _state(c)
    oom = last.get("reason") == "OOMKilled" or state.get("reason") == "OOMKilled"
    return not oom and (
        state.get("reason") in ("CrashLoopBackOff", "Error", "RunContainerError")
        or (
            c["restarts"] > 0
            and last.get("kind") == "terminated"
            and last.get("exit_code") not in (None, 0)
        )
        or (state.get("kind") == "terminated" and state.get("exit_code") not in (None, 0))
    )


def crashes(ctx: Ctx) -> list[Finding]:
    """A container that exits: what its last words are, and what they point at."""
    out: list[Finding] = []
    seen: set[str] = set()
    for pod, c in pod_problem_pods(ctx, lambda c: _crashing(c) and not recovered(c, ctx.now)):
        ref = ctx.workload_ref(pod)
        if str(ref) in seen:
            continue
        seen.add(str(ref))
        finding = _crash(ctx, pod, c)
        if finding is not None:
            out.append(finding)
    return out


def _probe_kills(ctx: Ctx, pod: p.Pod, kind: str) -> tuple[list[p.Event], str | None]:
    events, eid = ctx.facts.events_about(ctx.ns, pod["name"])
    kills = [
        e
        for e in events
        if f"{kind} probe" in str(e["message"]).lower()
        and (e["reason"] in ("Killing", "Unhealthy"))
    ]
    return kills, eid


QUOTED = 320  # the crashed instance's own words are quoted whole, up to this many characters


def _crash(ctx: Ctx, pod: p.Pod, c: p.Container) -> Finding | None:
    last = _last(c) or _state(c)
    code = last.get("exit_code")
    pods_id = ctx.facts.pods(ctx.ns)[1]
    ref = ctx.workload_ref(pod)
    meaning = text.EXIT_MEANING.get(int(code)) if isinstance(code, int) else None
    symptom = link(
        S,
        f"Container {c['name']} of pod {pod['name']} keeps exiting: last exit code {code}"
        + (f" ({meaning})" if meaning else "")
        + f", {c['restarts']} restarts"
        + (", now in CrashLoopBackOff" if _state(c).get("reason") == "CrashLoopBackOff" else "")
        + ".",
        pods_id,
        about=ctx.pod_ref(pod),
        # what was seen, as it can be re-read: restarts, or (a Job's pod that is not
        # restarted) the exit code it ended with
        facts=(
            container_fact(ctx, pod, c, "restarts", c["restarts"], op="ge")
            if c["restarts"] > 0
            else container_fact(
                ctx,
                pod,
                c,
                ("last_terminated" if c["last_terminated"] else "state") + ".exit_code",
                code,
            ),
        ),
    )
    for probe_kind, cls in (
        ("liveness", CauseClass.LIVENESS_PROBE_FAILING),
        ("startup", CauseClass.STARTUP_PROBE_FAILING),
    ):
        kills, eid = _probe_kills(ctx, pod, probe_kind)
        if kills and (code in (137, 143) or _state(c).get("reason") == "CrashLoopBackOff"):
            return _probe_kill(ctx, pod, c, cls, probe_kind, kills, eid, symptom)
    line, lid, previous = fatal(ctx, pod, c["name"])
    said_fact = None
    if line is None:
        # The kubelet's termination message (terminationMessagePath, or the log's tail under
        # FallbackToLogsOnError) says why when the log cannot be read.
        line = text.telling(str(last.get("message") or "").splitlines())
        if line is not None:
            lid, previous = pods_id, True
            said_fact = container_fact(
                ctx, pod, c, "last_terminated.message", line.text[:120], op="contains"
            )
    if line is None or lid is None:
        if code in (137, 143):
            return None  # killed from outside without a probe event: other analyzers decide
        return Finding(
            cls=CauseClass.APPLICATION_ERROR,
            cause=f"{ref.name}'s container {c['name']} exits with code {code} without saying "
            "why in its log",
            summary=f"{ref.name} is crash-looping (exit {code})",
            impact=f"{ref.name} serves nothing while it restarts.",
            chain=chain(symptom),
            strength=Strength.CORRELATED,
            explains={str(ref)},
        )
    said = link(
        M,
        f"The {'crashed' if previous else 'current'} instance's "
        + ("termination message" if said_fact else "log")
        + f" says: {short(line.text, QUOTED)}",
        lid,
        about=ctx.pod_ref(pod),
        facts=(
            said_fact
            or fact(
                "k8s.logs",
                "",
                "contains",
                line.text[:120],
                namespace=ctx.ns,
                pod=pod["name"],
                container=c["name"],
                previous=True if previous else None,
            ),
        ),
    )
    fam = line.family
    if fam in (text.Family.CONNECTION, text.Family.DNS, text.Family.K8S_FORBIDDEN):
        return None  # the network and access analyzers follow these to their cause
    if fam is text.Family.DISK_FULL:
        claims = {str(ctx.ref("PersistentVolumeClaim", name)) for name in pod["claims"]}
        return Finding(
            open_at=claims,  # how full each volume is, and why, is the volume's own chain
            cls=CauseClass.VOLUME_FULL,
            cause=f"the volume {c['name']} writes to is full: {short(line.text, 160)}",
            summary=f"{ref.name} crashes on a full disk (ENOSPC)",
            impact=f"{ref.name} cannot write and restarts.",
            chain=chain(
                symptom, said, link(C, f"No space left: {short(line.text)}", lid, about=ref)
            ),
            explains={str(ref)},
            follow_ups=["Free or grow the volume; find what fills it."],
        )
    if fam is text.Family.ACCESS_DENIED:
        return _access_denied(ctx, pod, c, line, lid, symptom, said, previous=previous)
    if fam is text.Family.CREDENTIALS:
        return _config(ctx, pod, c, line, lid, symptom, said, credentials=True)
    if (linked := _service_link(ctx, pod, c, line, lid, symptom, said)) is not None:
        return linked
    if _FOREIGN_BINARY.search(line.text):
        return _foreign_binary(ctx, pod, c, line, lid, symptom, said)
    if fam in (text.Family.CONFIG, text.Family.COMMAND):
        return _config(ctx, pod, c, line, lid, symptom, said)
    if fam is text.Family.RUNTIME_OOM:
        return None  # the memory analyzer weighs heap flags against the limit
    cause_text = f"the program itself fails: {short(line.text, 180)}"
    log, _ = ctx.facts.logs(ctx.ns, pod["name"], c["name"], previous)
    where = text.frame(log)
    final = link(
        C,
        f"The program fails: {short(line.text)}" + (f" (at {where})" if where else ""),
        lid,
        about=ref,
    )
    if where:
        cause_text += f" (at {where})"
    step = text.last_step(log, line)  # what it was doing: a migration, a cache load, …
    doing = f"; the step it failed in: {short(step, 140)}" if step else ""
    cause_text += doing
    newest, good, hid = last_healthy(ctx, ref)
    if newest is not None and good is not None and good["ready"] and hid:
        # a release that crashes where the one before it still serves: the release is the
        # cause a human acts on (roll back, then fix the code path the log names)
        new_images = ", ".join(newest["images"])
        old_images = ", ".join(good["images"])
        cause_text = (
            f"revision {newest['revision']} ({new_images}) crashes — {short(line.text, 140)}"
            + (f" at {where}" if where else "")
            + doing
            + " — "
            f"while revision {good['revision']} ({old_images}) still serves {good['ready']} "
            "pod(s): the new release brought the bug"
        )
        final = link(
            C,
            f"Revision {newest['revision']} ({new_images}) is the one that crashes"
            + (f" (at {where})" if where else "")
            + "; revision "
            f"{good['revision']} ({old_images}) still serves {good['ready']} pod(s).",
            hid,
            lid,
            about=ref,
        )
    f = Finding(
        cls=CauseClass.APPLICATION_ERROR,
        cause=cause_text,
        summary=f"{ref.name} is crash-looping: {short(line.text, 140)}",
        impact=f"{ref.name} serves nothing while it restarts.",
        chain=chain(symptom, said, final),
        explains={str(ref)},
        follow_ups=["Fix the code path the log names, or roll back to the last good revision."],
    )
    changed_since_healthy(ctx, ref, f, field="image")
    healthy_revision_note(ctx, ref, f, note=final is None or "Revision" not in final.text)
    return f


# The value of a Docker-link variable the kubelet injects for every Service of the namespace
# (enableServiceLinks, on by default): REDIS_PORT=tcp://10.96.0.12:6379
_LINK_VALUE = re.compile(r"\btcp://(?P<ip>\d{1,3}(?:\.\d{1,3}){3}):(?P<port>\d{1,5})\b")


def link_variable(service: str) -> str:
    """What the kubelet sets to tcp://IP:PORT for a Service: redis-cache → REDIS_CACHE_PORT."""
    return re.sub(r"[^A-Z0-9]", "_", service.upper()) + "_PORT"


def _service_link(
    ctx: Ctx,
    pod: p.Pod,
    c: p.Container,
    line: text.Line,
    lid: str | None,
    symptom: Claim | None,
    said: Claim | None,
) -> Finding | None:
    """A program that fails on a value `tcp://<a Service's IP>:<port>` it did not set: the
    kubelet's service link for that Service. A pod gets `<NAME>_PORT=tcp://IP:PORT` for
    every Service that existed when it was created, so a Service named like one of the
    program's own settings (redis → REDIS_PORT) overrides the program's default."""
    found = _LINK_VALUE.search(line.text)
    if found is None:
        return None
    ip, port = found.group("ip"), int(found.group("port"))
    services, sid = ctx.facts.services(ctx.ns)
    svc = next(
        (
            s
            for s in services
            if s.get("cluster_ip") == ip
            or (not s.get("cluster_ip") and any(x.get("port") == port for x in s["ports"]))
        ),
        None,
    )
    if svc is None:
        return None
    var = link_variable(svc["name"])
    env = env_of(c)
    if var in env:
        return None  # the container sets it itself: that value is the one to fix
    ref = ctx.workload_ref(pod)
    cause = (
        f"the kubelet injects {var}={found.group(0)} into {ref.name}'s new pods, the service "
        f"link for Service {svc['name']} (enableServiceLinks is on by default), and the "
        f"program reads {var} as a setting of its own (a port number): it fails on that value"
        f" — {short(line.text, 160)}. Pods created before Service {svc['name']} existed carry "
        f"no such variable. Set {var} explicitly in the container's env, or set "
        "enableServiceLinks: false in the pod spec"
    )
    return Finding(
        cls=CauseClass.BAD_CONFIG,
        cause=cause,
        summary=f"{ref.name} crashes on {var}, the service link the kubelet injects for "
        f"Service {svc['name']}",
        impact=f"{ref.name}'s new pods crash at start-up and serve nothing.",
        chain=chain(
            symptom,
            said,
            link(
                C,
                f"{var}={found.group(0)} is the Docker-link variable the kubelet sets for Service "
                f"{svc['name']} ({svc.get('cluster_ip') or 'its address'}:{port}); the "
                f"container's own env does not set {var}, so the program reads the injected "
                "value.",
                sid,
                lid,
                about=ref,
                facts=(
                    fact(
                        "k8s.services",
                        f"[name={svc['name']}].name",
                        "eq",
                        svc["name"],
                        namespace=ctx.ns,
                    ),
                ),
            ),
        ),
        explains={str(ref)},
        follow_ups=[f"Set {var} in {ref.name}'s env, or enableServiceLinks: false."],
    )


# The kernel refuses to run a file that is not an executable of its own machine: a binary
# built for another CPU architecture (an arm64 image on amd64 nodes), or a script without a
# shebang line.
_FOREIGN_BINARY = re.compile(r"exec format error", re.I)


def _foreign_binary(
    ctx: Ctx,
    pod: p.Pod,
    c: p.Container,
    line: text.Line,
    lid: str | None,
    symptom: Claim | None,
    said: Claim | None,
) -> Finding:
    ref = ctx.workload_ref(pod)
    nodes, nid = ctx.facts.nodes()
    node = next((n for n in nodes if n["name"] == pod["node"]), None)
    arch = (node or {}).get("labels", {}).get("kubernetes.io/arch") if node else None
    image = c["image"] or "its image"
    where = (
        f"node {node['name']} is {arch} (kubernetes.io/arch), so the image must hold an {arch} "
        "binary"
        if node is not None and arch
        else "the node's CPU architecture is the one the image must be built for"
    )
    cause = (
        f"{image} holds an entrypoint the node's kernel cannot execute (exec format error): a "
        "binary built for another CPU architecture or platform than the node's, or a script "
        "with no "
        f"shebang; {where}"
    )
    f = Finding(
        cls=CauseClass.APPLICATION_ERROR,
        cause=cause,
        summary=f"{ref.name} cannot start: exec format error",
        impact=f"{ref.name} serves nothing while it restarts.",
        chain=chain(
            symptom,
            said,
            link(C, cause[0].upper() + cause[1:] + ".", lid, nid, about=ref),
        ),
        explains={str(ref)},
        follow_ups=[
            f"Rebuild {image} for the nodes' platform (docker buildx --platform "
            f"linux/{arch or 'amd64'}) or as a multi-arch image, or roll back to the last good "
            "revision."
        ],
    )
    changed_since_healthy(ctx, ref, f, field="image")
    healthy_revision_note(ctx, ref, f, note=True)
    return f


def _access_denied(
    ctx: Ctx,
    pod: p.Pod,
    c: p.Container,
    line: text.Line,
    lid: str | None,
    symptom: Claim | None,
    said: Claim | None,
    *,
    previous: bool,
) -> Finding:
    """A cloud API refused the workload: who it runs as, and how a neighbour that works
    differs from it."""
    ref = ctx.workload_ref(pod)
    who, wid = cloud_identity(ctx, pod)
    log, _ = ctx.facts.logs(ctx.ns, pod["name"], c["name"], previous)
    target = text.cloud_resource(log)
    permission = text.cloud_permission(log)
    beside = working_neighbour(ctx, ref)
    if who and _TOKEN_REFUSED.search(line.text):
        # the token was refused before any permission was weighed: the identity's rights
        # are not in question, what the token says (its audience, its issuer) is
        who = who.split(": that identity", 1)[0] + (
            ": the token it presents was refused before any permission of that identity "
            "was weighed (its audience or issuer is not what the identity provider trusts)"
        )
    return Finding(
        cls=CauseClass.CLOUD_ACCESS_DENIED,
        cause=f"an external service refuses {ref.name}'s credentials: {short(line.text, 180)}"
        + (f"; the permission it lacks: {permission}" if permission else "")
        + (
            " — the data it reads is encrypted with a KMS key, and its identity may not use "
            "that key (a permission on the store alone does not decrypt)"
            if permission and permission.lower().startswith("kms:")
            else ""
        )
        + (f"; the resource it was refused: {target}" if target else "")
        + (f"; {who}" if who else "")
        + (f"; {short(beside.text, 260)}" if beside else ""),
        summary=f"{ref.name} fails: access denied by an external service",
        impact=f"{ref.name}'s work is not done.",
        chain=chain(
            symptom,
            link(M if who or beside else C, said.text if said else line.text, lid, about=ref),
            link(M if beside else C, who[0].upper() + who[1:] + ".", wid, about=ref)
            if who
            else None,
            beside.model_copy(update={"role": C}) if beside else None,
        ),
        explains={str(ref)},
        follow_ups=["Fix the workload's cloud credentials or the policy that denies it."],
    )


# STS refusing the web identity token itself (not a permission of the role it maps to)
_TOKEN_REFUSED = re.compile(r"InvalidIdentityToken|Incorrect token audience", re.I)

_CLOUD_IDENTITY = (
    "eks.amazonaws.com/role-arn",
    "iam.gke.io/gcp-service-account",
    "azure.workload.identity/client-id",
)


def cloud_identity(ctx: Ctx, pod: p.Pod) -> tuple[str, str | None]:
    """Which cloud identity the pod's ServiceAccount carries (the one the cloud refused), or
    that it carries none (it falls back to the node's, or to no credentials at all)."""
    accounts, aid = ctx.facts.service_accounts(ctx.ns)
    name = pod["service_account"] or "default"
    account = next((a for a in accounts if a["name"] == name), None)
    if aid is None or account is None:
        return "", None
    bound = {k: v for k, v in account["annotations"].items() if k in _CLOUD_IDENTITY}
    if bound:
        k, v = next(iter(bound.items()))
        return (
            f"it runs as ServiceAccount {name}, bound to the cloud identity {v} ({k}): that "
            "identity lacks the permission (or the trust policy does not admit this account)"
        ), aid
    return (
        f"it runs as ServiceAccount {name}, which carries no cloud identity annotation "
        f"({', '.join(_CLOUD_IDENTITY)}): it gets the node's credentials or none"
    ), aid


def _config(
    ctx: Ctx,
    pod: p.Pod,
    c: p.Container,
    line: text.Line,
    lid: str | None,
    symptom: object,
    said: object,
    *,
    credentials: bool = False,
) -> Finding:
    ref = ctx.workload_ref(pod)
    env = env_of(c)
    named = [n for n in text.env_names_in(line.text)]
    unset = [n for n in named if n not in env]
    detail = short(line.text, 200)
    cause = f"{ref.name} exits at start because of its configuration: {detail}"
    cause_link = link(C, f"The setting is wrong: {detail}", lid, about=ref)
    if unset:
        var = unset[0]
        near = _look_alike(var, env)
        sources = [f.split(":", 1) for f in (c["spec"]["env_from"] if c["spec"] else [])]
        if sources and not _SAYS_UNSET.search(line.text):
            # not in the container's own env, and the program quotes the value it rejects:
            # it comes from the envFrom sources (their data is not read)
            where = ", ".join(
                f"{'ConfigMap' if k == 'configmap' else 'Secret'} {n}" for k, n in sources
            )
            cause = (
                f"{var}, which container {c['name']} takes from {where} (envFrom), holds a value "
                f"the program rejects: {detail}"
            )
            cause_link = link(
                C,
                f"{var} comes from {where} (envFrom) and is rejected: {detail}",
                lid,
                ctx.facts.pods(ctx.ns)[1],
                about=ref,
            )
        elif near:
            cause = (
                f"the program reads {var}, which the Deployment does not set; it still sets "
                f"{near} (renamed to {var} in the new version?)"
            )
            cause_link = link(
                C,
                f"{var} is not set in container {c['name']} (it sets {near} instead): the "
                f"variable was renamed and the manifest was not updated.",
                lid,
                ctx.facts.pods(ctx.ns)[1],
                about=ref,
            )
        else:
            cause = f"{var} is not set (or empty) in container {c['name']}: {detail}"
    else:
        for name in named:
            if name in env:
                cause = f"{name} is set to a value the program rejects: {detail}"
                cause_link = link(
                    C,
                    f"{name}={short(env[name], 120)} is rejected: {detail}",
                    lid,
                    ctx.facts.pods(ctx.ns)[1],
                    about=ref,
                )
                break
    if not named:
        explained = setting_explains(ctx, ref, line.text)
        if explained is not None:  # the release changed the setting that governs this failure
            cause_link, change = explained
            cause = f"{ref.name}'s release changed {change}, and it now exits with: {detail}"
    if credentials:
        cause = f"{ref.name}'s database credentials are refused: {detail}"
    f = Finding(
        cls=CauseClass.BAD_CONFIG,
        cause=cause,
        summary=f"{ref.name} is crash-looping on a bad setting: {short(line.text, 140)}",
        impact=f"{ref.name} serves nothing while it restarts.",
        chain=chain(symptom, said, cause_link),  # type: ignore[arg-type]
        explains={str(ref)},
        follow_ups=["Fix the setting the log names; restarting will not help."],
    )
    changed_since_healthy(ctx, ref, f)
    healthy_revision_note(ctx, ref, f)
    return f


_SAYS_UNSET = re.compile(
    r"\bnot set\b|is required|must be set|\bmissing (required|env|variable)|\bempty\b|"
    r"not (found|defined)|undefined|KeyError",
    re.I,
)


# How servers are told how many requests they serve at once: gunicorn/uvicorn/puma/unicorn
# flags, and the variables their images read.
_CONCURRENCY = re.compile(
    r"(?:^|\s)(?P<flag>--workers|-w|--threads|--processes|--concurrency)[= ](?P<n>\d+)\b"
)
_CONCURRENCY_ENV = (
    "WEB_CONCURRENCY",
    "GUNICORN_WORKERS",
    "WORKERS",
    "PUMA_MAX_THREADS",
    "UVICORN_WORKERS",
)


def _one_at_a_time(c: p.Container) -> str | None:
    """The setting that makes the server handle a single request at a time ('--workers 1'
    with no --threads above 1), or None."""
    spec = c["spec"]
    if spec is None:
        return None
    line = " ".join([*spec["command"], *spec["args"]])
    found = {m.group("flag"): int(m.group("n")) for m in _CONCURRENCY.finditer(line)}
    env = {e["name"]: str(e.get("value") or "") for e in spec["env"]}
    for name in _CONCURRENCY_ENV:
        if env.get(name, "").isdigit():
            found[name] = int(env[name])
    workers = {k: n for k, n in found.items() if k not in ("--threads",)}
    if workers and all(n == 1 for n in workers.values()) and found.get("--threads", 1) <= 1:
        k, n = next(iter(workers.items()))
        return f"{k} {n}" if k.startswith("-") else f"{k}={n}"
    return None


def _look_alike(var: str, env: dict[str, str]) -> str | None:
    """A variable the container does set that plays `var`'s role: same last word, or a shared
    word and a value of the right shape (a URL for *_DSN/_URL)."""
    words = set(var.split("_"))
    tail = var.rsplit("_", maxsplit=1)[-1]
    urlish = tail in ("URL", "DSN", "URI", "ADDR", "ADDRESS", "HOST", "ENDPOINT")
    best = None
    for name, value in env.items():
        shared = words & set(name.split("_"))
        if name.split("_")[-1] == tail and name != var:
            return name
        if (urlish and ("://" in value or "@" in value) and best is None) or (
            shared - {"API", "APP", "SERVICE"} and best is None
        ):
            best = name
    return best


# The gRPC health protocol's answer for a service name the server has no status for
# (grpc-go's health server: codes.NotFound "unknown service"), as the kubelet relays it.
_UNKNOWN_SERVICE = re.compile(r"NotFound.{0,40}unknown service|unknown service", re.I)
_SERVICE_FIELD = re.compile(r"[\"']?service[\"']?\s*[:=]\s*[\"']([^\"']*)[\"']", re.I)


def _health_services(log: list[str]) -> list[str]:
    """The service names the app's own log says it set a health status for."""
    out: list[str] = []
    for line in log:
        if "serving" in line.lower() and (m := _SERVICE_FIELD.search(line)):
            out.append(m.group(1))
    return list(dict.fromkeys(out))


def _probe_kill(
    ctx: Ctx,
    pod: p.Pod,
    c: p.Container,
    cls: CauseClass,
    kind: str,
    kills: list[p.Event],
    eid: str | None,
    symptom: object,
) -> Finding:
    ref = ctx.workload_ref(pod)
    probe = probe_of(c, kind)
    message = str(kills[0]["message"])
    delay = probe.get("initial_delay_s", 0)
    period = probe.get("period_s", 10)
    threshold = probe.get("failure_threshold", 3)
    timeout = probe.get("timeout_s", 1)
    budget = delay + period * threshold
    target = f"{probe.get('kind', '?')} {probe.get('path', '')} port {probe.get('port', '?')}" + (
        f' service "{probe["service"]}"' if "service" in probe else ""
    )
    log, prev_id = ctx.facts.logs(ctx.ns, pod["name"], c["name"], True)
    started = any(
        ("started" in ln.lower() and " in " in ln.lower()) or "listening" in ln.lower()
        for ln in log
    )
    ports = ports_of(c)
    port = probe.get("port")
    # a probe on a port the container does not expose is refused however healthy the app is
    wrong_port = port is not None and bool(ports) and str(port) not in ports
    slow = (
        not started
        and len(log) > 0
        and not wrong_port
        and not (probe.get("kind") == "grpc" and _UNKNOWN_SERVICE.search(message))
    )
    probe_text = (
        f"initialDelaySeconds {delay}, periodSeconds {period}, failureThreshold {threshold}, "
        f"timeoutSeconds {timeout}"
    )
    follow = None
    unknown = probe.get("kind") == "grpc" and bool(_UNKNOWN_SERVICE.search(message))
    if unknown:
        asked = probe.get("service", "")
        known = _health_services(ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)[0] + log)
        cause = (
            f"the {kind} probe ({target}) asks the app's gRPC health service for the status of "
            f'service "{asked}", which its health server does not know: every check is '
            f"answered NotFound ({short(message, 120)}) and the kubelet kills a container that "
            "otherwise runs"
            + (
                f"; the app sets statuses only for {', '.join(repr(x) for x in known)} (its log)"
                if known
                else ""
            )
        )
        follow = (
            f'Drop service "{asked}" from the {kind} probe (the empty service asks for the '
            "server's overall status), or have the app set a status for that name."
        )
    elif wrong_port:
        cause = (
            f"the {kind} probe ({target}) targets port {port}, which the container does not "
            f"expose (ports {', '.join(ports)}): every probe fails ({short(message, 120)}) and "
            "the kubelet kills a container that otherwise runs"
        )
    elif slow:
        cause = (
            f"the {kind} probe ({target}) gives the app {budget}s to answer ({probe_text}) but it "
            "is still starting up when the kubelet kills it (exit 143, SIGTERM); it needs a "
            "startupProbe or a longer initialDelaySeconds"
        )
    elif answer := _probe_answer(log, str(probe.get("path") or ""), message):
        host_check = (
            probe.get("kind") == "http"
            and not probe.get("host")
            and bool(_HOST_WORDS.search(answer))
        )
        cause = (
            f"the {kind} probe ({target}, {probe_text}) is answered with an error and the kubelet "
            f"kills a container that otherwise runs: {short(message, 120)}; the app's own log "
            f'says why it refused the probe: "{short(answer, 220)}"'
            + (
                " — the kubelet's HTTP probe sets no Host, so it sends the pod's IP as the Host "
                "header, and the app's allowed-hosts check rejects that host"
                if host_check
                else ""
            )
        )
        follow = (
            "Give the probe an httpHeaders Host the app allows (or let the health endpoint skip "
            "the host check), then roll out again."
            if host_check
            else f"Make the endpoint the {kind} probe calls answer 2xx/3xx while the app is up "
            "(or point the probe at one that does)."
        )
    elif "statuscode: 404" in message and (
        home := health_home(
            ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)[0] + log,
            kind,
            str(probe.get("path") or ""),
        )
    ):
        path, who, said = home
        cause = (
            f"the {kind} probe ({target}, {probe_text}) asks for a path the app does not serve "
            f"({short(message, 80)}), and the kubelet kills a container that otherwise runs: "
            f"the app is served by {who}, which answers this check at {path} — its log: "
            f'"{short(said, 160)}"'
        )
        follow = f"Point the {kind} probe at {path}, then roll out again."
    else:
        timed_out = bool(re.search(r"timeout|deadline exceeded|timed out", message, re.I))
        waits = _probe_waits(ctx, pod, c, str(probe.get("path") or "")) if timed_out else None
        single = _one_at_a_time(c) if timed_out and not waits else None
        cause = (
            f"the {kind} probe ({target}, {probe_text}) fails and the kubelet kills a container "
            f"that otherwise runs: {short(message, 160)}"
            + (
                f" — the probe gives the app only timeoutSeconds {timeout}s to answer"
                if timed_out
                else ""
            )
            + (
                f'; what the probe waits on, in the app\'s own log: "{short(waits, 200)}" (the '
                "handler checks a dependency before it answers, and that dependency is slower "
                "than the timeout)"
                if waits
                else ""
            )
            + (
                f"; the server handles one request at a time ({single}, a single worker): "
                "while it serves a slow request the probe waits behind it past its timeout, "
                "so the kills come with load"
                if single
                else ""
            )
        )
    pods_id = ctx.facts.pods(ctx.ns)[1]
    return Finding(
        cls=cls,
        cause=cause,
        summary=f"{ref.name} is restarted over and over by its {kind} probe",
        impact=f"{ref.name} never stays up long enough to serve.",
        chain=chain(
            symptom,  # type: ignore[arg-type]
            link(M, f"Event {kills[0]['reason']}: {short(message)}", eid, about=ctx.pod_ref(pod)),
            link(
                M,
                f"Before the kill, the instance's log ended with: "
                f'"{short(last_before_shutdown(log).strip(), 200)}"',
                prev_id,
                about=ctx.pod_ref(pod),
            )
            if log and prev_id
            else None,
            link(
                C,
                f"The {kind} probe is {target} with {probe_text}"
                + (
                    f" — port {port} is none of the container's ports ({', '.join(ports)})."
                    if wrong_port
                    else " — shorter than the app's start-up (its log stops mid warm-up)."
                    if slow
                    else "."
                ),
                pods_id,
                about=ref,
            ),
        ),
        explains={str(ref)},
        follow_ups=[
            f"Point the {kind} probe at a port the container serves it on."
            if wrong_port
            else follow
            if follow
            else f"Add a startupProbe (or raise initialDelaySeconds/failureThreshold) so the "
            f"{kind} probe starts after start-up."
        ],
    )


_HOST_WORDS = re.compile(r"\bhost\b|HTTP_HOST|ALLOWED_HOSTS|host header|hostname", re.I)
_LEVEL = re.compile(r"\b(ERROR|FATAL|CRITICAL|SEVERE|WARN(?:ING)?)\b", re.I)


# what a process logs once it was asked to stop: its shutdown, not what it was doing
_SHUTDOWN = re.compile(
    r"\b(shutting down|shut ?down|stopping|stopped|graceful(ly)?|received (signal|SIGTERM)|"
    r"SIGTERM|signal 15|exiting|terminating)\b",
    re.I,
)


def last_before_shutdown(log: list[str]) -> str:
    """The last line a killed instance logged before its own shutdown lines (what it was
    doing when the kill came: "Database has migration lock", not "Shutdown COMPLETE")."""
    kept = list(log)
    while len(kept) > 1 and _SHUTDOWN.search(kept[-1]):
        kept.pop()
    return kept[-1]


def _probe_answer(log: list[str], path: str, message: str) -> str | None:
    """Why the app refused the probe, in its own words: for a probe answered with a status code
    ("HTTP probe failed with statuscode: 400"), the error or warning the app logged for that
    request: the lines just before the access line of a probe of `path` with that status, back
    to the previous access line. An app that logs no access line gives no answer here."""
    status = re.search(r"statuscode: (\d{3})", message)
    if status is None:
        return None
    code = status.group(1)
    probe_lines = [
        i for i, ln in enumerate(log) if text.answered(ln) == int(code) and (not path or path in ln)
    ]
    for i in reversed(probe_lines):
        window = []
        for ln in reversed(log[max(0, i - 4) : i]):
            if text.answered(ln) is not None:
                break
            window.append(ln.strip())
        said = [ln for ln in window if _LEVEL.search(ln)]
        if said:
            # the most severe line, and of those the earliest: the check that refused it
            return max(
                reversed(said), key=lambda ln: "ERROR" in ln.upper() or "FATAL" in ln.upper()
            )
    return None


_SLOW = re.compile(r"\bslow|timed? ?out|timeout|took \d|latency|deadline", re.I)


def _probe_waits(ctx: Ctx, pod: p.Pod, c: p.Container, path: str) -> str | None:
    """The log line (this instance's or the one before) that says the health endpoint, or a
    check it runs, is slow: what a probe that times out is waiting on."""
    health = re.compile(rf"health|{re.escape(path)}" if path else "health", re.I)
    for previous in (False, True):
        log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], previous)
        if not lid:
            continue
        hit = next((ln for ln in reversed(log) if _SLOW.search(ln) and health.search(ln)), None)
        if hit:
            return hit.strip()
    return None


# -- readiness --------------------------------------------------------------------------------


# -- init containers -----------------------------------------------------------------------------
