"""Dependencies that fail a workload: a Service it calls with no ready endpoint (and why: its
pods' own chain), a NetworkPolicy that drops the traffic (egress from the caller or ingress at
the callee), a name that does not resolve, a dependency saturated by who holds its connections.
The chain is joined to the cause of the dependency's own failure (chain.compose).
"""

from __future__ import annotations

import ipaddress
import itertools
import re

from tools.read import payloads as p
from tools.results import ErrorKind
from triage.agent.planners.rules import text
from triage.agent.planners.rules.analyzers.common import last_healthy
from triage.agent.planners.rules.analyzers.network import (
    crossed_finding,
    crossed_port,
    edge_errors,
    nearest_labels,
)
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.diff import Change
from triage.agent.planners.rules.facts import (
    Ref,
    nearly_selects,
    selects,
)
from triage.agent.planners.rules.reads import (
    epoch,
    fenced_neighbours,
    hosts_failing,
    vanished_workloads,
)
from triage.core.causes import CauseClass
from triage.core.models import Claim, LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _selecting(
    policies: list[p.NetworkPolicy], pod: p.Pod, direction: str
) -> list[p.NetworkPolicy]:
    """The policies of `direction` (Ingress, Egress) whose pod selector selects `pod`
    ({} selects every pod of the namespace)."""
    return [
        pol
        for pol in policies
        if direction in pol["types"]
        and (not pol["pod_selector"] or selects(pol["pod_selector"], pod["labels"]))
    ]


def _egress_blocks(
    policies: list[p.NetworkPolicy], pod: p.Pod, dns: bool, port: int | None = None
) -> p.NetworkPolicy | None:
    """The policy that leaves `pod` no egress for the traffic, when no egress rule of any
    policy selecting it could carry it (policies add up: a default-deny beside an allow rule
    blocks nothing the allow rule admits). A rule carries DNS when it admits port 53, other
    traffic when it admits `port` (or any port, or the port is unknown); its peers are not
    matched here (no address to match them with): a rule is taken to admit."""
    selecting = _selecting(policies, pod, "Egress")
    if not selecting:
        return None
    wanted = "53" if dns else (str(port) if port else None)
    for pol in selecting:
        for ports in pol["egress_ports"]:
            if not ports or wanted is None or any(x.split("/")[-1] in (wanted, "*") for x in ports):
                return None
    return next((pol for pol in selecting if not pol["egress"]), selecting[0])


_IP_PORT = re.compile(r"\b(?P<ip>(?:\d{1,3}\.){3}\d{1,3}):(?P<port>\d{1,5})\b")


def _egress_refuses(
    policies: list[p.NetworkPolicy], pod: p.Pod, line: str
) -> tuple[p.NetworkPolicy, str] | None:
    """(the first policy selecting `pod` for Egress, the address) when the address the log
    line dialled (ip:port) is one no egress rule of any selecting policy admits: policies add
    up, a rule admits when one of its peers does (an ipBlock holding the address outside its
    `except`; a pod or namespace selector can only be a cluster pod, which an address outside
    every ipBlock is not taken for unless no ipBlock is written at all) and its ports do."""
    m = _IP_PORT.search(line)
    if m is None:
        return None
    try:
        ip = ipaddress.ip_address(m.group("ip"))
    except ValueError:
        return None
    port = m.group("port")
    selecting = _selecting(policies, pod, "Egress")
    if not selecting:
        return None
    for pol in selecting:
        for peers, ports in zip(pol["egress"], pol["egress_ports"], strict=False):
            if ports and not any(x.split("/")[-1] in (port, "*") for x in ports):
                continue
            if not peers:
                return None  # to anywhere on these ports
            for peer in peers:
                if "cidr" not in peer:
                    return None  # a selector: the address may be a pod's, claim nothing
                if _holds(peer["cidr"], ip) and not any(
                    _holds(x, ip) for x in peer.get("cidr_except") or []
                ):
                    return None
    return selecting[0], f"{ip}:{port}"


