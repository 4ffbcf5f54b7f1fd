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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import urllib3
from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException

from tools.errors import error_for_status
from tools.kube_call import JSON, MERGE_PATCH, send_raw
from tools.read.kube import RCAREPORT_GROUP, RCAREPORT_PLURAL, RCAREPORT_VERSION
from tools.read.registry import ReadTools
from tools.redact import DEFAULT as DEFAULT_REDACTOR
from tools.redact import Redactor
from tools.results import ErrorKind, ToolResult, ToolStatus, clip, digest
from triage.core.errors import ReportError
from triage.core.models import Evidence, Goal, RCADraft, draft_digest
from triage.reports import evidence as bounds
from triage.reports.review import Review, status_with

API_VERSION = f"{RCAREPORT_GROUP}/{RCAREPORT_VERSION}"
KIND = "RCAReport"
ROOT_CAUSE_CHARS = 160  # the CRD allows 200; a terminal column still reads 160
MAX_OPERATIONS = 20
REVIEW_CONFLICT_RETRIES = 3  # a concurrent review (409) is re-read and re-applied this often


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


def operation_records(mutations: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The changes the run made through the ledger, as the report lists them (ids link to the
    ledger's Operation records)."""
    out = []
    for m in mutations[:MAX_OPERATIONS]:
        if not m.get("operation") and not m.get("target"):
            continue
        out.append(
            {
                "operation": str(m.get("operation") or ""),
                "action": str(m.get("action") or ""),
                "target": str(m.get("target") or ""),
                "args": bounds.clipped_args(dict(m.get("args") or {}), DEFAULT_REDACTOR),
                "phase": str(m.get("phase") or ""),
                "excerpt": clip(DEFAULT_REDACTOR.text(str(m.get("excerpt") or "")), 400),
            }
        )
    return out


def manifest(
    name: str,
    namespace: str,
    goal: Goal,
    draft: RCADraft,
    *,
    attempt: int,
    run_id: str,
    evidence: Sequence[Evidence] = (),
    operations: Sequence[dict[str, Any]] = (),
    redactor: Redactor = DEFAULT_REDACTOR,
) -> dict[str, Any]:
    """The RCAReport as submitted: the draft (digested), and what a reviewer needs to check it
    after the run — the evidence records (bounded, triage/reports/evidence.py) and the changes
    made."""
    records, omitted = bounds.bounded(evidence, draft.cited_ids(), redactor)
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
            "planner": draft.planner,
            "evidence": records,
            "evidenceTotal": len(evidence),
            "evidenceOmitted": omitted,
            "operations": operation_records(operations),
        },
    }


