"""Containers that never start for a reason outside the program: an image the registry does not
have, a ConfigMap, Secret or key the pod references that does not exist, an init container that
fails. The chain ends at the reference a human fixes (the tag, the name, the key, the command).
"""

from __future__ import annotations

import difflib
import re

from tools.read import payloads as p
from triage.agent.planners.rules import meanings, text
from triage.agent.planners.rules.analyzers.common import (
    changed_since_healthy,
    command_of,
    container_fact,
    fatal,
    pod_problem_pods,
)
from triage.agent.planners.rules.analyzers.containers import _last, _state
from triage.agent.planners.rules.chain import Finding, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import Ref
from triage.agent.planners.rules.reads import NO_PULL_SECRET, PULL_DENIED, epoch, refreshers
from triage.core.causes import CauseClass
from triage.core.models import LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE

_PULL = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName")


_CONFIG = ("CreateContainerConfigError", "CreateContainerError")


def image_pull(ctx: Ctx) -> list[Finding]:
    out = []
    for pod, c in pod_problem_pods(ctx, lambda c: _state(c).get("reason") in _PULL):
        image = c["image"] or "?"
        events, eid = ctx.facts.events_about(ctx.ns, pod["name"])
        failed = next(
            (e for e in events if "pull" in str(e["message"]).lower() and e["reason"] == "Failed"),
            None,
        ) or next((e for e in events if "pull" in str(e["message"]).lower()), None)
        message = str((failed["message"] if failed else None) or _state(c).get("message") or "")
        lower = message.lower()
        denied = PULL_DENIED.search(message) is not None
        missing = any(w in lower for w in ("not found", "manifest unknown", "does not exist"))
        limited = any(w in lower for w in ("toomanyrequests", "too many requests", "rate limit"))
        platform = _platform_mismatch(ctx, pod, lower)
        why = (
            platform
            if platform
            else "the registry rate-limits the pulls (429 Too Many Requests): pull with "
            "credentials or from a mirror"
            if limited
            else "the registry refuses the credentials (no or wrong imagePullSecret)"
            if denied
            else "the tag (or repository) does not exist in the registry"
            if missing
            else "the registry cannot serve it"
        )
        pods_id = ctx.facts.pods(ctx.ns)[1]
        ref = ctx.workload_ref(pod)
        pulled_before = _pulled_before(ctx, pod, c, ref) if missing and not platform else None
        secret = _secret_missing(ctx, pod, events) if denied else None
        cause = (
            f"image {image} cannot be pulled: {why}"
            + (f' — the registry says "{short(message, 180)}"' if message else "")
            + (f"; {pulled_before[0]}" if pulled_before else "")
            + (f"; {secret[0]}" if secret else "")
        )
        f = Finding(
            cls=CauseClass.IMAGE_PULL,
            cause=cause,
            summary=f"{ref.name}'s container {c['name']} never starts: {_state(c).get('reason')} "
            f"for {image}",
            impact=f"Pods of {ref.name} cannot start.",
            chain=chain(
                link(
                    S,
                    f"Container {c['name']} of pod {pod['name']} is waiting: "
                    f"{_state(c).get('reason')} for image {image}.",
                    pods_id,
                    about=ctx.pod_ref(pod),
                    facts=(
                        container_fact(ctx, pod, c, "state.reason", str(_state(c).get("reason"))),
                    ),
                ),
                link(
                    M if pulled_before else C,
                    f"The kubelet reports: {short(message)}",
                    eid,
                    pods_id,
                    about=ref,
                )
                if message
                else link(C, f"Image {image} is not pullable.", pods_id, about=ref),
                link(C, pulled_before[0][0].upper() + pulled_before[0][1:] + ".", *pulled_before[1])
                if pulled_before
                else None,
                link(C, secret[0][0].upper() + secret[0][1:] + ".", *secret[1], about=ref)
                if secret
                else None,
            ),
            explains={str(ref), str(ctx.pod_ref(pod))},
            follow_ups=[
                "Point the workload at an image that exists (the same build where it moved, or a "
                "maintained one), or mirror it into a registry you control"
                if pulled_before
                else "Push the missing tag or fix the image reference"
                if not denied
                else "Add or fix the imagePullSecret for the registry"
            ],
        )
        changed_since_healthy(ctx, ref, f, field="image")
        out.append(f)
        if denied and (renewal := _renewal_refused(ctx, pod, c, message, eid)) is not None:
            out.append(renewal)
    return out