def _holds(cidr: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    try:
        return ip in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


def _ingress_blocks(
    policies: list[p.NetworkPolicy],
    target: p.Pod,
    client: p.Pod | p.PodRef,
    same_ns: bool,
    client_ns_labels: dict[str, str] | None,
    port: int | None = None,
) -> p.NetworkPolicy | None:
    """The first policy selecting `target` when no ingress rule of any selecting policy admits
    `client` (policies add up: one rule that admits it is enough). A peer admits by its pod
    selector (in the policy's own namespace) or its namespace selector (matched against the
    client namespace's labels; an unknown label set admits, so nothing is claimed unread)
    together with its pod selector; an ipBlock is not matched against pods."""
    selecting = _selecting(policies, target, "Ingress")
    if not selecting:
        return None
    for pol in selecting:
        ports_of_rules = pol["ingress_ports"] or [[] for _ in pol["ingress"]]
        rules = zip(pol["ingress"], ports_of_rules, strict=False)
        for peers, ports in rules:
            if port and ports and not _admits_port(ports, port, target):
                continue  # the rule opens other ports only
            if not peers:
                return None  # allows everything
            for peer in peers:
                if "cidr" in peer and len(peer) == 1:
                    continue
                pods_ok = (
                    "pods" not in peer
                    or not peer["pods"]
                    or selects(peer["pods"], client["labels"])
                )
                if "namespaces" in peer:
                    ns_ok = client_ns_labels is None or selects(
                        peer["namespaces"], client_ns_labels
                    )
                else:
                    ns_ok = same_ns
                if pods_ok and ns_ok:
                    return None
    return selecting[0]


def _egress_admits(
    selecting: list[p.NetworkPolicy],
    target: p.Pod,
    same_ns: bool,
    ns_labels: dict[str, str] | None,
    port: int,
) -> bool:
    """Does an egress rule of the policies selecting the caller admit a connection to
    `target` (a pod) on `port` (its own port)? A peer admits by its pod selector (in the
    policy's namespace) or its namespace selector with its pod selector; an ipBlock may hold
    pod addresses, so a rule with one is taken to admit (nothing is claimed unread)."""
    for pol in selecting:
        for peers, ports in zip(pol["egress"], pol["egress_ports"], strict=False):
            if ports and not _admits_port(ports, port, target):
                continue
            if not peers:
                return True
            for peer in peers:
                if "cidr" in peer:
                    return True
                pods_ok = not peer.get("pods") or selects(peer["pods"], target["labels"])
                if "namespaces" in peer:
                    ns_ok = ns_labels is None or selects(peer["namespaces"], ns_labels)
                else:
                    ns_ok = same_ns
                if pods_ok and ns_ok:
                    return True
    return False


def _egress_to_pods(
    ctx: Ctx,
    policies: list[p.NetworkPolicy],
    caller_pod: p.Pod,
    svc: p.Service,
    ns: str,
    port: int | None,
) -> tuple[p.NetworkPolicy, str] | None:
    """(the first egress policy selecting the caller, why) when no egress rule admits the
    connection to the Service's pods on the port they listen on. A NetworkPolicy is matched
    after the Service's DNAT, on the pod's address and port: a rule written with the
    Service's port (80) does not admit pods that listen on its targetPort (8080)."""
    selecting = _selecting(policies, caller_pod, "Egress")
    if not selecting or not svc["selector"]:
        return None
    sport = next(
        (
            x
            for x in svc["ports"]
            if x.get("port") == port or (port is None and len(svc["ports"]) == 1)
        ),
        None,
    )
    backends = [
        x
        for x in ctx.facts.pods(ns)[0]
        if x["phase"] == "Running" and selects(svc["selector"], x["labels"])
    ]
    target = backends[0] if backends else None
    wanted = (sport.get("targetPort") or sport.get("port")) if sport else None
    named = {
        str(cp.get("name")): cp.get("port")
        for c in (target["containers"] if target else [])
        if c["spec"] is not None
        for cp in c["spec"]["ports"]
    }
    number = int(str(wanted)) if str(wanted).isdigit() else named.get(str(wanted))
    if sport is None or target is None or not isinstance(number, int):
        # the pods or their port cannot be told: only whether any rule carries the port
        blocker = _egress_blocks(policies, caller_pod, dns=False, port=port)
        return (
            None
            if blocker is None
            else (
                blocker,
                f"NetworkPolicy {blocker['name']} selects {ctx.workload_ref(caller_pod).name} "
                f"and allows no egress that carries its traffic to {svc['name']}",
            )
        )
    info = ctx.facts.get("k8s.namespace", namespace=ns)
    raw = (info.data or {}).get("labels") if info is not None and info.ok else None
    labels = raw if isinstance(raw, dict) else None
    same = ns == ctx.ns
    if _egress_admits(selecting, target, same, labels, number):
        return None
    caller = ctx.workload_ref(caller_pod).name
    names = ", ".join(pol["name"] for pol in selecting)
    service_port = sport.get("port")
    if (
        isinstance(service_port, int)
        and service_port != number
        and _egress_admits(selecting, target, same, labels, service_port)
    ):
        why = (
            f"NetworkPolicy {names} admits {caller}'s egress to {svc['name']}'s pods on port "
            f"{service_port}, the Service's port; but a NetworkPolicy is matched after the "
            f"Service forwards the connection (DNAT), on the pod's own port: Service "
            f"{svc['name']} port {service_port} leads to targetPort {wanted} = container port "
            f"{number}, which no egress rule admits, so every connection is dropped (allow "
            f"port {number} in the rule)"
        )
    else:
        why = (
            f"NetworkPolicy {names} selects {caller} for egress and no rule admits "
            f"{svc['name']}'s pods (labels {labels_text(target['labels'])}) on port {number}, the "
            f"port they listen on (Service {svc['name']} port {service_port} -> targetPort "
            f"{wanted}), so every connection is dropped"
        )
    return selecting[0], why


def _pod_port(svc: p.Service, port: int | None, target: p.Pod) -> tuple[int, int, str] | None:
    """(Service port, container port, its name) that a connection to the Service's `port`
    arrives on at `target` (the Service translates it by targetPort, by number or by name).
    When the caller names no port (a URL without one), the Service's HTTP port, or its only
    port."""
    ports = svc["ports"]
    chosen = (
        next((x for x in ports if x.get("port") == port), None)
        if port
        else next((x for x in ports if x.get("port") == 80 or x.get("name") == "http"), None)
        or (ports[0] if len(ports) == 1 else None)
    )
    if chosen is None or not isinstance(chosen.get("port"), int):
        return None
    declared = [x for c in target["containers"] if c["spec"] for x in c["spec"].get("ports") or []]
    target_port = chosen.get("targetPort", chosen["port"])
    if isinstance(target_port, int) or str(target_port).isdigit():
        number = int(target_port)
        name = next(
            (str(x["name"]) for x in declared if x.get("port") == number and x.get("name")), ""
        )
        return chosen["port"], number, name
    by_name = next((x for x in declared if x.get("name") == target_port), None)
    if by_name is None or not isinstance(by_name.get("port"), int):
        return None
    return chosen["port"], int(by_name["port"]), str(target_port)


def _opener(
    policies: list[p.NetworkPolicy],
    target: p.Pod,
    client: p.Pod | p.PodRef,
    same_ns: bool,
    labels: dict[str, str] | None,
    fallback: p.NetworkPolicy,
) -> p.NetworkPolicy:
    """The policy with a rule that admits `client` on some port (not the deny-all beside it)."""
    return next(
        (
            pol
            for pol in _selecting(policies, target, "Ingress")
            if _ingress_blocks([pol], target, client, same_ns, labels) is None
        ),
        fallback,
    )


def _only_other_ports(
    opener: p.NetworkPolicy,
    where: str,
    caller: Ref,
    svc_name: str,
    arrives: tuple[int, int, str],
) -> tuple[str, str]:
    """(cause, follow-up) when a rule admits the caller's pods, on ports other than the one
    its connections arrive on — a NetworkPolicy names the pod's port, so a rule that copied
    the Service port drops what the Service translates to another targetPort."""
    opened = sorted({x for ports in opener["ingress_ports"] for x in ports})
    service_port, pod_port, pod_port_name = arrives
    at = f"{pod_port}" + (f" (named {pod_port_name})" if pod_port_name else "")
    dials = (
        f"{caller.name} dials port {service_port}"
        if service_port == pod_port
        else f"{caller.name}'s connections to Service port {service_port} arrive at the pods "
        f"on port {at} (a NetworkPolicy matches the pod's port, after the Service's "
        "translation)"
    )
    return (
        f"NetworkPolicy {opener['name']}{where} admits {caller.name}'s pods to {svc_name}'s "
        f"pods only on {', '.join(opened) or 'other ports'}, and {dials}: the connection is "
        "dropped",
        f"Open port {at} to {caller.name}'s pods in NetworkPolicy {opener['name']}.",
    )


def _admits_port(ports: list[str], port: int, target: p.Pod) -> bool:
    """A rule's ports ("TCP/9092", "TCP/client" by name, "*") admit `port` of `target`: a
    named port is the container port of that name."""
    named = {
        str(cp.get("name")): str(cp.get("port"))
        for c in target["containers"]
        if c["spec"] is not None
        for cp in c["spec"].get("ports") or []
    }
    for x in ports:
        value = x.split("/")[-1]
        if value in ("*", str(port)) or named.get(value) == str(port):
            return True
    return False


def _log_holding(ctx: Ctx, line: str) -> str | None:
    """The id of the log read that holds the line."""
    return next(
        (
            e.id
            for e in ctx.facts.all("k8s.logs")
            if e.ok and any(line[:60] in str(x) for x in e.data or [])
        ),
        None,
    )


def dependencies(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    callers = {str(ctx.workload_ref(x)): x for x in ctx.focus_pods}
    for svc_name, ns, port, line in hosts_failing(ctx):
        found_before = len(out)
        caller_pod = next(iter(callers.values()), None)
        if caller_pod is None:
            break
        caller = ctx.workload_ref(caller_pod)
        lid = _log_holding(ctx, line)
        symptom = link(
            S,
            f"{caller.name} cannot reach {svc_name}.{ns}{':' + str(port) if port else ''}: "
            f"{short(line)}",
            lid,
            ctx.facts.pods(ctx.ns)[1],
            about=caller,
        )
        dep_ref = Ref("Service", ns, svc_name)
        services_, sid = ctx.facts.services(ns)
        svc = next((s for s in services_ if s["name"] == svc_name), None)
        family = text.family(line)
        policies, nid = ctx.facts.network_policies(ctx.ns)
        if family is text.Family.DNS:
            blocker = _egress_blocks(policies, caller_pod, dns=True)
            unresolved = (
                _policy(
                    ctx,
                    caller,
                    symptom,
                    blocker,
                    nid,
                    f"NetworkPolicy {blocker['name']} allows {caller.name} no egress to DNS "
                    f"(UDP/TCP 53 to kube-system), so every lookup times out",
                    dep_ref,
                )
                if blocker is not None
                # a pod's own name that no pod has: a StatefulSet ordinal it does not make
                else _absent_ordinal(ctx, caller, caller_pod, symptom, line, svc_name, ns)
            )
            if unresolved is not None:
                out.append(unresolved)
                continue
        elsewhere = _moved_to(ctx, svc_name, ns)
        if svc is None and (elsewhere or sid is not None):
            out.append(
                _moved(ctx, caller, caller_pod, symptom, svc_name, ns, elsewhere)
                if elsewhere
                else _no_such_service(ctx, caller, symptom, svc_name, ns, services_, sid, dep_ref)
            )
            continue
        if svc is None or (not svc["selector"] and (svc_name, ns) == ("kubernetes", "default")):
            # the dependency's namespace could not be read; or it is the API server's own
            # Service, whose endpoints the apiserver writes
            continue
        exposed = {int(x["port"]) for x in svc["ports"] if isinstance(x.get("port"), int)}
        if port and exposed and port not in exposed:
            out.append(
                Finding(
                    cls=CauseClass.BAD_CONFIG,
                    cause=f"{caller.name} connects to {svc_name}.{ns} on port {port}, but Service "
                    f"{svc_name} exposes port {', '.join(str(x) for x in sorted(exposed))}",
                    summary=f"{caller.name} uses the wrong port for {svc_name} ({port} instead of "
                    f"{', '.join(str(x) for x in sorted(exposed))})",
                    impact=f"{caller.name}'s connections to {svc_name} are refused.",
                    chain=chain(
                        symptom,
                        link(
                            C,
                            f"Service {svc_name} in {ns} exposes "
                            f"{', '.join(str(x) for x in sorted(exposed))}; {caller.name} uses "
                            f"{port}.",
                            sid,
                            lid,
                            about=dep_ref,
                            facts=(
                                fact(
                                    "k8s.services",
                                    f"[name={svc_name}].ports[port={port}]",
                                    "absent",
                                    None,
                                    namespace=ns,
                                ),
                            ),
                        ),
                    ),
                    strength=Strength.STATED,
                    explains={str(caller)},
                    follow_ups=[
                        f"Set {caller.name}'s port for {svc_name} to "
                        f"{', '.join(str(x) for x in sorted(exposed))}."
                    ],
                )
            )
            continue
        refused = _egress_refuses(policies, caller_pod, line)
        if refused is not None and family is text.Family.CONNECTION:
            out.append(_dropped(ctx, caller, symptom, refused, nid, svc_name, dep_ref))
            continue
        eps, eid = ctx.facts.endpoints(ns, svc_name)
        # an ExternalName Service is a DNS alias: it has no endpoints by design
        blocked = (
            _no_endpoints(ctx, caller, symptom, svc, ns, eid, sid)
            if eps is not None and not eps["ready"] and svc["type"] != "ExternalName"
            else _crossed_dependency(ctx, caller, symptom, svc, ns, port, eid, sid)
            if eps is not None and eps["ready"]
            else None
        )
        if blocked is not None:
            out.append(blocked)
            continue
        dropped = (
            _egress_to_pods(ctx, policies, caller_pod, svc, ns, port)
            if family is text.Family.CONNECTION
            else None
        )
        if dropped is not None:
            out.append(_policy(ctx, caller, symptom, dropped[0], nid, dropped[1], dep_ref))
            continue
        if family is text.Family.CONNECTION:
            admitted = _not_admitted(ctx, caller, caller_pod, symptom, svc, ns, dep_ref, port)
            if admitted is not None:
                out.append(admitted)
        code = text.server_error(line)
        if len(out) == found_before and code is not None:
            out.append(_answers_error(ctx, caller, symptom, svc, ns, code, line, sid))
    return out


def _absent_ordinal(
    ctx: Ctx,
    caller: Ref,
    caller_pod: p.Pod,
    symptom: Claim | None,
    line: str,
    svc_name: str,
    ns: str,
) -> Finding | None:
    """The failing line names a StatefulSet pod under its governing Service (a seed list, a
    replicaof, a member list: db-0.db) whose ordinal the StatefulSet does not make: its pods
    run from spec.ordinals.start (0 unless set) for `replicas` ordinals, so a name outside
    that range never resolves — a start moved or a scale-down left the setting behind."""
    pods_, pid = ctx.facts.pods(ns)
    if pid is None:
        return None
    for e in text.endpoints_in(line):
        pod = text.pod_of(e.host)
        if pod is None or text.service_of(e.host, ctx.ns) != (svc_name, ns):
            continue
        if any(x["name"] == pod for x in pods_):
            return None
        sets, ssid = ctx.facts.statefulsets(ns)
        sts = next(
            (
                x
                for x in sets
                if x["service_name"] == svc_name
                and pod.rsplit("-", 1)[0] == x["name"]
                and x["replicas"] is not None
            ),
            None,
        )
        if sts is None or sts["replicas"] is None:
            return None
        ordinal = int(pod.rsplit("-", 1)[1])
        start = sts.get("ordinals_start", 0)
        end = start + sts["replicas"] - 1
        if start <= ordinal <= end:
            return None  # one it makes, not made yet: another chain
        made = (
            f"{sts['name']}-{start}..{sts['name']}-{end}"
            if end > start
            else f"{sts['name']}-{start}"
        )
        why = (
            f"spec.ordinals.start {start}"
            if ordinal < start
            else f"replicas {sts['replicas']}" + (f", ordinals from {start}" if start else "")
        )
        setting = next(
            (
                env["name"]
                for c in caller_pod["containers"]
                if c["spec"]
                for env in c["spec"]["env"]
                if pod in str(env.get("value") or "")
            ),
            None,
        )
        named = f"{setting} names" if setting else "it names"
        sts_ref = Ref("StatefulSet", ns, sts["name"])
        cause = (
            f"{caller.name} cannot find {pod}: {named} pod {pod} under Service {svc_name}, but "
            f"StatefulSet {sts['name']} makes pods {made} ({why}), so {pod} does not exist "
            "and its name never resolves"
        )
        return Finding(
            cls=CauseClass.STATEFULSET_MISCONFIGURED,
            cause=cause,
            summary=f"{caller.name} looks for pod {pod}, which StatefulSet {sts['name']} does "
            f"not make ({why})",
            impact=f"{caller.name} cannot reach {pod}; what needs it fails.",
            chain=chain(
                symptom,
                link(
                    C,
                    f"StatefulSet {sts['name']} makes pods {made} ({why}); there is no {pod}.",
                    ssid,
                    pid,
                    about=sts_ref,
                    facts=(
                        fact("k8s.pods", f"[name={pod}]", "absent", None, namespace=ns),
                        fact(
                            "k8s.statefulsets",
                            f"[name={sts['name']}].ordinals_start",
                            "eq",
                            start,
                            namespace=ns,
                        ),
                    ),
                ),
            ),
            strength=Strength.STATED,
            explains={str(caller), str(sts_ref)},
            follow_ups=[
                f"Name pods that exist ({made}) in {setting or 'the setting'}, or give "
                f"StatefulSet {sts['name']} the ordinals it names."
            ],
        )
    return None


def _crossed_dependency(
    ctx: Ctx,
    caller: Ref,
    symptom: Claim | None,
    svc: p.Service,
    ns: str,
    port: int | None,
    eid: str | None,
    sid: str | None,
) -> Finding | None:
    """The dependency's Service port the caller uses, when it is named like one of the
    dependency's container ports but forwards to another of them (a grpc port whose
    targetPort is the admin listener): the caller reaches a server that does not speak to it."""
    pods, pods_id = ctx.facts.pods(ns)
    matched = [x for x in pods if selects(svc["selector"], x["labels"])]
    crossed = crossed_port(svc, matched) if matched else None
    if crossed is None or (port is not None and crossed[0].get("port") != port):
        return None
    found = crossed_finding(ctx, svc, crossed, eid, sid, pods_id, ns=ns)
    found.chain = chain(symptom, *found.chain)
    found.explains |= {str(caller)}
    return found


# A client's request to the Kubernetes API names its path (client-go, the SDKs): the API
# server is where it leads, whatever address the kubernetes Service has in this cluster.
_KUBE_API_PATH = re.compile(r"https?://[^/\s\"]+/(api/v1|apis/[\w.-]+/v\w+)/")


def addresses_dropped(ctx: Ctx) -> list[Finding]:
    """An address (ip:port) a failing line of an asked-about pod dialled, which no egress rule
    of the policies selecting that pod admits: dropped whatever it leads to (the API server,
    a database outside the cluster). A line whose host names a Service is `dependencies`'."""
    policies, nid = ctx.facts.network_policies(ctx.ns)
    if not policies:
        return []
    followed = {line for *_, line in hosts_failing(ctx)}
    for pod in ctx.focus_pods:
        for c in pod["containers"]:
            for previous in (False, True):
                log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], previous)
                for line in text.lines_of(log[-200:]):
                    if (
                        line.family is not text.Family.CONNECTION
                        or line.severity < 1
                        or line.text in followed
                    ):
                        continue
                    refused = _egress_refuses(policies, pod, line.text)
                    if refused is None:
                        continue
                    return [_address_dropped(ctx, pod, line.text, lid, refused[1], nid)]
    return []


