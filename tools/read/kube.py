"""Read-only Kubernetes access, on the official client, as the reader identity.

Every call has a timeout, lists are scoped (namespace, label/field selectors) and paginated
with a hard item cap, and responses are read raw (`_preload_content=False`) and shaped by
`k8s_shapes`: cheaper than building client models for every pod, and the bytes we digest are
the bytes the apiserver sent. Secrets are never read: the reader identity has no right to
them, and no function here asks. ConfigMaps are listed for their names only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client as k8s

from tools.errors import ToolError, Unreachable
from tools.kube_call import call_raw
from tools.read import shapes
from tools.read.payloads import Pod
from tools.redact import DEFAULT, Redactor
from tools.results import ToolResult, ToolStatus, clip, digest

Json = dict[str, Any]


# The RCAReport custom resource (helm/triage/crds/rcareport.yaml): the deliverable, read back.
RCAREPORT_GROUP = "triage.dev"
RCAREPORT_VERSION = "v1alpha1"
RCAREPORT_PLURAL = "rcareports"
READ_ATTEMPTS = 2  # a read whose connection failed is tried once more
READ_RETRY_PAUSE_S = 0.2


@dataclass
class RequestStats:
    """Requests sent and bytes received, for benchmarks and the `/metrics` page."""

    requests: int = 0
    bytes: int = 0


class KubeReader:
    """The Kubernetes half of the read registry."""

    def __init__(
        self,
        api_client: k8s.ApiClient,
        *,
        timeout_s: float = 10.0,
        page_size: int = 250,
        max_items: int = 2000,
        log_tail_lines: int = 200,
        log_limit_bytes: int = 256_000,
        redactor: Redactor = DEFAULT,
    ) -> None:
        self._api = api_client
        self.api_client = api_client  # the identity's client, for its own report writes
        self.core = k8s.CoreV1Api(api_client)
        self.apps = k8s.AppsV1Api(api_client)
        self.batch = k8s.BatchV1Api(api_client)
        self.autoscaling = k8s.AutoscalingV2Api(api_client)
        self.storage = k8s.StorageV1Api(api_client)
        self.discovery = k8s.DiscoveryV1Api(api_client)
        self.custom = k8s.CustomObjectsApi(api_client)
        self.timeout_s = timeout_s
        self.page_size = page_size
        self.max_items = max_items
        self.log_tail_lines = log_tail_lines
        self.log_limit_bytes = log_limit_bytes
        self.redactor = redactor
        self.stats = RequestStats()

    # -- plumbing --------------------------------------------------------------------------

    def _raw(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bytes:
        """One read; raises a ToolError subclass on any failure. A connection that failed
        before an answer (refused, reset) is tried once more after a short pause — reads only,
        explicitly here, since the client itself never retries; a timeout is not retried (the
        configured timeout is the most a read waits)."""
        for attempt in range(READ_ATTEMPTS):
            self.stats.requests += 1
            try:
                body = call_raw(fn, *args, timeout_s=self.timeout_s, **kwargs)
                break
            except Unreachable:
                if attempt + 1 >= READ_ATTEMPTS:
                    raise
                time.sleep(READ_RETRY_PAUSE_S)
        self.stats.bytes += len(body)
        return body

    def _json(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Json:
        raw = self._raw(fn, *args, **kwargs)
        loaded: Json = json.loads(raw)
        return loaded

    def _list(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[list[Json], str]:
        """Paginated list with a hard cap; returns the items and a digest of all pages."""
        items: list[Json] = []
        pages: list[str] = []
        cont: str | None = None
        while True:
            page_kwargs = dict(kwargs, limit=self.page_size)
            if cont:
                page_kwargs["_continue"] = cont
            data = self._json(fn, *args, **page_kwargs)
            items.extend(data.get("items") or [])
            pages.append(digest(data))
            cont = (data.get("metadata") or {}).get("continue")
            if not cont or len(items) >= self.max_items:
                break
        return items[: self.max_items], digest("".join(pages))

    def _result(
        self, tool: str, args: Json, produce: Callable[[], tuple[Any, str, str]]
    ) -> ToolResult:
        """Run `produce` -> (data, excerpt, raw_digest) and wrap it in the envelope."""
        start = time.perf_counter()
        try:
            data, excerpt, raw_digest = produce()
        except ToolError as e:
            return ToolResult(
                tool=tool,
                args=args,
                status=e.status,
                excerpt=clip(self.redactor.text(str(e))),
                error_kind=e.kind,
                duration_ms=(time.perf_counter() - start) * 1000,
            )
        empty = data is None or (isinstance(data, list | dict) and not data)
        return ToolResult(
            tool=tool,
            args=args,
            status=ToolStatus.NO_DATA if empty else ToolStatus.OK,
            excerpt=clip(self.redactor.text(excerpt or "nothing found")),
            data=self.redactor.data(data),
            raw_digest=raw_digest,
            duration_ms=(time.perf_counter() - start) * 1000,
        )

    # -- tools ------------------------------------------------------------------------------

    def namespace(self, namespace: str) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            raw = self._raw(self.core.read_namespace, namespace)
            obj = json.loads(raw)
            phase = (obj.get("status") or {}).get("phase")
            return (
                {"name": namespace, "phase": phase},
                f"namespace {namespace} exists ({phase})",
                digest(raw),
            )

        return self._result("k8s.namespace", {"namespace": namespace}, produce)

    def pods(
        self, namespace: str, label_selector: str | None = None, field_selector: str | None = None
    ) -> ToolResult:
        args = {"namespace": namespace, "label_selector": label_selector}
        if field_selector:
            args["field_selector"] = field_selector

        def produce() -> tuple[Any, str, str]:
            kw: Json = {}
            if label_selector:
                kw["label_selector"] = label_selector
            if field_selector:
                kw["field_selector"] = field_selector
            items, dg = self._list(self.core.list_namespaced_pod, namespace, **kw)
            pods = [shapes.pod(i) for i in items]
            return pods, _pods_excerpt(pods), dg

        return self._result("k8s.pods", args, produce)

    def events(
        self,
        namespace: str,
        object_name: str | None = None,
        object_kind: str | None = None,
        warnings_only: bool = False,
    ) -> ToolResult:
        args: Json = {"namespace": namespace, "object_name": object_name}
        if object_kind:
            args["object_kind"] = object_kind
        if warnings_only:
            args["warnings_only"] = True

        def produce() -> tuple[Any, str, str]:
            selectors = []
            if object_name:
                selectors.append(f"involvedObject.name={object_name}")
            if object_kind:
                selectors.append(f"involvedObject.kind={object_kind}")
            if warnings_only:
                selectors.append("type=Warning")
            kw: Json = {"field_selector": ",".join(selectors)} if selectors else {}
            items, dg = self._list(self.core.list_namespaced_event, namespace, **kw)
            evs = sorted((shapes.event(i) for i in items), key=lambda e: str(e["last_seen"]))
            excerpt = "; ".join(
                f"{e['type']} {e['reason']} {e['object']['kind']}/{e['object']['name']}: "
                f"{e['message']}"
                for e in evs[-5:]
            )
            return evs, excerpt, dg

        return self._result("k8s.events", args, produce)

    def logs(
        self,
        namespace: str,
        pod: str,
        container: str | None = None,
        previous: bool = False,
        tail_lines: int | None = None,
    ) -> ToolResult:
        tail = min(tail_lines or self.log_tail_lines, self.log_tail_lines)
        args: Json = {"namespace": namespace, "pod": pod, "container": container}
        if previous:
            args["previous"] = True

        def produce() -> tuple[Any, str, str]:
            kw: Json = {"tail_lines": tail, "limit_bytes": self.log_limit_bytes}
            if container:
                kw["container"] = container
            if previous:
                kw["previous"] = True
            raw = self._raw(self.core.read_namespaced_pod_log, pod, namespace, **kw)
            lines = raw.decode("utf-8", "replace").splitlines()
            which = "previous" if previous else "current"
            excerpt = f"{len(lines)} {which} log lines; last: " + " | ".join(lines[-3:])
            return lines, excerpt, digest(raw)

        return self._result("k8s.logs", args, produce)

    def deployments(self, namespace: str, label_selector: str | None = None) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            kw: Json = {"label_selector": label_selector} if label_selector else {}
            items, dg = self._list(self.apps.list_namespaced_deployment, namespace, **kw)
            deps = [shapes.deployment(i) for i in items]
            excerpt = "; ".join(
                f"{d['name']} rev {d['revision']}: {d['available']}/{d['replicas']} available"
                for d in deps
            )
            return deps, excerpt, dg

        return self._result(
            "k8s.deployments", {"namespace": namespace, "label_selector": label_selector}, produce
        )

    def rollout_history(self, namespace: str, deployment: str) -> ToolResult:
        """The deployment's ReplicaSets ordered by revision: what changed and when."""

        def produce() -> tuple[Any, str, str]:
            dep = self._json(self.apps.read_namespaced_deployment, deployment, namespace)
            selector = ",".join(
                f"{k}={v}"
                for k, v in ((dep.get("spec") or {}).get("selector") or {})
                .get("matchLabels", {})
                .items()
            )
            items, dg = self._list(
                self.apps.list_namespaced_replica_set, namespace, label_selector=selector
            )
            uid = (dep.get("metadata") or {}).get("uid")
            owned = [
                shapes.replicaset(i)
                for i in items
                if any(
                    r.get("uid") == uid
                    for r in (i.get("metadata") or {}).get("ownerReferences", [])
                )
            ]
            owned.sort(key=lambda r: int(r["revision"] or 0))
            excerpt = "; ".join(
                f"rev {r['revision']} {r['name']} {','.join(r['images'])} "
                f"created {r['created']} ready {r['ready']}/{r['replicas']}"
                for r in owned
            )
            return (
                {"deployment": shapes.deployment(dep), "revisions": owned},
                excerpt,
                dg,
            )

        return self._result(
            "k8s.rollout_history", {"namespace": namespace, "deployment": deployment}, produce
        )

    def nodes(self, label_selector: str | None = None) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            kw: Json = {"label_selector": label_selector} if label_selector else {}
            items, dg = self._list(self.core.list_node, **kw)
            nodes = [shapes.node(i) for i in items]
            excerpt = "; ".join(
                f"{n['name']} cpu {n['allocatable'].get('cpu')} mem "
                f"{n['allocatable'].get('memory')}"
                + (f" taints {[t.get('key') for t in n['taints']]}" if n["taints"] else "")
                for n in nodes
            )
            return nodes, excerpt, dg

        return self._result("k8s.nodes", {"label_selector": label_selector}, produce)

    def services(self, namespace: str) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            items, dg = self._list(self.core.list_namespaced_service, namespace)
            svcs = [shapes.service(i) for i in items]
            excerpt = "; ".join(f"{s['name']} selector {s['selector']}" for s in svcs)
            return svcs, excerpt, dg

        return self._result("k8s.services", {"namespace": namespace}, produce)

    def endpoints(self, namespace: str, service: str) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            items, dg = self._list(
                self.discovery.list_namespaced_endpoint_slice,
                namespace,
                label_selector=f"kubernetes.io/service-name={service}",
            )
            eps = shapes.endpoint_slices(service, items)
            excerpt = (
                f"service {service}: {eps['ready']} ready endpoints, {eps['not_ready']} not ready"
            )
            # An answer of zero endpoints is a fact, not an absence of data.
            return eps, excerpt, dg

        return self._result("k8s.endpoints", {"namespace": namespace, "service": service}, produce)

    def pvcs(self, namespace: str) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            items, dg = self._list(self.core.list_namespaced_persistent_volume_claim, namespace)
            claims = [shapes.pvc(i) for i in items]
            excerpt = "; ".join(
                f"{c['name']} {c['phase']} class {c['storage_class']}" for c in claims
            )
            return claims, excerpt, dg

        return self._result("k8s.pvcs", {"namespace": namespace}, produce)

    def storage_classes(self) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            items, dg = self._list(self.storage.list_storage_class)
            classes = [shapes.storage_class(i) for i in items]
            names = ", ".join(c["name"] for c in classes)
            return classes, f"storage classes: {names}", dg

        return self._result("k8s.storage_classes", {}, produce)

    def hpas(self, namespace: str) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            items, dg = self._list(
                self.autoscaling.list_namespaced_horizontal_pod_autoscaler, namespace
            )
            hpas = [shapes.hpa(i) for i in items]
            excerpt = "; ".join(
                f"{h['name']} -> {h['target']['name']}: {h['current_replicas']} replicas "
                f"(min {h['min_replicas']}, max {h['max_replicas']})"
                for h in hpas
            )
            return hpas, excerpt, dg

        return self._result("k8s.hpas", {"namespace": namespace}, produce)

    def jobs(self, namespace: str) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            items, dg = self._list(self.batch.list_namespaced_job, namespace)
            jobs = [shapes.job(i) for i in items]
            excerpt = "; ".join(
                f"{j['name']}: {j['succeeded']} succeeded, {j['failed']} failed "
                f"(backoffLimit {j['backoff_limit']})"
                for j in jobs
            )
            return jobs, excerpt, dg

        return self._result("k8s.jobs", {"namespace": namespace}, produce)

    def rcareport(self, namespace: str, name: str) -> ToolResult:
        """One RCAReport (the deliverable) as stored: spec, status, and the digest of the stored
        draft computed here over the bytes the apiserver sent, before any redaction, so the
        judge can tell "stored as drafted" from "changed since"."""

        def produce() -> tuple[Any, str, str]:
            raw = self._raw(
                self.custom.get_namespaced_custom_object,
                RCAREPORT_GROUP,
                RCAREPORT_VERSION,
                namespace,
                RCAREPORT_PLURAL,
                name,
            )
            obj = json.loads(raw)
            spec = obj.get("spec") or {}
            status = obj.get("status") or {}
            stored = digest(spec.get("draft")) if "draft" in spec else None
            data = {
                "name": name,
                "uid": (obj.get("metadata") or {}).get("uid"),
                "resource_version": (obj.get("metadata") or {}).get("resourceVersion"),
                "spec_digest": spec.get("digest"),
                "draft_digest": stored,
                "attempt": spec.get("attempt"),
                "draft": spec.get("draft"),
                "outcome": status.get("outcome"),
            }
            excerpt = (
                f"rcareport {name}: digest {str(stored)[:19]}…, attempt {spec.get('attempt')}, "
                f"outcome {status.get('outcome') or 'pending'}"
            )
            return data, excerpt, digest(raw)

        return self._result("k8s.rcareport", {"namespace": namespace, "name": name}, produce)

    def configmap_names(self, namespace: str) -> ToolResult:
        """Names only: the data is dropped on arrival and never leaves this function."""

        def produce() -> tuple[Any, str, str]:
            items, dg = self._list(self.core.list_namespaced_config_map, namespace)
            names = sorted((i.get("metadata") or {}).get("name", "") for i in items)
            return names, f"configmaps: {', '.join(names)}", dg

        return self._result("k8s.configmap_names", {"namespace": namespace}, produce)


def _pods_excerpt(pods: list[Pod]) -> str:
    parts = []
    for p in pods[:6]:
        states = []
        for c in p["containers"]:
            st = c["state"] or {}
            reason = st.get("reason") or st.get("kind") or "unknown"
            last = c["last_terminated"] or {}
            tail = f", last {last.get('reason')} exit {last.get('exit_code')}" if last else ""
            states.append(f"{c['name']} {reason} x{c['restarts']}{tail}")
        parts.append(
            f"{p['name']} {p['phase']} {'ready' if p['ready'] else 'not ready'} "
            f"[{'; '.join(states)}]"
        )
    more = f" (+{len(pods) - 6} more)" if len(pods) > 6 else ""
    return f"{len(pods)} pods: " + " | ".join(parts) + more
