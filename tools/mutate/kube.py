"""Kubernetes writes, on the official client, as the mutator ServiceAccount — and nothing else.

The read/mutate split is physical: `impersonating()` turns the agent's own client into one that
sends `Impersonate-User: system:serviceaccount:<ns>:<mutator>`, and only that client reaches
this module. The agent's identity may impersonate that one ServiceAccount and nothing else; the
reader client never carries the header, so a write that slipped into a read path is refused by
the apiserver (403), not by our good intentions.

Every write here is conditional where the API allows it, so a stale plan cannot be forced
through: JSON Patch `test` operations on `metadata.generation` (restart, rollback; a
Deployment's generation moves on any change to its spec or its annotations) or on
`spec.replicas` (scale, through the scale subresource), and a UID precondition on pod deletion
or eviction. Each write carries the operation ID (`triage.dev/operation`) as an annotation, so a
reader can tell afterwards whether it happened. No urllib3 retries: a lost write is reported to
the caller, who reads the cluster before deciding anything.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from typing import Any

from kubernetes import client as k8s

from tools.errors import NotFound
from tools.kube_call import call_raw

Json = dict[str, Any]

STAMP = "triage.dev/operation"
RESTART_STAMP = "triage.dev/restart"
REVISION = "deployment.kubernetes.io/revision"
TEMPLATE_HASH = "pod-template-hash"
JSON_PATCH = "application/json-patch+json"


def service_account_user(service_account: str) -> str:
    """`triage-system/triage-mutator` → `system:serviceaccount:triage-system:triage-mutator`."""
    ns, _, name = service_account.partition("/")
    if not ns or not name:
        msg = f"mutator ServiceAccount {service_account!r}: expected namespace/name"
        raise ValueError(msg)
    return f"system:serviceaccount:{ns}:{name}"


def impersonating(api_client: k8s.ApiClient, service_account: str) -> k8s.ApiClient:
    """A new client with `api_client`'s credentials that acts as `service_account`.

    urllib3 retries are off (`retries=False`): a write is sent once per decision.
    """
    cfg = copy.deepcopy(api_client.configuration)
    cfg.retries = False
    mutator = k8s.ApiClient(cfg)
    mutator.set_default_header(  # type: ignore[no-untyped-call]
        "Impersonate-User", service_account_user(service_account)
    )
    return mutator


def escape(key: str) -> str:
    """A map key as a JSON Pointer segment (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


class KubeCall:
    """One request with a timeout, its failure mapped onto the tools error tree.

    Timeouts, resets and 5xx become `TimedOut` / `Unreachable` / `BackendError`: for a write,
    the caller cannot know whether it landed.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s

    def raw(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> bytes:
        return call_raw(fn, *args, timeout_s=self.timeout_s, **kwargs)

    def json(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Json:
        raw = self.raw(fn, *args, **kwargs)
        loaded: Json = json.loads(raw) if raw else {}
        return loaded


def _annotations_patch(path: str, current: Json | None, key: str, value: str) -> list[Json]:
    """JSON Patch ops that set one annotation, creating the map when it is absent."""
    if current is None:
        return [{"op": "add", "path": path, "value": {key: value}}]
    return [{"op": "add", "path": f"{path}/{escape(key)}", "value": value}]


def strip_template(template: Json) -> Json:
    """A ReplicaSet's pod template as a Deployment template: without `pod-template-hash`."""
    tpl = copy.deepcopy(template)
    labels = (tpl.get("metadata") or {}).get("labels") or {}
    labels.pop(TEMPLATE_HASH, None)
    return tpl


class KubeMutator:
    """The Kubernetes writes the mutation specs need, on the impersonating client."""

    def __init__(self, api_client: k8s.ApiClient, *, timeout_s: float = 10.0) -> None:
        self.api_client = api_client
        self.call = KubeCall(timeout_s)

    # Built on first use: kubernetes 37 builds a validator per method of a generated API class
    # (about 1 s of CPU for these two), which a run that changes nothing should not pay.
    @functools.cached_property
    def core(self) -> k8s.CoreV1Api:
        return k8s.CoreV1Api(self.api_client)

    @functools.cached_property
    def apps(self) -> k8s.AppsV1Api:
        return k8s.AppsV1Api(self.api_client)

    # -- reads (as the mutator: before/after snapshots and state checks) -----------------------

    def deployment(self, namespace: str, name: str) -> Json | None:
        try:
            return self.call.json(self.apps.read_namespaced_deployment, name, namespace)
        except NotFound:
            return None

    def replicasets(self, deployment: Json) -> list[Json]:
        """The Deployment's own ReplicaSets (by owner UID), oldest revision first."""
        meta = deployment["metadata"]
        labels = ((deployment.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        data = self.call.json(
            self.apps.list_namespaced_replica_set,
            meta["namespace"],
            label_selector=selector,
            limit=500,
        )
        owned = [
            rs
            for rs in data.get("items") or []
            if any(
                o.get("uid") == meta["uid"]
                for o in (rs.get("metadata") or {}).get("ownerReferences") or []
            )
        ]
        return sorted(owned, key=lambda rs: int(_annotation(rs, REVISION) or 0))

    def pod(self, namespace: str, name: str) -> Json | None:
        try:
            return self.call.json(self.core.read_namespaced_pod, name, namespace)
        except NotFound:
            return None

    # -- writes -------------------------------------------------------------------------------

    def restart(self, namespace: str, name: str, *, op_id: str, generation: int) -> None:
        """Roll the pods by stamping the pod template with the operation ID.

        Idempotent by construction: the same ID written twice is no change, so no second
        ReplicaSet (kubectl's `restartedAt` timestamp would make every repeat a new rollout).
        """
        dep = self.deployment(namespace, name) or {}
        tpl_meta = ((dep.get("spec") or {}).get("template") or {}).get("metadata")
        ops: list[Json] = [{"op": "test", "path": "/metadata/generation", "value": generation}]
        if tpl_meta is None:
            ops.append(
                {
                    "op": "add",
                    "path": "/spec/template/metadata",
                    "value": {"annotations": {RESTART_STAMP: op_id}},
                }
            )
        else:
            ops += _annotations_patch(
                "/spec/template/metadata/annotations",
                tpl_meta.get("annotations"),
                RESTART_STAMP,
                op_id,
            )
        ops += _annotations_patch(
            "/metadata/annotations", dep.get("metadata", {}).get("annotations"), STAMP, op_id
        )
        self._patch_deployment(namespace, name, ops)

    def scale(self, namespace: str, name: str, *, expected: int, replicas: int) -> None:
        """Set replicas through the scale subresource, only if they are still `expected`.

        A Scale at zero replicas has an empty `spec` (the field is omitted when zero), so
        "still 0" is tested as `spec == {}` and the count is added, not replaced."""
        test: Json = (
            {"op": "test", "path": "/spec", "value": {}}
            if expected == 0
            else {"op": "test", "path": "/spec/replicas", "value": expected}
        )
        ops = [test, {"op": "add", "path": "/spec/replicas", "value": replicas}]
        self.call.raw(
            self.apps.patch_namespaced_deployment_scale,
            name,
            namespace,
            ops,
            _content_type=JSON_PATCH,
        )

    def stamp(self, namespace: str, name: str, op_id: str) -> None:
        """Record the operation ID on the Deployment (metadata only: no rollout)."""
        dep = self.deployment(namespace, name) or {}
        ops = _annotations_patch(
            "/metadata/annotations", dep.get("metadata", {}).get("annotations"), STAMP, op_id
        )
        self._patch_deployment(namespace, name, ops)

    def rollback(
        self, namespace: str, name: str, *, op_id: str, generation: int, template: Json
    ) -> None:
        """Replace the pod template with a pinned ReplicaSet's, only if nobody changed the
        Deployment since the plan. A repeat writes the same template: no flip back."""
        dep = self.deployment(namespace, name) or {}
        ops: list[Json] = [
            {"op": "test", "path": "/metadata/generation", "value": generation},
            {"op": "replace", "path": "/spec/template", "value": template},
        ]
        ops += _annotations_patch(
            "/metadata/annotations", dep.get("metadata", {}).get("annotations"), STAMP, op_id
        )
        self._patch_deployment(namespace, name, ops)

    def delete_pod(self, namespace: str, name: str, *, uid: str, evict: bool) -> None:
        """Evict (honouring PodDisruptionBudgets; 429 = refused) or delete, only that UID."""
        options = k8s.V1DeleteOptions(preconditions=k8s.V1Preconditions(uid=uid))
        if evict:
            body = k8s.V1Eviction(
                metadata=k8s.V1ObjectMeta(name=name, namespace=namespace),
                delete_options=options,
            )
            self.call.raw(self.core.create_namespaced_pod_eviction, name, namespace, body)
        else:
            self.call.raw(self.core.delete_namespaced_pod, name, namespace, body=options)

    def _patch_deployment(self, namespace: str, name: str, ops: list[Json]) -> None:
        self.call.raw(
            self.apps.patch_namespaced_deployment,
            name,
            namespace,
            ops,
            _content_type=JSON_PATCH,
        )


def _annotation(obj: Json, key: str) -> str | None:
    value = ((obj.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value is not None else None


def annotation(obj: Json, key: str) -> str | None:
    return _annotation(obj, key)


def template_annotation(dep: Json, key: str) -> str | None:
    tpl = (dep.get("spec") or {}).get("template") or {}
    value = ((tpl.get("metadata") or {}).get("annotations") or {}).get(key)
    return str(value) if value is not None else None


def current_replicaset(dep: Json, replicasets: list[Json]) -> Json | None:
    """The ReplicaSet of the Deployment's current revision."""
    revision = _annotation(dep, REVISION)
    for rs in replicasets:
        if revision is not None and _annotation(rs, REVISION) == revision:
            return rs
    return None


def template_hash(rs: Json) -> str | None:
    labels = (rs.get("metadata") or {}).get("labels") or {}
    value = labels.get(TEMPLATE_HASH)
    return str(value) if value is not None else None