def _address_dropped(
    ctx: Ctx, pod: p.Pod, line: str, lid: str | None, address: str, nid: str | None
) -> Finding:
    caller = ctx.workload_ref(pod)
    policies, _ = ctx.facts.network_policies(ctx.ns)
    selecting = _selecting(policies, pod, "Egress")
    api = _KUBE_API_PATH.search(line)
    where = (
        f"{address} (the Kubernetes API server: the request is for /{api.group(1)}/…, the "
        "kubernetes Service's address)"
        if api
        else address
    )
    names = ", ".join(x["name"] for x in selecting)
    admits = "; ".join(f"{x['name']}: {peers_text(x, egress=True)}" for x in selecting)
    cause = (
        f"the NetworkPolicies selecting {caller.name} for egress ({names}) admit only what "
        f"their rules list ({admits}); none admits {where}, so {caller.name}'s connections "
        "there are dropped"
    )
    return Finding(
        cls=CauseClass.NETWORK_POLICY_BLOCKING,
        cause=cause,
        summary=f"{caller.name}'s egress to {address} is dropped by NetworkPolicy "
        f"{selecting[0]['name']}",
        impact=f"{caller.name}'s calls to {address} time out.",
        chain=chain(
            link(
                S,
                f"{caller.name} cannot reach {where}: {short(line)}",
                lid,
                about=caller,
            ),
            link(
                C,
                cause[0].upper() + cause[1:] + ".",
                nid,
                about=ctx.ref("NetworkPolicy", selecting[0]["name"]),
            ),
        ),
        strength=Strength.INFERRED,
        explains={str(caller)},
        follow_ups=[f"Admit {address} in an egress rule of a policy selecting {caller.name}."],
    )


