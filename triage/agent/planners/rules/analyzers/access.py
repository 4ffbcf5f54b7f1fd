"""Access: the apiserver refuses the workload's ServiceAccount (a 403 in its log names the
verb and the resource; its RoleBindings say which Role it has and what that Role lacks), or a
cloud API refuses the identity a running workload calls it with (its log names the principal,
the permission and the resource; its ServiceAccount says which cloud identity it is)."""

from __future__ import annotations

import re
from typing import Any

from tools.read import payloads as p
from triage.agent.planners.rules import text
from triage.agent.planners.rules.analyzers.common import release_changes
from triage.agent.planners.rules.analyzers.containers import cloud_identity
from triage.agent.planners.rules.chain import Finding, chain, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.reads import controller_pods, refused_deployments
from triage.core.causes import CauseClass
from triage.core.models import Claim, Evidence, LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


def _group_name(group: str) -> str:
    return f'"{group}"' if group else '"" (core)'


def _lacks(roles: list[p.Role], verb: str, resource: str, group: str) -> str:
    """What the bound Roles lack for `verb` on `resource` in API group `group`: the group
    (a rule grants it under another apiGroups), the verb, or the resource itself."""
    rules = [r for role in roles for r in role["rules"]]

    def names(rule: Any, field: str) -> list[str]:
        return list(rule.get(field) or [])

    def has(rule: Any, field: str, value: str) -> bool:
        return value in names(rule, field) or "*" in names(rule, field)

    elsewhere = [
        x
        for x in rules
        if has(x, "resources", resource)
        and has(x, "verbs", verb)
        and not has(x, "api_groups", group)
    ]
    if elsewhere:
        given = sorted({g for x in elsewhere for g in names(x, "api_groups") or [""]})
        return (
            f"the Role grants {verb} on {resource} only in apiGroups "
            f"{', '.join(_group_name(g) for g in given)}, but {resource} are in API group "
            f"{_group_name(group)}"
        )
    if any(has(x, "resources", resource) and has(x, "api_groups", group) for x in rules):
        return f"the Role lacks the verb {verb}"
    return f"the Role grants nothing on {resource} in API group {_group_name(group)}"


def _grants(role: p.Role, verb: str, resource: str, group: str) -> bool:
    for rule in role["rules"]:
        groups = rule.get("api_groups") or [""]
        if (
            (group in groups or "*" in groups)
            and (resource in rule.get("resources", []) or "*" in rule.get("resources", []))
            and (verb in rule.get("verbs", []) or "*" in rule.get("verbs", []))
        ):
            return True
    return False


def _bound_elsewhere(
    data: p.RBAC, sa_ns: str, sa: str, verb: str, resource: str, group: str
) -> str | None:
    """A binding that grants the refused permission to an account of the same name in
    another namespace: the binding was copied from there and names the wrong namespace."""
    roles = {f"{r['kind']}/{r['name']}": r for r in data["roles"]}
    for b in data["bindings"]:
        for subject in b.get("subjects", []):
            kind, _, rest = subject.partition("/")
            other_ns, _, name = rest.partition("/")
            role = roles.get(b.get("role", ""))
            if (
                kind == "ServiceAccount"
                and name == sa
                and other_ns != sa_ns
                and role is not None
                and _grants(role, verb, resource, group)
            ):
                what = "ClusterRoleBinding" if b.get("cluster") else "RoleBinding"
                return (
                    f"{what} {b.get('name')} binds {b.get('role')} (which grants {verb} on "
                    f"{resource}) to ServiceAccount {other_ns}/{name} — another namespace, "
                    f"not {sa_ns}/{sa}: the binding names the wrong namespace"
                )
    return None


