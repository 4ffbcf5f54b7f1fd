"""The evidence a report keeps, bounded so the RCAReport always fits in one etcd object.

A report must be checkable after the run has ended: every `[E2]` a claim cites has to be
looked up later, by `triage reports show`, the review page or `kubectl get -o yaml`. So the
RCAReport's spec holds the run's evidence records (id, tool, arguments, status, redacted
excerpt, digest of the raw output), never the raw output itself (`data` stays out: it can be
megabytes of pod lists, and the digest already pins it).

etcd refuses an object over 1.5 MiB (its default `--max-request-bytes`), and a run may make
hundreds of calls with long excerpts. The bound, in order:
1. at most `MAX_RECORDS` records; cited ones first (the claims rest on them; a run makes far
   fewer calls than this, `graph.max_tool_calls`), then failed calls (a reader must see what
   could not be read), then the rest, kept in run order;
2. every string argument clipped to `ARG_CHARS`, and each record's arguments to `ARGS_CHARS`;
3. excerpts clipped to `CITED_CHARS` (cited) and `OTHER_CHARS` (the rest); while the records
   are over `BUDGET_BYTES`, both limits are lowered step by step (uncited excerpts go first);
4. if even the shortest excerpts do not fit, uncited records are dropped from the end.
The spec says how many records there were and how many were dropped, so nothing is lost
without saying so. `BUDGET_BYTES` leaves room for the draft (its text is bounded by the
planner), the status (the judge's lists are capped) and the metadata: see
`tests/reports/test_a_report_keeps_its_evidence.py` for a 200-record report on the apiserver.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from tools.redact import Redactor
from tools.results import ToolStatus, clip
from triage.core.models import Evidence

MAX_RECORDS = 250
ARG_CHARS = 500
ARGS_CHARS = 2_000
CITED_CHARS = 2_000
OTHER_CHARS = 400
BUDGET_BYTES = 640 * 1024
# (cited, other) excerpt limits tried in turn until the records fit the budget.
_STEPS = ((CITED_CHARS, OTHER_CHARS), (1_000, 200), (600, 80), (300, 0), (120, 0))
_FAILED = frozenset({ToolStatus.ERROR, ToolStatus.DENIED, ToolStatus.APPROVAL_REQUIRED})


def _arg(value: Any, chars: int) -> Any:
    if isinstance(value, str):
        return clip(value, chars)
    if isinstance(value, dict):
        return {str(k): _arg(v, chars) for k, v in list(value.items())[:50]}
    if isinstance(value, list | tuple):
        return [_arg(v, chars) for v in list(value)[:50]]
    return value if isinstance(value, int | float | bool) or value is None else str(value)


def clipped_args(args: dict[str, Any], redactor: Redactor) -> dict[str, Any]:
    """Arguments clipped and redacted (redacting twice what is kept, as for excerpts)."""
    clipped = _arg(redactor.data(_arg(args, 2 * ARG_CHARS)), ARG_CHARS)
    if len(json.dumps(clipped, default=str)) <= ARGS_CHARS:
        return dict(clipped)
    # Too long even clipped: keep it readable as one string rather than drop it.
    return {"_clipped": clip(json.dumps(clipped, default=str), ARGS_CHARS)}


def _base(e: Evidence, cited: bool, redactor: Redactor) -> tuple[dict[str, Any], str]:
    """A record without its excerpt, and the excerpt redacted. Only twice the longest excerpt
    kept is redacted (a secret starting inside what is kept is wholly inside that window), so
    a megabyte of log costs no more than a short one."""
    record: dict[str, Any] = {
        "id": e.id,
        "tool": e.tool,
        "args": clipped_args(e.args, redactor),
        "status": e.status.value,
        "digest": e.digest,
        "cited": cited,
    }
    if e.error_kind is not None:
        record["errorKind"] = e.error_kind.value
    if e.purpose:
        record["purpose"] = clip(redactor.text(e.purpose[:400]), 200)
    return record, redactor.text(e.excerpt.strip()[: 2 * CITED_CHARS])


def _with_excerpt(base: dict[str, Any], excerpt: str, full: int, limit: int) -> dict[str, Any]:
    record = {**base, "excerpt": clip(excerpt, limit) if limit else ""}
    if full > limit:
        record["excerptClipped"] = True
    return record


def _size(records: Iterable[dict[str, Any]]) -> int:
    return len(json.dumps(list(records), separators=(",", ":")).encode())


def _chosen(evidence: Sequence[Evidence], cited: set[str]) -> list[Evidence]:
    """At most MAX_RECORDS, in run order: cited first, then failed calls, then the rest."""
    if len(evidence) <= MAX_RECORDS:
        return list(evidence)
    rank = {e.id: 0 if e.id in cited else 1 if e.status in _FAILED else 2 for e in evidence}
    keep = sorted(evidence, key=lambda e: rank[e.id])[:MAX_RECORDS]
    ids = {e.id for e in keep}
    return [e for e in evidence if e.id in ids]


def bounded(
    evidence: Sequence[Evidence], cited: set[str], redactor: Redactor
) -> tuple[list[dict[str, Any]], int]:
    """The records to store and how many were dropped; see the module docstring."""
    chosen = _chosen(evidence, cited)
    prepared = [(*_base(e, e.id in cited, redactor), len(e.excerpt.strip())) for e in chosen]
    records: list[dict[str, Any]] = []
    for cited_chars, other_chars in _STEPS:
        records = [
            _with_excerpt(base, excerpt, full, cited_chars if base["cited"] else other_chars)
            for base, excerpt, full in prepared
        ]
        if _size(records) <= BUDGET_BYTES:
            return records, len(evidence) - len(records)
    while _size(records) > BUDGET_BYTES:
        uncited = [i for i, r in enumerate(records) if not r["cited"]]
        if not uncited:
            break  # only cited records left, each at the shortest excerpt: keep them all
        records.pop(uncited[-1])
    return records, len(evidence) - len(records)


def from_records(records: Iterable[dict[str, Any]]) -> list[Evidence]:
    """Stored records read back as Evidence (no `data`: the report never held it)."""
    out: list[Evidence] = []
    for r in records:
        try:
            status = ToolStatus(str(r.get("status")))
        except ValueError:
            status = ToolStatus.ERROR
        out.append(
            Evidence(
                id=str(r.get("id") or "?"),
                tool=str(r.get("tool") or "?"),
                args=dict(r.get("args") or {}),
                status=status,
                excerpt=str(r.get("excerpt") or ""),
                digest=str(r.get("digest") or ""),
                purpose=r.get("purpose"),
            )
        )
    return out