def _not_admitted(
    ctx: Ctx,
    caller: Ref,
    caller_pod: p.Pod,
    symptom: Claim | None,
    svc: p.Service,
    ns: str,
    dep_ref: Ref,
    port: int | None = None,
) -> Finding | None:
    """The dependency's own ingress policies admit no rule for the caller's pods (on the
    port it dials, when the line gives one)."""
    svc_name = svc["name"]
    dep_pods = [x for x in ctx.facts.pods(ns)[0] if selects(svc["selector"], x["labels"])]
    theirs, tid = ctx.facts.network_policies(ns)
    if not dep_pods:
        return None
    own = ctx.facts.get("k8s.namespace", namespace=ctx.ns)
    own_labels = (own.data or {}).get("labels") if own is not None and own.ok else None
    labels = own_labels if isinstance(own_labels, dict) else None
    same = ns == ctx.ns
    arrives = _pod_port(svc, port, dep_pods[0])
    blocker = _ingress_blocks(
        theirs, dep_pods[0], caller_pod, same, labels, arrives[1] if arrives else port
    )
    if blocker is None:
        return None
    if arrives and _ingress_blocks(theirs, dep_pods[0], caller_pod, same, labels) is None:
        # a rule admits the caller, on other ports: name that policy, not the deny-all
        opener = _opener(theirs, dep_pods[0], caller_pod, same, labels, blocker)
        cause, follow_up = _only_other_ports(opener, f" in {ns}", caller, svc_name, arrives)
        return _policy(ctx, caller, symptom, opener, tid, cause, dep_ref, follow_up=follow_up)
    return _policy(
        ctx,
        caller,
        symptom,
        blocker,
        tid,
        f"NetworkPolicy {blocker['name']} in {ns} admits ingress to {svc_name}'s "
        f"pods only from {peers_text(blocker)}, which {caller.name}'s pods "
        f"(labels {labels_text(caller_pod['labels'])}"
        + (
            f", in namespace {ctx.ns} labelled {labels_text(own_labels)}"
            if ns != ctx.ns and isinstance(own_labels, dict)
            else ""
        )
        + ") are not",
        dep_ref,
    )


# Why the server says it failed: an "Errors: * …" list (Vault, many Go clients) first, else
# the error field of the line.
_REASONS = (
    re.compile(r"\bErrors?:[\s*]+(?P<why>[^\"\n;*]{4,120})"),
    re.compile(r"\berror[\"']?\s*[:=]\s*[\"']?(?P<why>[^\"\n;]{4,120})", re.I),
)


def _answers_error(
    ctx: Ctx,
    caller: Ref,
    symptom: Claim | None,
    svc: p.Service,
    ns: str,
    code: int,
    line: str,
    sid: str | None,
) -> Finding:
    """The dependency answers, with a 5xx: it is up and reachable and cannot do the work,
    and its answer says why ("Vault is sealed"). That answer is the cause, quoted from the
    caller's log: the dependency's other symptoms (its readiness probe reporting the same
    state) explain nothing more, so the chain is closed here."""
    dep = Ref("Service", ns, svc["name"])
    flat = re.sub(r"(?:\\n|\s)+", " ", line)  # a JSON log's escaped newlines
    reasons = next(
        (
            found
            for rx in _REASONS
            if (found := [m.group("why").strip(" .") for m in rx.finditer(flat)])
        ),
        [],
    )
    said = f' ("{short(reasons[-1], 100)}")' if reasons else ""
    pods = [x for x in ctx.facts.pods(ns)[0] if selects(svc["selector"], x["labels"])]
    unready = [x["name"] for x in pods if not x["ready"]]
    state = (
        f"; its pods: {len(pods) - len(unready)}/{len(pods)} ready"
        + (f" ({', '.join(unready[:3])} not ready)" if unready else "")
        if pods
        else ""
    )
    cause = (
        f"{caller.name}'s dependency {svc['name']} ({ns}) answers its calls with HTTP {code}"
        f"{said}: it is reachable but cannot serve{state}; {caller.name}'s failure is a "
        "consequence"
    )
    return Finding(
        cls=CauseClass.DEPENDENCY_UNAVAILABLE,
        cause=cause,
        summary=f"{caller.name} fails because {svc['name']} in {ns} answers {code}{said}",
        impact=f"Every call of {caller.name} to {svc['name']} fails with {code}.",
        chain=chain(
            symptom,
            link(C, cause[0].upper() + cause[1:] + ".", sid, ctx.facts.pods(ns)[1], about=dep),
        ),
        strength=Strength.STATED,
        explains={str(caller), str(dep), *(str(ctx.workload_ref(x, ns)) for x in pods[:3])},
        follow_ups=[f"Restore {svc['name']} in {ns} (what its {code} says); then {caller.name}."],
    )


# An alert that the monitoring server cannot scrape its targets (kube-prometheus' TargetDown,
# a scrape-failure rule): the scraper is the client, and it lives in another namespace.
_SCRAPE_ALERT = re.compile(
    r"TargetDown|Scrape|targets? .{0,40}\b(down|not reachable|unreachable)", re.I
)


def scrapes(ctx: Ctx) -> list[Finding]:
    """A scrape-failure alert for pods that run and are Ready, whose ingress NetworkPolicies
    admit only pods of their own namespace (or nothing): the scraper, in its own monitoring
    namespace, is dropped on the metrics port, whatever the pods themselves do."""
    alert = ctx.goal.alert
    if alert is None or not _SCRAPE_ALERT.search(
        " ".join([alert.name, *alert.annotations.values()])
    ):
        return []
    target = next((x for x in ctx.focus_pods if x["ready"]), None)
    policies, nid = ctx.facts.network_policies(ctx.ns)
    if target is None or nid is None:
        return []
    selecting = _selecting(policies, target, "Ingress")
    if not selecting:
        return []
    for pol in selecting:
        for peers in pol["ingress"]:
            if not peers or any("namespaces" in peer or "cidr" in peer for peer in peers):
                return []  # something from outside the namespace may be admitted
    ports = [
        f"{x.get('name')} {x.get('port')}" if x.get("name") else str(x.get("port"))
        for c in target["containers"]
        for x in (c["spec"]["ports"] if c["spec"] else [])
    ]
    ref = ctx.workload_ref(target)
    names = ", ".join(pol["name"] for pol in selecting)
    what = "; ".join(
        f"{pol['name']} admits "
        + (peers_text(pol) if any(pol["ingress"]) else "nothing (default deny)")
        for pol in selecting
    )
    cause = (
        f"the ingress NetworkPolicies selecting {ref.name}'s pods ({names}) admit traffic only "
        f"from pods of {ctx.ns} ({what}), so the monitoring server (Prometheus, in its own "
        f"namespace) cannot scrape them"
        + (f" on {', '.join(ports)}" if ports else "")
        + f": {alert.name} fires while {ref.name} itself works"
    )
    pods_id = ctx.facts.pods(ctx.ns)[1]
    return [
        Finding(
            cls=CauseClass.NETWORK_POLICY_BLOCKING,
            cause=cause,
            summary=f"{alert.name}: the scrape of {ref.name} is dropped by NetworkPolicy",
            impact=f"No metrics from {ref.name}; alerts on them cannot fire.",
            chain=chain(
                link(
                    S,
                    f"{alert.name} fires for {ref.name}, whose pods are Running and Ready.",
                    pods_id,
                    about=ref,
                ),
                link(
                    C,
                    cause[0].upper() + cause[1:] + ".",
                    nid,
                    pods_id,
                    about=ctx.ref("NetworkPolicy", selecting[-1]["name"]),
                ),
            ),
            strength=Strength.INFERRED,
            explains={str(ref)},
            follow_ups=[
                "Add an ingress rule admitting the monitoring namespace's Prometheus pods on "
                "the metrics port (namespaceSelector + podSelector)."
            ],
        )
    ]


