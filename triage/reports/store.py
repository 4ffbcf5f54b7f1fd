"""Submit: the RCA draft becomes an `RCAReport` in the cluster, and the run's outcome is
published on it after the verdict.

The report is the deliverable in the system of record (helm/triage/crds/rcareport.yaml). It is
written as the agent identity, which may write RCAReports and nothing else, into the incident's
namespace (one per run, named from the run id, replaced on a retry), with the sha256 digest of
the draft as submitted; the judge reads it back through the read registry and compares. The
outcome goes to the `status` subresource only after the verdict, so `kubectl get rcareports`
never shows a report as verified before the judge has said so.

Backends: Kubernetes (the product) and memory (tests, the offline demo); one conformance suite
runs against both (tests/judge/test_report_store_conformance.py). A failed write raises
`ReportError` with the `ErrorKind` of the failure; it is never retried here: the loop decides.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tools.errors import error_for_status
from tools.read.kube import RCAREPORT_GROUP, RCAREPORT_PLURAL, RCAREPORT_VERSION
from tools.read.registry import ReadTools
from tools.results import ErrorKind, ToolResult, ToolStatus, clip, digest
from triage.core.errors import ReportError
from triage.core.models import Goal, RCADraft, draft_digest

API_VERSION = f"{RCAREPORT_GROUP}/{RCAREPORT_VERSION}"
KIND = "RCAReport"
ROOT_CAUSE_CHARS = 80


@dataclass(frozen=True)
class ReportRef:
    namespace: str
    name: str
    digest: str


def report_name(run_id: str) -> str:
    """A DNS-1123 name from a run id (thread ids hold ':' and dots)."""
    return "rca-" + hashlib.sha256(run_id.encode()).hexdigest()[:16]


def root_cause_line(draft: RCADraft) -> str:
    """The cause in one line for the printer column (the draft's `cause`, else its chain's
    last link), clipped to what a terminal shows."""
    return clip(draft.cause_line(), ROOT_CAUSE_CHARS)


def manifest(
    name: str, namespace: str, goal: Goal, draft: RCADraft, *, attempt: int, run_id: str
) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/managed-by": "triage"},
        },
        "spec": {
            "request": clip(goal.words, 4000),
            "runId": run_id[:200],
            "attempt": attempt,
            "rootCauseClass": draft.root_cause_class.value,
            "rootCause": root_cause_line(draft),
            "digest": draft_digest(draft),
            "draft": draft.model_dump(mode="json"),
        },
    }


class ReportStore(Protocol):
    def submit(
        self, namespace: str, goal: Goal, draft: RCADraft, *, attempt: int, run_id: str
    ) -> ReportRef:
        """Create the run's report, or replace its spec on a later attempt."""
        ...

    def publish(self, ref: ReportRef, status: dict[str, Any]) -> None:
        """Write the run's outcome to the report's status."""
        ...

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The report as stored, or None."""
        ...


def _status_message(body: Any) -> str:
    """The apiserver's Status message (why it refused), else the body itself."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body or "")
    try:
        message = json.loads(text).get("message")
    except (ValueError, AttributeError):
        return text
    return str(message) if message else text


