"""RCAReports read back for people: `triage reports` and the review page of `triage serve`.

Reports are read, never written, here: listing goes through the Kubernetes API as whoever the
kubeconfig says (the reader identity in-cluster), the demo reads the in-memory store. A report
is self-contained (triage/reports/store.py): the draft, the evidence records its claims cite,
the judge's lists, attempts, spend, timings and reviews, so everything printed here comes from
the stored object alone, long after the run's process has gone.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from kubernetes import client as k8s
from pydantic import ValidationError

from tools.errors import NotFound
from tools.kube_call import get_raw
from tools.read.kube import RCAREPORT_GROUP, RCAREPORT_PLURAL, RCAREPORT_VERSION
from triage.core.models import Evidence, RCADraft
from triage.reports import render
from triage.reports.evidence import from_records
from triage.reports.review import latest, review_status, reviews_of
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
        self.api_client = api_client  # by path: no generated API class is built
        self.timeout_s = timeout_s

    def list(self, namespace: str | None) -> list[Json]:
        items: list[Json] = []
        cont: str | None = None
        scope = "namespaces/{namespace}/" if namespace else ""
        path = f"/apis/{RCAREPORT_GROUP}/{RCAREPORT_VERSION}/{scope}{RCAREPORT_PLURAL}"
        while len(items) < MAX_REPORTS:
            fetched = get_raw(
                self.api_client,
                path,
                path_params={"namespace": namespace} if namespace else None,
                query={"limit": PAGE_SIZE, "continue": cont},
                timeout_s=self.timeout_s,
            )
            page = json.loads(fetched.body)
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                break
        return items[:MAX_REPORTS]

    def get(self, namespace: str, name: str) -> Json | None:
        path = f"/apis/{RCAREPORT_GROUP}/{RCAREPORT_VERSION}/namespaces/{{namespace}}/"
        try:
            fetched = get_raw(
                self.api_client,
                path + RCAREPORT_PLURAL + "/{name}",
                path_params={"namespace": namespace, "name": name},
                timeout_s=self.timeout_s,
            )
        except NotFound:
            return None
        loaded: Json = json.loads(fetched.body)
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
    """One report as a row: what `kubectl get rcareports` shows, and what the list filters on."""

    namespace: str
    name: str
    outcome: str
    review: str  # confirmed, disputed, unreviewed
    root_cause: str
    root_cause_class: str
    created: str
    request: str
    attempts: int | None
    title: str = ""
    symptom: str = ""
    planner: str = ""
    reviewed_by: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def summary(obj: Json) -> Summary:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    raw = spec.get("draft")
    draft: Json = raw if isinstance(raw, dict) else {}
    last = latest(obj)
    return Summary(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        outcome=str(status.get("outcome") or "pending"),
        review=review_status(obj),
        root_cause=str(spec.get("rootCause") or ""),
        root_cause_class=str(spec.get("rootCauseClass") or ""),
        created=str(meta.get("creationTimestamp") or ""),
        request=str(spec.get("request") or ""),
        attempts=status.get("attempts"),
        title=str(draft.get("title") or ""),
        symptom=str(draft.get("summary") or ""),
        planner=str(status.get("planner") or spec.get("planner") or draft.get("planner") or ""),
        reviewed_by=last.by if last else "",
    )


def draft_of(obj: Json) -> RCADraft | None:
    try:
        return RCADraft.model_validate((obj.get("spec") or {}).get("draft") or {})
    except ValidationError:
        return None


def evidence_of(obj: Json) -> list[Evidence]:
    """The evidence records stored with the report, as Evidence."""
    return from_records((obj.get("spec") or {}).get("evidence") or [])


def verdict_lists(obj: Json) -> dict[str, list[str]]:
    status = obj.get("status") or {}
    return {k: [str(i) for i in status.get(k) or []] for k in ("met", "missing", "nonexistent")}


def _cell(value: Any) -> str:
    return str(value).replace("|", "\\|").replace("\n", " ")


def _spend_lines(spend: Json) -> list[str]:
    lines = [
        f"- total: {spend.get('tokens', 0)} tokens, ${spend.get('cost_usd', 0)}"
        + ("" if spend.get("priced", True) else " (some models had no price: tokens only)")
    ]
    for role in spend.get("by_role") or []:
        cost = role.get("cost_usd")
        lines.append(
            f"- {role.get('role')} ({role.get('model') or 'no model'}): "
            f"{role.get('input_tokens', 0)} in / {role.get('output_tokens', 0)} out tokens, "
            + ("no price" if cost is None else f"${cost}")
        )
    if not spend.get("by_role"):
        lines.append("- no model was used (rules planner, deterministic judge)")
    return lines


def run_markdown(obj: Json) -> str:
    """What the status says about the run: judge's lists, attempts, spend, timings, reviews."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    lines: list[str] = []
    lists = verdict_lists(obj)
    for key, title in (("met", "Met"), ("missing", "Missing"), ("nonexistent", "Not found")):
        if lists[key]:
            lines += [f"## Judge: {title}", *[f"- {i}" for i in lists[key]], ""]
    if status.get("notes"):
        lines += ["## Notes on the run", *[f"- {n}" for n in status["notes"]], ""]
    if spec.get("operations"):
        lines += ["## Changes made (the ledger)", "| operation | action | target | phase |"]
        lines += ["|---|---|---|---|"]
        for op in spec["operations"]:
            lines.append(
                f"| {_cell(op.get('operation'))} | {_cell(op.get('action'))} | "
                f"{_cell(op.get('target'))} | {_cell(op.get('phase'))} |"
            )
        lines += ["", "_`triage ops show ID` shows an operation's ledger entry._", ""]
    log = status.get("attemptLog") or []
    if log:
        lines += ["## Attempts", "| # | planner | tool calls | investigate s | judge s | verdict |"]
        lines += ["|---|---|---|---|---|---|"]
        for a in log:
            verdict = a.get("decision") or ("not judged" if a.get("submitted") else "-")
            if a.get("missing"):
                verdict += f" ({a['missing']} missing)"
            lines.append(
                f"| {a.get('number')} | {_cell(a.get('planner') or '-')} | {a.get('toolCalls')} "
                f"| {a.get('investigateSeconds')} | {a.get('judgeSeconds') or '-'} | {verdict} |"
            )
        lines.append("")
    if status.get("spend"):
        lines += ["## Spend by role", *_spend_lines(status["spend"]), ""]
    timings = status.get("timings") or {}
    if timings:
        lines += [
            "## Timings",
            f"- started {timings.get('startedAt')}, finished {timings.get('finishedAt')} "
            f"({timings.get('seconds')} s)",
            f"- investigating {timings.get('investigateSeconds')} s, judging "
            f"{timings.get('judgeSeconds')} s",
            "",
        ]
    reviews = reviews_of(obj)
    lines += ["## Review"]
    if not reviews:
        lines += [
            '- not reviewed yet: `triage reports review NAME -n NS --confirm` or `--dispute "why"`',
        ]
    for r in reversed(reviews):
        note = f": {r.note}" if r.note else ""
        lines.append(f"- **{r.verdict.value}** by {r.by} via {r.via.value} at {r.at}{note}")
    return "\n".join(lines) + "\n"