class ReportStore(Protocol):
    def submit(
        self,
        namespace: str,
        goal: Goal,
        draft: RCADraft,
        *,
        attempt: int,
        run_id: str,
        evidence: Sequence[Evidence] = (),
        operations: Sequence[dict[str, Any]] = (),
        redactor: Redactor = DEFAULT_REDACTOR,
    ) -> ReportRef:
        """Create the run's report, or replace its spec on a later attempt."""
        ...

    def publish(self, ref: ReportRef, status: dict[str, Any]) -> None:
        """Write the run's outcome to the report's status."""
        ...

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The report as stored, or None."""
        ...

    def review(self, namespace: str, name: str, review: Review) -> dict[str, Any]:
        """Record a person's review on the report's status; the report as it is now.
        ReportError(NOT_FOUND) when there is no such report."""
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
        # By path through the ApiClient: the generated CustomObjectsApi costs ~90 ms to build
        # (kubernetes 37 makes a validator per method) and its typed answers are not used.
        self.api_client = api_client
        self.timeout_s = timeout_s

    def _call(
        self,
        what: str,
        method: str,
        namespace: str,
        name: str | None = None,
        *,
        body: dict[str, Any] | None = None,
        status: bool = False,
    ) -> Any:
        path = f"/apis/{RCAREPORT_GROUP}/{RCAREPORT_VERSION}/namespaces/{{namespace}}/"
        path += RCAREPORT_PLURAL + ("/{name}" if name else "") + ("/status" if status else "")
        params = {"namespace": namespace, **({"name": name} if name else {})}
        try:
            fetched = send_raw(
                self.api_client,
                method,
                path,
                path_params=params,
                body=body,
                content_type=MERGE_PATCH if method == "PATCH" else JSON,
                timeout_s=self.timeout_s,
            )
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
        return json.loads(fetched.body)

    def submit(
        self,
        namespace: str,
        goal: Goal,
        draft: RCADraft,
        *,
        attempt: int,
        run_id: str,
        evidence: Sequence[Evidence] = (),
        operations: Sequence[dict[str, Any]] = (),
        redactor: Redactor = DEFAULT_REDACTOR,
    ) -> ReportRef:
        name = report_name(run_id)
        body = manifest(
            name,
            namespace,
            goal,
            draft,
            attempt=attempt,
            run_id=run_id,
            evidence=evidence,
            operations=operations,
            redactor=redactor,
        )
        try:
            self._call("create rcareport", "POST", namespace, body=body)
        except ReportError as e:
            if e.kind is not ErrorKind.CONFLICT:
                raise
            # A later attempt of the same run: replace the spec (one read, one write; a
            # concurrent writer makes this fail with a conflict, which is reported, not retried).
            current = self._call("read rcareport", "GET", namespace, name)
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            self._call("replace rcareport", "PUT", namespace, name, body=body)
        return ReportRef(namespace, name, body["spec"]["digest"])

    def publish(self, ref: ReportRef, status: dict[str, Any]) -> None:
        self._call(
            "publish rcareport status",
            "PATCH",
            ref.namespace,
            ref.name,
            body={"status": status},
            status=True,
        )

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        try:
            obj: dict[str, Any] = self._call("read rcareport", "GET", namespace, name)
        except ReportError as e:
            if e.kind is ErrorKind.NOT_FOUND:
                return None
            raise
        return obj

    def review(self, namespace: str, name: str, review: Review) -> dict[str, Any]:
        """Read, add the review, write the status back pinned to the version read (a merge
        patch carrying `resourceVersion`); a concurrent write is a 409, re-read and retried."""
        for attempt in range(1, REVIEW_CONFLICT_RETRIES + 1):
            current = self.get(namespace, name)
            if current is None:
                msg = f"rcareport {namespace}/{name} not found"
                raise ReportError(msg, ErrorKind.NOT_FOUND)
            body = {
                "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
                "status": status_with(current, review),
            }
            try:
                updated: dict[str, Any] = self._call(
                    "review rcareport", "PATCH", namespace, name, body=body, status=True
                )
            except ReportError as e:
                if e.kind is ErrorKind.CONFLICT and attempt < REVIEW_CONFLICT_RETRIES:
                    continue
                raise
            return updated
        raise AssertionError("unreachable: the last attempt returns or raises")


class MemoryReportStore:
    """Reports in a dict: the same contract, for unit tests and the offline demo."""

    def __init__(self) -> None:
        self.reports: dict[tuple[str, str], dict[str, Any]] = {}
        self._version = 0

    def submit(
        self,
        namespace: str,
        goal: Goal,
        draft: RCADraft,
        *,
        attempt: int,
        run_id: str,
        evidence: Sequence[Evidence] = (),
        operations: Sequence[dict[str, Any]] = (),
        redactor: Redactor = DEFAULT_REDACTOR,
    ) -> ReportRef:
        name = report_name(run_id)
        body = manifest(
            name,
            namespace,
            goal,
            draft,
            attempt=attempt,
            run_id=run_id,
            evidence=evidence,
            operations=operations,
            redactor=redactor,
        )
        body = json.loads(json.dumps(body))
        previous = self.reports.get((namespace, name))
        if previous is not None and "status" in previous:
            body["status"] = previous["status"]
        body["metadata"]["creationTimestamp"] = (previous or {}).get("metadata", {}).get(
            "creationTimestamp"
        ) or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self._version += 1
        body["metadata"]["resourceVersion"] = str(self._version)
        self.reports[(namespace, name)] = body
        return ReportRef(namespace, name, body["spec"]["digest"])

    def publish(self, ref: ReportRef, status: dict[str, Any]) -> None:
        report = self.reports.get((ref.namespace, ref.name))
        if report is None:
            msg = f"rcareport {ref.namespace}/{ref.name} not found"
            raise ReportError(msg, ErrorKind.NOT_FOUND)
        # A merge patch, as the apiserver applies it: keys not written (a review) are kept.
        report["status"] = {**(report.get("status") or {}), **json.loads(json.dumps(status))}
        self._version += 1
        report["metadata"]["resourceVersion"] = str(self._version)

    def get(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self.reports.get((namespace, name))

    def review(self, namespace: str, name: str, review: Review) -> dict[str, Any]:
        report = self.reports.get((namespace, name))
        if report is None:
            msg = f"rcareport {namespace}/{name} not found"
            raise ReportError(msg, ErrorKind.NOT_FOUND)
        self.publish(ReportRef(namespace, name, ""), status_with(report, review))
        return report


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