class KubeReportStore:
    """RCAReports through the apiserver, as the identity of `api_client`."""

    def __init__(self, api_client: k8s.ApiClient, *, timeout_s: float = 10.0) -> None:
        self.api = k8s.CustomObjectsApi(api_client)
        self.timeout_s = timeout_s

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, _request_timeout=self.timeout_s, **kwargs)
        except ApiException as e:
            err = error_for_status(e.status or 0, e.body, what=what)
            raise ReportError(
                f"{what}: HTTP {e.status}: {_status_message(e.body)}", err.kind
            ) from e
        except (urllib3.exceptions.HTTPError, OSError) as e:
            kind = (
                ErrorKind.TIMEOUT
                if isinstance(e, urllib3.exceptions.TimeoutError | TimeoutError)
                else ErrorKind.UNREACHABLE
            )
            raise ReportError(f"{what}: {e}", kind) from e

    def submit(
        self, namespace: str, goal: Goal, draft: RCADraft, *, attempt: int, run_id: str
    ) -> ReportRef:
        name = report_name(run_id)
        body = manifest(name, namespace, goal, draft, attempt=attempt, run_id=run_id)
        args = (RCAREPORT_GROUP, RCAREPORT_VERSION, namespace, RCAREPORT_PLURAL)
        try:
            self._call("create rcareport", self.api.create_namespaced_custom_object, *args, body)
        except ReportError as e:
            if e.kind is not ErrorKind.CONFLICT:
                raise
            # A later attempt of the same run: replace the spec (one read, one write; a
            # concurrent writer makes this fail with a conflict, which is reported, not retried).
            current = self._call(
                "read rcareport", self.api.get_namespaced_custom_object, *args, name
            )
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self._call(
                "replace rcareport", self.api.replace_namespaced_custom_object, *args, name, body
            )
        return ReportRef(namespace, name, body["spec"]["digest"])

    def publish(self, ref: ReportRef, status: dict[str, Any]) -> None:
        self._call(
            "publish rcareport status",
            self.api.patch_namespaced_custom_object_status,
            RCAREPORT_GROUP,
            RCAREPORT_VERSION,
            ref.namespace,
            RCAREPORT_PLURAL,
            ref.name,
            {"status": status},
        )

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self._call(
                "read rcareport",
                self.api.get_namespaced_custom_object,
                RCAREPORT_GROUP,
                RCAREPORT_VERSION,
                namespace,
                RCAREPORT_PLURAL,
                name,
            )
        except ReportError as e:
            if e.kind is ErrorKind.NOT_FOUND:
                return None
            raise
        return obj


class MemoryReportStore:
    """Reports in a dict: the same contract, for unit tests and the offline demo."""

    def __init__(self) -> None:
        self.reports: dict[tuple[str, str], dict[str, Any]] = {}

    def submit(
        self, namespace: str, goal: Goal, draft: RCADraft, *, attempt: int, run_id: str
    ) -> ReportRef:
        name = report_name(run_id)
        body = manifest(name, namespace, goal, draft, attempt=attempt, run_id=run_id)
        body = json.loads(json.dumps(body))
        previous = self.reports.get((namespace, name))
        if previous is not None and "status" in previous:
            body["status"] = previous["status"]
        body["metadata"]["creationTimestamp"] = datetime.now(UTC).isoformat()
        self.reports[(namespace, name)] = body
        return ReportRef(namespace, name, body["spec"]["digest"])

    def publish(self, ref: ReportRef, status: dict[str, Any]) -> None:
        report = self.reports.get((ref.namespace, ref.name))
        if report is None:
            msg = f"rcareport {ref.namespace}/{ref.name} not found"
            raise ReportError(msg, ErrorKind.NOT_FOUND)
        report["status"] = json.loads(json.dumps(status))

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.reports.get((namespace, name))


class MemoryReportReads:
    """Read tools whose `k8s.rcareport` is answered from a MemoryReportStore (the demo has
    no cluster); every other call goes to `inner`."""

    def __init__(self, inner: ReadTools, store: MemoryReportStore) -> None:
        self.inner = inner
        self.store = store

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if name != "k8s.rcareport":
            return self.inner.call(name, args)
        obj = self.store.get(str(args.get("namespace")), str(args.get("name")))
        if obj is None:
            return ToolResult(
                tool=name,
                args=args,
                status=ToolStatus.ERROR,
                excerpt=f"rcareport {args.get('name')} not found",
                error_kind=ErrorKind.NOT_FOUND,
            )
        spec = obj.get("spec") or {}
        data = {
            "name": args.get("name"),
            "spec_digest": spec.get("digest"),
            "draft_digest": digest(spec.get("draft")),
            "attempt": spec.get("attempt"),
            "draft": spec.get("draft"),
            "outcome": (obj.get("status") or {}).get("outcome"),
        }
        return ToolResult(
            tool=name, args=args, status=ToolStatus.OK, excerpt="rcareport (memory)", data=data
        )
