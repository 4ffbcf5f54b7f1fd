"""Shapes of the kinds other than pods, events and nodes (tools/read/shapes.py): workloads,
networking, policy objects, RBAC and admission webhooks. Same rules: pure functions over
`kubectl get -o json` dicts, typed by tools/read/payloads.py, nothing secret kept.
"""

from __future__ import annotations

from typing import Any, cast

from tools.read import payloads as p
from tools.read.shapes import conditions, get, notes, owner, pick, selector, template

Json = dict[str, Any]


# -- workloads -------------------------------------------------------------------------------


def deployment(obj: Json) -> p.Deployment:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "name": str(meta.get("name")),
        "created": meta.get("creationTimestamp"),
        "revision": get(meta, "annotations", "deployment.kubernetes.io/revision"),
        "generation": meta.get("generation"),
        "observed_generation": status.get("observedGeneration"),
        "replicas": spec.get("replicas"),
        "ready": status.get("readyReplicas") or 0,
        "updated": status.get("updatedReplicas") or 0,
        "available": status.get("availableReplicas") or 0,
        "unavailable": status.get("unavailableReplicas") or 0,
        "selector": selector(spec),
        "template_labels": dict(get(spec, "template", "metadata", "labels", default={}) or {}),
        "template": template(spec.get("template") or {}),
        "strategy": get(spec, "strategy", "type"),
        "max_surge": get(spec, "strategy", "rollingUpdate", "maxSurge"),
        "max_unavailable": get(spec, "strategy", "rollingUpdate", "maxUnavailable"),
        "conditions": conditions(status),
        "paused": bool(spec.get("paused")),
        "restart_stamp": get(spec, "template", "metadata", "annotations", "triage.dev/restart"),
        "min_ready_s": int(spec.get("minReadySeconds") or 0),
        "progress_deadline_s": spec.get("progressDeadlineSeconds"),
        "annotations": notes(meta),
    }


def replicaset(obj: Json) -> p.ReplicaSet:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    tmpl = template(spec.get("template") or {})
    return {
        "name": str(meta.get("name")),
        "created": meta.get("creationTimestamp"),
        "owner": owner(meta),
        "revision": get(meta, "annotations", "deployment.kubernetes.io/revision"),
        "template_hash": get(meta, "labels", "pod-template-hash"),
        "replicas": spec.get("replicas") or 0,
        "ready": status.get("readyReplicas") or 0,
        "available": status.get("availableReplicas") or 0,
        "images": [c["image"] for c in tmpl["containers"]],
        "template": tmpl,
    }


def statefulset(obj: Json) -> p.StatefulSet:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    claims: list[p.PVCTemplate] = [
        {
            "name": str(get(c, "metadata", "name") or ""),
            "storage_class": get(c, "spec", "storageClassName"),
            "requested": get(c, "spec", "resources", "requests", "storage"),
        }
        for c in spec.get("volumeClaimTemplates") or []
    ]
    return {
        "name": str(meta.get("name")),
        "service_name": spec.get("serviceName"),
        "pod_management": str(spec.get("podManagementPolicy") or "OrderedReady"),
        "replicas": spec.get("replicas"),
        "ready": status.get("readyReplicas") or 0,
        "current": status.get("currentReplicas") or 0,
        "updated": status.get("updatedReplicas") or 0,
        "update_strategy": str(get(spec, "updateStrategy", "type") or "RollingUpdate"),
        "partition": int(get(spec, "updateStrategy", "rollingUpdate", "partition") or 0),
        "ordinals_start": int(get(spec, "ordinals", "start") or 0),
        "claims_when_scaled": str(
            get(spec, "persistentVolumeClaimRetentionPolicy", "whenScaled") or "Retain"
        ),
        "current_revision": status.get("currentRevision"),
        "update_revision": status.get("updateRevision"),
        "selector": selector(spec),
        "claim_templates": claims,
        "template": template(spec.get("template") or {}),
        "conditions": conditions(status),
        "annotations": notes(meta),
    }