_UNRETRIEVED = re.compile(r"image pull secrets? \(([^)]*)\)")


def _secret_missing(
    ctx: Ctx, pod: p.Pod, events: list[p.Event]
) -> tuple[str, tuple[str | None, ...]] | None:
    """The pod's imagePullSecret the kubelet could not retrieve (it does not exist), and where
    the pod got that name: its ServiceAccount's imagePullSecrets (admission copies them into
    every pod that runs as it) or its own template; with the pull Secrets other accounts of
    the namespace list. Without it the kubelet pulls anonymously, and a private registry
    answers 401."""
    warned = next((e for e in events if e["reason"] == NO_PULL_SECRET), None)
    m = _UNRETRIEVED.search(str(warned["message"])) if warned else None
    if warned is None or m is None:
        return None
    names = [x.strip() for x in m.group(1).split(",") if x.strip()]
    account = pod["service_account"] or "default"
    accounts, aid = ctx.facts.service_accounts(ctx.ns)
    mine = next((a for a in accounts if a["name"] == account), None)
    listed = set(mine.get("pull_secrets") or []) if mine else set()
    source = (
        f"ServiceAccount {account}, which the pods run as, lists imagePullSecrets "
        f"{', '.join(names)}, and admission copies that into every pod that runs as it"
        if listed & set(names)
        else "the pod template's imagePullSecrets name it"
    )
    others = [
        f"ServiceAccount {a['name']} lists {', '.join(a.get('pull_secrets') or [])}"
        for a in accounts
        if a["name"] != account and set(a.get("pull_secrets") or []) - set(names)
    ]
    return (
        f"the pull Secret {', '.join(names)} does not exist (the kubelet: "
        f'"{short(str(warned["message"]), 140)}"), so it pulls without credentials; {source}'
        + (
            f"; other accounts here list other pull Secrets: {'; '.join(others[:2])}"
            if others
            else ""
        ),
        (ctx.facts.events_about(ctx.ns, pod["name"])[1], aid, ctx.facts.pods(ctx.ns)[1]),
    )


def _renewal_refused(
    ctx: Ctx, pod: p.Pod, c: p.Container, message: str, eid: str | None
) -> Finding | None:
    """A pull refused for its credentials while the Job that renews them fails: a failed Job
    pod of the namespace whose own log says the API server forbade it a verb on Secrets (its
    ServiceAccount's Role lacks it), so the pull Secret is never renewed and the registry
    refuses what is left of it (an expired token)."""
    for job_pod in refreshers(ctx):
        for jc in job_pod["containers"][:1]:
            log, lid = ctx.facts.logs(ctx.ns, job_pod["name"], jc["name"], False)
            said = next(
                (
                    ln
                    for ln in log
                    if text.family(ln) is text.Family.K8S_FORBIDDEN and "secrets" in ln
                ),
                None,
            )
            if said is None or lid is None:
                continue
            job = str(job_pod["owner"]["name"] if job_pod["owner"] else job_pod["name"])
            cron = next(
                (
                    x["name"]
                    for x in ctx.facts.cronjobs(ctx.ns)[0]
                    if job.startswith(x["name"] + "-") and job[len(x["name"]) + 1 :].isdigit()
                ),
                None,
            )
            who = f"CronJob {cron}'s Job {job}" if cron else f"Job {job}"
            ref = ctx.workload_ref(pod)
            renewer = ctx.ref("CronJob", cron) if cron else ctx.ref("Job", job)
            cause = (
                f"the registry refuses {ref.name}'s pull ({short(message, 120)}) because the "
                f"pull credentials are not refreshed: {who}, which renews a Secret, fails — the "
                f'API server forbids it: "{short(said, 220)}"; its ServiceAccount\'s Role lacks '
                "that verb on secrets, so the Secret keeps an expired token"
            )
            return Finding(
                cls=CauseClass.RBAC_FORBIDDEN,
                cause=cause,
                summary=f"{ref.name} cannot pull: {who} cannot renew the pull Secret (RBAC)",
                impact=f"New pods of {ref.name} cannot start.",
                chain=chain(
                    link(
                        S,
                        f"Container {c['name']} of pod {pod['name']} cannot pull: "
                        f"{short(message, 160)}",
                        eid,
                        about=ctx.pod_ref(pod),
                    ),
                    link(C, cause[0].upper() + cause[1:] + ".", lid, about=renewer),
                ),
                explains={str(ref), str(ctx.pod_ref(pod)), str(renewer)},
                follow_ups=[
                    f"Grant the verb the log names on secrets to {who}'s ServiceAccount; then "
                    "run it once to renew the Secret."
                ],
            )
    return None


