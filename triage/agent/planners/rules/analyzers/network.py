"""Traffic that cannot get where it should: Services and Ingresses (the dependencies a
workload calls, and the NetworkPolicies between them: dependencies.py).

- A Service whose selector matches no pod, or whose targetPort no pod listens on.
- A Service whose selector also matches pods of another owner (a forgotten debug pod, another
  release's pods) that answer its requests with errors the others do not: those pods get
  their share of the traffic and fail it.
- An Ingress naming a class, a backend Service or a TLS Secret that is not there (a Secret's
  absence is known from the controller's event: Secrets are never read).
- The Ingress for a host the user names living in another namespace than the Service it
  routes to: an Ingress routes only to Services of its own namespace.
- A dependency: a host a failing container cannot reach (its log line, else its settings) is
  followed to the Service it names, in whatever namespace: no such Service (a wrong host), a
  port the Service does not expose (a wrong port — both named), a Service without ready
  endpoints (then why: scaled to zero, or its own pods failing), or reachable but dropped by a
  NetworkPolicy (egress from the caller, ingress to the callee, DNS to kube-system).
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from tools.read import payloads as p
from tools.read.kube_kinds import routes_host
from triage.agent.planners.rules import text
from triage.agent.planners.rules.analyzers.common import last_healthy, ports_of
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import selects
from triage.agent.planners.rules.quantities import size_bytes
from triage.agent.planners.rules.reads import (
    controller_pods,
    epoch,
    ingresses_elsewhere,
    selector_text,
)
from triage.core.causes import CauseClass
from triage.core.models import Fact, LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _ports_of(pods: list[p.Pod]) -> set[str]:
    return {port for pod in pods for c in pod["containers"] for port in ports_of(c)}


def _owner_name(pod: p.Pod) -> str:
    owner = pod["owner"]
    name = owner["name"] if owner is not None and owner["name"] else pod["name"]
    # a ReplicaSet is named <deployment>-<hash>: the Deployment is what people know
    if owner is not None and owner["kind"] == "ReplicaSet" and "-" in name:
        return name.rsplit("-", 1)[0]
    return name


def nearest_labels(selector: dict[str, str], pods: list[p.Pod]) -> list[str]:
    """The pods that come closest to the selector, and key by key where they differ
    ("pods of checkout carry tier=frontend where the selector wants tier=front")."""

    def score(pod: p.Pod) -> int:
        return sum(1 for k, v in selector.items() if pod["labels"].get(k) == v)

    by_owner: dict[str, p.Pod] = {}
    for pod in sorted(pods, key=score, reverse=True):
        by_owner.setdefault(_owner_name(pod), pod)
    out = []
    for pod in list(by_owner.values())[:2]:
        diffs = [
            f"{k}={pod['labels'][k]} where the selector wants {k}={v}"
            if k in pod["labels"]
            else f"no {k} label where the selector wants {k}={v}"
            for k, v in selector.items()
            if pod["labels"].get(k) != v
        ]
        out.append(f"pods of {_owner_name(pod)} carry " + ", ".join(diffs))
    return out


def _target_port_fact(ctx: Ctx, svc: p.Service, port: Any, ns: str | None = None) -> Fact:
    """The fact a port-mismatch chain rests on: that Service port's targetPort, as read."""
    return fact(
        "k8s.services",
        f"[name={svc['name']}].ports[port={port.get('port')}].targetPort",
        "eq",
        port["targetPort"],
        namespace=ns or ctx.ns,
    )


def _declared_ports(matched: list[p.Pod]) -> list[p.ContainerPort]:
    """The container ports the first matched pod declares (the pods of one selector share a
    template)."""
    return [
        x
        for pod in matched[:1]
        for c in pod["containers"]
        for x in (c["spec"]["ports"] if c["spec"] else [])
    ]


def crossed_port(svc: p.Service, matched: list[p.Pod]) -> tuple[Any, str, Any, Any] | None:
    """(service port, its name, the container port its targetPort reaches, the container
    port of the same name) when a Service port named like one of the container's ports
    (http) forwards to another of them (metrics): the endpoints exist and answer, but from
    the wrong listener."""
    declared = _declared_ports(matched)
    by_name = {str(x.get("name")): x for x in declared if x.get("name")}
    by_number = {str(x.get("port")): x for x in declared}
    for port in svc["ports"]:
        name, target = str(port.get("name") or ""), port.get("targetPort")
        if not name or name not in by_name or target is None:
            continue
        reached = by_name.get(str(target)) or by_number.get(str(target))
        if reached is not None and reached is not by_name[name]:
            return port, name, reached, by_name[name]
    return None


def crossed_finding(
    ctx: Ctx,
    svc: p.Service,
    crossed: tuple[Any, str, Any, Any],
    eid: str | None,
    sid: str | None,
    pods_id: str | None,
    ns: str | None = None,
) -> Finding:
    """`crossed_port`'s finding, for a Service of this namespace or of `ns`."""
    port, name, reached, meant = crossed
    ref = ctx.ref("Service", svc["name"], ns)
    cause = (
        f"Service {svc['name']}'s port {port.get('port')} ({name}) has targetPort "
        f"{port['targetPort']!r}, the container's {reached.get('name') or 'other'} port "
        f"{reached.get('port')}, while the container serves {name} on port {meant.get('port')}: "
        f"requests to port {port.get('port')} reach the {reached.get('name') or 'wrong'} "
        "listener, which does not serve them"
    )
    return Finding(
        cls=CauseClass.SERVICE_PORT_MISMATCH,
        cause=cause,
        summary=f"Service {svc['name']} forwards its {name} port to the wrong container port",
        impact=f"Requests through Service {svc['name']} port {port.get('port')} fail.",
        chain=chain(
            link(S, f"Service {svc['name']} has ready endpoints.", eid, about=ref),
            link(
                C,
                cause[0].upper() + cause[1:] + ".",
                sid,
                pods_id,
                about=ref,
                facts=(_target_port_fact(ctx, svc, port, ns),),
            ),
        ),
        strength=Strength.INFERRED,
        explains={str(ref)},
        follow_ups=[f"Set targetPort of {svc['name']} port {port.get('port')} to {name}."],
    )


def _other_protocol(svc: p.Service, matched: list[p.Pod]) -> tuple[Any, Any] | None:
    """(service port, container port) when a Service port's targetPort reaches, by number
    or name, only container ports of another protocol (the Service port says TCP, unset
    means TCP, and the container listens on UDP 9125): kube-proxy forwards the Service
    port's protocol only, so the other protocol's traffic to the ClusterIP goes nowhere."""
    declared = _declared_ports(matched)
    for port in svc["ports"]:
        target, mine = port.get("targetPort"), str(port.get("protocol") or "TCP")
        if target is None:
            continue
        reached = [x for x in declared if str(target) in (str(x.get("port")), x.get("name"))]
        if not reached or any(str(x.get("protocol") or "TCP") == mine for x in reached):
            continue
        served = {  # DNS's 53: a TCP and a UDP Service port to the same listener
            str(y.get("protocol") or "TCP") for y in svc["ports"] if y.get("targetPort") == target
        }
        if not any(str(x.get("protocol") or "TCP") in served for x in reached):
            return port, reached[0]
    return None