Fenced = tuple[p.Pod, p.Pod, p.Service, p.NetworkPolicy, list[str], str | None]


def fenced_callers(ctx: Ctx) -> list[tuple[Fenced, tuple[int, int, str] | None]]:
    """(client, target, Service, blocking policy, its failing lines, their log's id) with the
    port the connections arrive on, for each neighbour whose own log fails to connect to the
    Service of a Ready pod asked about while no ingress rule of the policies selecting that
    pod admits it. The line names the Service or its IP, or — for a one-off pod (kubectl
    run: no controller) — its command does."""
    out: list[tuple[Fenced, tuple[int, int, str] | None]] = []
    policies, _ = ctx.facts.network_policies(ctx.ns)
    services, _ = ctx.facts.services(ctx.ns)
    labels = _ns_labels(ctx)
    for client in fenced_neighbours(ctx):
        for target in (x for x in ctx.focus_pods if x["ready"]):
            svc = next(
                (v for v in services if v["selector"] and selects(v["selector"], target["labels"])),
                None,
            )
            if svc is None:
                continue
            named = re.compile(rf"(?<![\w-]){re.escape(svc['name'])}(?![\w-])")
            ip = svc.get("cluster_ip")
            lines, lid = [], None
            for c in client["containers"][:1]:
                told = (
                    " ".join([*c["spec"]["command"], *c["spec"]["args"]])
                    if c["spec"] and client["owner"] is None
                    else ""
                )
                log, lid = ctx.facts.logs(ctx.ns, client["name"], c["name"], False)
                lines = [
                    ln
                    for ln in log
                    if text.family(ln) is text.Family.CONNECTION
                    and (named.search(ln) or (ip and ip in ln) or named.search(told))
                ]
            if not lines:
                continue
            dialled = next(
                (
                    e.port
                    for e in text.endpoints_in(lines[-1])
                    if text.service_of(e.host, ctx.ns) == (svc["name"], ctx.ns)
                ),
                None,
            )
            arrives = _pod_port(svc, dialled, target)
            blocker = _ingress_blocks(
                policies, target, client, True, labels, arrives[1] if arrives else None
            )
            if blocker is not None:
                out.append(((client, target, svc, blocker, lines, lid), arrives))
                break
    return out


def _ns_labels(ctx: Ctx) -> dict[str, str] | None:
    own = ctx.facts.get("k8s.namespace", namespace=ctx.ns)
    own_labels = (own.data or {}).get("labels") if own is not None and own.ok else None
    return own_labels if isinstance(own_labels, dict) else None


def one_off_fenced(ctx: Ctx) -> set[str]:
    """The one-off pods (no controller) among `fenced_callers`: explained, not blamed."""
    return {c[0]["name"] for c, _ in fenced_callers(ctx) if c[0]["owner"] is None}


def callers_dropped(ctx: Ctx) -> list[Finding]:
    """The pods asked about are Ready, and a neighbour workload of their namespace fails to
    connect to their Service (its own log: a timeout or refusal naming the Service) while no
    ingress rule of the policies selecting them admits that neighbour: the callee is healthy,
    the policy drops its callers. A peer whose namespaceSelector and podSelector share one
    `from` entry is read as Kubernetes reads it — both must match — and said so when that is
    why. A one-off pod the policy drops is not a caller it fails (reasons.fenced_explained)."""
    out: list[Finding] = []
    policies, nid = ctx.facts.network_policies(ctx.ns)
    labels = _ns_labels(ctx)
    for (client, target, svc, blocker, lines, lid), arrives in fenced_callers(ctx):
        if client["owner"] is None:
            continue
        caller = ctx.workload_ref(client)
        callee = ctx.workload_ref(target)
        symptom = link(
            S,
            f"{caller.name} cannot connect to {svc['name']}: {short(lines[-1], 200)}",
            lid,
            about=caller,
        )
        if arrives and _ingress_blocks(policies, target, client, True, labels) is None:
            opener = _opener(policies, target, client, True, labels, blocker)
            cause, follow_up = _only_other_ports(opener, "", caller, svc["name"], arrives)
            out.append(
                _policy(ctx, caller, symptom, opener, nid, cause, callee, follow_up=follow_up)
            )
            continue
        anded = [
            peer
            for peers in blocker["ingress"]
            for peer in peers
            if peer.get("pods")
            and "namespaces" in peer
            and selects(peer["pods"] or {}, client["labels"])
            and labels is not None
            and not selects(peer["namespaces"], labels)
        ]
        cause = (
            f"NetworkPolicy {blocker['name']} admits ingress to {callee.name}'s pods only "
            f"from {peers_text(blocker)}, which {caller.name}'s pods (labels "
            f"{labels_text(client['labels'])}, in {ctx.ns}) are not, so {caller.name}'s calls "
            f"to Service {svc['name']} are dropped"
            + (
                f": the entry's namespaceSelector ({labels_text(anded[0]['namespaces'])}) and "
                f"podSelector ({labels_text(anded[0].get('pods'))}) are one `from` peer, which "
                "Kubernetes ANDs — pods so labelled in such namespaces only, not "
                f"{caller.name} in its own namespace; as two peers (two `-` items) they "
                "would be ORed"
                if anded
                else ""
            )
        )
        out.append(_policy(ctx, caller, symptom, blocker, nid, cause, callee))
    return out


_LINE_TIME = re.compile(
    r'"(?:time|ts|timestamp|@timestamp)"\s*:\s*"(?P<j>[^"]+)"'
    r"|^\[?(?P<l>\d{4}-\d{2}-\d{2}[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)"
)
RELEASE_BEFORE_S = 2 * 3600.0  # a release this long before the caller's failures may be theirs
# a generation series steps at the first scrape and range step after the change, and log clocks
# drift: a release read up to this long after the first failure is still before it
RELEASE_SKEW_S = 300.0


def _line_time(line: str) -> float | None:
    m = _LINE_TIME.search(line.strip())
    return epoch((m.group("j") or m.group("l")).replace(" ", "T")) if m else None


def _released_at(ctx: Ctx, ns: str, name: str, newest: p.ReplicaSet) -> tuple[float, str] | None:
    """When a Deployment of `ns` last changed, with the evidence: the step of its generation
    series (kube-state-metrics), else its newest ReplicaSet's creation."""
    for ev in ctx.facts.purpose(f"generation:{ns}"):
        for series in ev.data or []:
            if (series.get("labels") or {}).get("deployment") != name:
                continue
            values = series.get("values") or []
            steps = [float(t) for (_, a), (t, b) in itertools.pairwise(values) if b > a]
            if steps:
                return steps[-1], ev.id
    created = epoch(newest["created"])
    hid = ctx.facts.history(ns, name)[1]
    return (created, hid) if created is not None and hid else None


