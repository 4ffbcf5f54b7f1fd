"""Pure functions that turn raw Kubernetes JSON into the small, stable shapes tools return:
pods, pod templates, events, nodes (the other kinds are in `shapes_kinds.py`).

Keeping only what triage needs (status, reasons, exit codes, counts, references, the settings
of a container) bounds what reaches a model, the judge or storage. What is dropped on purpose:
annotations (but a template's, which carry restart stamps and config checksums), ConfigMap
data, and every value that comes from a Secret. Env values of the spec are kept because the
cause is so often a setting; the read tools' Redactor masks a value whose name looks secret
whole, and they are clipped here. Functions take `kubectl get -o json` dicts, so a recorded
bundle and a live call go through the same code. What they return is typed in
`tools/read/payloads.py`.
"""

from __future__ import annotations

from typing import Any, cast

from tools.read import payloads as p

Json = dict[str, Any]
VALUE_CHARS = 300  # an env value or an argument longer than this is clipped


def get(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return default
        obj = obj.get(key)
        if obj is None:
            return default
    return obj


def pick(obj: Json, keys: tuple[str, ...]) -> Any:
    """The keys of `obj` that are set (typed by the caller's payload)."""
    return {k: obj[k] for k in keys if obj.get(k) is not None}


def clipped(value: Any) -> str:
    text = str(value)
    return text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"


_MACHINE_NOTES = ("kubectl.kubernetes.io/", "deployment.kubernetes.io/", "meta.helm.sh/")


def notes(meta: Json) -> dict[str, str]:
    """The annotations people leave on an object ("suspended-by: maintenance runbook step 4"),
    clipped; the machine-written ones (last-applied configuration, revisions) are dropped."""
    return {
        str(k): str(v)[:200]
        for k, v in (meta.get("annotations") or {}).items()
        if not str(k).startswith(_MACHINE_NOTES)
    }


def conditions(status: Json) -> list[p.Condition]:
    keys = ("type", "status", "reason", "message", "lastTransitionTime")
    return [pick(c, keys) for c in status.get("conditions") or []]


def owner(meta: Json) -> p.Owner | None:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            return {"kind": ref.get("kind"), "name": ref.get("name")}
    return None


def selector(spec: Json) -> dict[str, str]:
    return dict(get(spec, "selector", "matchLabels", default={}) or {})


# -- containers and templates ----------------------------------------------------------------


def _state(state: Json | None) -> p.ContainerState | None:
    if not state:
        return None
    for kind in ("waiting", "terminated", "running"):
        if kind in state and state[kind] is not None:
            inner = state[kind]
            out: Json = {"kind": kind}
            for src, dst in (
                ("reason", "reason"),
                ("message", "message"),
                ("exitCode", "exit_code"),
                ("startedAt", "started_at"),
                ("finishedAt", "finished_at"),
            ):
                if inner.get(src) is not None:
                    out[dst] = inner[src]
            return cast(p.ContainerState, out)
    return None


def _probe(raw: Json | None) -> p.Probe | None:
    if not raw:
        return None
    out: Json = {}
    if "httpGet" in raw:
        out |= {"kind": "http", "path": raw["httpGet"].get("path", "/")}
        out["port"] = raw["httpGet"].get("port")
        headers = [h for h in raw["httpGet"].get("httpHeaders") or [] if isinstance(h, dict)]
        host = raw["httpGet"].get("host") or next(
            (h.get("value") for h in headers if str(h.get("name", "")).lower() == "host"), None
        )
        if host:
            out["host"] = clipped(str(host))
        if headers:
            out["header_names"] = [clipped(str(h.get("name", ""))) for h in headers]
    elif "tcpSocket" in raw:
        out |= {"kind": "tcp", "port": raw["tcpSocket"].get("port")}
    elif "grpc" in raw:
        out |= {"kind": "grpc", "port": raw["grpc"].get("port")}
        if raw["grpc"].get("service") is not None:
            out["service"] = clipped(str(raw["grpc"]["service"]))
    elif "exec" in raw:
        out |= {"kind": "exec", "command": [clipped(c) for c in raw["exec"].get("command") or []]}
    for src, dst in (
        ("initialDelaySeconds", "initial_delay_s"),
        ("periodSeconds", "period_s"),
        ("timeoutSeconds", "timeout_s"),
        ("failureThreshold", "failure_threshold"),
    ):
        if raw.get(src) is not None:
            out[dst] = raw[src]
    return cast(p.Probe, out)


def _env(raw: Json) -> p.EnvVar:
    out: Json = {"name": str(raw.get("name", ""))}
    ref = raw.get("valueFrom") or {}
    if "value" in raw:
        out["value"] = clipped(raw.get("value") or "")
    elif "configMapKeyRef" in ref:
        r = ref["configMapKeyRef"]
        out["configmap"] = f"{r.get('name', '')}/{r.get('key', '')}"
    elif "secretKeyRef" in ref:
        r = ref["secretKeyRef"]
        out["secret"] = f"{r.get('name', '')}/{r.get('key', '')}"
    elif "fieldRef" in ref or "resourceFieldRef" in ref:
        r = ref.get("fieldRef") or ref.get("resourceFieldRef") or {}
        out["field"] = str(r.get("fieldPath") or r.get("resource") or "")
    return cast(p.EnvVar, out)


def container_spec(c: Json) -> p.ContainerSpec:
    res = c.get("resources") or {}
    env_from = []
    for src in c.get("envFrom") or []:
        if "configMapRef" in src:
            env_from.append(f"configmap:{src['configMapRef'].get('name', '')}")
        if "secretRef" in src:
            env_from.append(f"secret:{src['secretRef'].get('name', '')}")
    out: p.ContainerSpec = {
        "name": str(c.get("name") or ""),
        "image": str(c.get("image") or ""),
        "command": [clipped(x) for x in c.get("command") or []],
        "args": [clipped(x) for x in c.get("args") or []],
        "env": [_env(e) for e in c.get("env") or []],
        "env_from": env_from,
        "ports": [
            pick(
                {
                    "name": x.get("name"),
                    "port": x.get("containerPort"),
                    # a host port is the node's (port, protocol): 514/UDP and 514/TCP differ;
                    # a UDP or SCTP port is said too (a Service port forwards one protocol)
                    "protocol": x.get("protocol")
                    if x.get("hostPort") or x.get("protocol") not in (None, "TCP")
                    else None,
                    "host_port": x.get("hostPort"),
                },
                ("name", "port", "protocol", "host_port"),
            )
            for x in c.get("ports") or []
        ],
        "limits": dict(res.get("limits") or {}),
        "requests": dict(res.get("requests") or {}),
        "liveness": _probe(c.get("livenessProbe")),
        "readiness": _probe(c.get("readinessProbe")),
        "startup": _probe(c.get("startupProbe")),
        "mounts": [f"{m.get('name')} -> {m.get('mountPath')}" for m in c.get("volumeMounts") or []],
    }
    if c.get("imagePullPolicy"):
        out["pull_policy"] = str(c["imagePullPolicy"])
    if c.get("restartPolicy"):
        out["restart_policy"] = str(c["restartPolicy"])  # an init container's: Always = sidecar
    return out


_VOLUME_REFS = {
    "persistentVolumeClaim": "claimName",
    "configMap": "name",
    "secret": "secretName",
}


def volumes(spec: Json) -> list[p.Volume]:
    out: list[p.Volume] = []
    for v in spec.get("volumes") or []:
        kind = next((k for k in v if k != "name"), "unknown")
        ref_key = _VOLUME_REFS.get(kind)
        entry: Json = {"name": v.get("name", ""), "kind": kind}
        if ref_key and isinstance(v.get(kind), dict) and v[kind].get(ref_key):
            entry["ref"] = v[kind][ref_key]
        if kind == "emptyDir" and isinstance(v.get(kind), dict):
            for src, dst in (("medium", "medium"), ("sizeLimit", "size_limit")):
                if v[kind].get(src):
                    entry[dst] = str(v[kind][src])
        out.append(cast(p.Volume, entry))
    return out


# What `template` already carries field by field (diffed by name, env values redacted): the
# flattened settings leave them out. Everything else in a pod template is a setting.
_TYPED_CONTAINER_KEYS = frozenset(
    {
        "name",
        "image",
        "env",
        "envFrom",
        "command",
        "args",
        "resources",
        "livenessProbe",
        "readinessProbe",
        "startupProbe",
    }
)
_TYPED_SPEC_KEYS = frozenset(
    {"containers", "initContainers", "serviceAccountName", "serviceAccount", "nodeSelector"}
)
MAX_SETTINGS = 200  # paths kept of one template (a template rarely has 60)


def _flatten(value: Any, path: str, out: dict[str, str]) -> None:
    """`out[path] = value` for every scalar under `value`. A list of named items (ports,
    volumes, mounts) is keyed by name (`ports[http]`), so reordering is no change; any other
    list is one value, its items in order."""
    if len(out) >= MAX_SETTINGS:
        return
    if isinstance(value, dict):
        for k in sorted(value):
            _flatten(value[k], f"{path}.{k}" if path else str(k), out)
    elif isinstance(value, list):
        if value and all(isinstance(v, dict) and v.get("name") for v in value):
            for v in value:
                _flatten({k: x for k, x in v.items() if k != "name"}, f"{path}[{v['name']}]", out)
        elif value:
            out[path] = clipped(", ".join(_compact(v) for v in value))
    elif value is not None:
        out[path] = clipped(str(value).lower() if isinstance(value, bool) else value)


def _compact(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_compact(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_compact(v) for v in value) + "]"
    return str(value).lower() if isinstance(value, bool) else str(value)


def settings(tmpl: Json) -> dict[str, str]:
    """Every setting of a pod template as `path -> value`, but what `template` carries field by
    field: `dnsPolicy`, `securityContext.runAsUser`, `containers[app].ports[http].containerPort`,
    `volumes[scratch].emptyDir.medium`, `labels.app`. Complete by construction, so a diff of two
    revisions' settings names whatever else a release changed."""
    spec = tmpl.get("spec") or {}
    out: dict[str, str] = {}
    labels = {
        k: v for k, v in (get(tmpl, "metadata", "labels") or {}).items() if k != "pod-template-hash"
    }
    _flatten({k: v for k, v in spec.items() if k not in _TYPED_SPEC_KEYS}, "", out)
    for key in ("containers", "initContainers"):
        for c in spec.get(key) or []:
            rest = {k: v for k, v in c.items() if k not in _TYPED_CONTAINER_KEYS}
            _flatten(rest, f"{key}[{c.get('name', '')}]", out)
    _flatten(labels, "labels", out)
    return out


def template(tmpl: Json) -> p.PodTemplate:
    spec = tmpl.get("spec") or {}
    return {
        "settings": settings(tmpl),
        "containers": [container_spec(c) for c in spec.get("containers") or []],
        "init_containers": [container_spec(c) for c in spec.get("initContainers") or []],
        "service_account": spec.get("serviceAccountName"),
        "volumes": volumes(spec),
        "node_selector": dict(spec.get("nodeSelector") or {}),
        "annotations": {
            str(k): clipped(v) for k, v in (get(tmpl, "metadata", "annotations") or {}).items()
        },
    }


def _containers(statuses: list[Json], specs: list[Json]) -> list[p.Container]:
    by_name = {c.get("name"): c for c in specs}
    out: list[p.Container] = []
    seen: set[str] = set()
    for cs in statuses:
        name = str(cs.get("name"))
        seen.add(name)
        raw = by_name.get(name) or {}
        res = raw.get("resources") or {}
        out.append(
            {
                "name": name,
                "image": cs.get("image") or raw.get("image"),
                "ready": bool(cs.get("ready")),
                "restarts": int(cs.get("restartCount") or 0),
                "state": _state(cs.get("state")),
                "last_terminated": _state(cs.get("lastState")),
                "limits": dict(res.get("limits") or {}),
                "requests": dict(res.get("requests") or {}),
                "spec": container_spec(raw) if raw else None,
            }
        )
    for spec_name, raw in by_name.items():  # not started yet (Pending): the spec side
        if spec_name in seen:
            continue
        res = raw.get("resources") or {}
        out.append(
            {
                "name": str(spec_name),
                "image": raw.get("image"),
                "ready": False,
                "restarts": 0,
                "state": None,
                "last_terminated": None,
                "limits": dict(res.get("limits") or {}),
                "requests": dict(res.get("requests") or {}),
                "spec": container_spec(raw),
            }
        )
    return out


def _affinity(spec: Json) -> list[str]:
    """Required placement rules, one line each, for the scheduler's FailedScheduling."""
    out = []
    aff = spec.get("affinity") or {}
    for kind, key in (("podAntiAffinity", "anti-affinity"), ("podAffinity", "affinity")):
        for term in get(aff, kind, "requiredDuringSchedulingIgnoredDuringExecution") or []:
            labels = get(term, "labelSelector", "matchLabels") or {}
            sel = ",".join(f"{k}={v}" for k, v in labels.items())
            where = ",".join(str(n) for n in term.get("namespaces") or [])
            scope = f" in {where}" if where else ""
            out.append(f"{key} {sel or '*'}{scope} per {term.get('topologyKey', '?')}")
    node_terms = get(
        aff, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"
    )
    for term in node_terms or []:
        for expr in term.get("matchExpressions") or []:
            values = ",".join(expr.get("values") or [])
            out.append(f"node {expr.get('key')} {expr.get('operator')} {values}".strip())
    for c in spec.get("topologySpreadConstraints") or []:
        if c.get("whenUnsatisfiable") == "DoNotSchedule":
            labels = get(c, "labelSelector", "matchLabels") or {}
            sel = ",".join(f"{k}={v}" for k, v in labels.items())
            out.append(
                f"spread maxSkew {c.get('maxSkew')} per {c.get('topologyKey')}"
                + (f" minDomains {c['minDomains']}" if c.get("minDomains") else "")
                + (f" of {sel}" if sel else "")
            )
    return out


def pod(obj: Json) -> p.Pod:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    containers = _containers(status.get("containerStatuses") or [], spec.get("containers") or [])
    init = _containers(status.get("initContainerStatuses") or [], spec.get("initContainers") or [])
    vols = volumes(spec)
    refs = [c["spec"] for c in containers if c["spec"] is not None]  # shaped once, above
    env_cms = {
        e["configmap"].split("/")[0] for c in refs for e in c["env"] if e.get("configmap")
    } | {f.split(":", 1)[1] for c in refs for f in c["env_from"] if f.startswith("configmap:")}
    env_secrets = {e["secret"].split("/")[0] for c in refs for e in c["env"] if e.get("secret")} | {
        f.split(":", 1)[1] for c in refs for f in c["env_from"] if f.startswith("secret:")
    }
    shaped: p.Pod = {
        "name": str(meta.get("name")),
        "phase": status.get("phase"),
        "node": spec.get("nodeName"),
        "created": meta.get("creationTimestamp"),
        "labels": dict(meta.get("labels") or {}),
        "owner": owner(meta),
        "ready": any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in status.get("conditions") or []
        ),
        "conditions": [
            pick(c, ("type", "status", "reason", "message")) for c in status.get("conditions") or []
        ],
        "containers": containers,
        "node_selector": dict(spec.get("nodeSelector") or {}),
        "tolerations": [
            pick(t, ("key", "operator", "value", "effect"))
            for t in spec.get("tolerations") or []
            if not str(t.get("key", "")).startswith("node.kubernetes.io/")
        ],
        "configmaps": sorted(
            env_cms | {v["ref"] for v in vols if v.get("kind") == "configMap" and "ref" in v}
        ),
        "secrets_referenced": sorted(
            env_secrets | {v["ref"] for v in vols if v.get("kind") == "secret" and "ref" in v}
        ),
        "claims": sorted(
            {v["ref"] for v in vols if v.get("kind") == "persistentVolumeClaim" and "ref" in v}
        ),
        "reason": status.get("reason"),
        "message": status.get("message"),
        "init_containers": init,
        "service_account": spec.get("serviceAccountName"),
        "volumes": vols,
        "affinity": _affinity(spec),
        "start_time": status.get("startTime"),
        "priority_class": spec.get("priorityClassName"),
        "pull_secrets": [
            str(x.get("name")) for x in spec.get("imagePullSecrets") or [] if x.get("name")
        ][:8],
    }
    scheduler = spec.get("schedulerName")
    if scheduler and scheduler != "default-scheduler":
        shaped["scheduler"] = clipped(scheduler)
    return shaped


# -- events, nodes -----------------------------------------------------------------------------


def event(obj: Json) -> p.Event:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    return {
        "type": obj.get("type"),
        "reason": obj.get("reason"),
        "message": obj.get("message") or obj.get("note"),
        "object": {"kind": involved.get("kind"), "name": involved.get("name")},
        "count": obj.get("count") or get(obj, "series", "count") or 1,
        "last_seen": obj.get("lastTimestamp")
        or obj.get("eventTime")
        or get(obj, "metadata", "creationTimestamp"),
        "first_seen": obj.get("firstTimestamp"),
        "source": get(obj, "source", "component") or obj.get("reportingComponent"),
    }


def node(obj: Json) -> p.Node:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    ready: Json = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {})
    return {
        "name": str(meta.get("name")),
        "labels": {
            k: v
            for k, v in (meta.get("labels") or {}).items()
            if not k.startswith(("beta.kubernetes.io/", "kubernetes.io/hostname"))
        },
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [pick(t, ("key", "value", "effect")) for t in spec.get("taints") or []],
        "allocatable": dict(status.get("allocatable") or {}),
        "conditions": [
            pick(c, ("type", "status", "reason", "message")) for c in status.get("conditions") or []
        ],
        "heartbeat": ready.get("lastHeartbeatTime"),
        "runtime": get(status, "nodeInfo", "containerRuntimeVersion"),
    }