RECREATED_S = 3600.0  # a pod this much younger than its revision was recreated, not deployed
# the user's words saying no release happened, or that the nodes were replaced
_NOT_DEPLOYED = re.compile(
    r"\b(nobody|no one|nothing|didn'?t|did not|haven'?t|have not|wasn'?t|was not)\b.{0,30}"
    r"\b(deploy|chang|touch|releas|push)|\bnodes?\b.{0,40}\b(upgrad|replac|drain|rotat|recycl)"
    r"|\b(upgrad|replac|drain|rotat|recycl)\w*\b.{0,40}\bnodes?\b|node ?pool",
    re.I,
)


def _pulled_before(
    ctx: Ctx, pod: p.Pod, c: p.Container, ref: Ref
) -> tuple[str, tuple[str | None, ...]] | None:
    """Why an image no release changed is pulled now: under imagePullPolicy IfNotPresent only a
    node without the image cached pulls it, so a pod recreated (rescheduled, its node replaced)
    on a fresh node is the first to ask the registry in a long while — and the registry no
    longer has the tag (removed or moved). Said when the rollout history shows no release of a
    new image (one revision, or the previous one ran the same image) and either the pod is much
    younger than its revision or the user says nothing was deployed or the nodes changed."""
    if ref.kind == "StatefulSet":
        return _stateful_pulled_before(ctx, pod, c, ref)
    history, hid = ctx.facts.history(ctx.ns, ref.name) if ref.kind == "Deployment" else (None, None)
    revisions = history["revisions"] if history else []
    owner = pod["owner"]["name"] if pod["owner"] else None
    revision = next((r for r in revisions if r["name"] == owner), None)
    if revision is None or hid is None:
        return None
    before = [r for r in revisions if r is not revision]
    if before and c["image"] not in before[-1]["images"]:
        return None  # a release brought this image: a wrong tag, not one that vanished
    policy = (c["spec"].get("pull_policy") if c["spec"] else None) or "IfNotPresent"
    born, made = epoch(pod["created"]), epoch(revision["created"])
    recreated = born is not None and made is not None and born - made >= RECREATED_S
    if policy == "Always" or not (recreated or _NOT_DEPLOYED.search(ctx.goal.words)):
        return None
    since = (
        f"revision {revision['revision']} ran it {(born - made) / 3600:.0f} h before pod "
        f"{pod['name']} was created"
        if recreated and born is not None and made is not None
        else f"revision {revision['revision']} runs it"
        + (", as the one before did" if before else " and is the only revision")
    )
    return (
        f"no release changed the image ({since}): with imagePullPolicy {policy} a node pulls "
        f"an image only when it does not have it cached, so the nodes that had it kept it "
        f"running; pod {pod['name']}, on node {pod['node'] or '?'}, must pull it anew, and the "
        "registry no longer serves that tag (removed or moved since it was first pulled)",
        (hid, ctx.facts.pods(ctx.ns)[1]),
    )