def dependency_released(ctx: Ctx) -> list[Finding]:
    """The asked-about pods fail on a dependency's answers — they cannot decode what it
    returns (its log: "cannot unmarshal string into … int64") — while it serves, and the
    Deployment behind it rolled out a new revision shortly before the first such failure, with
    the caller unchanged: the dependency's release changed what it answers (its contract), and
    the caller's errors are the consequence."""
    out: list[Finding] = []
    own = {
        ctx.workload_ref(x).name for x in ctx.focus_pods if ctx.workload_ref(x).kind == "Deployment"
    }
    for svc_name, ns, _port, line in hosts_failing(ctx):
        if text.family(line) is not text.Family.RESPONSE:
            continue
        svc = next((x for x in ctx.facts.services(ns)[0] if x["name"] == svc_name), None)
        eps, eid = ctx.facts.endpoints(ns, svc_name)
        if svc is None or not svc["selector"] or eps is None or not eps["ready"]:
            continue
        log_ev = next(
            (
                e
                for e in ctx.facts.all("k8s.logs")
                if e.ok
                and e.args.get("namespace") == ctx.ns
                and any(line[:60] in str(x) for x in e.data or [])
            ),
            None,
        )
        if log_ev is None:
            continue
        shape = text.template(line)
        times = [
            t
            for raw in log_ev.data or []
            if text.template(str(raw)) == shape and (t := _line_time(str(raw))) is not None
        ]
        if not times:
            continue
        first_failure = min(times)
        for dep in ctx.facts.deployments(ns)[0]:
            if dep["name"] in own or not _backs(dep["selector"], svc["selector"]):
                continue
            ref = ctx.ref("Deployment", dep["name"], ns)
            newest, good, hid = last_healthy(ctx, ref)
            if newest is None or hid is None:
                continue
            released = _released_at(ctx, ns, dep["name"], newest)
            if released is None or not (
                -RELEASE_SKEW_S <= first_failure - released[0] <= RELEASE_BEFORE_S
            ):
                continue
            # the caller did not change in between: it is the other side that did
            moved = [
                r
                for name in own
                for r in [_released_at_own(ctx, name)]
                if r is not None and released[0] - 60 <= r <= first_failure
            ]
            if moved:
                continue
            caller = (
                ctx.workload_ref(
                    next(x for x in ctx.focus_pods if x["name"] == log_ev.args.get("pod"))
                )
                if any(x["name"] == log_ev.args.get("pod") for x in ctx.focus_pods)
                else None
            )
            if caller is None:
                continue
            minutes = max(first_failure - released[0], 0.0) / 60
            images = ", ".join(newest["images"])
            before = (
                f"; revision {good['revision']} ({', '.join(good['images'])}) answered in the "
                f"shape {caller.name} reads"
                if good
                else ""
            )
            cause = (
                f"{dep['name']} ({ns}) rolled out revision {newest['revision']} ({images}) "
                f"{minutes:.0f} min before {caller.name} began failing on its answers: "
                f'"{short(text.template(line) + ": " + (_error_of(line) or ""), 200)}"'
                f"{before}, and {caller.name} itself did not change: the release changed what "
                f"{svc_name} returns"
            )
            symptom = link(
                S,
                f"{caller.name} cannot use {svc_name}'s answers: {short(line, 220)}",
                log_ev.id,
                about=caller,
            )
            out.append(
                Finding(
                    cls=CauseClass.REGRESSION_AFTER_DEPLOY,
                    cause=cause,
                    summary=f"{dep['name']} {images} changed its answers; {caller.name} cannot "
                    "read them",
                    impact=f"{caller.name}'s requests that call {svc_name} fail.",
                    chain=chain(
                        symptom,
                        link(
                            C,
                            cause[0].upper() + cause[1:] + ".",
                            hid,
                            released[1],
                            eid,
                            about=ref,
                        ),
                    ),
                    strength=Strength.STATED,
                    explains={str(caller), str(ref), str(ctx.ref("Service", svc_name, ns))},
                    follow_ups=[
                        f"Roll {dep['name']} back to revision "
                        f"{good['revision'] if good else 'the one before'} or make {caller.name} "
                        "read the new answer; then agree the contract."
                    ],
                )
            )
            break
    return out


_ERROR_FIELD = re.compile(
    r'"(?:error|err|exception)"\s*:\s*"(?P<e>[^"]{1,200})"|\berr(?:or)?="(?P<q>[^"]{1,200})"'
)


def _error_of(line: str) -> str | None:
    m = _ERROR_FIELD.search(line)
    return (m.group("e") or m.group("q")) if m else None


def _released_at_own(ctx: Ctx, name: str) -> float | None:
    """When the caller's own Deployment last changed (its generation series' step)."""
    for ev in ctx.facts.purpose("generation"):
        for series in ev.data or []:
            if (series.get("labels") or {}).get("deployment") != name:
                continue
            values = series.get("values") or []
            steps = [float(t) for (_, a), (t, b) in itertools.pairwise(values) if b > a]
            return steps[-1] if steps else None
    newest, _good, _hid = last_healthy(ctx, ctx.ref("Deployment", name))
    return epoch(newest["created"]) if newest else None


# nginx's words for a connection to an upstream that was never established (no answer to the
# SYN, or the host unreachable): the pod is up, the packets do not reach it
_CONNECT_UNANSWERED = re.compile(
    r"(timed out \(110: [^)]*\)|connect\(\) failed \(11[03]: [^)]*\)) while connecting to upstream"
)


def edge_dropped(ctx: Ctx) -> list[Finding]:
    """The ingress controller in front of an asked-about Ingress cannot connect to its pods
    (its error log: "upstream timed out ... while connecting to upstream") while they run
    Ready, and no ingress rule of the NetworkPolicies selecting them admits the controller's
    pod, read with its namespace's labels: the policy drops the edge's traffic. A
    namespaceSelector that does not match the controller's namespace is said so, with the
    labels that namespace has (Kubernetes sets kubernetes.io/metadata.name on every one)."""
    policies, nid = ctx.facts.network_policies(ctx.ns)
    services, _ = ctx.facts.services(ctx.ns)
    items, iid = ctx.facts.ingresses(ctx.ns)
    if not policies or nid is None or iid is None:
        return []
    out: list[Finding] = []
    for ing in items:
        if not ctx.ingress_asked(ing):
            continue
        lines, lid, controller = edge_errors(ctx, ing)
        unanswered = [line for line, msg in lines if _CONNECT_UNANSWERED.search(msg)]
        if not unanswered or controller is None or lid is None:
            continue
        read = ctx.facts.get("k8s.namespace", namespace=controller["namespace"])
        labels = (read.data or {}).get("labels") if read is not None and read.ok else None
        if not isinstance(labels, dict):
            continue  # the controller's namespace labels were not read: claim nothing
        backends = {str(b.get("service")) for b in ing["backends"]}
        selectors = [v["selector"] for v in services if v["name"] in backends and v["selector"]]
        target = next(
            (
                x
                for x in ctx.focus_pods
                if x["ready"] and any(selects(sel, x["labels"]) for sel in selectors)
            ),
            None,
        )
        if target is None:
            continue
        blocker = _ingress_blocks(policies, target, controller, False, labels)
        if blocker is None:
            continue
        callee = ctx.workload_ref(target)
        unmatched = [
            peer["namespaces"]
            for peers in blocker["ingress"]
            for peer in peers
            if "namespaces" in peer and not selects(peer["namespaces"], labels)
        ]
        where = controller["namespace"]
        cause = (
            f"NetworkPolicy {blocker['name']} admits ingress to {callee.name}'s pods only from "
            f"{peers_text(blocker)}, which the ingress controller ({where}/{controller['name']}, "
            f"labels {labels_text(controller['labels'])}) is not, so its connections to the pods "
            f"are dropped and requests through Ingress {ing['name']} time out"
            + (
                f": the namespaceSelector {labels_text(unmatched[0])} does not match namespace "
                f"{where}, whose labels are {labels_text(labels)}"
                if unmatched
                else ""
            )
        )
        caller = ctx.ref("Ingress", ing["name"])
        symptom = link(
            S,
            f"The ingress controller cannot connect to {callee.name}'s pods, which are Ready: "
            f"{short(unanswered[-1], 220)}",
            lid,
            about=caller,
        )
        out.append(_policy(ctx, caller, symptom, blocker, nid, cause, callee))
    return out