def _granted_to(
    data: p.RBAC,
    sa_ns: str,
    sa: str,
    verb: str,
    resource: str,
    group: str,
    pod: p.Pod | None,
) -> str | None:
    """The grant exists, to another ServiceAccount of the same namespace: the pods run as
    the wrong one (most often `default`, when the template names none, or a values key the
    chart no longer reads)."""
    roles = {f"{r['kind']}/{r['name']}": r for r in data["roles"]}
    for b in data["bindings"]:
        role = roles.get(b.get("role", ""))
        if role is None or not _grants(role, verb, resource, group):
            continue
        for subject in b.get("subjects", []):
            kind, _, rest = subject.partition("/")
            other_ns, _, name = rest.partition("/")
            if kind == "ServiceAccount" and other_ns == sa_ns and name != sa:
                runs_as = (
                    "the pods set no serviceAccountName, so they run as the default ServiceAccount"
                    if sa == "default"
                    else f"the pods run as ServiceAccount {sa} (serviceAccountName {sa})"
                )
                what = "ClusterRoleBinding" if b.get("cluster") else "RoleBinding"
                return (
                    f"{runs_as}; {what} {b.get('name')} binds {b.get('role')} (which grants "
                    f"{verb} on {resource}) to ServiceAccount {sa_ns}/{name} instead"
                    + ("" if pod is None else f", which pod {pod['name']} does not run as")
                )
    return None


def _rbac_for(ctx: Ctx, sa_ns: str, target: str | None) -> tuple[p.RBAC | None, str | None]:
    """What grants the account anything in `target`: that namespace's RoleBindings (a
    RoleBinding grants only where it lives, whoever its subjects are) and the account's
    ClusterRoleBindings (read with its own namespace)."""
    own, oid = ctx.facts.rbac(sa_ns)
    if not target or target == sa_ns:
        return own, oid
    there, tid = ctx.facts.rbac(target)
    if there is None:
        return own, oid
    cluster = [b for b in own["bindings"] if b.get("cluster")] if own else []
    merged: p.RBAC = {
        "bindings": [b for b in there["bindings"] if not b.get("cluster")] + cluster,
        "roles": there["roles"] + [r for r in own["roles"] if r["kind"] == "ClusterRole"]
        if own
        else there["roles"],
    }
    return merged, tid


def rbac(ctx: Ctx) -> list[Finding]:
    out = []
    for ev in ctx.facts.all("k8s.logs"):
        if not ev.ok:
            continue
        lines = [
            ln
            for ln in text.failures([str(x) for x in ev.data or []])
            if ln.family is text.Family.K8S_FORBIDDEN
        ]
        parsed = next((text.forbidden(ln.text) for ln in lines if text.forbidden(ln.text)), None)
        if not parsed:
            continue
        sa_ns, sa = parsed["ns"], parsed["sa"]
        verb, resource, group = parsed["verb"], parsed["resource"], parsed.get("group", "")
        if not group:  # 'deployments.apps is forbidden: ...' names the group first
            said = re.search(rf"\b{re.escape(resource)}\.([a-z0-9.-]+) is forbidden", lines[0].text)
            group = said.group(1) if said else ""
        pod_name = str(ev.args.get("pod"))
        pod = next((x for x in ctx.facts.pods(ctx.ns)[0] if x["name"] == pod_name), None)
        ref = ctx.workload_ref(pod) if pod else ctx.ref("ServiceAccount", sa, sa_ns)
        data, rid = _rbac_for(ctx, sa_ns, parsed.get("target"))
        subject = f"ServiceAccount/{sa_ns}/{sa}"
        roles_text, missing, lacking = "no RoleBinding binds it", True, ""
        if data:
            bound = [b for b in data["bindings"] if subject in b["subjects"]]
            roles = {f"{r['kind']}/{r['name']}": r for r in data["roles"]}
            named = [roles[b["role"]] for b in bound if b["role"] in roles]
            if named:
                missing = not any(_grants(r, verb, resource, group) for r in named)
                lacking = _lacks(named, verb, resource, group) if missing else ""
                roles_text = "; ".join(
                    f"{r['kind']} {r['name']} grants "
                    + ", ".join(
                        f"{'/'.join(x.get('verbs', []))} on {','.join(x.get('resources', []))}"
                        " (apiGroups "
                        + ",".join(_group_name(g) for g in x.get("api_groups") or [""])
                        + ")"
                        for x in r["rules"]
                    )
                    for r in named
                )
            elif bound:
                roles_text = f"bound to {', '.join(b['role'] for b in bound)}"
            if not bound:
                near = _bound_elsewhere(data, sa_ns, sa, verb, resource, group) or _granted_to(
                    data, sa_ns, sa, verb, resource, group, pod
                )
                if near is not None:
                    roles_text = near
        if not missing:
            continue
        served, released = _served_through(ctx, ev), _released(ctx, ev)
        out.append(
            Finding(
                cls=CauseClass.RBAC_FORBIDDEN,
                cause=f"ServiceAccount {sa_ns}/{sa} may not {verb} {resource}"
                + (f" in {parsed['target']}" if parsed.get("target") else "")
                + f": {roles_text}"
                + ("" if not lacking else f" — {lacking}")
                + (f"; {released[0]}" if released else ""),
                summary=f"{ref.name} is refused by the apiserver (403): it may not {verb} "
                f"{resource}",
                impact=f"{ref.name} cannot do the work that needs {verb} on {resource}.",
                chain=chain(
                    served,
                    link(
                        M if served else S,
                        f"{pod_name}'s log: {short(lines[0].text)}",
                        ev.id,
                        about=ref,
                    ),
                    link(
                        M if released else C,
                        f"RBAC of {sa_ns}/{sa}: {short(roles_text, 300)}.",
                        rid,
                        ev.id,
                        about=ref,
                    ),
                    link(C, released[0][0].upper() + released[0][1:] + ".", released[1], rid)
                    if released
                    else None,
                ),
                explains={str(ref), str(ctx.ref("ServiceAccount", sa, sa_ns))}
                | ({str(served.subject)} if served and served.subject else set()),
                follow_ups=[
                    "Set the pod template's serviceAccountName to the ServiceAccount the "
                    "binding names."
                    if " instead" in roles_text
                    else f"Bind the role to ServiceAccount {sa_ns}/{sa} (fix the binding's "
                    "subject namespace)."
                    if "binds " in roles_text
                    else f"Add the verb {verb} on {resource} to the Role bound to {sa_ns}/{sa}."
                ],
            )
        )
        break
    return out