def daemonset(obj: Json) -> p.DaemonSet:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "name": str(meta.get("name")),
        "desired": status.get("desiredNumberScheduled") or 0,
        "current": status.get("currentNumberScheduled") or 0,
        "ready": status.get("numberReady") or 0,
        "unavailable": status.get("numberUnavailable") or 0,
        "misscheduled": status.get("numberMisscheduled") or 0,
        "selector": selector(spec),
        "template": template(spec.get("template") or {}),
    }


def job(obj: Json) -> p.Job:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    out: p.Job = {
        "name": str(meta.get("name")),
        "created": meta.get("creationTimestamp"),
        "owner": owner(meta),
        "backoff_limit": spec.get("backoffLimit", 6),
        "active_deadline_s": spec.get("activeDeadlineSeconds"),
        "active": status.get("active") or 0,
        "succeeded": status.get("succeeded") or 0,
        "failed": status.get("failed") or 0,
        "start_time": status.get("startTime"),
        "completion_time": status.get("completionTime"),
        "conditions": conditions(status),
        "template": template(spec.get("template") or {}),
    }
    if spec.get("ttlSecondsAfterFinished") is not None:
        out["ttl_after_finished_s"] = int(spec["ttlSecondsAfterFinished"])
    return out


def cronjob(obj: Json) -> p.CronJob:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "name": str(meta.get("name")),
        "schedule": str(spec.get("schedule") or ""),
        "suspend": bool(spec.get("suspend")),
        "concurrency_policy": spec.get("concurrencyPolicy"),
        "starting_deadline_s": spec.get("startingDeadlineSeconds"),
        "time_zone": spec.get("timeZone"),
        "last_schedule": status.get("lastScheduleTime"),
        "last_success": status.get("lastSuccessfulTime"),
        "active": [str(a.get("name")) for a in status.get("active") or []],
        "annotations": notes(meta),
    }


_METRIC_SOURCES = {
    "Resource": "resource",
    "ContainerResource": "containerResource",
    "Pods": "pods",
    "Object": "object",
    "External": "external",
}


def _metric_source(m: Json) -> tuple[str | None, str | None, Json]:
    """(type, metric name, its source block) of one HPA metric of any of the five types."""
    kind = m.get("type")
    src = m.get(_METRIC_SOURCES.get(str(kind), "resource")) or {}
    if kind in (None, "Resource", "ContainerResource"):
        return kind, src.get("name"), src
    return kind, get(src, "metric", "name"), src


def _quantity(value: Any) -> str | None:
    return None if value is None else str(value)


def hpa(obj: Json) -> p.HPA:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    metrics: list[p.MetricValue] = []
    for m in status.get("currentMetrics") or []:
        kind, name, src = _metric_source(m)
        cur = src.get("current") or {}
        metrics.append(
            {
                "name": name,
                "kind": kind,
                "utilization": cur.get("averageUtilization"),
                "value": _quantity(cur.get("averageValue") or cur.get("value")),
            }
        )
    targets: list[p.MetricTarget] = []
    for m in spec.get("metrics") or []:
        kind, name, src = _metric_source(m)
        aim = src.get("target") or {}
        targets.append(
            {
                "name": name,
                "kind": kind,
                "utilization": aim.get("averageUtilization"),
                "value": _quantity(aim.get("averageValue") or aim.get("value")),
            }
        )
    return {
        "name": str(meta.get("name")),
        "target": {
            "kind": get(spec, "scaleTargetRef", "kind"),
            "name": get(spec, "scaleTargetRef", "name"),
        },
        "min_replicas": spec.get("minReplicas", 1),
        "max_replicas": spec.get("maxReplicas"),
        "current_replicas": status.get("currentReplicas"),
        "desired_replicas": status.get("desiredReplicas"),
        "current_metrics": metrics,
        "target_metrics": targets,
        "conditions": conditions(status),
        "scale_down_window_s": get(spec, "behavior", "scaleDown", "stabilizationWindowSeconds"),
    }


