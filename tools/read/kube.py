"""Read-only Kubernetes access, on the official client, as the reader identity.

`KubeReader` is every Kubernetes read tool: the namespace, pods, events and logs here; nodes;
the RCAReport the judge reads back; and, from tools/read/kube_kinds.py, workloads,
networking, policy and access objects. Every call has a timeout, lists are scoped
(namespace, label/field selectors), paginated and capped (and say so when capped), and
responses are shaped by tools/read/shapes*.py. Secrets are never read: the reader identity has
no right to them, and no function here asks; ConfigMaps are listed for their names only.
"""

from __future__ import annotations

import json
from typing import Any

from tools.read import shapes
from tools.read.kube_base import Json, RequestStats
from tools.read.kube_kinds import NetworkReads, PolicyReads, WorkloadReads
from tools.read.payloads import Pod, PodRef
from tools.redact import cap
from tools.results import ToolResult, digest

__all__ = ["RCAREPORT_GROUP", "RCAREPORT_PLURAL", "RCAREPORT_VERSION", "KubeReader", "RequestStats"]

# The RCAReport custom resource (helm/triage/crds/rcareport.yaml): the deliverable, read back.
RCAREPORT_GROUP = "triage.dev"
RCAREPORT_VERSION = "v1alpha1"
RCAREPORT_PLURAL = "rcareports"
MAX_LOG_LINE_CHARS = 4_000  # one log line as read; a longer one is cut, saying so (a minified
# payload or a 100,000-char dump tells the investigation nothing its first 4,000 chars do not)


class KubeReader(WorkloadReads, NetworkReads, PolicyReads):
    """The Kubernetes half of the read registry."""

    def namespace(self, namespace: str) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            raw = self._raw("/api/v1/namespaces/{name}", name=namespace)
            obj = json.loads(raw)
            phase = (obj.get("status") or {}).get("phase")
            labels = dict((obj.get("metadata") or {}).get("labels") or {})  # what policies select
            return (
                {"name": namespace, "phase": phase, "labels": labels},
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
            listed = self._list("/api/v1/namespaces/{namespace}/pods", namespace=namespace, **kw)
            self._truncated = listed.truncated
            pods = [shapes.pod(i) for i in listed.items]
            return pods, _pods_excerpt(pods), listed.digest

        return self._result("k8s.pods", args, produce)

    def find_pods(self, label_selector: str) -> ToolResult:
        """Pods of every namespace matching a label selector: where a controller runs (an
        ingress controller serving a class), never a survey — the selector is required."""
        return self._result(
            "k8s.find_pods",
            {"label_selector": label_selector},
            lambda: self._pod_refs(label_selector=label_selector),
        )

    def pods_on_node(self, node: str) -> ToolResult:
        """Pods of every namespace on one node (a field selector: at most the node's pod
        capacity): what a drain of it must evict, or its failure takes down."""
        return self._result(
            "k8s.pods_on_node",
            {"node": node},
            lambda: self._pod_refs(field_selector=f"spec.nodeName={node}"),
        )

    def _pod_refs(self, **selector: str) -> tuple[Any, str, str]:
        listed = self._list("/api/v1/pods", **selector)
        self._truncated = listed.truncated
        found: list[PodRef] = []
        for item in listed.items:
            pod = shapes.pod(item)
            found.append(
                {
                    "namespace": str((item.get("metadata") or {}).get("namespace")),
                    "name": pod["name"],
                    "phase": pod["phase"],
                    "ready": pod["ready"],
                    "labels": pod["labels"],
                    "containers": [c["name"] for c in pod["containers"]],
                    "args": _first_command(pod),
                    "requests": _requests(pod),
                    "started": pod["start_time"],
                }
            )
        excerpt = f"{len(found)} pod(s): " + ", ".join(
            f"{x['namespace']}/{x['name']}" for x in found[:6]
        )
        return found, excerpt, listed.digest

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
            listed = self._list("/api/v1/namespaces/{namespace}/events", namespace=namespace, **kw)
            self._truncated = listed.truncated
            evs = sorted((shapes.event(i) for i in listed.items), key=lambda e: str(e["last_seen"]))
            excerpt = "; ".join(
                f"{e['type']} {e['reason']} {e['object']['kind']}/{e['object']['name']}: "
                f"{e['message']}"
                for e in evs[-5:]
            )
            return evs, excerpt, listed.digest

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
            raw = self._raw(
                "/api/v1/namespaces/{namespace}/pods/{name}/log",  # text, whatever Accept says
                namespace=namespace,
                name=pod,
                **kw,
            )
            # Capped per line, then redacted together: a key wrapped over two lines or a PEM
            # body is only visible across them, and the excerpt quotes redacted lines only.
            lines = [
                cap(line, MAX_LOG_LINE_CHARS)
                for line in raw.decode("utf-8", "replace").splitlines()
            ]
            lines = self.redactor.lines(lines)
            which = "previous" if previous else "current"
            excerpt = f"{len(lines)} {which} log lines; last: " + " | ".join(lines[-3:])
            return lines, excerpt, digest(raw)

        return self._result("k8s.logs", args, produce)

    def nodes(self, label_selector: str | None = None) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            kw: Json = {"label_selector": label_selector} if label_selector else {}
            listed = self._list("/api/v1/nodes", **kw)
            self._truncated = listed.truncated
            nodes = [shapes.node(i) for i in listed.items]
            excerpt = "; ".join(
                f"{n['name']} cpu {n['allocatable'].get('cpu')} mem "
                f"{n['allocatable'].get('memory')}"
                + (f" taints {[t.get('key') for t in n['taints']]}" if n["taints"] else "")
                for n in nodes
            )
            return nodes, excerpt, listed.digest

        return self._result("k8s.nodes", {"label_selector": label_selector}, produce)

    def node(self, node: str) -> ToolResult:
        """One node by name (a field selector: the pods in question run on few nodes, and a
        cluster may have thousands), in k8s.nodes' shape: a list of one, or none."""

        def produce() -> tuple[Any, str, str]:
            listed = self._list("/api/v1/nodes", field_selector=f"metadata.name={node}")
            nodes = [shapes.node(i) for i in listed.items]
            excerpt = "; ".join(
                f"{n['name']} "
                + ", ".join(f"{c.get('type')}={c.get('status')}" for c in n["conditions"])
                for n in nodes
            )
            return nodes, excerpt, listed.digest

        return self._result("k8s.node", {"node": node}, produce)

    def rcareport(self, namespace: str, name: str) -> ToolResult:
        """One RCAReport (the deliverable) as stored: spec, status, and the digest of the stored
        draft computed here over the bytes the apiserver sent, before any redaction, so the
        judge can tell "stored as drafted" from "changed since"."""

        def produce() -> tuple[Any, str, str]:
            raw = self._raw(
                f"/apis/{RCAREPORT_GROUP}/{RCAREPORT_VERSION}/namespaces/{{namespace}}"
                f"/{RCAREPORT_PLURAL}/{{name}}",
                namespace=namespace,
                name=name,
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


def _requests(pod: Pod) -> dict[str, str]:
    out: dict[str, list[str]] = {}
    for c in pod["containers"]:
        for k, v in c["requests"].items():
            out.setdefault(k, []).append(str(v))
    return {k: "+".join(v) for k, v in out.items()}


def _first_command(pod: Pod) -> str:
    spec = pod["containers"][0]["spec"] if pod["containers"] else None
    return shapes.clipped(" ".join([*spec["command"], *spec["args"]])) if spec else ""


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