def _served_through(ctx: Ctx, ev: Evidence) -> Claim | None:
    """The asked-about workload's link to a refused pod of another namespace: the controller
    of the class of an Ingress that routes to it (its routes come from what that controller
    can read, so its 403 is the workload's outage)."""
    ns, pod = ev.args.get("namespace"), ev.args.get("pod")
    if ns == ctx.ns:
        return None
    ingresses, iid = ctx.facts.ingresses(ctx.ns)
    classes, _ = ctx.facts.ingress_classes()
    default = next((c["name"] for c in classes if c.get("default")), None)
    for ing in ingresses:
        name = ing["ingress_class"] or default
        if not name or not ctx.ingress_asked(ing):
            continue
        if any(x["namespace"] == ns and x["name"] == pod for x in controller_pods(ctx, name)):
            services = sorted({str(b.get("service")) for b in ing["backends"] if b.get("service")})
            return link(
                S,
                f"Ingress {ing['name']} (class {name}) routes to {', '.join(services)}; its "
                f"routes are made by the class's controller, pod {pod} in {ns}.",
                iid,
                ev.id,
                about=ctx.ref("Ingress", ing["name"]),
            )
    return None


def _released(ctx: Ctx, ev: Evidence) -> tuple[str, str] | None:
    """What the refused pod's own Deployment changed in its last release (another namespace's
    workload: an upgraded controller that needs permissions its old Role did not grant)."""
    ns = str(ev.args.get("namespace"))
    if ns == ctx.ns:
        return None
    for where, name in refused_deployments(ctx):
        if where != ns or not str(ev.args.get("pod")).startswith(f"{name}-"):
            continue
        ref = ctx.ref("Deployment", name, ns)
        changes, revisions, hid = release_changes(ctx, ref)
        if changes and hid:
            listed = "; ".join(c.text for c in changes[:4])
            return (
                f"the latest release of {name} ({ns}), revision {revisions}, changed "
                f"{short(listed, 240)} and nothing in its RBAC: the new version asks for what "
                "the Role it kept does not grant",
                hid,
            )
    return None


# How the clouds word a refused permission: who, what, on what.
_REFUSALS = (
    re.compile(  # Google Cloud
        r"(?P<who>[\w.-]+@[\w.-]+)\s+does not have (?P<what>[\w.]+) access to (?P<res>[^.\"]+)"
    ),
    re.compile(  # AWS
        r"(?P<who>arn:aws:[^\s\"]+) is not authorized to perform:? (?P<what>[\w:*-]+)"
        r"(?: on resource:? (?P<res>[^\s\"]+))?"
    ),
    re.compile(  # Azure
        r"'(?P<who>[^']+)' does not have authorization to perform action '(?P<what>[^']+)' "
        r"over scope '(?P<res>[^']+)'"
    ),
)
_BUCKET = re.compile(r"storage\.googleapis\.com/(?:upload/)?storage/v1/b/(?P<bucket>[\w.-]+)")


