"""RCAReports read back for people: `triage reports` and the review page of `triage serve`.

Reports are read, never written, here: listing goes through the Kubernetes API as whoever the
kubeconfig says (the reader identity in-cluster), the demo reads the in-memory store. Pages are
plain HTML built from the stored report with every value escaped — a report quotes tool output,
and tool output is data, never markup. What is shown is what `kubectl get rcareports` shows,
plus the RCA itself and the judge's met / missing / nonexistent lists.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes import client as k8s
from pydantic import ValidationError

from tools.errors import NotFound
from tools.kube_call import call_raw
from tools.read.kube import RCAREPORT_GROUP, RCAREPORT_PLURAL, RCAREPORT_VERSION
from triage.core.models import RCADraft
from triage.reports import render
from triage.reports.store import MemoryReportStore

Json = dict[str, Any]
PAGE_SIZE = 200
MAX_REPORTS = 1000


class ReportReader(Protocol):
    def list(self, namespace: str | None) -> list[Json]: ...

    def get(self, namespace: str, name: str) -> Json | None: ...


class KubeReports:
    """RCAReports from the apiserver: one namespace, or all the identity may list."""

    def __init__(self, api_client: k8s.ApiClient, *, timeout_s: float = 10.0) -> None:
        self.api = k8s.CustomObjectsApi(api_client)
        self.timeout_s = timeout_s

    def list(self, namespace: str | None) -> list[Json]:
        items: list[Json] = []
        cont: str | None = None
        while len(items) < MAX_REPORTS:
            kw: Json = {"limit": PAGE_SIZE, **({"_continue": cont} if cont else {})}
            if namespace:
                raw = call_raw(
                    self.api.list_namespaced_custom_object,
                    RCAREPORT_GROUP,
                    RCAREPORT_VERSION,
                    namespace,
                    RCAREPORT_PLURAL,
                    timeout_s=self.timeout_s,
                    **kw,
                )
            else:
                raw = call_raw(
                    self.api.list_cluster_custom_object,
                    RCAREPORT_GROUP,
                    RCAREPORT_VERSION,
                    RCAREPORT_PLURAL,
                    timeout_s=self.timeout_s,
                    **kw,
                )
            page = json.loads(raw)
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                break
        return items[:MAX_REPORTS]

    def get(self, namespace: str, name: str) -> Json | None:
        try:
            raw = call_raw(
                self.api.get_namespaced_custom_object,
                RCAREPORT_GROUP,
                RCAREPORT_VERSION,
                namespace,
                RCAREPORT_PLURAL,
                name,
                timeout_s=self.timeout_s,
            )
        except NotFound:
            return None
        loaded: Json = json.loads(raw)
        return loaded


class MemoryReports:
    """The demo's reports (written by the judge loop into a MemoryReportStore)."""

    def __init__(self, store: MemoryReportStore) -> None:
        self.store = store

    def list(self, namespace: str | None) -> list[Json]:
        return [r for (ns, _), r in self.store.reports.items() if not namespace or ns == namespace]

    def get(self, namespace: str, name: str) -> Json | None:
        return self.store.get(namespace, name)


@dataclass(frozen=True)
class Summary:
    namespace: str
    name: str
    outcome: str
    root_cause: str
    root_cause_class: str
    created: str
    request: str
    attempts: int | None


def summary(obj: Json) -> Summary:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return Summary(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        outcome=str(status.get("outcome") or "pending"),
        root_cause=str(spec.get("rootCause") or ""),
        root_cause_class=str(spec.get("rootCauseClass") or ""),
        created=str(meta.get("creationTimestamp") or ""),
        request=str(spec.get("request") or ""),
        attempts=status.get("attempts"),
    )


def draft_of(obj: Json) -> RCADraft | None:
    try:
        return RCADraft.model_validate((obj.get("spec") or {}).get("draft") or {})
    except ValidationError:
        return None


def verdict_lists(obj: Json) -> dict[str, list[str]]:
    status = obj.get("status") or {}
    return {k: [str(i) for i in status.get(k) or []] for k in ("met", "missing", "nonexistent")}


def markdown(obj: Json) -> str:
    """The report as Markdown: outcome first, then the RCA, then the judge's lists."""
    s = summary(obj)
    lines = [
        f"**Report:** `{s.namespace}/{s.name}` — outcome **{s.outcome}**"
        + ("" if s.outcome == "verified" else " (UNVERIFIED)"),
        "",
        f"**Request:** {s.request}",
        "",
    ]
    draft = draft_of(obj)
    body = render.markdown(draft, []) if draft else "_The stored draft could not be read._\n"
    lists = verdict_lists(obj)
    tail = []
    for key, title in (("met", "Met"), ("missing", "Missing"), ("nonexistent", "Not found")):
        if lists[key]:
            tail += [f"## Judge: {title}", *[f"- {i}" for i in lists[key]], ""]
    return "\n".join(lines) + body + "\n" + "\n".join(tail)


_STYLE = (
    "body{font-family:system-ui,sans-serif;margin:2rem;max-width:70rem}"
    "table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;"
    "padding:.4rem;text-align:left;vertical-align:top}"
    ".verified{color:#176f2c}.rejected,.budget_exhausted,.evaluator_unavailable{color:#a4262c}"
    ".unchecked,.pending{color:#8a6d00}pre{white-space:pre-wrap}"
)


def _page(title: str, body: str) -> str:
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>"
    )


def html_index(reports: list[Json], namespace: str | None) -> str:
    rows = []
    for s in sorted((summary(r) for r in reports), key=lambda x: x.created, reverse=True):
        link = f"/reports/{html.escape(s.namespace)}/{html.escape(s.name)}"
        rows.append(
            "<tr>"
            f"<td><a href='{link}'>{html.escape(s.namespace)}/{html.escape(s.name)}</a></td>"
            f"<td class='{html.escape(s.outcome)}'>{html.escape(s.outcome)}</td>"
            f"<td>{html.escape(s.root_cause)}</td><td>{html.escape(s.created)}</td></tr>"
        )
    where = f" in {html.escape(namespace)}" if namespace else ""
    table = (
        "<table><tr><th>report</th><th>outcome</th><th>root cause</th><th>created</th></tr>"
        + "".join(rows)
        + "</table>"
        if rows
        else f"<p>No RCA reports{where} yet.</p>"
    )
    intro = (
        "<p>Only <b>verified</b> reports were checked by the judge; any other outcome is an "
        "unverified draft.</p>"
    )
    return _page("Triage: RCA reports", f"<h1>RCA reports{where}</h1>{intro}{table}")


def html_report(obj: Json) -> str:
    s = summary(obj)
    body = (
        f"<p><a href='/reports'>all reports</a></p><h1>{html.escape(s.name)}</h1>"
        f"<p class='{html.escape(s.outcome)}'>outcome: <b>{html.escape(s.outcome)}</b></p>"
        f"<pre>{html.escape(markdown(obj))}</pre>"
    )
    return _page(f"RCA {s.name}", body)