def pdb(obj: Json) -> p.PDB:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    out: p.PDB = {
        "name": str(meta.get("name")),
        "selector": selector(spec),
        "min_available": spec.get("minAvailable"),
        "max_unavailable": spec.get("maxUnavailable"),
        "allowed_disruptions": status.get("disruptionsAllowed") or 0,
        "current_healthy": status.get("currentHealthy") or 0,
        "desired_healthy": status.get("desiredHealthy") or 0,
        "expected_pods": status.get("expectedPods") or 0,
    }
    if spec.get("unhealthyPodEvictionPolicy"):
        out["unhealthy_policy"] = str(spec["unhealthyPodEvictionPolicy"])
    chosen = spec.get("selector")
    if (
        isinstance(chosen, dict)
        and not chosen.get("matchLabels")
        and not chosen.get("matchExpressions")
    ):
        out["selects_all"] = True
    return out


# -- networking ------------------------------------------------------------------------------


def service(obj: Json) -> p.Service:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    return {
        "name": str(meta.get("name")),
        "type": spec.get("type"),
        "headless": spec.get("clusterIP") == "None",
        "selector": dict(spec.get("selector") or {}),
        "ports": [
            pick(port, ("name", "port", "targetPort", "protocol"))
            for port in spec.get("ports") or []
        ],
        "external_name": spec.get("externalName"),
        "cluster_ip": spec.get("clusterIP"),
    }


def endpoint_slices(service_name: str, slices: list[Json]) -> p.Endpoints:
    """Endpoints that serve: ready ones in a slice that has ports. A slice with no ports
    holds pods whose container declares none of the Service's (named) target ports — they
    receive nothing, so they are counted apart, never as ready."""
    ready = 0
    not_ready = 0
    portless = 0
    targets: list[str] = []
    for sl in slices:
        for ep in sl.get("endpoints") or []:
            if not sl.get("ports"):
                portless += 1
            elif get(ep, "conditions", "ready", default=True):
                ready += 1
            else:
                not_ready += 1
            ref = ep.get("targetRef") or {}
            if ref.get("name"):
                targets.append(ref["name"])
    return {
        "service": service_name,
        "ready": ready,
        "not_ready": not_ready,
        "without_ports": portless,
        "pods": targets,
    }


def ingress(obj: Json) -> p.Ingress:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    backends: list[p.IngressBackend] = []
    default = get(spec, "defaultBackend", "service")
    if default:
        port = get(default, "port", "number") or get(default, "port", "name")
        backends.append({"service": default.get("name", ""), "port": port, "path": "*"})
    for rule in spec.get("rules") or []:
        for path in get(rule, "http", "paths") or []:
            svc = get(path, "backend", "service") or {}
            backends.append(
                cast(
                    p.IngressBackend,
                    pick(
                        {
                            "host": rule.get("host"),
                            "path": path.get("path", "/"),
                            "path_type": path.get("pathType"),
                            "service": svc.get("name"),
                            "port": get(svc, "port", "number") or get(svc, "port", "name"),
                        },
                        ("host", "path", "path_type", "service", "port"),
                    ),
                )
            )
    return {
        "name": str(meta.get("name")),
        "ingress_class": spec.get("ingressClassName")
        or get(meta, "annotations", "kubernetes.io/ingress.class"),
        "tls_secrets": [
            str(t.get("secretName")) for t in spec.get("tls") or [] if t.get("secretName")
        ],
        "backends": backends,
        "canary": {
            str(k).removeprefix("nginx.ingress.kubernetes.io/"): str(v)
            for k, v in (meta.get("annotations") or {}).items()
            if str(k).startswith("nginx.ingress.kubernetes.io/canary")
        },
        "load_balancer": [
            str(i.get("ip") or i.get("hostname"))
            for i in get(obj, "status", "loadBalancer", "ingress") or []
        ],
        "backend_protocol": get(
            meta, "annotations", "nginx.ingress.kubernetes.io/backend-protocol"
        ),
        # whose annotations it carries (alb.ingress.kubernetes.io, traefik.ingress…): another
        # controller's are ignored by the one that serves it
        "annotation_owners": sorted(
            {str(k).split("/", 1)[0] for k in meta.get("annotations") or {} if "/" in str(k)}
        ),
        # what its controller is told (proxy-body-size, backend-protocol …), under whichever
        # prefix it was written: a controller reads its own prefix only
        "annotations": notes(meta),
    }