def _protocol_finding(
    ctx: Ctx,
    svc: p.Service,
    other: tuple[Any, Any],
    eid: str | None,
    sid: str | None,
    pods_id: str | None,
) -> Finding:
    port, reached = other
    mine, theirs = str(port.get("protocol") or "TCP"), str(reached.get("protocol") or "TCP")
    ref = ctx.ref("Service", svc["name"])
    listener = f"{reached.get('name')} ({reached.get('port')}/{theirs})"
    cause = (
        f"Service {svc['name']}'s port {port.get('port')}"
        + (f" ({port['name']})" if port.get("name") else "")
        + f" has protocol {mine}"
        + (" (a port that names none defaults to TCP)" if mine == "TCP" else "")
        + f", while the container port it targets is {listener}: the Service forwards {mine} "
        f"only, so the {theirs} traffic clients send to {svc['name']}:{port.get('port')} "
        "reaches no pod"
        + (" — and UDP gets no error back, so the senders do not notice" if theirs == "UDP" else "")
    )
    return Finding(
        cls=CauseClass.SERVICE_PORT_MISMATCH,
        cause=cause,
        summary=f"Service {svc['name']} forwards {mine} where its pods listen on {theirs}",
        impact=f"{theirs} traffic to Service {svc['name']} port {port.get('port')} is lost.",
        chain=chain(
            link(S, f"Service {svc['name']} has ready endpoints.", eid, about=ref),
            link(C, cause + ".", sid, pods_id, about=ref),
        ),
        strength=Strength.INFERRED,
        explains={str(ref)},
        follow_ups=[f"Set protocol: {theirs} on {svc['name']} port {port.get('port')}."],
    )


def _port_mismatch(
    ctx: Ctx,
    svc: p.Service,
    matched: list[p.Pod],
    eid: str | None,
    sid: str | None,
    pods_id: str | None,
    *,
    has_endpoints: bool,
) -> Finding | None:
    """A targetPort the selected pods do not declare: by name, the endpoints controller
    leaves the pods out (no endpoints); by number, the endpoints exist and connections are
    refused. Only decided when the pods declare their ports."""
    ready_pods = [x for x in matched if x["ready"]]
    ports = _ports_of(matched)
    crossed = crossed_port(svc, matched) if has_endpoints else None
    if crossed is not None and ready_pods:
        return crossed_finding(ctx, svc, crossed, eid, sid, pods_id)
    other = _other_protocol(svc, matched) if ready_pods else None
    if other is not None:
        return _protocol_finding(ctx, svc, other, eid, sid, pods_id)
    bad = [
        x
        for x in svc["ports"]
        if x.get("targetPort") is not None
        and str(x["targetPort"]) not in ports
        and (not has_endpoints or isinstance(x["targetPort"], int))
    ]
    if not (ready_pods and bad and ports):
        return None
    port = bad[0]
    ref = ctx.ref("Service", svc["name"])
    named = not isinstance(port["targetPort"], int)
    declared = ", ".join(
        sorted(
            f"{x.get('name')} ({x.get('port')})" if x.get("name") else str(x.get("port"))
            for x in _declared_ports(matched)
        )
    )
    what = (
        f"named targetPort {port['targetPort']!r}, which no container of its pods declares "
        f"(they declare {declared}), so the endpoints controller leaves them out"
        if named
        else f"targetPort {port['targetPort']}, but its pods listen on {declared}, so "
        "connections through it are refused"
    )
    return Finding(
        cls=CauseClass.SERVICE_PORT_MISMATCH,
        cause=f"Service {svc['name']} sends port {port.get('port')} to {what}",
        summary=f"Service {svc['name']} forwards to a port its pods do not listen on",
        impact=f"Connections through Service {svc['name']} fail.",
        chain=chain(
            link(
                S,
                (
                    f"Service {svc['name']} has ready endpoints, "
                    if has_endpoints
                    else f"Service {svc['name']} has no ready endpoints although "
                )
                + f"{len(ready_pods)} pod(s) are Ready.",
                eid,
                pods_id,
                about=ref,
            ),
            link(
                C,
                f"Its port {port.get('port')} has targetPort {port['targetPort']!r}; the "
                f"selected pods' container ports are {declared}.",
                sid,
                pods_id,
                about=ref,
                facts=(_target_port_fact(ctx, svc, port),),
            ),
        ),
        strength=Strength.INFERRED,
        explains={str(ref), *(str(ctx.workload_ref(x)) for x in matched[:1])},
        follow_ups=[f"Set targetPort of {svc['name']} to the port the container listens on."],
    )


def scaled_to_zero(ctx: Ctx, svc: p.Service) -> list[p.Deployment | p.StatefulSet]:
    """The workloads whose pod template the Service's selector matches and that are scaled
    to 0 replicas: no endpoints because nothing runs, not because the labels differ."""
    out: list[p.Deployment | p.StatefulSet] = [
        d
        for d in ctx.facts.deployments(ctx.ns)[0]
        if d["replicas"] == 0 and selects(svc["selector"], d["template_labels"])
    ]
    # a StatefulSet's pods carry (at least) its selector's labels
    out += [
        s
        for s in ctx.facts.statefulsets(ctx.ns)[0]
        if s["replicas"] == 0 and s["selector"] and selects(svc["selector"], s["selector"])
    ]
    return out


def _backs_a_workload(ctx: Ctx, svc: p.Service) -> bool:
    """A Deployment or StatefulSet whose pod template carries the Service's selector exists:
    with no pods of it running, the labels are right and why it has none (a refused create,
    a failing rollout) is the cause, not the selector."""
    if any(
        selects(svc["selector"], d["template_labels"]) for d in ctx.facts.deployments(ctx.ns)[0]
    ):
        return True
    # a StatefulSet's pods carry (at least) its selector's labels
    return any(
        bool(s["selector"]) and selects(svc["selector"], s["selector"])
        for s in ctx.facts.statefulsets(ctx.ns)[0]
    )


def _answers(ctx: Ctx, pod: p.Pod) -> tuple[list[tuple[int, str]], str | None]:
    """(status, line) for each request the pod's current log says it answered."""
    for c in pod["containers"]:
        log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
        found = [(code, ln) for ln in log if (code := text.answered(ln)) is not None]
        if found and lid is not None:
            return found, lid
    return [], None


def _failing_share(answers: list[tuple[int, str]]) -> float:
    return sum(code >= 400 for code, _ in answers) / len(answers) if answers else 0.0


