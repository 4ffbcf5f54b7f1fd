"""Containers that run but never become ready: the readiness probe's failure, what the program
said about it, and what the probe or the program depends on (a Service it cannot reach, a
ServiceAccount the apiserver refuses) — whose own failure is then the cause.
"""

from __future__ import annotations

import re

from tools.read import payloads as p
from triage.agent.planners.rules import text
from triage.agent.planners.rules.analyzers.common import (
    changed_since_healthy,
    health_home,
    ports_of,
    probe_of,
)
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.core.causes import CauseClass
from triage.core.models import LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _depends_on(ctx: Ctx, pod: p.Pod, line: text.Line) -> set[str]:
    """What a line says the container failed on — the Services it could not reach or
    resolve, the ServiceAccount the apiserver refused: their own failure is the cause."""
    if line.family is text.Family.K8S_FORBIDDEN:
        parsed = text.forbidden(line.text)
        sa = parsed["sa"] if parsed else pod["service_account"] or "default"
        sa_ns = parsed["ns"] if parsed else ctx.ns
        return {str(ctx.ref("ServiceAccount", sa, sa_ns))}
    if line.family not in (text.Family.CONNECTION, text.Family.DNS):
        return set()
    out: set[str] = set()
    for endpoint in text.endpoints_in(line.text):
        svc = text.service_of(endpoint.host, ctx.ns)
        if svc:
            out.add(str(ctx.ref("Service", svc[0], svc[1])))
    return out


_STATUS = re.compile(r"status ?code:? ?(\d{3})", re.I)
# What an HTTP probe's answer means (the kubelet counts 200-399 as success and sends no
# credentials): the probe is at fault for these, the app's health for a 5xx.
_STATUS_MEANS = {
    400: "the app refuses the probe's request as malformed (a Host header or scheme it requires?)",
    401: "the probe path requires authentication, and the kubelet's probe sends no credentials",
    403: "the probe path requires a permission the kubelet's probe, which sends no credentials, "
    "does not have",
    404: "the app does not serve that path",
    405: "the app does not accept GET on that path",
}


# A web framework refusing a request for its Host header: Rails' HostAuthorization, Django's
# ALLOWED_HOSTS, Spring/Tomcat, ASP.NET's host filtering.
_HOST_REFUSED = re.compile(
    r"Blocked hosts?:|Invalid HTTP_HOST header|DisallowedHost|host not (allowed|permitted)"
    r"|The request host .* is not allowed|Host header .* (rejected|not allowed)"
    r"|Hosts? filtering|not in ALLOWED_HOSTS",
    re.I,
)


def _host_refused(log: list[str]) -> text.Line | None:
    """The last line of the app's log saying it refused a request for its Host header."""
    return next((ln for ln in reversed(text.lines_of(log)) if _HOST_REFUSED.search(ln.text)), None)


def _about_path(log: list[str], path: str | None) -> text.Line | None:
    """The last line of the app's log about the probe's path ("Unauthorized: /api/health/")."""
    if not path or path == "/":
        return None
    for line in reversed(text.lines_of(log)):
        if path in line.text or path.rstrip("/") + " " in line.text:
            return line
    return None


def _status_answer(
    ctx: Ctx, pod: p.Pod, c: p.Container, probe: p.Probe, code: int
) -> tuple[str, str | None]:
    """Why an HTTP probe got `code`, with the app's own line about it; (why, log id)."""
    log, said_id = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
    about = _about_path(log, probe.get("path")) if said_id else None
    host = _host_refused(log) if said_id and code in (400, 403) else None
    meaning = (
        "the app's Host allow-list refuses it: the kubelet's probe sends the pod IP and port "
        "as the Host header, which the list does not hold"
        if host
        else _STATUS_MEANS[code]
    )
    quoted = host or about
    home = health_home(log, "readiness", str(probe.get("path") or "")) if code == 404 else None
    why = (
        f"the probe path {probe.get('path')} answers {code}: {meaning}"
        + (f'; the app logs: "{short(quoted.text, 200)}"' if quoted else "")
        + (
            f"; the app is served by {home[1]}, which answers this check at {home[0]} — its log: "
            f'"{short(home[2], 160)}"'
            if home
            else ""
        )
    )
    return why, said_id


# A server announcing the address it listens on, when that address is the loopback one:
# "Uvicorn running on http://127.0.0.1:8000", "Listening on localhost:3000", "bound to [::1]".
_LOOPBACK = re.compile(
    r"\b(listen\w*|running|serving|bound|binding|started|starting|accepting)\b[^\n]{0,40}?"
    r"(?<![\d.])(127\.0\.0\.1|localhost|\[::1\])(:\d+)?\b",
    re.I,
)