def ingress_class(obj: Json) -> p.IngressClass:
    meta = obj.get("metadata", {})
    return {
        "name": str(meta.get("name")),
        "controller": get(obj, "spec", "controller"),
        "default": get(meta, "annotations", "ingressclass.kubernetes.io/is-default-class")
        == "true",
    }


def _peers(raw: list[Json]) -> list[p.PolicyPeer]:
    out: list[p.PolicyPeer] = []
    for peer in raw:
        entry: Json = {}
        if "podSelector" in peer:
            entry["pods"] = dict(get(peer, "podSelector", "matchLabels") or {})
        if "namespaceSelector" in peer:
            entry["namespaces"] = dict(get(peer, "namespaceSelector", "matchLabels") or {})
        if "ipBlock" in peer:
            entry["cidr"] = get(peer, "ipBlock", "cidr") or ""
            entry["cidr_except"] = [str(x) for x in get(peer, "ipBlock", "except") or []]
        out.append(cast(p.PolicyPeer, entry))
    return out


def _ports(raw: list[Json]) -> list[str]:
    return [f"{x.get('protocol', 'TCP')}/{x.get('port', '*')}" for x in raw]


def network_policy(obj: Json) -> p.NetworkPolicy:
    spec = obj.get("spec", {})
    types = list(spec.get("policyTypes") or ["Ingress"] + (["Egress"] if "egress" in spec else []))
    return {
        "name": str(get(obj, "metadata", "name")),
        "pod_selector": dict(get(spec, "podSelector", "matchLabels") or {}),
        "types": types,
        "ingress": [_peers(r.get("from") or []) for r in spec.get("ingress") or []],
        "ingress_ports": [_ports(r.get("ports") or []) for r in spec.get("ingress") or []],
        "egress": [_peers(r.get("to") or []) for r in spec.get("egress") or []],
        "egress_ports": [_ports(r.get("ports") or []) for r in spec.get("egress") or []],
    }


# -- storage, quotas, limits -----------------------------------------------------------------


def pvc(obj: Json) -> p.PVC:
    meta = obj.get("metadata", {})
    spec = obj.get("spec", {})
    status = obj.get("status", {})
    return {
        "name": str(meta.get("name")),
        "phase": status.get("phase"),
        "storage_class": spec.get("storageClassName"),
        "requested": get(spec, "resources", "requests", "storage"),
        "volume": spec.get("volumeName"),
        "access_modes": [str(m) for m in spec.get("accessModes") or []],
    }


def persistent_volume(obj: Json) -> p.PersistentVolume:
    spec = obj.get("spec", {})
    ref = spec.get("claimRef") or {}
    return {
        "name": str(get(obj, "metadata", "name")),
        "phase": get(obj, "status", "phase"),
        "storage_class": spec.get("storageClassName"),
        "capacity": get(spec, "capacity", "storage"),
        "access_modes": [str(m) for m in spec.get("accessModes") or []],
        "claim": f"{ref.get('namespace')}/{ref.get('name')}" if ref.get("name") else None,
        "reclaim_policy": spec.get("persistentVolumeReclaimPolicy"),
        "node_affinity": [
            [
                (str(e.get("key")), str(e.get("operator")), [str(v) for v in e.get("values") or []])
                for e in term.get("matchExpressions") or []
            ]
            for term in get(spec, "nodeAffinity", "required", "nodeSelectorTerms") or []
        ],
    }