def _stray_endpoints(
    ctx: Ctx,
    svc: p.Service,
    matched: list[p.Pod],
    eid: str | None,
    sid: str | None,
    pods_id: str | None,
) -> Finding | None:
    """The Service's selector matches pods of more than one owner, and the requests those of
    one owner answer fail (4xx/5xx in their own access log) while the others' succeed: a
    share of the Service's traffic goes to pods that were never meant to serve it."""
    owners: dict[str, list[p.Pod]] = {}
    for pod in matched:
        owners.setdefault(_owner_name(pod), []).append(pod)
    if len(owners) < 2:
        return None
    failing: list[tuple[p.Pod, str, str]] = []
    serving: list[p.Pod] = []
    for pod in matched:
        answers, lid = _answers(ctx, pod)
        if not answers or lid is None:
            continue
        share = _failing_share(answers)
        if share >= 0.5:
            line = next(ln for code, ln in answers if code >= 400)
            failing.append((pod, line, lid))
        elif share <= 0.1:
            serving.append(pod)
    odd = {_owner_name(x) for x, _, _ in failing}
    if not failing or not serving or odd & {_owner_name(x) for x in serving}:
        return None
    pod, line, lid = failing[0]
    good = serving[0]
    ref = ctx.ref("Service", svc["name"])
    sel = ",".join(f"{k}={v}" for k, v in svc["selector"].items())
    owner = pod["owner"]
    whose = (
        f"a bare pod that no controller owns ({pod['name']})"
        if owner is None
        else f"{pod['name']}, of {owner['kind']} {owner['name']}"
    )
    images = {c["image"] for c in pod["containers"] if c["image"]}
    serving_images = {c["image"] for c in good["containers"] if c["image"]}
    differ = [
        f"{k}={v}"
        for k, v in sorted(pod["labels"].items())
        if good["labels"].get(k) != v and k not in svc["selector"]
    ]
    unlike = "; ".join(
        x
        for x in (
            f"image {', '.join(sorted(images))} where {_owner_name(good)} runs "
            f"{', '.join(sorted(serving_images))}"
            if images and images != serving_images
            else "",
            f"labels {', '.join(differ)}" if differ else "",
        )
        if x
    )
    ready = len(matched)
    return Finding(
        cls=CauseClass.SERVICE_SELECTOR_MISMATCH,
        cause=f"Service {svc['name']} selects {sel}, which {whose} also carries"
        + (f" ({unlike})" if unlike else "")
        + f": it is one of the Service's {ready} endpoints and answers its share of the "
        f"requests with errors",
        summary=f"Part of the requests to Service {svc['name']} fail: they reach {pod['name']}",
        impact=f"About {len(failing)} in {ready} requests to Service {svc['name']} reach a pod "
        "that fails them; the others succeed.",
        chain=chain(
            link(
                S,
                f"{pod['name']}, an endpoint of Service {svc['name']}, answers requests with "
                f"errors: {short(line.strip(), 200)}; {good['name']} answers them.",
                lid,
                about=ref,
            ),
            link(
                M,
                f"Service {svc['name']} selects {sel}: {whose} carries those labels"
                + (f" ({unlike})" if unlike else "")
                + f", so it is one of the {ready} endpoints the Service spreads requests over.",
                sid,
                pods_id,
                eid,
                about=ctx.ref("Pod", pod["name"]),
            ),
            link(
                C,
                f"{pod['name']} is not part of {_owner_name(good)} but carries the selector "
                f"{sel} of Service {svc['name']}: remove it (or its labels), or narrow the "
                "selector to a label only the serving pods carry.",
                sid,
                pods_id,
                about=ref,
            ),
        ),
        strength=Strength.STATED,
        explains={str(ref), str(ctx.ref("Pod", pod["name"]))},
        follow_ups=[
            f"Take {pod['name']} out of the Service (delete it or change its labels), or add "
            f"a label to the selector of {svc['name']} that only the serving pods carry."
        ],
    )


# How people say a share of the requests fail and the rest work: the mark of a Service whose
# endpoints are not all alike.
_NOW_AND_THEN = re.compile(
    r"\bintermittent|\bsometimes\b|\bevery (second|other|few|third)\b|\bhalf (of )?(the|my|our)?"
    r"|\boccasional|\brandom(ly)?\b|\bflak(y|ey)\b|\bon and off\b|\bnow and then\b"
    r"|\b(retry|retrying|refresh(ing)?|reload(ing)?)\b.{0,20}\b(works?|fixes|helps)\b"
    r"|\bsome (of the )?(requests|calls|searches|pages|users)\b",
    re.I,
)


def _program(pod: p.Pod) -> tuple[str, tuple[str, ...]]:
    """What a pod runs: its first container's image repository (no tag) and command line."""
    c = pod["containers"][0] if pod["containers"] else None
    spec = c["spec"] if c else None
    image = str(c["image"] or "").rsplit("@", 1)[0] if c else ""
    repo = image.rsplit(":", 1)[0] if ":" in image.rsplit("/", 1)[-1] else image
    return repo, tuple((spec["command"] + spec["args"]) if spec else ())


def _mixed_endpoints(
    ctx: Ctx,
    svc: p.Service,
    matched: list[p.Pod],
    eid: str | None,
    sid: str | None,
    pods_id: str | None,
) -> Finding | None:
    """The Service's selector matches the pods of two workloads that run different programs
    (another image, or the same image started with another command), and part of its
    requests fail while the rest work: the selector is wider than the workload that serves
    it. Pods of one workload running two versions (a canary, a rolling update) run the same
    program and are not this."""
    if not _NOW_AND_THEN.search(ctx.goal.words) or pods_id is None:
        return None
    owners: dict[str, list[p.Pod]] = {}
    for pod in matched:
        owners.setdefault(_owner_name(pod), []).append(pod)
    if len(owners) < 2:
        return None
    programs = {name: _program(pods[0]) for name, pods in owners.items()}
    if len(set(programs.values())) < 2:
        return None
    asked = [
        n for n, pods in owners.items() if any(ctx.in_focus(ctx.workload_ref(x)) for x in pods)
    ]
    serving = asked[0] if asked else max(owners, key=lambda n: len(owners[n]))
    others = [n for n in owners if programs[n] != programs[serving]]
    if not others:
        return None
    stray = others[0]
    good, odd = owners[serving][0], owners[stray][0]
    sel = ",".join(f"{k}={v}" for k, v in svc["selector"].items())
    differ = [
        f"{k}={good['labels'][k]}"
        for k in sorted(good["labels"])
        if k not in svc["selector"]
        and k in odd["labels"]
        and odd["labels"][k] != good["labels"][k]
        and "hash" not in k
    ]
    repo, cmd = programs[stray]
    runs = (
        f"image {repo}"
        if repo != programs[serving][0]
        else f"`{' '.join(cmd)[:80]}`"
        if cmd
        else "another program"
    )
    total = len(matched)
    cause = (
        f"Service {svc['name']} selects {sel}, which also selects the {len(owners[stray])} "
        f"pod(s) of {stray} — a different workload that runs {runs}, not {serving}'s server — "
        f"so they are {len(owners[stray])} of the Service's {total} endpoints and the requests "
        f"that land on them fail while the rest reach {serving}"
        + (
            f"; narrow the selector with a label only {serving}'s pods carry "
            f"({', '.join(differ[:2])})"
            if differ
            else ""
        )
    )
    ref = ctx.ref("Service", svc["name"])
    return Finding(
        cls=CauseClass.SERVICE_SELECTOR_MISMATCH,
        cause=cause,
        summary=f"Service {svc['name']}'s selector also selects {stray}'s pods",
        impact=f"About {len(owners[stray])} in {total} requests to Service {svc['name']} fail.",
        chain=chain(
            link(
                S,
                f"Service {svc['name']} has {total} ready endpoints: "
                + ", ".join(f"{len(v)} of {k}" for k, v in owners.items())
                + "; part of its requests fail and the rest work.",
                eid,
                about=ref,
            ),
            link(C, cause[0].upper() + cause[1:] + ".", sid, pods_id, about=ref),
        ),
        strength=Strength.INFERRED,
        explains={str(ref), *(str(ctx.workload_ref(v[0])) for v in owners.values())},
        follow_ups=[f"Narrow the selector of Service {svc['name']} to {serving}'s pods."],
    )


