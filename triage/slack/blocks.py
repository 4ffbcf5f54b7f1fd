"""Block Kit for the ticket, the answer and the approval request, built with slack_sdk's models.

Limits are Slack's: a section's text holds 3,000 characters, a message 50 blocks. A long RCA is
split at paragraph (then line, then word) boundaries into several messages, each marked
"part i of n"; past `max_messages` it is uploaded whole as a file instead. Nothing is cut off
without saying so.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    PlainTextObject,
    SectionBlock,
)

from triage.slack import messages as m

SECTION_CHARS = 3000
HEADER_CHARS = 150
MAX_BLOCKS = 50
ACTION_APPROVE = "triage_approve"
ACTION_REFUSE = "triage_refuse"
ACTION_REVIEW_CONFIRM = "triage_review_confirm"
ACTION_REVIEW_DISPUTE = "triage_review_dispute"
ACTION_OPEN_REPORT = "triage_open_report"
REVIEW_ACTIONS = frozenset({ACTION_REVIEW_CONFIRM, ACTION_REVIEW_DISPUTE})
VIEW_DISPUTE = "triage_dispute"
REVIEW_BLOCK = "triage_review"  # the ticket's review line, replaced on each review
ACTION_PLAN = "triage_plan"
BUTTON_CHARS = 75


def _dicts(blocks: list[Block]) -> list[dict[str, Any]]:
    return [b.to_dict() for b in blocks]


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- ticket ----------------------------------------------------------------------------------


@dataclass
class TicketView:
    """What the ticket shows; edited in place as the run goes on."""

    title: str
    owner: str
    status: str = m.STATUS_INVESTIGATING
    request_link: str | None = None
    outcome: str | None = None
    root_cause: str | None = None
    report: tuple[str, str] | None = None  # (namespace, name)
    missing: list[str] = field(default_factory=list)
    nonexistent: list[str] = field(default_factory=list)
    changes: list[str] = field(default_factory=list)
    no_report: str = m.NO_REPORT  # what the Report line says when there is none
    report_url: str | None = None  # the review page's link for the report (settings.review)
    alert: str | None = None  # the Alertmanager group's line (messages.alert_line)

    def text(self) -> str:
        """The plain-text fallback (notifications, screen readers) carries the outcome too."""
        parts = [f"{m.TICKET_HEADER}: {self.title}", f"{m.LABEL_STATUS}: {self.status}"]
        if self.alert:
            parts.append(f"{m.LABEL_ALERT}: {self.alert}")
        if self.outcome:
            parts.append(f"{m.LABEL_OUTCOME}: {self.outcome}. {m.outcome_line(self.outcome)}")
        if self.report:
            parts.append(f"{m.LABEL_REPORT}: {m.report_line(*self.report)}")
        return " | ".join(parts)

    def blocks(self) -> list[dict[str, Any]]:
        fields = [
            MarkdownTextObject(text=f"*{m.LABEL_STATUS}*\n{self.status}"),
            MarkdownTextObject(text=f"*{m.LABEL_OWNER}*\n{m.owner(self.owner)}"),
        ]
        out: list[Block] = [
            HeaderBlock(text=PlainTextObject(text=_clip(self.title, HEADER_CHARS))),
            SectionBlock(fields=fields),
        ]
        if self.alert:
            text = f"*{m.LABEL_ALERT}:* {self.alert}"
            out.append(SectionBlock(text=MarkdownTextObject(text=_clip(text, SECTION_CHARS))))
        if self.outcome:
            said = f"*{m.LABEL_OUTCOME}:* `{self.outcome}`\n{m.outcome_line(self.outcome)}"
            out.append(SectionBlock(text=MarkdownTextObject(text=said)))
        if self.root_cause:
            text = f"*{m.LABEL_ROOT_CAUSE}:* {self.root_cause}"
            out.append(SectionBlock(text=MarkdownTextObject(text=_clip(text, SECTION_CHARS))))
        if self.outcome:
            report = m.report_line(*self.report) if self.report else self.no_report
            out.append(SectionBlock(text=MarkdownTextObject(text=f"*{m.LABEL_REPORT}:* {report}")))
        notes = []
        if self.missing:
            notes.append(m.missing_line(self.missing))
        if self.nonexistent:
            notes.append(m.nonexistent_line(self.nonexistent))
        notes += [f"{m.LABEL_CHANGES}: {c}" for c in self.changes]
        for note in notes:
            out.append(SectionBlock(text=MarkdownTextObject(text=_clip(note, SECTION_CHARS))))
        if self.outcome and self.report:
            out.append(review_actions(*self.report, url=self.report_url))
        if self.request_link:
            out.append(
                ContextBlock(
                    elements=[
                        MarkdownTextObject(
                            text=f"{m.LABEL_LINKS}: <{self.request_link}|{m.LINK_REQUEST}>"
                        )
                    ]
                )
            )
        return _dicts(out)


def review_value(namespace: str, name: str) -> str:
    """What a review button carries: the report it is about."""
    return json.dumps({"ns": namespace, "name": name}, separators=(",", ":"))


def review_actions(namespace: str, name: str, *, url: str | None) -> ActionsBlock:
    """Confirm cause / Dispute (a person's verdict on the RCA), and Open report when the
    review page's URL is configured."""
    value = review_value(namespace, name)
    elements = [
        ButtonElement(text=m.BUTTON_CONFIRM_CAUSE, action_id=ACTION_REVIEW_CONFIRM, value=value),
        ButtonElement(text=m.BUTTON_DISPUTE, action_id=ACTION_REVIEW_DISPUTE, value=value),
    ]
    if url:
        elements.append(
            ButtonElement(text=m.BUTTON_OPEN_REPORT, action_id=ACTION_OPEN_REPORT, url=url)
        )
    return ActionsBlock(block_id=f"review:{namespace}/{name}"[:255], elements=elements)


def with_review_line(blocks: list[dict[str, Any]], line: str) -> list[dict[str, Any]]:
    """The ticket's blocks with its review line set to `line` (put before the buttons)."""
    section = SectionBlock(
        block_id=REVIEW_BLOCK,
        text=MarkdownTextObject(text=_clip(f"*{m.LABEL_REVIEW}:* {line}", SECTION_CHARS)),
    ).to_dict()
    kept = [b for b in blocks if b.get("block_id") != REVIEW_BLOCK]
    at = next(
        (i for i, b in enumerate(kept) if str(b.get("block_id") or "").startswith("review:")),
        len(kept),
    )
    return [*kept[:at], section, *kept[at:]][:MAX_BLOCKS]


def dispute_modal(private: str) -> dict[str, Any]:
    """The modal a Dispute click opens: an optional note; `private` carries what it is about."""
    return {
        "type": "modal",
        "callback_id": VIEW_DISPUTE,
        "private_metadata": private,
        "title": {"type": "plain_text", "text": m.DISPUTE_TITLE},
        "submit": {"type": "plain_text", "text": m.DISPUTE_SUBMIT},
        "close": {"type": "plain_text", "text": m.DISPUTE_CANCEL},
        "blocks": [
            {
                "type": "input",
                "block_id": "note",
                "optional": True,
                "label": {"type": "plain_text", "text": m.DISPUTE_NOTE_LABEL},
                "element": {
                    "type": "plain_text_input",
                    "action_id": "note",
                    "multiline": True,
                    "max_length": 1000,
                    "placeholder": {"type": "plain_text", "text": m.DISPUTE_NOTE_HINT},
                },
            }
        ],
    }


# -- the answer ------------------------------------------------------------------------------

_HEADING = re.compile(r"^#{1,6}\s+(.*)$", re.M)
_BOLD = re.compile(r"\*\*(.+?)\*\*")


def mrkdwn(markdown: str) -> str:
    """The Markdown that triage.render writes, as Slack mrkdwn (headings and bold)."""
    return _BOLD.sub(r"*\1*", _HEADING.sub(r"*\1*", markdown))


def _split(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters, cut at paragraph, line, then word boundaries."""
    pieces: list[str] = []
    current = ""
    for unit in _units(text, limit):
        candidate = f"{current}\n{unit}" if current else unit
        if len(candidate) <= limit:
            current = candidate
        else:
            if current:
                pieces.append(current)
            current = unit
    if current:
        pieces.append(current)
    return pieces


def _units(text: str, limit: int) -> list[str]:
    units: list[str] = []
    for raw in text.split("\n"):
        line = raw
        while len(line) > limit:
            cut = line.rfind(" ", 0, limit)
            cut = cut if cut > limit // 2 else limit
            units.append(line[:cut])
            line = line[cut:].lstrip()
        units.append(line)
    return units


@dataclass(frozen=True)
class Answer:
    """The answer as messages (each a text fallback and its blocks), or as one file."""

    messages: list[tuple[str, list[dict[str, Any]]]]
    file: str | None = None  # the whole text when it goes as a file


def answer(markdown: str, *, prefix: str | None, max_chars: int, max_messages: int) -> Answer:
    body = mrkdwn(markdown.strip()) or m.NOTHING_FOUND
    if prefix:
        body = f"_{prefix}_\n{body}"
    chunks = _split(body, min(max_chars, SECTION_CHARS))
    if len(chunks) > max_messages:
        return Answer(
            messages=[(m.attached_as_file(len(markdown)), [])],
            file=markdown,
        )
    out: list[tuple[str, list[dict[str, Any]]]] = []
    for i, chunk in enumerate(chunks, 1):
        blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=chunk))]
        if len(chunks) > 1:
            blocks.append(ContextBlock(elements=[PlainTextObject(text=m.part_of(i, len(chunks)))]))
        out.append((chunk, _dicts(blocks)))
    return Answer(messages=out)


# -- approval --------------------------------------------------------------------------------


def button_value(op_id: str, digest: str, request_id: str = "") -> str:
    """What a click sends back: the operation, the exact argument digest it was shown, and
    the request whose paused run the decision wakes."""
    return json.dumps({"op": op_id, "digest": digest, "req": request_id}, separators=(",", ":"))


def approval(
    *,
    op_id: str,
    action: str,
    target: str,
    args: dict[str, Any],
    digest: str,
    request_id: str = "",
    dry_run: dict[str, Any],
    approvers: tuple[str, ...],
    ttl_s: int,
    decided: str | None = None,
) -> tuple[str, list[dict[str, Any]]]:
    title = m.approval_needed(action, target)
    arg_text = json.dumps(args, sort_keys=True, indent=1)
    dry_text = json.dumps(dry_run, sort_keys=True, indent=1, default=str)
    out: list[Block] = [
        SectionBlock(text=MarkdownTextObject(text=f"*{title}*")),
        SectionBlock(
            text=MarkdownTextObject(
                text=_clip(f"*{m.LABEL_ARGUMENTS}*\n```{arg_text}```", SECTION_CHARS)
            )
        ),
        SectionBlock(
            text=MarkdownTextObject(
                text=_clip(f"*{m.LABEL_DRY_RUN}*\n```{dry_text}```", SECTION_CHARS)
            )
        ),
        ContextBlock(
            elements=[
                MarkdownTextObject(text=f"{m.LABEL_OPERATION}: `{op_id}` ({digest[:19]}…)"),
                MarkdownTextObject(text=m.approvers_line(approvers, ttl_s)),
            ]
        ),
    ]
    if decided:
        out.append(SectionBlock(text=MarkdownTextObject(text=decided)))
    else:
        value = button_value(op_id, digest, request_id)
        out.append(DividerBlock())
        out.append(
            ActionsBlock(
                block_id=f"approval:{op_id}",
                elements=[
                    ButtonElement(
                        text=m.BUTTON_APPROVE,
                        action_id=ACTION_APPROVE,
                        value=value,
                        style="primary",
                    ),
                    ButtonElement(
                        text=m.BUTTON_REFUSE, action_id=ACTION_REFUSE, value=value, style="danger"
                    ),
                ],
            )
        )
    return title, _dicts(out)


# -- offers ------------------------------------------------------------------------------------


def plan_value(command: dict[str, Any], request_id: str) -> str:
    """What a click on "Plan: …" sends back: the typed command (with its namespace) and the
    request it was offered in. Clicking plans it as a new request by the clicker."""
    return json.dumps({"plan": command, "req": request_id}, separators=(",", ":"))


def offer(
    *, sentence: str, command: dict[str, Any], request_id: str, decided: str | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """A change the words mentioned without commanding it, as one "Plan: …" button."""
    text = m.offer_line(sentence)
    out: list[Block] = [SectionBlock(text=MarkdownTextObject(text=_clip(text, SECTION_CHARS)))]
    if decided:
        out.append(ContextBlock(elements=[MarkdownTextObject(text=decided)]))
    else:
        out.append(
            ActionsBlock(
                elements=[
                    ButtonElement(
                        text=_clip(m.button_plan(sentence), BUTTON_CHARS),
                        action_id=ACTION_PLAN,
                        value=plan_value(command, request_id),
                    )
                ]
            )
        )
    return text, _dicts(out)
