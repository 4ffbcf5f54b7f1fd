"""Pure functions that turn raw Kubernetes JSON into the small, stable shapes tools return.

Keeping only what triage needs (status, reasons, exit codes, counts, references) bounds what
reaches a model, the judge or storage, and deliberately drops what must never leave the
cluster: annotations, env values, ConfigMap data. Functions here take `kubectl get -o json`
dicts, so a recorded bundle and a live call go through the same code. What they return is
typed in `tools/read/payloads.py`.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from tools.read import payloads as p

Json = dict[str, Any]


def _get(obj: Any, *path: str, default: Any = None) -> Any:
    for key in path:
        if not isinstance(obj, dict):
            return default
        obj = obj.get(key)
        if obj is None:
            return default
    return obj


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


class _EnvRefs(TypedDict):
    env_names: list[str]
    configmaps: list[str]
    secrets: list[str]


def _pick(obj: Json, keys: tuple[str, ...]) -> Any:
    """The keys of `obj` that are set (typed by the caller's payload)."""
    return {k: obj[k] for k in keys if obj.get(k) is not None}


def _resources(spec: Json | None) -> p.Resources:
    res = _get(spec, "resources", default={}) or {}
    return {
        "limits": dict(res.get("limits") or {}),
        "requests": dict(res.get("requests") or {}),
    }


def _env_refs(container: Json) -> _EnvRefs:
    """Names of env vars and the ConfigMaps/Secrets referenced, never the values."""
    names: list[str] = []
    configmaps: set[str] = set()
    secrets: set[str] = set()
    for env in container.get("env") or []:
        names.append(env.get("name", ""))
        ref = env.get("valueFrom") or {}
        if "configMapKeyRef" in ref:
            configmaps.add(ref["configMapKeyRef"].get("name", ""))
        if "secretKeyRef" in ref:
            secrets.add(ref["secretKeyRef"].get("name", ""))
    for src in container.get("envFrom") or []:
        if "configMapRef" in src:
            configmaps.add(src["configMapRef"].get("name", ""))
        if "secretRef" in src:
            secrets.add(src["secretRef"].get("name", ""))
    return {"env_names": names, "configmaps": sorted(configmaps), "secrets": sorted(secrets)}


def owner(meta: Json) -> p.Owner | None:
    for ref in meta.get("ownerReferences") or []:
        if ref.get("controller"):
            return {"kind": ref.get("kind"), "name": ref.get("name")}
    return None


def pod(obj: Json) -> p.Pod:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    spec_containers = {c.get("name"): c for c in spec.get("containers") or []}
    containers: list[p.Container] = []
    for cs in status.get("containerStatuses") or []:
        name = cs.get("name")
        containers.append(
            {
                "name": name,
                "image": cs.get("image") or _get(spec_containers, name, "image"),
                "ready": bool(cs.get("ready")),
                "restarts": int(cs.get("restartCount") or 0),
                "state": _state(cs.get("state")),
                "last_terminated": _state(cs.get("lastState")),
                "limits": _resources(spec_containers.get(name))["limits"],
                "requests": _resources(spec_containers.get(name))["requests"],
            }
        )
    if not containers:  # not started yet (Pending): report the spec side
        for name, c in spec_containers.items():
            containers.append(
                {
                    "name": name,
                    "image": c.get("image"),
                    "ready": False,
                    "restarts": 0,
                    "state": None,
                    "last_terminated": None,
                    "limits": _resources(c)["limits"],
                    "requests": _resources(c)["requests"],
                }
            )
    volumes_cm = sorted(
        {
            v["configMap"]["name"]
            for v in spec.get("volumes") or []
            if v.get("configMap") and v["configMap"].get("name")
        }
    )
    claims = sorted(
        {
            v["persistentVolumeClaim"]["claimName"]
            for v in spec.get("volumes") or []
            if v.get("persistentVolumeClaim")
        }
    )
    refs = [_env_refs(c) for c in spec_containers.values()]
    return {
        "name": meta.get("name"),
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
            _pick(c, ("type", "status", "reason", "message"))
            for c in status.get("conditions") or []
        ],
        "containers": containers,
        "node_selector": dict(spec.get("nodeSelector") or {}),
        "tolerations": [
            _pick(t, ("key", "operator", "value", "effect"))
            for t in spec.get("tolerations") or []
            if not str(t.get("key", "")).startswith("node.kubernetes.io/")
        ],
        "configmaps": sorted({n for r in refs for n in r["configmaps"]} | set(volumes_cm)),
        "secrets_referenced": sorted({n for r in refs for n in r["secrets"]}),
        "claims": claims,
        "reason": status.get("reason"),
        "message": status.get("message"),
    }


def event(obj: Json) -> p.Event:
    involved = obj.get("involvedObject") or obj.get("regarding") or {}
    return {
        "type": obj.get("type"),
        "reason": obj.get("reason"),
        "message": obj.get("message") or obj.get("note"),
        "object": {"kind": involved.get("kind"), "name": involved.get("name")},
        "count": obj.get("count") or _get(obj, "series", "count") or 1,
        "last_seen": obj.get("lastTimestamp")
        or obj.get("eventTime")
        or _get(obj, "metadata", "creationTimestamp"),
        "source": _get(obj, "source", "component") or obj.get("reportingComponent"),
    }


def _conditions(status: Json) -> list[p.Condition]:
    keys = ("type", "status", "reason", "message", "lastTransitionTime")
    return [_pick(c, keys) for c in status.get("conditions") or []]