def services(ctx: Ctx) -> list[Finding]:
    svcs, sid = ctx.facts.services(ctx.ns)
    pods, pods_id = ctx.facts.pods(ctx.ns)
    out = []
    for svc in svcs:
        ref = ctx.ref("Service", svc["name"])
        if not svc["selector"]:
            continue
        eps, eid = ctx.facts.endpoints(ctx.ns, svc["name"])
        if eps is None:
            continue
        matched = [x for x in pods if selects(svc["selector"], x["labels"])]
        if eps["ready"]:
            stray = _stray_endpoints(ctx, svc, matched, eid, sid, pods_id) or _mixed_endpoints(
                ctx, svc, matched, eid, sid, pods_id
            )
            if stray is not None:
                out.append(stray)
            # endpoints exist: a numeric targetPort that no container declares still refuses
            finding = _port_mismatch(ctx, svc, matched, eid, sid, pods_id, has_endpoints=True)
            if finding is not None:
                out.append(finding)
            continue
        sel = ",".join(f"{k}={v}" for k, v in svc["selector"].items())
        if not matched and (scaled_to_zero(ctx, svc) or _backs_a_workload(ctx, svc)):
            continue  # the selector is right: what it selects runs no pods (said elsewhere)
        if not matched:
            close = nearest_labels(svc["selector"], pods)
            found, fid = ctx.facts.find_pods(selector_text(svc["selector"]))
            away = [x for x in found if x["namespace"] != ctx.ns]
            where = sorted({x["namespace"] for x in away})
            if where:
                close = [
                    f"the {len(away)} pod(s) that carry it run in namespace "
                    f"{', '.join(where[:2])} ({', '.join(x['name'] for x in away[:2])}), and a "
                    f"Service selects pods only in its own namespace: create the Service "
                    f"there (and point its clients at it) or move the workload back",
                    *close,
                ]
            out.append(
                Finding(
                    cls=CauseClass.SERVICE_SELECTOR_MISMATCH,
                    cause=f"Service {svc['name']} selects {sel}, which no pod in {ctx.ns} carries"
                    + (f" ({'; '.join(close)})" if close else "")
                    + ", so it has no endpoints",
                    summary=f"Service {svc['name']} has no endpoints: "
                    f"its selector {sel} matches no "
                    f"pod",
                    impact=f"Requests to Service {svc['name']} fail: nothing is behind it.",
                    chain=chain(
                        link(
                            S,
                            f"Service {svc['name']} has 0 endpoints.",
                            eid,
                            about=ref,
                            facts=(
                                fact(
                                    "k8s.endpoints",
                                    "ready",
                                    "eq",
                                    0,
                                    namespace=ctx.ns,
                                    service=svc["name"],
                                ),
                            ),
                        ),
                        link(
                            C,
                            f"Its selector is {sel}; the nearest pods: "
                            f"{'; '.join(close) or 'none in the namespace'}.",
                            sid,
                            pods_id,
                            *([fid] if where and fid else []),
                            about=ref,
                        ),
                    ),
                    strength=Strength.INFERRED,
                    explains={str(ref)},
                    follow_ups=["Align the Service selector with the pod template labels."],
                )
            )
            continue
        finding = _port_mismatch(ctx, svc, matched, eid, sid, pods_id, has_endpoints=False)
        if finding is not None:
            out.append(finding)
    return out


_MISSING = re.compile(r"not found|does not exist|no object matching|missing", re.I)


def _controller_says(ctx: Ctx, ing: p.Ingress) -> tuple[str, str, str] | None:
    """(line, evidence id, pod) of the class's controller's log line about this Ingress or its
    TLS Secret, at warning level or worse."""
    if not ctx.ingress_asked(ing):
        return None
    classes, _ = ctx.facts.ingress_classes()
    default = next((c["name"] for c in classes if c.get("default")), None)
    name = ing["ingress_class"] or default
    if not name:
        return None
    keys = [f"{ctx.ns}/{s}" for s in ing["tls_secrets"]] + [f"{ctx.ns}/{ing['name']}"]
    for pod in controller_pods(ctx, name)[:1]:
        container = pod["containers"][0] if pod["containers"] else None
        log, lid = ctx.facts.logs(pod["namespace"], pod["name"], container, False)
        for raw in reversed(log):
            line = raw.strip()
            level = text.severity(line) or (1 if re.match(r"^[WE]\d{4}", line) else 0)
            if lid and level >= 1 and any(k in line for k in keys):
                return line, lid, f"{pod['namespace']}/{pod['name']}"
    return None


_URL_PATH = re.compile(r"(?<![\w.:/-])/[A-Za-z0-9_.~%-][\w.~%/-]*")


def _path_matches(rule: str, kind: str, path: str) -> bool:
    """The Ingress API's path matching: Exact is the whole path; Prefix (and, as most
    controllers do, ImplementationSpecific) matches element by element, "/" matches all."""
    if kind == "Exact":
        return path == rule
    parts = [x for x in rule.split("/") if x]
    return [x for x in path.split("/") if x][: len(parts)] == parts


def _unrouted(ctx: Ctx, ing: p.Ingress) -> tuple[str, list[p.IngressBackend]] | None:
    """A path the question names (under a host it names, when it names one) that no rule of
    the Ingress matches: the controller answers it from its default backend (404)."""
    words = ctx.goal.words
    hosts = {str(b.get("host")) for b in ing["backends"] if b.get("host")}
    named_hosts = {h for h in hosts if h.lower() in words.lower()}
    if not named_hosts and not re.search(rf"\b{re.escape(ing['name'])}\b", words):
        return None  # the paths the words name are about this Ingress only if it is named
    named_hosts = named_hosts or hosts
    rules = [
        b
        for b in ing["backends"]
        if b.get("path") != "*" and (not b.get("host") or b.get("host") in named_hosts)
    ]
    if not rules:
        return None
    for path in dict.fromkeys(_URL_PATH.findall(words)):
        if not any(
            _path_matches(str(b.get("path", "/")), str(b.get("path_type") or "Prefix"), path)
            for b in rules
        ):
            return path, rules
    return None


def _backend_port(
    ing: p.Ingress, svcs: list[p.Service], iid: str | None, sid: str | None
) -> tuple[str, tuple[str | None, ...]] | None:
    """A backend's port is a port of the Service (by number or by name), never the pod's:
    one the Service does not have leaves the controller no endpoints for it (503)."""
    for b in ing["backends"]:
        svc = next((x for x in svcs if x["name"] == b.get("service")), None)
        port = b.get("port")
        if svc is None or port in (None, ""):
            continue
        numbers = {x.get("port") for x in svc["ports"]}
        names = {x.get("name") for x in svc["ports"] if x.get("name")}
        if port in numbers or port in names or str(port) in {str(n) for n in numbers}:
            continue
        shown = ", ".join(
            f"{x.get('port')}"
            + (f" (name {x.get('name')})" if x.get("name") else "")
            + f" -> targetPort {x.get('targetPort')}"
            for x in svc["ports"]
        )
        return (
            f"Ingress {ing['name']} sends {b.get('host') or '*'}{b.get('path') or '/'} to port "
            f"{port} of Service {svc['name']}, which has no such port (Service port: {shown}): "
            "an Ingress backend names a port of the Service, not of the pod, so the controller "
            "has no endpoints for it and answers 503",
            (iid, sid),
        )
    return None


# What someone outside a private network sees of an address inside it: the connection never
# completes (a browser spins, a client times out) — not an error answered by a server.
_NOT_REACHED = re.compile(
    r"tim(e|es|ed|ing)[ -]?out|\bspins?\b|spinning|hangs?\b|can'?t (reach|connect|load)"
    r"|cannot (reach|connect|load)|unreachable|not reachable|no response|never loads",
    re.I,
)
# Host names that say a name is meant for inside a network only.
_INSIDE_NAME = re.compile(
    r"\.(internal|local|lan|corp|intra|intranet|private|svc|home\.arpa)$", re.I
)


