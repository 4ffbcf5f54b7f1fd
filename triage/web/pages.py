"""The review page's HTML: Jinja2 templates (triage/web/templates/) over the stored report.

Everything a report holds came from a planner or from tool output, which is data, never markup:
templates autoescape every value, and the few fields written as Markdown (summary, impact,
claims, notes) go through markdown-it with raw HTML off and images off (an image would fetch a
URL a log line chose), links limited to what markdown-it's validator allows (no javascript:,
no data:) and marked rel="nofollow noopener noreferrer". The pages carry no script at all; the
Content-Security-Policy (triage/web/review.py) forbids any.

Rendering is a pure function of (report, user's rights) so it can be measured on its own
(bench/review_page.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markdown_it import MarkdownIt
from markupsafe import Markup

from triage.reports import query as q
from triage.reports.review import reviews_of
from triage.reports.views import Summary, draft_of, summary, verdict_lists

Json = dict[str, Any]

BANNERS = {
    "verified": "Verified: the judge checked this RCA against the cluster and its evidence.",
    "rejected": "UNVERIFIED: the judge rejected this RCA. Treat it as a lead, not a conclusion.",
    "budget_exhausted": "UNVERIFIED: the budget ran out before the RCA could be verified.",
    "evaluator_unavailable": "UNVERIFIED: the judge's model did not answer; only the "
    "automatic checks ran.",
    "unchecked": "UNVERIFIED: no check ran (checking switched off, or nothing to check).",
    "pending": "No outcome yet: the run has not finished, or could not record its outcome.",
}
OUTCOME_WORDS = {
    "verified": "verified",
    "rejected": "rejected",
    "budget_exhausted": "budget exhausted",
    "evaluator_unavailable": "judge unavailable",
    "unchecked": "unchecked",
    "pending": "pending",
}


def _markdown() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.disable("image")

    def link_open(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
        tokens[idx].attrSet("rel", "nofollow noopener noreferrer")
        return str(self.renderToken(tokens, idx, options, env))

    md.add_render_rule("link_open", link_open)
    return md


_MD = _markdown()


def markdown_block(text: str) -> Markup:
    return Markup(_MD.render(text or ""))  # noqa: S704 (markdown-it escaped it; raw HTML off)


def markdown_inline(text: str) -> Markup:
    return Markup(_MD.renderInline(text or ""))  # noqa: S704 (as above)


def ago(stamp: str, now: datetime | None = None) -> str:
    """'3 h ago' from an RFC 3339 time (the list's age column)."""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp or "-"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    seconds = max(0, int(((now or datetime.now(UTC)) - when).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size} {unit} ago"
    return "just now"


ENV = Environment(
    loader=PackageLoader("triage.web", "templates"),
    autoescape=select_autoescape(["html"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
ENV.filters["md"] = markdown_block
ENV.filters["mdi"] = markdown_inline
ENV.filters["ago"] = ago
ENV.globals["OUTCOME_WORDS"] = OUTCOME_WORDS
ENV.globals["session"] = False  # a page rendered for a signed-in session passes session=True


def _claims(draft: Any, records: dict[str, Json]) -> list[tuple[str, list[Json]]]:
    sections = []
    for title, claims in (
        ("Causal chain", draft.root_cause),
        ("What changed", draft.what_changed),
        ("Contributing factors", draft.contributing_factors),
    ):
        rows = [
            {
                "text": c.text,
                "role": c.role.value if c.role else "",
                "evidence": [records.get(i) or {"id": i, "missing": True} for i in c.evidence],
            }
            for c in claims
        ]
        if rows:
            sections.append((title, rows))
    return sections


def report_context(obj: Json) -> Json:
    """What report.html shows, from the stored object alone."""
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    s = summary(obj)
    draft = draft_of(obj)
    records = {str(r.get("id")): r for r in spec.get("evidence") or [] if isinstance(r, dict)}
    return {
        "s": s,
        "draft": draft,
        "banner": BANNERS.get(s.outcome, f"Outcome: {s.outcome}"),
        "claims": _claims(draft, records) if draft else [],
        "timeline": list(draft.timeline) if draft else [],
        "evidence": list(records.values()),
        "evidence_total": int(spec.get("evidenceTotal") or len(records)),
        "evidence_omitted": int(spec.get("evidenceOmitted") or 0),
        "lists": verdict_lists(obj),
        "notes": [str(n) for n in status.get("notes") or []],
        "operations": list(spec.get("operations") or []),
        "attempts": list(status.get("attemptLog") or []),
        "spend": status.get("spend") or {},
        "timings": status.get("timings") or {},
        "reviews": list(reversed(reviews_of(obj))),
    }


def render_report(
    obj: Json, *, user: str, can_review: bool, csrf: str, message: str = "", session: bool = False
) -> str:
    return ENV.get_template("report.html").render(
        **report_context(obj),
        user=user,
        session=session,
        can_review=can_review,
        csrf=csrf,
        message=message,
        title=f"RCA {summary(obj).name}",
    )


def render_list(
    rows: Sequence[Summary], query: q.Query, *, user: str, page_size: int, session: bool = False
) -> str:
    page = q.select(rows, query, page_size=page_size)
    return ENV.get_template("list.html").render(
        page=page,
        session=session,
        query=query,
        outcomes=q.OUTCOMES,
        reviews=q.REVIEWS,
        ages=list(q.AGES),
        sorts=q.SORTS,
        user=user,
        title="RCA reports",
    )


def render_operation(op: Json, *, user: str, session: bool = False) -> str:
    title = f"Operation {op.get('id')}"
    return ENV.get_template("operation.html").render(op=op, user=user, session=session, title=title)


def render_login(*, error: str = "", next_url: str = "/reports") -> str:
    return ENV.get_template("login.html").render(
        error=error, next_url=next_url, user="", title="Sign in"
    )


def render_message(title: str, text: str, *, user: str = "", session: bool = False) -> str:
    return ENV.get_template("message.html").render(
        title=title, text=text, user=user, session=session
    )