def markdown(obj: Json) -> str:
    """The whole report as Markdown: outcome and review first, the cause, the RCA with every
    stored evidence record, then the run (judge's lists, attempts, spend, timings, reviews)."""
    s = summary(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    unverified = "" if s.outcome == "verified" else " (UNVERIFIED)"
    lines = [
        f"**Report:** `{s.namespace}/{s.name}` — outcome **{s.outcome}**{unverified}; "
        f"review **{s.review}**" + (f" by {s.reviewed_by}" if s.reviewed_by else ""),
        "",
        f"**Root cause:** {s.root_cause}",
        "",
        f"**Request:** {s.request}",
        "",
    ]
    draft = draft_of(obj)
    evidence = evidence_of(obj)
    if draft is None:
        body = "_The stored draft could not be read._\n"
    else:
        body = render.markdown(draft, evidence, total_calls=spec.get("evidenceTotal"))
    if draft is not None:
        cited = draft.cited_ids()
        failed = ("error", "denied", "approval_required")
        listed = [e for e in evidence if e.id in cited or e.status.value in failed]
        rest = len(evidence) - len(listed)
        if rest > 0:
            body += (
                f"\n_{rest} more stored tool outcomes are not cited; `-o json` lists them "
                "all (spec.evidence)._\n"
            )
    omitted = int(spec.get("evidenceOmitted") or 0)
    if omitted:
        body += f"\n_{omitted} uncited tool outcomes were left out to fit the size limit._\n"
    if not status:
        body += "\n_No outcome yet: the run has not finished (or could not publish it)._\n"
    return "\n".join(lines) + body + "\n" + run_markdown(obj)


def as_json(obj: Json) -> str:
    """The report whole, as stored."""
    return json.dumps(obj, indent=2)