def _published_inside(
    ing: p.Ingress, classes: list[p.IngressClass], iid: str | None, cid: str | None
) -> tuple[str, tuple[str | None, ...]] | None:
    """An Ingress for a public host name whose controller published it only at private
    addresses (RFC 1918, an internal load balancer), while another class exists: its class is
    the internal controller's, so the host answers only inside the network (on the VPN)."""
    addresses = [a for a in ing["load_balancer"] if a]
    hosts = sorted({b["host"] for b in ing["backends"] if b.get("host")})
    if not addresses or not hosts or any(_INSIDE_NAME.search(h) for h in hosts):
        return None
    try:
        private = all(ipaddress.ip_address(a).is_private for a in addresses)
    except ValueError:
        return None  # a host name: where it leads is not known here
    others = [c for c in classes if c["name"] != ing["ingress_class"]]
    if not private or not others:
        return None
    mine = next((c for c in classes if c["name"] == ing["ingress_class"]), None)
    return (
        f"Ingress {ing['name']} for {', '.join(hosts)} uses ingressClassName "
        f"{ing['ingress_class'] or '(the default)'}"
        + (f" (controller {mine['controller']})" if mine and mine["controller"] else "")
        + f", which published it only at the private address {', '.join(addresses)}: an "
        "internal load balancer, reachable inside the network (on the VPN) and not from the "
        f"internet; the other class(es) {', '.join(c['name'] for c in others)} serve elsewhere",
        (iid, cid),
    )


# A port that speaks gRPC or HTTP/2 by its name (the convention Istio and others read):
# grpc, grpc-web, h2c, http2.
_H2_PORT = re.compile(r"^(grpcs?|h2c?|http2)(-|$)", re.I)


def _speaks_http1_to_grpc(
    ing: p.Ingress, classes: list[p.IngressClass], iid: str | None, cid: str | None
) -> tuple[str, tuple[str | None, ...]] | None:
    """An ingress-nginx Ingress routing to a gRPC (HTTP/2) port without
    nginx.ingress.kubernetes.io/backend-protocol: nginx proxies HTTP/1.1 to it, the server
    rejects the connection, and the client is answered 502 (UNAVAILABLE to a gRPC client)."""
    mine = next((c for c in classes if c["name"] == ing["ingress_class"]), None)
    if mine is None or "nginx" not in str(mine["controller"] or ""):
        return None
    if str(ing.get("backend_protocol") or "").upper() in ("GRPC", "GRPCS"):
        return None
    ports = [b for b in ing["backends"] if _H2_PORT.match(str(b.get("port") or ""))]
    if not ports:
        return None
    b = ports[0]
    foreign = [o for o in ing.get("annotation_owners") or [] if "nginx" not in o]
    return (
        f"Ingress {ing['name']} routes {b.get('path', '/')} to port {b.get('port')} of Service "
        f"{b.get('service')}, a gRPC (HTTP/2) port by its name, but carries no "
        "nginx.ingress.kubernetes.io/backend-protocol: GRPC annotation, so ingress-nginx "
        f"(controller {mine['controller']}) proxies plain HTTP/1.1 to it; the gRPC server "
        "rejects that connection and the client gets 502 (UNAVAILABLE)"
        + (
            f"; the annotations it does carry are for another controller ({', '.join(foreign)}),"
            " which ingress-nginx ignores"
            if foreign
            else ""
        ),
        (iid, cid),
    )


def ingresses(ctx: Ctx) -> list[Finding]:
    items, iid = ctx.facts.ingresses(ctx.ns)
    classes, cid = ctx.facts.ingress_classes()
    svcs, sid = ctx.facts.services(ctx.ns)
    events, eid = ctx.facts.warnings(ctx.ns)
    svc_names = {s["name"] for s in svcs}
    out = []
    for ing in items:
        ref = ctx.ref("Ingress", ing["name"])
        problem: tuple[str, tuple[str | None, ...]] | None = None
        if (
            ing["ingress_class"]
            and cid
            and ing["ingress_class"] not in {c["name"] for c in classes}
        ):
            problem = (
                f"Ingress {ing['name']} names ingressClassName {ing['ingress_class']}, which does "
                f"not exist (classes: {', '.join(c['name'] for c in classes) or 'none'}): no "
                f"controller serves it",
                (iid, cid),
            )
        missing = [b for b in ing["backends"] if b.get("service") and b["service"] not in svc_names]
        if problem is None and missing and sid:
            name = str(missing[0]["service"])
            found, fid = ctx.facts.find_services(name)
            moved = sorted({x["namespace"] for x in found if x["namespace"] != ctx.ns})
            problem = (
                f"Ingress {ing['name']} routes {missing[0].get('path', '/')} to Service "
                f"{name}, which does not exist in {ctx.ns}"
                + (
                    f"; a Service {name} exists in namespace{'s' if len(moved) > 1 else ''} "
                    f"{', '.join(moved[:3])}, but an "
                    "Ingress backend always names a Service of the Ingress's own namespace, so "
                    "it does not route there: if that is the Service meant, the Ingress "
                    "belongs in its namespace (or needs a Service here that points there)"
                    if moved
                    else ""
                ),
                (iid, sid, fid) if moved else (iid, sid),
            )
        if problem is None and sid:
            problem = _backend_port(ing, svcs, iid, sid)
        if problem is None and cid and _NOT_REACHED.search(ctx.goal.words):
            problem = _published_inside(ing, classes, iid, cid)
        if problem is None and cid:
            problem = _speaks_http1_to_grpc(ing, classes, iid, cid)
        if problem is None:
            problem = _rewrites_everything(ctx, ing, iid)
        tls_event = next(
            (
                e
                for e in events
                if e["object"]["name"] == ing["name"] and "secret" in str(e["message"]).lower()
            ),
            None,
        )
        said = _controller_says(ctx, ing) if problem is None and tls_event is None else None
        if said is not None:
            line, lid, where = said
            secret = next((s for s in ing["tls_secrets"] if s in line), "")
            what = (
                f"Ingress {ing['name']}'s TLS Secret {secret} does not exist in {ctx.ns}"
                if secret and _MISSING.search(line)
                else f"the ingress controller rejects Ingress {ing['name']}"
            )
            problem = (
                f'{what}: the controller ({where}) says "{short(line, 200)}"',
                (iid, lid),
            )
        unrouted = _unrouted(ctx, ing) if problem is None and tls_event is None else None
        if problem is None and unrouted is not None:
            path, rules = unrouted
            shown = "; ".join(
                f"{b.get('path', '/')} (pathType {b.get('path_type') or 'unset'}) -> "
                f"{b.get('service')}"
                for b in rules[:4]
            )
            exact = [b for b in rules if b.get("path_type") == "Exact"]
            problem = (
                f"requests for {path} match no rule of Ingress {ing['name']} ({shown})"
                + (
                    f": pathType Exact on {exact[0].get('path')} matches that path alone, "
                    "not what is under it (Prefix would)"
                    if exact
                    else ""
                )
                + "; the controller sends unmatched paths to its default backend, which "
                "answers 404",
                (iid,),
            )
        if problem is None and tls_event is not None:
            secret = next(
                (s for s in ing["tls_secrets"] if s in str(tls_event["message"])),
                ", ".join(ing["tls_secrets"]),
            )
            problem = (
                f"Ingress {ing['name']}'s TLS Secret {secret} does not exist: "
                f"{short(str(tls_event['message']), 160)}",
                (iid, eid),
            )
        if problem is None:
            continue
        cause, ids = problem
        out.append(
            Finding(
                cls=CauseClass.INGRESS_MISCONFIGURED,
                cause=cause,
                summary=f"Ingress {ing['name']} is misconfigured: {short(cause, 120)}",
                impact="Traffic from outside does not reach the backends.",
                chain=chain(
                    link(
                        S,
                        f"Ingress {ing['name']} (class {ing['ingress_class']}, tls "
                        f"{ing['tls_secrets']}) -> "
                        + ", ".join(f"{b.get('service')}:{b.get('port')}" for b in ing["backends"])
                        + ".",
                        iid,
                        about=ref,
                    ),
                    link(C, cause + ".", *ids, about=ref),
                ),
                explains={
                    str(ref),
                    *(
                        str(ctx.ref("Service", b["service"]))
                        for b in ing["backends"]
                        if b.get("service")
                    ),
                },
                follow_ups=["Fix the Ingress's class, backend or TLS Secret."],
            )
        )
    return out