def refusal(line: str) -> str | None:
    """'asset-api@p.iam.gserviceaccount.com may not storage.objects.create on bucket b'."""
    for pattern in _REFUSALS:
        m = pattern.search(line)
        if m:
            bucket = _BUCKET.search(line)
            res = f"bucket {bucket.group('bucket')}" if bucket else (m.group("res") or "").strip()
            return f"{m.group('who')} may not {m.group('what')}" + (f" on {res}" if res else "")
    return None


# Fields of a structured log line that name what a call went to
_TARGET_FIELDS = re.compile(
    r"[\"']?(?P<k>bucket|container|blob|key|object|table|queue|topic|resource|url|uri|"
    r"account|vault|secret_name|path)[\"']?\s*[:=]\s*[\"']?(?P<v>[^\"',}\s]+)",
    re.I,
)


def _refused_target(log: list[str]) -> str:
    """What the refused call went to, when the refusal itself does not say (Azure's and many
    SDKs' 403s do not): the fields of the last line that reports a 403 or a denied or failed
    call and names its target — '"upload of rendition failed" (container renditions, blob …)'."""
    for raw in reversed(log[-200:]):
        if not re.search(r"\b403\b|denied|forbidden|not authori[sz]ed|failed", raw, re.I):
            continue
        fields = [(m.group("k"), m.group("v")) for m in _TARGET_FIELDS.finditer(raw)]
        if not fields:
            continue
        msg = re.search(r'"(?:msg|message)"\s*:\s*"([^"]{1,80})"', raw)
        said = ", ".join(f"{k} {v}" for k, v in fields[:3])
        return (f'"{msg.group(1)}" ' if msg else "") + f"({said})"
    return ""


def cloud_refusals(ctx: Ctx) -> list[Finding]:
    """Running, Ready pods whose current log says a cloud API refused them: the calls that
    need that permission fail (uploads, writes) while the rest serves."""
    out: list[Finding] = []
    seen: set[str] = set()
    for pod in ctx.focus_pods:
        ref = ctx.workload_ref(pod)
        if not pod["ready"] or str(ref) in seen:
            continue
        for c in pod["containers"]:
            log, lid = ctx.facts.logs(ctx.ns, pod["name"], c["name"], False)
            line = next(
                (
                    ln
                    for ln in text.failures(log)
                    if ln.family is text.Family.ACCESS_DENIED  # a 403 received is no 403 sent
                ),
                None,
            )
            if line is None or not lid:
                continue
            seen.add(str(ref))
            denied = refusal(line.text)
            who, wid = cloud_identity(ctx, pod)
            target = "" if denied else _refused_target(log)
            cause = (
                "a cloud API refuses the identity "
                f"{ref.name} calls it with: {denied or short(line.text, 180)}"
                + (f"; the refused call: {target}" if target else "")
                + (f"; {who}" if who else "")
                + " — the calls that need that permission fail, the rest still serve"
            )
            out.append(
                Finding(
                    cls=CauseClass.CLOUD_ACCESS_DENIED,
                    cause=cause,
                    summary=f"{ref.name}'s calls to a cloud API are refused: "
                    f"{denied or 'access denied'}",
                    impact=f"What {ref.name} does with that permission fails; its pods stay Ready.",
                    chain=chain(
                        link(
                            S,
                            f"Pod {pod['name']} is Ready, and its log says the call failed: "
                            f"{short(line.text)}",
                            lid,
                            about=ctx.pod_ref(pod),
                        ),
                        link(
                            C,
                            (who[0].upper() + who[1:] if who else "The cloud refuses it")
                            + (f"; the refusal: {denied}" if denied else "")
                            + ".",
                            wid or lid,
                            about=ref,
                        ),
                    ),
                    explains={str(ref)},
                    follow_ups=[
                        "Grant that identity the permission on the resource (the cloud's IAM, "
                        "not Kubernetes RBAC), or point the workload at an identity that has it."
                    ],
                )
            )
            break
    return out