def _template_container(c: Json) -> p.TemplateContainer:
    res, refs = _resources(c), _env_refs(c)
    return {
        "name": c.get("name"),
        "image": c.get("image"),
        "limits": res["limits"],
        "requests": res["requests"],
        "env_names": refs["env_names"],
        "configmaps": refs["configmaps"],
        "secrets": refs["secrets"],
    }


def deployment(obj: Json) -> p.Deployment:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    template = _get(spec, "template", "spec", default={})
    return {
        "name": meta.get("name"),
        "created": meta.get("creationTimestamp"),
        "revision": _get(meta, "annotations", "deployment.kubernetes.io/revision"),
        "generation": meta.get("generation"),
        "observed_generation": status.get("observedGeneration"),
        "replicas": spec.get("replicas"),
        "ready": status.get("readyReplicas") or 0,
        "updated": status.get("updatedReplicas") or 0,
        "available": status.get("availableReplicas") or 0,
        "unavailable": status.get("unavailableReplicas") or 0,
        "selector": dict(_get(spec, "selector", "matchLabels", default={}) or {}),
        "template_labels": dict(_get(spec, "template", "metadata", "labels", default={}) or {}),
        "containers": [_template_container(c) for c in template.get("containers") or []],
        "strategy": _get(spec, "strategy", "type"),
        "conditions": _conditions(status),
        "paused": bool(spec.get("paused")),
        "restart_stamp": _get(spec, "template", "metadata", "annotations", "triage.dev/restart"),
    }


def replicaset(obj: Json) -> p.ReplicaSet:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "name": meta.get("name"),
        "created": meta.get("creationTimestamp"),
        "owner": owner(meta),
        "revision": _get(meta, "annotations", "deployment.kubernetes.io/revision"),
        "template_hash": _get(meta, "labels", "pod-template-hash"),
        "replicas": spec.get("replicas") or 0,
        "ready": status.get("readyReplicas") or 0,
        "available": status.get("availableReplicas") or 0,
        "images": [
            str(c.get("image") or "")
            for c in _get(spec, "template", "spec", "containers", default=[]) or []
        ],
    }


def node(obj: Json) -> p.Node:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "name": meta.get("name"),
        "labels": {
            k: v
            for k, v in (meta.get("labels") or {}).items()
            if not k.startswith(("beta.kubernetes.io/", "kubernetes.io/hostname"))
        },
        "unschedulable": bool(spec.get("unschedulable")),
        "taints": [_pick(t, ("key", "value", "effect")) for t in spec.get("taints") or []],
        "allocatable": dict(status.get("allocatable") or {}),
        "conditions": [
            _pick(c, ("type", "status", "reason")) for c in status.get("conditions") or []
        ],
    }


def service(obj: Json) -> p.Service:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    return {
        "name": meta.get("name"),
        "type": spec.get("type"),
        "selector": dict(spec.get("selector") or {}),
        "ports": [
            _pick(port, ("name", "port", "targetPort", "protocol"))
            for port in spec.get("ports") or []
        ],
    }


def endpoint_slices(service_name: str, slices: list[Json]) -> p.Endpoints:
    ready = 0
    not_ready = 0
    targets: list[str] = []
    for sl in slices:
        for ep in sl.get("endpoints") or []:
            if _get(ep, "conditions", "ready", default=True):
                ready += 1
            else:
                not_ready += 1
            ref = ep.get("targetRef") or {}
            if ref.get("name"):
                targets.append(ref["name"])
    return {"service": service_name, "ready": ready, "not_ready": not_ready, "pods": targets}


def pvc(obj: Json) -> p.PVC:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "name": meta.get("name"),
        "phase": status.get("phase"),
        "storage_class": spec.get("storageClassName"),
        "requested": _get(spec, "resources", "requests", "storage"),
        "volume": spec.get("volumeName"),
    }


def storage_class(obj: Json) -> p.StorageClass:
    meta = obj.get("metadata", {})
    return {
        "name": meta.get("name"),
        "provisioner": obj.get("provisioner"),
        "default": _get(meta, "annotations", "storageclass.kubernetes.io/is-default-class")
        == "true",
    }


def hpa(obj: Json) -> p.HPA:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    metrics: list[p.MetricValue] = []
    for m in status.get("currentMetrics") or []:
        res = m.get("resource") or {}
        cur = res.get("current") or {}
        metrics.append(
            {
                "name": res.get("name"),
                "utilization": cur.get("averageUtilization"),
                "value": cur.get("averageValue"),
            }
        )
    targets: list[p.MetricTarget] = []
    for m in spec.get("metrics") or []:
        res = m.get("resource") or {}
        targets.append(
            {
                "name": res.get("name"),
                "utilization": _get(res, "target", "averageUtilization"),
            }
        )
    return {
        "name": meta.get("name"),
        "target": {
            "kind": _get(spec, "scaleTargetRef", "kind"),
            "name": _get(spec, "scaleTargetRef", "name"),
        },
        "min_replicas": spec.get("minReplicas", 1),
        "max_replicas": spec.get("maxReplicas"),
        "current_replicas": status.get("currentReplicas"),
        "desired_replicas": status.get("desiredReplicas"),
        "current_metrics": metrics,
        "target_metrics": targets,
        "conditions": _conditions(status),
    }


def job(obj: Json) -> p.Job:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "name": meta.get("name"),
        "created": meta.get("creationTimestamp"),
        "backoff_limit": spec.get("backoffLimit", 6),
        "active": status.get("active") or 0,
        "succeeded": status.get("succeeded") or 0,
        "failed": status.get("failed") or 0,
        "conditions": _conditions(status),
    }