_CAPTURE_REF = re.compile(r"\$\d")


def _rewrites_everything(
    ctx: Ctx, ing: p.Ingress, iid: str | None
) -> tuple[str, tuple[str | None, ...]] | None:
    """ingress-nginx's rewrite-target without a capture group: the path a rule matches is
    replaced by the target as written, so every request under a prefix reaches the backend as
    that one URI (its pages, scripts and API calls all get the same answer); the target
    names a group ($2) the rule's path must capture, e.g. /billing(/|$)(.*). Or a target that
    names a group no path captures: that part of the URI is empty."""
    target = (ing.get("annotations") or {}).get("nginx.ingress.kubernetes.io/rewrite-target")
    if target is None:
        return None
    prefixes = [b for b in ing["backends"] if str(b.get("path") or "/") not in ("/", "")]
    if not prefixes:
        return None
    rule = prefixes[0]
    path = str(rule.get("path"))
    seen = _backend_sees(ctx, ing)
    if not seen and path.rstrip("/") not in ctx.goal.words:
        return None  # a prefix stripped on purpose (one endpoint behind it) is not a fault
    if not _CAPTURE_REF.search(target):
        why = (
            f"Ingress {ing['name']} carries nginx.ingress.kubernetes.io/rewrite-target: "
            f'"{target}" with no capture group, so ingress-nginx rewrites every request under '
            f'{path} to "{target}": the pages, scripts and API calls under it all reach '
            f"{rule.get('service')} as that one URI"
        )
    elif "(" not in path:
        why = (
            f'Ingress {ing["name"]}\'s rewrite-target "{target}" names a capture group, but its '
            f"path {path} captures none, so that part of every rewritten URI is empty"
        )
    else:
        return None
    return (
        why
        + (f" ({seen})" if seen else "")
        + f"; capture what follows the prefix (path {path.rstrip('/')}(/|$)(.*) with "
        "rewrite-target /$2) or drop the rewrite",
        (iid,),
    )


def _backend_sees(ctx: Ctx, ing: p.Ingress) -> str:
    """'its log shows only GET / for them': the URIs the backend's own access log records,
    when they are all one (what a rewrite to a constant target looks like from there)."""
    pods = [
        x
        for b in ing["backends"]
        for svc in ctx.facts.services(ctx.ns)[0]
        if svc["name"] == b.get("service") and svc["selector"]
        for x in ctx.facts.pods(ctx.ns)[0]
        if selects(svc["selector"], x["labels"])
    ]
    for pod in pods[:2]:
        for c in pod["containers"][:1]:
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            urls = [
                m.group(1)
                for ln in log
                if (m := re.search(r'"url"\s*:\s*"([^"]*)"|"(?:GET|POST) (\S+)', ln)) and m.group(1)
            ]
            asked = [u for u in urls if not re.search(r"health|ready|live|metrics", u)]
            if lid and len(asked) >= 2 and len(set(asked)) == 1:
                return f"{pod['name']}'s own log shows every request arriving as {asked[0]}"
    return ""


def ingress_in_other_namespace(ctx: Ctx) -> list[Finding]:
    """A host the words name is routed by an Ingress of another namespace to a Service that
    exists only in the namespace asked about. An Ingress's backends are Services of its own
    namespace (the API has no field for another), so its controller finds no such Service
    and answers 503 for the host however healthy the pods and the Service are."""
    out: list[Finding] = []
    mine, sid = ctx.facts.services(ctx.ns)
    names = {s["name"] for s in mine}
    for ing in ingresses_elsewhere(ctx):
        where = ing["namespace"]
        theirs, tid = ctx.facts.services(where)
        if tid is None:
            continue  # what that namespace holds was not read: claim nothing
        hosts = [
            h
            for h in text.public_hosts(ctx.goal.words)
            if any(routes_host(str(b.get("host") or ""), h) for b in ing["backends"])
        ]
        there = {s["name"] for s in theirs}
        lost = [
            b
            for b in ing["backends"]
            if b.get("service") in names - there
            and any(routes_host(str(b.get("host") or ""), h) for h in hosts)
        ]
        if not lost:
            continue
        svc = str(lost[0]["service"])
        fid = ctx.facts.find_ingresses(hosts[0])[1]
        said = _controller_line(ctx, ing, f"{where}/{svc}")
        owners = ", ".join(ing.get("annotation_owners") or [])
        cause = (
            f"Ingress {ing['name']}, which routes {hosts[0]}, lives in namespace {where} and "
            f"sends it to Service {svc}, which exists in {ctx.ns} but not in {where}: an Ingress "
            f"routes only to Services of its own namespace, so the controller has no Service "
            f"{where}/{svc} to send the traffic to"
            + (f' (it says "{short(said[0], 200)}")' if said else "")
            + (f"; the Ingress carries annotations of {owners}, which manage it" if owners else "")
        )
        ref = ctx.ref("Ingress", ing["name"], where)
        out.append(
            Finding(
                cls=CauseClass.INGRESS_MISCONFIGURED,
                cause=cause,
                summary=f"Ingress {ing['name']} for {hosts[0]} is in namespace {where}, its "
                f"Service {svc} in {ctx.ns}",
                impact=f"Requests for {hosts[0]} fail at the ingress controller.",
                chain=chain(
                    link(
                        S,
                        f"Ingress {ing['name']} in {where} routes {hosts[0]} to Service {svc}.",
                        fid,
                        about=ref,
                    ),
                    link(
                        M,
                        f"Service {svc} exists in {ctx.ns}, not in {where}.",
                        sid,
                        tid,
                        about=ctx.ref("Service", svc),
                    ),
                    link(
                        C,
                        cause[0].upper() + cause[1:] + ".",
                        fid,
                        tid,
                        *([said[1]] if said else []),
                        about=ref,
                    ),
                ),
                explains={str(ref), str(ctx.ref("Service", svc))},
                follow_ups=[
                    f"Create the Ingress in {ctx.ns} (set its metadata.namespace, or fix the "
                    f"namespace the deploy tool applies it to) and delete {where}/{ing['name']}."
                ],
            )
        )
    return out


def _controller_line(ctx: Ctx, ing: p.Ingress, key: str) -> tuple[str, str] | None:
    """(line, evidence id) of the class's controller's log line that names `key`
    (namespace/name), at warning level or worse."""
    classes, _ = ctx.facts.ingress_classes()
    name = ing["ingress_class"] or next((c["name"] for c in classes if c.get("default")), None)
    for pod in controller_pods(ctx, name)[:1] if name else []:
        container = pod["containers"][0] if pod["containers"] else None
        log, lid = ctx.facts.logs(pod["namespace"], pod["name"], container, False)
        for raw in reversed(log):
            line = raw.strip()
            level = text.severity(line) or (1 if re.match(r"^[WE]\d{4}", line) else 0)
            if lid and level >= 1 and key in line:
                return line, lid
    return None