def _stateful_pulled_before(
    ctx: Ctx, pod: p.Pod, c: p.Container, ref: Ref
) -> tuple[str, tuple[str | None, ...]] | None:
    """`_pulled_before` for a StatefulSet, which keeps no rollout history the reader can date:
    said when no rollout is under way (its current revision is its update revision, and the pod
    runs it) and the user says nothing was deployed or the nodes changed."""
    sets, sid = ctx.facts.statefulsets(ctx.ns)
    sts = next((x for x in sets if x["name"] == ref.name), None)
    revision = pod["labels"].get("controller-revision-hash")
    if sts is None or sid is None or not _NOT_DEPLOYED.search(ctx.goal.words):
        return None
    if not sts["current_revision"] or sts["current_revision"] != sts["update_revision"]:
        return None
    if revision != sts["current_revision"]:
        return None
    policy = (c["spec"].get("pull_policy") if c["spec"] else None) or "IfNotPresent"
    if policy == "Always":
        return None
    return (
        f"no rollout is under way (StatefulSet {ref.name}'s current revision is its update "
        f"revision, {revision}, which pod {pod['name']} runs) and, as you say, nothing was "
        f"deployed: with imagePullPolicy {policy} a node pulls an image only when it does not "
        f"have it cached, so the node that had it kept it running; pod {pod['name']}, on node "
        f"{pod['node'] or '?'}, must pull it anew, and the registry no longer serves that tag "
        "(removed or moved since it was first pulled)",
        (sid, ctx.facts.pods(ctx.ns)[1]),
    )


_PLATFORM = re.compile(
    r"no match(ing)? (for platform|manifest for (?P<wanted>[\w/]+))|exec format error", re.I
)


def _platform_mismatch(ctx: Ctx, pod: p.Pod, message: str) -> str | None:
    """The image exists but has no build for the node's CPU architecture: the architecture
    the pod is placed on (its nodeSelector, else its node's label) against the image's."""
    m = _PLATFORM.search(message)
    if m is None:
        return None
    arch_key = "kubernetes.io/arch"
    node = next((n for n in ctx.facts.nodes()[0] if n["name"] == pod["node"]), None)
    arch = pod["node_selector"].get(arch_key) or (node["labels"].get(arch_key) if node else None)
    wanted = m.group("wanted") or (f"linux/{arch}" if arch else "the node's platform")
    where = (
        f"nodeSelector {arch_key}={pod['node_selector'][arch_key]}"
        if arch_key in pod["node_selector"]
        else f"node {pod['node']}"
    )
    return (
        f"the image has no build for {wanted}: the pod is placed on {arch or 'another'} "
        f"nodes ({where}) and the image's index lists no such platform — publish a "
        "multi-arch image or keep the workload on nodes of the architecture it is built for"
    )


def _mount_failed(ctx: Ctx, pod: p.Pod) -> str | None:
    """The kubelet's FailedMount message for a pod stuck creating its containers."""
    events, _ = ctx.facts.events_about(ctx.ns, pod["name"])
    return next(
        (str(e["message"]) for e in events if e["reason"] in ("FailedMount", "FailedAttachVolume")),
        None,
    )


_SECRET_NOT_FOUND = re.compile(r"secrets? \\?\"([\w.-]+)\\?\" not found", re.I)


def _maker_says(ctx: Ctx, message: str) -> tuple[str, str, Ref] | None:
    """What the object that should make the missing Secret or ConfigMap says about it: the
    newest event of another kind (SealedSecret, ExternalSecret, Certificate, …) recorded
    under the same name (reads.makers_of_missing), warnings first."""
    found = text.MISSING_OBJECT.search(message)
    if found is None:
        return None
    name = found.group(2)
    events, eid = ctx.facts.events_about(ctx.ns, name)
    theirs = [
        e
        for e in events
        if e["object"]["name"] == name and e["object"]["kind"] not in ("Pod", "Secret", "ConfigMap")
    ]
    if not theirs or eid is None:
        return None
    e = sorted(theirs, key=lambda x: (x["type"] == "Warning", str(x["last_seen"] or "")))[-1]
    kind = str(e["object"]["kind"])
    means = meanings.meaning(e["reason"], e["message"])
    return (
        f"{kind} {name}, which makes it, reports {e['reason']}: {short(str(e['message']), 200)}"
        + (f" ({means})" if means else ""),
        eid,
        ctx.ref(kind, name),
    )