def _bound_to_loopback(ctx: Ctx, pod: p.Pod, c: p.Container) -> tuple[str, str] | None:
    """(why, log evidence id) when the container's log announces a loopback listen address."""
    log, log_id = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
    line = next((ln for ln in log if _LOOPBACK.search(ln)), None) if log_id else None
    if line is None or log_id is None:
        return None
    return (
        f'the app listens on the loopback interface only (its log: "{short(line.strip(), 160)}"'
        "): a server bound to 127.0.0.1 refuses connections to the pod IP, where the kubelet "
        "probes and the Service sends traffic; its bind address must be 0.0.0.0 (all "
        "interfaces)",
        log_id,
    )


def readiness(ctx: Ctx) -> list[Finding]:
    out: list[Finding] = []
    seen: set[str] = set()
    for pod in ctx.focus_pods:
        running = all((c["state"] or {}).get("kind") == "running" for c in pod["containers"])
        if pod["phase"] != "Running" or pod["ready"] or not running:
            continue
        ref = ctx.workload_ref(pod)
        if str(ref) in seen:
            continue
        seen.add(str(ref))
        events, eid = ctx.facts.events_about(ctx.ns, pod["name"])
        probe_ev = next(
            (e for e in events if e["reason"] == "Unhealthy" and "eadiness" in str(e["message"])),
            None,
        )
        c = next((x for x in pod["containers"] if not x["ready"]), pod["containers"][0])
        probe = probe_of(c, "readiness")
        pods_id = ctx.facts.pods(ctx.ns)[1]
        message = str(probe_ev["message"] if probe_ev else "")
        target = f"{probe.get('kind', '?')} {probe.get('path', '')} port {probe.get('port', '?')}"
        ports = ports_of(c)
        # The probe itself is wrong (it asks where the app does not answer), or the app
        # answers and declares itself unready — then its log says why, and that is the cause.
        said: text.Line | None = None
        said_id: str | None = None
        opened: set[str] = set()
        loopback_only = False
        strength = Strength.STATED if probe_ev else Strength.INFERRED
        if probe.get("port") is not None and str(probe.get("port")) not in ports and ports:
            why = (
                f"the probe targets port {probe.get('port')}, which the container does not "
                f"expose (ports {', '.join(ports)})"
            )
        elif (code := int(m.group(1)) if (m := _STATUS.search(message)) else 0) in _STATUS_MEANS:
            why, said_id = _status_answer(ctx, pod, c, probe, code)
        elif "refused" in message:
            why = f"nothing listens where the probe connects ({target})"
            if (bound := _bound_to_loopback(ctx, pod, c)) is not None:
                why, said_id = bound  # up, bound where only the pod itself reaches it
                loopback_only = True
        else:
            log, said_id = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            said = text.telling(log) if said_id else None
            answered = short(message, 120) if message else "it fails"
            if said is not None:
                why = (
                    f"the app answers its readiness probe ({target}) with {answered}, and its "
                    f'log says why: "{short(said.text, 200)}"'
                )
                opened = _depends_on(ctx, pod, said)
            else:
                why = f"the probe {target} fails: {answered}"
        services = ctx.facts.services_selecting(ctx.ns, pod)
        eps_text = ""
        eps_id = None
        for svc in services:
            eps, eps_id = ctx.facts.endpoints(ctx.ns, svc["name"])
            if eps is not None:
                eps_text = f"Service {svc['name']} has {eps['ready']} ready endpoint(s)."
                break
        f = Finding(
            cls=CauseClass.BAD_CONFIG if loopback_only else CauseClass.READINESS_PROBE_FAILING,
            cause=f"{ref.name}'s readiness probe fails: {why}",
            summary=f"{ref.name}'s pods are Running but not Ready, so they get no traffic",
            impact=eps_text or f"{ref.name} receives no traffic.",
            chain=chain(
                link(
                    S,
                    f"Pod {pod['name']} is Running but not Ready. {eps_text}",
                    pods_id,
                    eps_id,
                    about=ctx.pod_ref(pod),
                    facts=(
                        fact(
                            "k8s.pods", f"[name={pod['name']}].ready", "eq", False, namespace=ctx.ns
                        ),
                    ),
                ),
                link(M, f"Event Unhealthy: {short(message)}", eid, about=ctx.pod_ref(pod))
                if probe_ev
                else None,
                link(
                    C, f"The readiness probe is {target}: {why}.", pods_id, eid, said_id, about=ref
                ),
            ),
            explains={str(ref), *(str(ctx.ref("Service", s["name"])) for s in services)},
            strength=strength,
            open_at=opened,
            follow_ups=[
                "Fix what the app's log says it is waiting for."
                if said is not None
                else "Point the readiness probe at a path and port the app serves."
            ],
        )
        changed_since_healthy(ctx, ref, f, field="probe")
        out.append(f)
    return out