# -- a proxy's request reset on a connection its upstream closed ------------------------------

# How proxies and clients word a request lost because the upstream closed the connection it was
# sent on (Envoy's 503 body and response details, nginx's error log, Go's and Node's clients).
_UPSTREAM_CLOSED = re.compile(
    r"reset reason: connection termination|upstream_reset_before_response_started"
    r"|upstream prematurely closed connection|connection reset by peer|socket hang up"
    r"|server closed idle connection|ECONNRESET",
    re.I,
)
# A server's keep-alive (idle connection) timeout as programs log or take it: Node's
# keepAliveTimeout (ms), gunicorn's --keep-alive (s), nginx's keepalive_timeout, idle_timeout.
_KEEPALIVE = re.compile(
    r"(?P<key>keep[-_ ]?alive(?:[-_ ]?timeout)?|idle[-_ ]?timeout)[\"'\s]*[:=]?\s*[\"']?"
    r"(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>ms|s\b|m\b)?",
    re.I,
)
# Proxies keep idle upstream connections this long or longer (AWS ALB and nginx-ingress 60 s,
# Google's load balancers 600 s, Envoy 1 h): a server that closes them sooner races the proxy.
PROXY_IDLE_S = 60.0
RECENT_RELEASE_S = 6 * 3600.0


def keepalive_seconds(line: str) -> tuple[str, float] | None:
    """(the setting as written, its value in seconds) of a keep-alive timeout the line names.
    Node's camel-cased keepAliveTimeout is in milliseconds, as are values written in ms (or a
    bare number of 1000 or more); anything else is seconds."""
    m = _KEEPALIVE.search(line)
    if m is None:
        return None
    n, unit, key = float(m.group("n")), (m.group("unit") or "").lower(), m.group("key")
    ms = unit == "ms" or (not unit and (key == "keepAliveTimeout" or n >= 1000))
    seconds = n / 1000 if ms else n * 60 if unit == "m" else n
    return f"{key} {m.group('n')}{unit}", seconds


def idle_connection_race(ctx: Ctx) -> list[Finding]:
    """Requests reset by the proxy in front of a healthy workload ("upstream connect error or
    disconnect/reset before headers. reset reason: connection termination") when the workload
    closes idle keep-alive connections sooner than the proxy stops reusing them: the proxy
    sends a request on a connection the server is closing, the request is lost, the proxy
    answers 502/503 and the server never sees it (its log and its own 5xx stay clean)."""
    said_by = _UPSTREAM_CLOSED.search(ctx.goal.words)
    if said_by is None or not ctx.focus_pods:
        return []
    pods = [x for x in ctx.focus_pods if x["ready"]]
    if not pods or any(c["restarts"] > 0 for x in pods for c in x["containers"]):
        return []
    pods_id = ctx.facts.pods(ctx.ns)[1]
    for pod in pods[:2]:
        for c in pod["containers"]:
            found = _keepalive_said(ctx, pod, c)
            if found is None:
                continue
            setting, seconds, line, lid = found
            if seconds >= PROXY_IDLE_S:
                continue
            return [_race(ctx, pod, setting, seconds, line, lid, pods_id, said_by.group(0))]
    return []


def _keepalive_said(ctx: Ctx, pod: p.Pod, c: p.Container) -> tuple[str, float, str, str] | None:
    """(setting, seconds, where it is said, evidence id): the container's log first (what the
    server says it runs with), then its args and env."""
    log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
    for line in log:
        if lid and (found := keepalive_seconds(line)):
            return found[0], found[1], f'its log: "{short(line.strip(), 200)}"', lid
    spec = c["spec"]
    pods_id = ctx.facts.pods(ctx.ns)[1]
    if spec is None or pods_id is None:
        return None
    words = [*spec["args"], *spec["command"]] + [
        f"{e['name']}={e.get('value', '')}" for e in spec["env"] if e.get("value")
    ]
    flat = " ".join(words)
    if found := keepalive_seconds(flat):
        return found[0], found[1], f"its container spec ({short(flat, 160)})", pods_id
    return None


def _race(
    ctx: Ctx,
    pod: p.Pod,
    setting: str,
    seconds: float,
    where: str,
    lid: str,
    pods_id: str | None,
    quoted: str,
) -> Finding:
    ref = ctx.workload_ref(pod)
    newest, good, hid = last_healthy(ctx, ref) if ref.kind == "Deployment" else (None, None, None)
    created = epoch(newest["created"]) if newest and newest["created"] else None
    recent = (
        newest is not None
        and good is not None
        and created is not None
        and ctx.now - created <= RECENT_RELEASE_S
        and pod["owner"] is not None
        and pod["owner"]["name"] == newest["name"]
    )
    release = (
        f"revision {newest['revision']} ({', '.join(newest['images'])}), rolled out "
        f"{(ctx.now - created) / 60:.0f} min ago, runs with it; revision {good['revision']} "
        f"({', '.join(good['images'])}) served before it"
        if recent and newest and good and created
        else ""
    )
    cause = (
        f"{ref.name} closes idle keep-alive connections after {seconds:g} s ({setting}, "
        f"{where.split(':', 1)[0]}) — sooner than the proxy in front of it stops reusing them "
        f"(proxies keep idle upstream connections {PROXY_IDLE_S:g} s or longer), so the proxy "
        "sometimes sends a request on a connection the server is closing at that moment: the "
        f'request is reset ("{quoted}"), the proxy answers with an error, and {ref.name} never '
        "sees the request (its pods stay Ready and their log clean)"
        + (f"; {release}" if release else "")
    )
    return Finding(
        cls=CauseClass.REGRESSION_AFTER_DEPLOY if recent else CauseClass.BAD_CONFIG,
        cause=cause,
        summary=f"Requests to {ref.name} are reset by the proxy in front of it",
        impact=f"Some requests to {ref.name} fail at the proxy; {ref.name} never sees them.",
        chain=chain(
            link(
                S,
                f"The pods of {ref.name} are Ready with no restarts, yet requests through the "
                f'proxy are reset: "{quoted}" (in the words of the request).',
                pods_id,
                about=ref,
            ),
            link(
                M,
                f"The proxy reuses an idle connection {ref.name} closes at that moment: the "
                "request is lost and the proxy answers it with an error.",
                pods_id,
                about=ref,
            ),
            link(
                C,
                f"{ref.name} closes idle keep-alive connections after {seconds:g} s ({setting}), "
                f"{where}" + (f"; {release}." if release else "."),
                lid,
                hid if release else None,
                about=ref,
            ),
        ),
        strength=Strength.INFERRED,
        explains={str(ref)},
        follow_ups=[
            "Set the server's keep-alive timeout above the proxy's upstream idle timeout (Node: "
            "server.keepAliveTimeout and headersTimeout, e.g. 65000 ms behind a 60 s idle "
            "timeout), or make the proxy's idle timeout shorter than the server's"
            + (f"; or roll back to revision {good['revision']}." if recent and good else ".")
        ],
    )


# -- what the ingress controller's error log says about an Ingress's requests ----------------