def storage_class(obj: Json) -> p.StorageClass:
    meta = obj.get("metadata", {})
    return {
        "name": str(meta.get("name")),
        "provisioner": obj.get("provisioner"),
        "default": get(meta, "annotations", "storageclass.kubernetes.io/is-default-class")
        == "true",
        "binding_mode": str(obj.get("volumeBindingMode") or "Immediate"),
        "allowed_topologies": [
            (str(e.get("key")), [str(v) for v in e.get("values") or []])
            for term in (obj.get("allowedTopologies") or [])[:1]
            for e in term.get("matchLabelExpressions") or []
        ],
    }


def resource_quota(obj: Json) -> p.ResourceQuota:
    status = obj.get("status", {})
    return {
        "name": str(get(obj, "metadata", "name")),
        "hard": {
            str(k): str(v)
            for k, v in (status.get("hard") or get(obj, "spec", "hard") or {}).items()
        },
        "used": {str(k): str(v) for k, v in (status.get("used") or {}).items()},
        "scopes": [str(x) for x in get(obj, "spec", "scopes") or []]
        + [
            str(e.get("scopeName"))
            for e in get(obj, "spec", "scopeSelector", "matchExpressions") or []
            if isinstance(e, dict) and e.get("scopeName")
        ],
    }


def limit_range(obj: Json) -> p.LimitRange:
    return {
        "name": str(get(obj, "metadata", "name")),
        "limits": [
            pick(lim, ("type", "max", "min", "default", "defaultRequest", "maxLimitRequestRatio"))
            for lim in get(obj, "spec", "limits") or []
        ],
    }


# -- access ----------------------------------------------------------------------------------


def service_account(obj: Json) -> p.ServiceAccount:
    meta = obj.get("metadata", {})
    return {
        "name": str(meta.get("name")),
        "annotations": notes(meta),
        "automount_token": obj.get("automountServiceAccountToken"),
        "pull_secrets": [
            str(x.get("name")) for x in obj.get("imagePullSecrets") or [] if x.get("name")
        ][:8],
    }


def role(obj: Json) -> p.Role:
    return {
        "name": str(get(obj, "metadata", "name")),
        "kind": str(obj.get("kind") or "Role"),
        "rules": [
            cast(
                p.PolicyRule,
                {
                    "api_groups": list(r.get("apiGroups") or []),
                    "resources": list(r.get("resources") or []),
                    "verbs": list(r.get("verbs") or []),
                    **({"names": list(r["resourceNames"])} if r.get("resourceNames") else {}),
                },
            )
            for r in obj.get("rules") or []
        ],
    }


def role_binding(obj: Json) -> p.RoleBinding:
    ref = obj.get("roleRef") or {}
    subjects = []
    for s in obj.get("subjects") or []:
        ns = f"{s.get('namespace')}/" if s.get("kind") == "ServiceAccount" else ""
        subjects.append(f"{s.get('kind')}/{ns}{s.get('name')}")
    return {
        "name": str(get(obj, "metadata", "name")),
        "role": f"{ref.get('kind')}/{ref.get('name')}",
        "subjects": subjects,
    }


def webhooks(obj: Json, kind: str) -> list[p.Webhook]:
    out: list[p.Webhook] = []
    for hook in obj.get("webhooks") or []:
        svc = get(hook, "clientConfig", "service")
        rules = [
            f"{'/'.join(r.get('operations') or [])} {','.join(r.get('resources') or [])}"
            for r in hook.get("rules") or []
        ]
        out.append(
            {
                "configuration": str(get(obj, "metadata", "name")),
                "kind": kind,
                "name": str(hook.get("name")),
                "failure_policy": hook.get("failurePolicy"),
                "service": f"{svc.get('namespace')}/{svc.get('name')}:{svc.get('port', 443)}"
                if svc
                else None,
                "url": get(hook, "clientConfig", "url"),
                "namespace_selector": dict(get(hook, "namespaceSelector", "matchLabels") or {}),
                "rules": rules,
            }
        )
    return out