def _no_such_service(
    ctx: Ctx,
    caller: Ref,
    symptom: Claim | None,
    svc_name: str,
    ns: str,
    services_: list[p.Service],
    sid: str | None,
    dep_ref: Ref,
) -> Finding:
    names = sorted(s["name"] for s in services_)
    return Finding(
        cls=CauseClass.BAD_CONFIG,
        cause=f"{caller.name} is configured to reach {svc_name}.{ns}, but there is no "
        f"Service {svc_name} in {ns} (Services there: "
        f"{', '.join(names) or 'none'})",
        summary=f"{caller.name} calls a Service that does not exist ({svc_name}.{ns})",
        impact=f"{caller.name}'s calls to {svc_name} fail.",
        chain=chain(
            symptom,
            link(
                C,
                f"No Service {svc_name} in namespace {ns}; existing: {', '.join(names) or 'none'}.",
                sid,
                about=dep_ref,
                facts=(
                    fact(
                        "k8s.services",
                        f"[name={svc_name}]",
                        "absent",
                        None,
                        namespace=ns,
                    ),
                ),
            ),
        ),
        strength=Strength.INFERRED,
        explains={str(caller)},
        follow_ups=[f"Point {caller.name} at the right host (one of: {', '.join(names[:5])})."],
    )


def _dropped(
    ctx: Ctx,
    caller: Ref,
    symptom: Claim | None,
    refused: tuple[p.NetworkPolicy, str],
    nid: str | None,
    svc_name: str,
    dep_ref: Ref,
) -> Finding:
    pol, address = refused
    return _policy(
        ctx,
        caller,
        symptom,
        pol,
        nid,
        f"NetworkPolicy {pol['name']} selects {caller.name} and admits egress only to "
        f"{peers_text(pol, egress=True)}; {address}, where {svc_name} now leads, is outside "
        "every ipBlock it allows, so the connection is dropped",
        dep_ref,
    )


def _moved_to(ctx: Ctx, svc_name: str, ns: str) -> list[p.FoundService]:
    """Where a Service the caller looks for in `ns` lives instead, when that can be told: the
    namespace its neighbours reach it in (their settings, their logs), or, when `ns` itself
    does not exist, any namespace that has one. A Service of the same name in some unrelated
    namespace is no evidence of a move: a cluster holds many 'redis' and 'postgres'."""
    found = [x for x in ctx.facts.find_services(svc_name)[0] if x["namespace"] != ns]
    if not found:
        return []
    said = " ".join(
        [
            str(e.get("value") or "")
            for x in ctx.facts.pods(ctx.ns)[0]
            for c in x["containers"]
            if c["spec"]
            for e in c["spec"]["env"]
        ]
        + [str(ln) for ev in ctx.facts.all("k8s.logs") if ev.ok for ln in ev.data or []]
    )
    used = [x for x in found if f"{svc_name}.{x['namespace']}" in said]
    gone = ctx.facts.get("k8s.namespace", namespace=ns)
    missing = gone is not None and gone.error_kind is ErrorKind.NOT_FOUND
    return used or (found if missing else [])


def _moved(
    ctx: Ctx,
    caller: Ref,
    caller_pod: p.Pod,
    symptom: Claim | None,
    svc_name: str,
    ns: str,
    elsewhere: list[p.FoundService],
) -> Finding:
    """The caller names a namespace that has no Service of that name (or does not exist),
    while a Service of that name lives in another: the setting that names the host is stale."""
    gone = ctx.facts.get("k8s.namespace", namespace=ns)
    missing = gone is not None and gone.error_kind is ErrorKind.NOT_FOUND
    where = ", ".join(sorted({x["namespace"] for x in elsewhere[:3]}))
    setting = next(
        (
            e["name"]
            for c in caller_pod["containers"]
            if c["spec"]
            for e in c["spec"]["env"]
            if re.search(rf"\b{re.escape(svc_name)}\.{re.escape(ns)}\b", str(e.get("value") or ""))
        ),
        None,
    )
    cause = (
        f"{caller.name}'s {f'setting {setting}' if setting else 'configuration'} names "
        f"{svc_name}.{ns}, but "
        + (
            f"namespace {ns} does not exist"
            if missing
            else f"there is no Service {svc_name} in {ns}"
        )
        + f", so the name does not resolve; Service {svc_name} is in namespace {where} now"
    )
    found_id = ctx.facts.find_services(svc_name)[1]
    return Finding(
        cls=CauseClass.BAD_CONFIG,
        cause=cause,
        summary=f"{caller.name} still points at {svc_name}.{ns}; {svc_name} lives in {where}",
        impact=f"{caller.name}'s calls to {svc_name} fail.",
        chain=chain(
            symptom,
            link(
                C,
                cause[0].upper() + cause[1:] + ".",
                found_id,  # the namespace read's not-found is an error: not cited
                about=Ref("Service", ns, svc_name),
            ),
        ),
        strength=Strength.INFERRED,
        explains={str(caller)},
        follow_ups=[
            f"Point {setting or caller.name} at {svc_name}.{elsewhere[0]['namespace']} "
            "(the namespace it moved to)."
        ],
    )


def labels_text(labels: object) -> str:
    """Labels in words: "app=web, tier=front" ("any" for an empty selector)."""
    if isinstance(labels, dict):
        return ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "any"
    return str(labels)


def peers_text(pol: p.NetworkPolicy, *, egress: bool = False) -> str:
    rules = zip(
        pol["egress"] if egress else pol["ingress"],
        pol["egress_ports"] if egress else pol["ingress_ports"],
        strict=False,
    )
    return (
        "; ".join(
            peer_text(peer) + (f" ({', '.join(ports)})" if ports and egress else "")
            for peers, ports in rules
            for peer in peers
        )
        or "nowhere"
    )


def peer_text(peer: p.PolicyPeer) -> str:
    if "cidr" in peer:
        unless = peer.get("cidr_except") or []
        return f"ipBlock {peer['cidr']}" + (f" except {', '.join(unless)}" if unless else "")
    return (
        f"pods with labels {labels_text(peer.get('pods'))}" if peer.get("pods") else "any pod"
    ) + (
        f" in namespaces with labels {labels_text(peer.get('namespaces'))}"
        if "namespaces" in peer
        else ""
    )


def _policy(
    ctx: Ctx,
    caller: Ref,
    symptom: Claim | None,
    pol: p.NetworkPolicy,
    nid: str | None,
    cause: str,
    dep: Ref,
    follow_up: str | None = None,
) -> Finding:
    return Finding(
        cls=CauseClass.NETWORK_POLICY_BLOCKING,
        cause=cause,
        summary=f"{caller.name}'s traffic is dropped by NetworkPolicy {pol['name']}",
        impact=f"{caller.name}'s calls time out.",
        chain=chain(
            symptom,
            link(
                C,
                cause[0].upper() + cause[1:] + ".",
                nid,
                about=ctx.ref(
                    "NetworkPolicy",
                    pol["name"],
                    dep.namespace if "in " + dep.namespace in cause else None,
                ),
            ),
        ),
        strength=Strength.INFERRED,
        explains={str(caller), str(dep)},
        follow_ups=[
            follow_up or f"Add a rule to NetworkPolicy {pol['name']} that allows this traffic."
        ],
    )


def _backs(workload_selector: dict[str, str], service_selector: dict[str, str]) -> bool:
    """Would the workload's pods be selected by the Service (its labels include the Service's
    selector, as far as the workload's own selector shows)?"""
    return bool(workload_selector) and all(
        workload_selector.get(k) == v for k, v in service_selector.items() if k in workload_selector
    )