_HOST_PATH = re.compile(r"hostPath type check failed: (?P<path>\S+) is not a (?P<type>[\w ]+)")


def _host_lacks(ctx: Ctx, pod: p.Pod, message: str) -> str:
    """' — node n-1 has no socket at /var/run/docker.sock: it runs containerd …': a hostPath
    volume assumes something of the node (a runtime's socket, a device, a directory) that the
    node it landed on does not have; what that node runs is what the assumption missed."""
    m = _HOST_PATH.search(message)
    if m is None:
        return ""
    node = next((n for n in ctx.facts.nodes()[0] if n["name"] == pod["node"]), None)
    runs = []
    if node is not None:
        if node.get("runtime"):
            runs.append(f"its container runtime is {node.get('runtime')}")
        runs += [f"{k}={v}" for k, v in node["labels"].items() if "runtime" in k.lower()]
    return (
        f" — the hostPath volume needs {m.group('path')} to be a {m.group('type').strip()} on "
        f"node {pod['node']}, which has none there"
        + (f" ({'; '.join(runs)})" if runs else "")
        + ": the workload assumes a host the node is not (a runtime's socket, a device, a "
        "directory it does not provide)"
    )


def config_reference(ctx: Ctx) -> list[Finding]:
    """A container that cannot be created or a volume that cannot be mounted because what it
    references (a ConfigMap, a Secret, a key) does not exist: the kubelet names it; the
    ConfigMaps that do exist are listed beside it (a rename shows)."""
    out = []
    seen: set[str] = set()
    stuck = [
        (pod, c)
        for pod, c in pod_problem_pods(
            ctx, lambda c: _state(c).get("reason") in (*_CONFIG, "ContainerCreating")
        )
        if _state(c).get("reason") in _CONFIG or _mount_failed(ctx, pod)
    ]
    for pod, c in stuck:
        ref = ctx.workload_ref(pod)
        if str(ref) in seen:
            continue
        seen.add(str(ref))
        events, eid = ctx.facts.events_about(ctx.ns, pod["name"])
        message = str(_state(c).get("message") or "") or (_mount_failed(ctx, pod) or "")
        if not message:
            message = next(
                (str(e["message"]) for e in events if "not found" in str(e["message"])), ""
            )
        pods_id = ctx.facts.pods(ctx.ns)[1]
        names, cid = ctx.facts.configmap_names(ctx.ns)
        missing = [n for n in pod["configmaps"] if cid and n not in names]
        present = [n for n in names if n != "kube-root-ca.crt"]
        kind = "mounted" if _state(c).get("reason") == "ContainerCreating" else "referenced"
        cause = f"pod {pod['name']} {kind} configuration that does not exist: {short(message, 200)}"
        if missing and cid:
            cause += (
                f" — ConfigMap {', '.join(missing)} is not in {ctx.ns} (ConfigMaps there: "
                f"{', '.join(present) or 'none'})"
            )
        cause += _keys_there(ctx, pod, message)
        secret = _SECRET_NOT_FOUND.search(message)
        if secret:
            # Secrets are not read; what the kubelet says, and the rule it follows
            cause += (
                f" — Secret {secret.group(1)} is not in {ctx.ns}, and a pod can only use Secrets "
                "of its own namespace: one created in another namespace (by cert-manager, a "
                "sync job) must be created, or copied, in this one"
            )
        cause += _host_lacks(ctx, pod, message)
        maker = _maker_says(ctx, message)
        if maker is not None:
            said_text, maker_id, maker_ref = maker
            cause += f"; {said_text}"
        f = Finding(
            cls=CauseClass.MISSING_CONFIG_REFERENCE,
            cause=cause,
            summary=f"{ref.name}'s containers cannot be created ({_state(c).get('reason')})",
            impact=f"Pods of {ref.name} never start.",
            chain=chain(
                link(
                    S,
                    f"Container {c['name']} of pod {pod['name']} is waiting: "
                    f"{_state(c).get('reason')}.",
                    pods_id,
                    about=ctx.pod_ref(pod),
                ),
                link(M, f"The kubelet reports: {short(message)}", pods_id, eid, about=ref),
                link(
                    C,
                    f"ConfigMap {', '.join(missing)} does not exist in {ctx.ns}; the ConfigMaps "
                    f"there are {', '.join(present) or 'none'}.",
                    cid,
                    about=ref,
                    facts=tuple(
                        fact("k8s.configmap_names", "", "contains", n, namespace=ctx.ns)
                        for n in present[:1]
                    ),
                )
                if missing and cid
                else None,
            ),
            explains={str(ref)},
            follow_ups=["Create the missing ConfigMap/Secret (or key), or fix the reference."],
        )
        if maker is not None:  # why it is missing, in the words of what makes it
            f.chain.append(
                link(C, said_text[0].upper() + said_text[1:] + ".", maker_id, about=maker_ref)
                or f.chain[-1]
            )
        if f.chain and f.chain[-1].role is not C:
            f.chain[-1] = f.chain[-1].model_copy(update={"role": C})
        changed_since_healthy(ctx, ref, f, field="volume")
        out.append(f)
    return out


