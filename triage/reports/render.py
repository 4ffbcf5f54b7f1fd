"""How an RCA draft reads in a terminal, in Markdown and as JSON.

Every claim is shown with the evidence ids it cites and those ids are listed with their tool
and status, so a reader can check any sentence against what was actually observed.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from triage.core.models import Claim, Evidence, RCADraft


def _shown(e: Evidence, cited: set[str]) -> bool:
    """Cited evidence and failed calls are listed; uncited ok/no_data calls are only counted."""
    return e.id in cited or e.status.value in ("error", "denied", "approval_required")


def _cites(claim: Claim) -> str:
    return " [" + ", ".join(claim.evidence) + "]"


def _role(claim: Claim) -> str:
    return f"{claim.role.value}: " if claim.role else ""


def markdown(draft: RCADraft, evidence: list[Evidence], *, total_calls: int | None = None) -> str:
    """The draft as Markdown, with the evidence its claims cite (and failed calls) listed.
    `total_calls`: how many calls the run made, when `evidence` is a stored subset."""
    lines = [f"# {draft.title}", "", f"**Summary:** {draft.summary}", ""]
    if draft.cause:
        lines += [f"**Cause:** {draft.cause}", ""]
    lines += [f"**Root cause class:** `{draft.root_cause_class}`", ""]
    lines += [f"**Impact:** {draft.impact}", ""]
    if draft.root_cause:
        lines += ["## Root cause"]
        lines += [f"- {_role(c)}{c.text}{_cites(c)}" for c in draft.root_cause] + [""]
    if draft.what_changed:
        lines += ["## What changed", *[f"- {c.text}{_cites(c)}" for c in draft.what_changed], ""]
    if draft.contributing_factors:
        lines += ["## Contributing factors"]
        lines += [f"- {c.text}{_cites(c)}" for c in draft.contributing_factors] + [""]
    if draft.timeline:
        lines += ["## Timeline", *[f"- {t.at}: {t.what}" for t in draft.timeline], ""]
    if draft.remediation:
        lines += ["## Proposed remediation (not executed)"]
        lines += [
            f"- {r.action} {r.target} {json.dumps(r.args)}: {r.rationale}"
            for r in draft.remediation
        ] + [""]
    if draft.follow_ups:
        lines += ["## Follow-ups", *[f"- {f}" for f in draft.follow_ups], ""]
    if draft.nonexistent:
        lines += ["## Named but not found", *[f"- {n}" for n in draft.nonexistent], ""]
    if draft.unavailable:
        lines += ["## Unavailable evidence", *[f"- {u}" for u in draft.unavailable], ""]
    if draft.suspicious_inputs:
        lines += ["## Suspicious input (quoted, not obeyed)"]
        lines += [
            f"- {s.evidence} {s.where}: {s.text} ({s.reason})" for s in draft.suspicious_inputs
        ]
        lines += [""]
    if draft.notes:
        lines += ["## Notes", *[f"- {n}" for n in draft.notes], ""]
    cited = draft.cited_ids()
    lines += ["## Evidence", "| id | tool | status | excerpt |", "|---|---|---|---|"]
    for e in evidence:
        if _shown(e, cited):
            excerpt = e.excerpt.replace("|", "\\|").replace("\n", " ")[:200]
            lines.append(f"| {e.id} | {e.tool} | {e.status.value} | {excerpt} |")
    calls = len(evidence) if total_calls is None else total_calls
    lines += ["", f"_Planner: {draft.planner}; {calls} tool calls._"]
    return "\n".join(lines) + "\n"


def as_json(draft: RCADraft | None, evidence: list[Evidence], **extra: Any) -> str:
    return json.dumps(
        {
            **extra,
            "draft": draft.model_dump(mode="json") if draft else None,
            "evidence": [e.model_dump(mode="json", exclude={"data"}) for e in evidence],
        },
        indent=2,
    )


def terminal(console: Console, draft: RCADraft, evidence: list[Evidence]) -> None:
    style = (
        "yellow"
        if draft.inconclusive
        else "green"
        if draft.root_cause_class == "no_fault"
        else "red"
    )
    body: list[Any] = [Text(draft.summary, style="bold"), Text(f"Impact: {draft.impact}")]
    for title, claims in (
        ("Root cause", draft.root_cause),
        ("Contributing factors", draft.contributing_factors),
    ):
        if claims:
            body.append(Text(f"\n{title}", style="bold underline"))
            for c in claims:
                body.append(Text.from_markup(f"• {escape(c.text)}[dim]{escape(_cites(c))}[/]"))
    for title, items in (
        (
            "Proposed remediation (not executed)",
            [
                f"{r.action} {r.target} {json.dumps(r.args)}: {r.rationale}"
                for r in draft.remediation
            ],
        ),
        ("Follow-ups", list(draft.follow_ups)),
        ("Named but not found", list(draft.nonexistent)),
        ("Unavailable evidence", list(draft.unavailable)),
        (
            "Suspicious input (quoted, not obeyed)",
            [f"{s.evidence} {s.where}: {s.text} ({s.reason})" for s in draft.suspicious_inputs],
        ),
        ("Notes", list(draft.notes)),
    ):
        if items:
            body.append(Text(f"\n{title}", style="bold underline"))
            body.extend(Text(f"• {i}") for i in items)
    console.print(
        Panel(
            Group(*body),
            title=escape(draft.title),
            subtitle=draft.root_cause_class,
            border_style=style,
        )
    )
    cited = draft.cited_ids()
    table = Table(title="Evidence", show_lines=False, expand=True)
    for col in ("id", "tool", "status", "excerpt"):
        table.add_column(col, overflow="fold")
    for e in evidence:
        if _shown(e, cited):
            table.add_row(e.id, e.tool, e.status.value, escape(e.excerpt[:220]))
    console.print(table)
    hidden = [e for e in evidence if not _shown(e, cited)]
    if hidden:
        no_data = sum(1 for e in hidden if e.status.value == "no_data")
        console.print(
            f"[dim]{len(hidden)} more calls not cited ({no_data} found nothing); "
            "--output json lists them all.[/]"
        )


_OUTCOME_WORDS = {
    "verified": "verified: checked by the judge. Done.",
    "rejected": "rejected by the judge: the best candidate above is UNVERIFIED.",
    "budget_exhausted": "budget exhausted before it could be verified: UNVERIFIED.",
    "evaluator_unavailable": "the judge's model was unavailable: UNVERIFIED.",
    "unchecked": "unchecked: no check ran (switched off, or nothing to check). UNVERIFIED.",
}


def verification_markdown(summary: dict[str, Any]) -> str:
    """The outcome and the judge's three lists (`CheckedRun.summary()`)."""
    outcome = str(summary["outcome"])
    lines = ["## Verification", "", f"**Outcome:** {_OUTCOME_WORDS.get(outcome, outcome)}", ""]
    report = summary.get("report")
    if report:
        lines += [f"Report: `rcareport/{report['name']}` in `{report['namespace']}`", ""]
    for title, key in (("Met", "met"), ("Missing", "missing"), ("Does not exist", "nonexistent")):
        if summary.get(key):
            lines += [f"### {title}", *[f"- {i}" for i in summary[key]], ""]
    if summary.get("notes"):
        lines += ["### Notes", *[f"- {n}" for n in summary["notes"]], ""]
    lines += [f"_Attempts: {summary['attempts']}; tokens: {summary['spend'].get('tokens', 0)}._"]
    return "\n".join(lines) + "\n"


def verification_terminal(console: Console, summary: dict[str, Any]) -> None:
    outcome = str(summary["outcome"])
    style = "green" if outcome == "verified" else "yellow" if outcome == "unchecked" else "red"
    body: list[Any] = [Text(_OUTCOME_WORDS.get(outcome, outcome), style=f"bold {style}")]
    report = summary.get("report")
    if report:
        body.append(Text(f"Report: rcareport/{report['name']} in {report['namespace']}"))
    for title, key in (("Missing", "missing"), ("Does not exist", "nonexistent"), ("Met", "met")):
        if summary.get(key):
            body.append(Text(f"\n{title}", style="bold underline"))
            body.extend(Text(f"• {i}") for i in summary[key])
    if summary.get("notes"):
        body.append(Text("\nNotes", style="bold underline"))
        body.extend(Text(f"• {n}") for n in summary["notes"])
    spend = summary.get("spend") or {}
    body.append(Text(f"\nAttempts: {summary['attempts']}; tokens: {spend.get('tokens', 0)}"))
    console.print(Panel(Group(*body), title=f"Outcome: {outcome}", border_style=style))