def _no_endpoints(
    ctx: Ctx,
    caller: Ref,
    symptom: Claim | None,
    svc: p.Service,
    ns: str,
    eid: str | None,
    sid: str | None,
) -> Finding:
    dep = Ref("Service", ns, svc["name"])
    sets, stid = ctx.facts.statefulsets(ns)
    deps, did = ctx.facts.deployments(ns)
    pods = [x for x in ctx.facts.pods(ns)[0] if selects(svc["selector"], x["labels"])]
    owner = next((s for s in sets if _backs(s["selector"], svc["selector"])), None)
    owner_d = next((d for d in deps if _backs(d["selector"], svc["selector"])), None)
    why: str
    ids: tuple[str | None, ...]
    opened: set[str] = set()
    cls = CauseClass.DEPENDENCY_UNAVAILABLE
    if owner is not None and (owner["replicas"] or 0) == 0:
        why = f"StatefulSet {owner['name']} in {ns} is scaled to 0 replicas" + _scaled_by(
            owner["annotations"]
        )
        ids = (stid,)
    elif owner_d is not None and (owner_d["replicas"] or 0) == 0:
        why = f"Deployment {owner_d['name']} in {ns} is scaled to 0 replicas" + _scaled_by(
            owner_d.get("annotations") or {}
        )
        ids = (did,)
    elif pods and not any(x["ready"] for x in pods):
        # the dependency's pods are failing: why is their own chain (see chain.compose)
        opened = {str(dep), *(str(ctx.workload_ref(x, ns)) for x in pods[:3])}
        opened |= {str(Ref("Pod", ns, x["name"])) for x in pods[:3]}
        bad = pods[0]
        state = next(
            (
                (c["state"] or {}).get("reason")
                for c in bad["containers"]
                if (c["state"] or {}).get("reason")
            ),
            bad["phase"],
        )
        why = f"its pods are not ready (e.g. {bad['name']}: {state})"
        ids = (ctx.facts.pods(ns)[1],)
    elif not svc["selector"]:
        # no selector: its endpoints are written by hand (or by an operator), not chosen
        why = (
            f"Service {svc['name']} has no selector, and no endpoints were written for it (a "
            "Service without a selector gets only the Endpoints or EndpointSlices someone "
            "creates)"
        )
        ids = (sid, eid)
    else:
        sel = ",".join(f"{k}={v}" for k, v in svc["selector"].items())
        running = [x for x in ctx.facts.pods(ns)[0] if x["phase"] == "Running"]
        close = nearest_labels(svc["selector"], running)
        why = f"no pod in {ns} matches its selector {sel}" + (
            f" ({'; '.join(close)})" if close else ""
        )
        ids = (sid, ctx.facts.pods(ns)[1])
        # the events say the workload that backed it was removed: that, not a near label
        # on some other workload's pods, is why nothing matches
        gone = _gone(ctx, svc, ns)
        if gone is not None:
            why = f"no workload in {ns} runs pods for it any more: {gone[0]}"
            ids = (sid, gone[1])
        elif close:  # pods run there, labelled otherwise: the selector is what is wrong
            cls = CauseClass.SERVICE_SELECTOR_MISMATCH
        # unless the label it wants is one they would carry but for their own failure (an
        # operator labels its leader role=primary, and nobody leads): their chain says why
        near = [] if gone else [x for x in running if nearly_selects(svc["selector"], x["labels"])]
        opened = {str(ctx.workload_ref(x, ns)) for x in near[:3]}
        opened |= {str(Ref("Pod", ns, x["name"])) for x in near[:3]}
    return Finding(
        cls=cls,
        cause=f"{caller.name}'s dependency {svc['name']} ({ns}) has no ready endpoints because "
        f"{why}; {caller.name}'s errors are a consequence",
        summary=f"{caller.name} fails because {svc['name']} in {ns} is down (0 endpoints)",
        impact=f"Every request of {caller.name} that needs {svc['name']} fails or times out.",
        chain=chain(
            symptom,
            link(
                M,
                f"Service {svc['name']} in {ns} has 0 ready endpoints.",
                eid,
                sid,
                about=dep,
                facts=(fact("k8s.endpoints", "ready", "eq", 0, namespace=ns, service=svc["name"]),),
            ),
            link(C, why[0].upper() + why[1:] + ".", *ids, about=dep),
        ),
        strength=Strength.STATED,
        explains={str(caller), str(dep)},
        open_at=opened,
        follow_ups=[
            f"Bring {svc['name']} in {ns} back (scale it up / fix its pods); then check "
            f"{caller.name} recovers."
        ],
    )


_WORKLOADS = ("Deployment", "StatefulSet", "ReplicaSet", "DaemonSet")
_REMOVAL = re.compile(r"delet|remov|prun|TTL|expir|garbage|uninstall", re.I)


def _scaled_by(annotations: dict[str, str]) -> str:
    """' (downscaler/original-replicas=2; …)': what a tool that scales workloads noted on
    the one it scaled to zero (the replicas it will restore, its uptime window)."""
    notes = "; ".join(
        f"{k}={v}"
        for k, v in annotations.items()
        if "scale" in k or "replica" in k or "down" in k or "uptime" in k
    )
    return f" ({short(notes, 160)})" if notes else ""


def _gone(ctx: Ctx, svc: p.Service, ns: str) -> tuple[str, str | None] | None:
    """('Deployment geo-lookup is gone: kube-janitor, TimeToLiveExpired: "…will be deleted…"',
    the events' id) when the events about a workload that backed the Service (read by
    reads.vanished_workloads) say it was removed, and by whom; a controller's "not found"
    about it is cited beside. Nothing is said when no event says so."""
    for name in vanished_workloads(ctx, svc["name"], ns):
        evs, eid = ctx.facts.listed("k8s.events", p.Event, namespace=ns, object_name=name)
        removal = next(
            (
                e
                for e in evs
                if e["object"]["kind"] in _WORKLOADS
                and _REMOVAL.search(f"{e['reason']} {e['message']}")
            ),
            None,
        )
        if removal is None:
            continue
        said = (
            f"{removal['object']['kind']} {name} is gone: "
            + (f"{removal['source']}, " if removal["source"] else "")
            + f'{removal["reason"]}: "{short(str(removal["message"]), 220)}"'
        )
        missing = next(
            (
                e
                for e in ctx.facts.warnings(ns)[0]
                if f'"{name}" not found' in str(e["message"] or "")
            ),
            None,
        )
        if missing is not None:
            said += (
                f"; {missing['object']['kind']} {missing['object']['name']} reports "
                f"{missing['reason']}: {short(str(missing['message']), 120)}"
            )
        return said + f" (recreate {name}, and stop what removed it from doing so again)", eid
    return None


_CONTAINER_PORT = re.compile(r"^containers\[[^\]]*\]\.ports\[[^\]]*\]\.containerPort$")


def stale_policy_port(ctx: Ctx, ref: Ref, changes: list[Change], pods: list[p.Pod]) -> Claim | None:
    """A release that moved a container port (8080 → 8000) leaves every object that names the
    old number stale: a NetworkPolicy selecting the new pods whose ingress rules open the old
    port and not the new one drops every connection to them (probes are not subject to
    policy, so the pods stay Ready). The cause link naming that policy, or None."""
    policies, pid = ctx.facts.network_policies(ctx.ns)
    if not policies or not pods or pid is None:
        return None
    for change in changes:
        path = change.text.split(" ", 1)[0]
        if change.what != "setting" or not _CONTAINER_PORT.match(path):
            continue
        try:
            old, new = int(change.before or ""), int(change.after or "")
        except ValueError:
            continue
        target = pods[0]
        selecting = _selecting(policies, target, "Ingress")
        rules = [
            (pol, ports)
            for pol in selecting
            for ports in (pol["ingress_ports"] or [[] for _ in pol["ingress"]])
        ]
        if not rules or any(not ports or _admits_port(ports, new, target) for _, ports in rules):
            continue  # some rule opens every port or the new one: not this
        stale = [pol for pol, ports in rules if any(x.split("/")[-1] == str(old) for x in ports)]
        if not stale:
            continue
        pol = stale[0]
        return link(
            LinkRole.CAUSE,
            f"NetworkPolicy {pol['name']} admits {peers_text(pol)} to {ref.name}'s pods on port "
            f"{old} only, but the release moved the container port {old} → {new} ({path}): "
            f"every connection to port {new} is dropped while the pods stay Ready (kubelet "
            "probes are not subject to NetworkPolicy).",
            pid,
            about=ctx.ref("NetworkPolicy", ctx.ns, pol["name"]),
        )
    return None