def _keys_there(ctx: Ctx, pod: p.Pod, message: str) -> str:
    """' — ConfigMap rules holds the keys promo-rules.yaml (nearest to promo-rules.yml)':
    the keys the referenced ConfigMaps do hold, when the kubelet says one is missing."""
    found = text.missing_config_key(message)
    if found is None:
        return ""
    key, named = found
    out = []
    for cm in [named] if named else pod["configmaps"]:
        listed, _ = ctx.facts.listed("k8s.configmap_keys", dict, namespace=ctx.ns, name=cm)
        for item in listed:
            keys = [str(k) for k in item.get("keys") or []]
            near = difflib.get_close_matches(key, keys, n=1, cutoff=0.6)
            out.append(
                f"ConfigMap {cm} holds the key(s) {', '.join(keys[:8]) or 'none'}"
                + (f", not {key} ({near[0]} is the nearest: renamed?)" if near else f", not {key}")
            )
    return (" — " + "; ".join(out)) if out else ""


def init_containers(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    seen: set[str] = set()
    for pod in ctx.focus_pods:
        for c in pod["init_containers"]:
            state, last = _state(c), _last(c)
            failed = (
                state.get("reason") in ("CrashLoopBackOff", "Error")
                or last.get("exit_code") not in (None, 0)
                or (state.get("kind") == "terminated" and state.get("exit_code") not in (None, 0))
            )
            stuck = state.get("kind") == "running" and pod["phase"] == "Pending"
            if not (failed or stuck):
                continue
            ref = ctx.workload_ref(pod)
            if str(ref) in seen:
                continue
            seen.add(str(ref))
            pods_id = ctx.facts.pods(ctx.ns)[1]
            code = (last or state).get("exit_code")
            line, lid, previous = fatal(ctx, pod, c["name"])
            command = command_of(c)
            if (
                line is not None
                and line.family in (text.Family.CONNECTION, text.Family.DNS)
                and not failed
            ):
                continue  # waiting for a dependency: the network analyzers follow it
            # no log at all: the runtime's own word for why it could not start it (StartError)
            runtime = str((last or state).get("message") or "") if line is None else ""
            if line is None and not runtime:
                events, _ = ctx.facts.events_about(ctx.ns, pod["name"])
                runtime = next(
                    (str(e["message"]) for e in events if _NO_EXECUTABLE.search(str(e["message"]))),
                    "",
                )
            what = (
                short(line.text, 200)
                if line
                else f"exit code {code}"
                + (f': the runtime says "{short(runtime, 200)}"' if runtime else "")
            )
            cause = f"init container {c['name']} fails: {what}" + (
                f" (its command is `{short(command, 120)}`)" if command else ""
            )
            serving = _serves(ctx, pod, c) if stuck else None
            if serving is not None:
                cause = _plain_init_server(pod, c, serving)
            missing_exe = _NO_EXECUTABLE.search(runtime)
            if missing_exe:
                cause += (
                    f"; image {c['image']} has no {missing_exe.group('exe')}: the process "
                    "cannot even start (a minimal image ships no shell; call the program "
                    "directly, or use an image that has it)"
                )
            if code == 127 or (line and line.family is text.Family.COMMAND):
                image = c["spec"]["image"] if c["spec"] else None
                cause = (
                    f"init container {c['name']} runs a command that does not exist: {what} "
                    f"(exit {code}: not found"
                    + (f" in its image {image}" if image else "")
                    + f" — a typo in `{short(command, 120)}`, or a tool "
                    + ("that image does not ship" if image else "its image does not ship")
                    + "?)"
                )
            out.append(
                Finding(
                    cls=CauseClass.INIT_CONTAINER_FAILING,
                    cause=cause,
                    summary=f"{ref.name}'s pods are stuck in Init: init container {c['name']} "
                    f"{'fails' if failed else 'never finishes'}",
                    impact=f"The main containers of {ref.name} never start.",
                    chain=chain(
                        link(
                            S,
                            f"Pod {pod['name']} is {pod['phase']}: init container {c['name']} is "
                            f"{state.get('reason') or state.get('kind')}"
                            + (f", last exit code {code}" if code is not None else "")
                            + ".",
                            pods_id,
                            about=ctx.pod_ref(pod),
                        ),
                        link(
                            C,
                            cause[0].upper() + cause[1:] + "."
                            if serving
                            else f"Its {'crashed instance' if previous else 'log'} says: {what}"
                            + (f"; command: {short(command, 160)}" if command else ""),
                            lid,
                            pods_id,
                            about=ref,
                        ),
                    ),
                    explains={str(ref)},
                    follow_ups=[
                        f"Give init container {c['name']} restartPolicy: Always (a native "
                        "sidecar), or run it as an ordinary container."
                        if serving
                        else f"Fix the command of init container {c['name']}."
                    ],
                )
            )
            changed_since_healthy(ctx, ref, out[-1], field="image")
    return out


# A server saying it is up: what a process that never exits prints once it serves.
_SERVING = re.compile(
    r"ready (?:for|to accept) (?:new )?connections|accepting connections|listening (?:on|at)\b|"
    r"serving (?:on|at)\b|server started|started server|now listening",
    re.I,
)


def _serves(ctx: Ctx, pod: p.Pod, c: p.Container) -> str | None:
    """The line in which a still-running init container says it serves, when it is a plain
    init container (not a native sidecar): a server, which never exits by design."""
    spec = c["spec"]
    if spec is not None and spec.get("restart_policy") == "Always":
        return None
    log, _ = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
    return next((str(x) for x in reversed(log) if _SERVING.search(str(x))), None)


def _plain_init_server(pod: p.Pod, c: p.Container, serving: str) -> str:
    names = [x["name"] for x in pod["init_containers"]]
    after = names[names.index(c["name"]) + 1 :] if c["name"] in names else []
    blocked = ", ".join([*(f"init container {n}" for n in after), "the app containers"])
    return (
        f"init container {c['name']} is a server that never exits (its log: "
        f'"{short(serving, 140)}"), but it is a plain init container, without restartPolicy: '
        "Always: init containers run one at a time and each must exit before the next starts, "
        f"so {blocked} never start; as a native sidecar (restartPolicy: Always on the init "
        "container, Kubernetes 1.29+) it would keep running beside them"
    )


# The container runtime's words for an executable that is not in the image (runc, crun).
_NO_EXECUTABLE = re.compile(
    r"exec: \\?\"(?P<exe>[^\"\\]+)\\?\":? (?:stat \S+: )?(?:no such file or directory|"
    r"executable file not found)",
    re.I,
)