# nginx's error log: "<time> [error] <pid>#<tid>: *<conn> <message>, client: <addr>,
# server: <name>, request: "<request>", upstream: "<url>", host: "<host>"".
_NGINX_ERROR = re.compile(
    r"\[(?:error|warn|crit|alert)\]\s+\d+#\d+:\s+(?:\*\d+\s+)?(?P<msg>.*?)(?:, client: |$)"
)
_NGINX_HOST = re.compile(r'\bhost: "(?P<h>[^"]+)"|\bserver: (?P<s>[^,\s]+)')
# ingress-nginx reads the annotations under its prefix only (--annotations-prefix)
INGRESS_NGINX_PREFIX = "nginx.ingress.kubernetes.io"
_PREFIX_FLAG = re.compile(r"--annotations-prefix[= ](?P<p>[\w.-]+)")


def edge_errors(
    ctx: Ctx, ing: p.Ingress
) -> tuple[list[tuple[str, str]], str | None, p.PodRef | None]:
    """(line, nginx's message) of each error-log line of the controller serving `ing` about
    the requests it routes — by a host of its rules (nginx writes `server:` and `host:`) or,
    for an Ingress without hosts, by its upstream's name (`<namespace>-<service>-<port>`) —
    with the log's evidence id and the controller pod read."""
    classes, _ = ctx.facts.ingress_classes()
    name = ing["ingress_class"] or next((c["name"] for c in classes if c.get("default")), None)
    hosts = {str(b["host"]).lower() for b in ing["backends"] if b.get("host")}
    upstreams = {f"{ctx.ns}-{b.get('service')}-" for b in ing["backends"] if b.get("service")}
    for pod in controller_pods(ctx, name)[:1] if name else []:
        container = pod["containers"][0] if pod["containers"] else None
        log, lid = ctx.facts.logs(pod["namespace"], pod["name"], container, False)
        out = []
        for raw in log:
            line = raw.strip()
            m = _NGINX_ERROR.search(line)
            if m is None:
                continue
            named = {
                (h.group("h") or h.group("s") or "").lower() for h in _NGINX_HOST.finditer(line)
            }
            if (hosts and named & hosts) or (not hosts and any(u in line for u in upstreams)):
                out.append((line, m.group("msg")))
        return out, lid, pod
    return [], None, None


def annotation_prefix(controller: p.PodRef | None) -> str:
    m = _PREFIX_FLAG.search(controller["args"]) if controller else None
    return m.group("p") if m else INGRESS_NGINX_PREFIX


class _Limit:
    """A request ingress-nginx refuses by a limit of its own, as its error log says it, and the
    annotation that sets the limit per Ingress (with the controller's default)."""

    def __init__(self, said: str, setting: str, default: str, status: int, what: str) -> None:
        self.said = re.compile(said)
        self.setting, self.default, self.status, self.what = setting, default, status, what


_LIMITS = (
    _Limit(
        r"client intended to send too large body: (?P<n>\d+) bytes",
        "proxy-body-size",
        "1m",
        413,
        "request bodies larger than the limit",
    ),
    _Limit(
        r"upstream sent too big header while reading response header",
        "proxy-buffer-size",
        "4k",
        502,
        "response headers larger than the proxy buffer",
    ),
)
_TLS_TO_PLAIN = re.compile(
    r"SSL_do_handshake\(\) failed .*(wrong version number|packet length too long|unknown protocol)"
    r".*while SSL handshaking to upstream"
)


def _limit_cause(ing: p.Ingress, limit: _Limit, size: str | None, prefix: str) -> str | None:
    notes = ing.get("annotations") or {}
    key = f"{prefix}/{limit.setting}"
    set_to = notes.get(key)
    elsewhere = [k for k in notes if k.endswith("/" + limit.setting) and k != key]
    refused = f"requests of {size} bytes" if size else "requests"
    if set_to is None and elsewhere:
        other = elsewhere[0]
        return (
            f"Ingress {ing['name']} sets {other}: {notes[other]}, but the controller reads "
            f"annotations under its own prefix {prefix}/ only, so that annotation is ignored "
            f"and the default {limit.setting} of {limit.default} applies: {refused} are "
            f"answered {limit.status} (nginx: {limit.what}); the key must be {key}"
        )
    if set_to is None:
        return (
            f"Ingress {ing['name']} sets no {key}, so the controller's default of "
            f"{limit.default} applies: {refused} are answered {limit.status} (nginx: "
            f"{limit.what})"
        )
    limit_b, size_b = size_bytes(set_to), float(size) if size else None
    if limit_b is not None and size_b is not None and size_b <= limit_b:
        return None  # the Ingress allows it: the limit in force is set elsewhere
    return (
        f"Ingress {ing['name']} sets {key}: {set_to}, and {refused} exceed it: they are "
        f"answered {limit.status} (nginx: {limit.what})"
    )


def edge_refusals(ctx: Ctx) -> list[Finding]:
    """The controller in front of an asked-about Ingress refuses or fails its requests by a
    setting of the Ingress itself, as its error log says: a body or header over a limit the
    Ingress's annotations set (an annotation under another controller's or a retired prefix is
    ignored, and the controller's default applies), or TLS spoken to a backend that answers
    plain HTTP because the Ingress says backend-protocol HTTPS. The pods are healthy; the
    Ingress is what a human fixes."""
    out: list[Finding] = []
    items, iid = ctx.facts.ingresses(ctx.ns)
    for ing in items:
        if iid is None or not ctx.ingress_asked(ing):
            continue
        lines, lid, controller = edge_errors(ctx, ing)
        if not lines or lid is None:
            continue
        prefix = annotation_prefix(controller)
        cause: str | None = None
        quoted = ""
        for line, msg in reversed(lines):
            for limit in _LIMITS:
                m = limit.said.search(msg)
                if m is not None:
                    cause = _limit_cause(ing, limit, m.groupdict().get("n"), prefix)
                    quoted = line
                    break
            if cause is None and _TLS_TO_PLAIN.search(msg):
                proto = str(ing.get("backend_protocol") or "")
                if proto.upper() in ("HTTPS", "GRPCS"):
                    ports = ", ".join(str(b.get("port")) for b in ing["backends"][:2])
                    cause = (
                        f"Ingress {ing['name']} carries {INGRESS_NGINX_PREFIX}/backend-protocol: "
                        f"{proto}, so the controller opens TLS to the backend (port {ports}), "
                        "which answers plain HTTP: the TLS handshake to the upstream fails "
                        "(wrong version number) and every request gets 502"
                    )
                    quoted = line
            if cause is not None:
                break
        if cause is None:
            continue
        ref = ctx.ref("Ingress", ing["name"])
        where = f"{controller['namespace']}/{controller['name']}" if controller else "controller"
        out.append(
            Finding(
                cls=CauseClass.INGRESS_MISCONFIGURED,
                cause=cause,
                summary=f"Ingress {ing['name']} is misconfigured: {short(cause, 120)}",
                impact="Requests through the Ingress fail at the controller, not at the pods.",
                chain=chain(
                    link(S, f'The ingress controller ({where}) says "{short(quoted, 220)}".', lid),
                    link(C, cause[0].upper() + cause[1:] + ".", iid, lid, about=ref),
                ),
                strength=Strength.STATED,
                explains={
                    str(ref),
                    *(
                        str(ctx.ref("Service", b["service"]))
                        for b in ing["backends"]
                        if b.get("service")
                    ),
                },
                follow_ups=[f"Fix the annotation on Ingress {ing['name']}; the pods need nothing."],
            )
        )
    return out
