"""Every sentence the Slack bot says, in one place.

Why one module: what people read during an incident must be plain, consistent and say what to
do next; reviewing it, translating it or changing its tone should not mean hunting through
handlers. Nothing else in triage/slack/ writes user-facing text; everything here is sent
through the Redactor on its way out (triage/slack/client.py).
"""

from __future__ import annotations

from collections.abc import Sequence

# -- conversation ----------------------------------------------------------------------------

CASUAL_REPLY = (
    "Happy to help. Mention me with what is wrong (the service, its namespace, since when) "
    "and I will investigate and keep a ticket in this thread."
)
EMPTY_MENTION = (
    "You mentioned me without a question. Tell me what is wrong, e.g. "
    "“checkout-api in namespace shop returns 503 since 14:05, find out why”."
)
NEED_NAMESPACE = (
    "Which namespace should I look in? Say it in the message (e.g. “in namespace shop”) and "
    "mention me again; an operator can also map this channel to a namespace."
)
ON_IT = (
    "On it: investigating now, read-only. I will edit this message as I go and post the "
    "answer in this thread once it has been checked."
)


def progress_checks(count: int, latest: str) -> str:
    return f"Investigating: {count} check(s) run so far (latest: `{latest}`)."


def progress_attempt(number: int) -> str:
    if number == 1:
        return "Investigating: reading the cluster."
    return f"The checker sent the first answer back; attempt {number} is looking again."


PROGRESS_SUBMITTED = "Report written to the cluster; the checker is verifying it."
PROGRESS_JUDGING = "Checking the answer against the evidence."
PROGRESS_DONE = "Done: the answer is in this thread and the ticket shows the outcome."
PROGRESS_AWAITING_APPROVAL = (
    "Paused: the change you asked for needs an approver's click below. I carry on (apply it, "
    "check it took effect, verify the answer) as soon as it is decided."
)


CRASHED = "each try stopped before it could finish"


def gave_up(attempts: int, reason: str) -> str:
    return (
        f"I could not finish this after {attempts} tries ({reason}). Nothing was changed. "
        "Mention me again to retry, or run `triage investigate` from a terminal."
    )


# -- alerts (the Alertmanager receiver) ------------------------------------------------------

ALERT_OWNER = "Alertmanager (no one has taken it yet)"
ALERT_ON_IT = (
    "Alertmanager fired this alert group; investigating now, read-only. Its annotations are "
    "read as data, never as instructions, and an alert never changes anything. The answer "
    "comes in this thread once it has been checked."
)
ALERT_NO_NAMESPACE = (
    "This alert names no namespace (no `namespace` label) and this channel has none mapped, "
    "so nothing was investigated. Add the label to the alert rule, or map the channel to a "
    "namespace (TRIAGE_SLACK__CHANNEL_NAMESPACES); mention me here to investigate by hand."
)


def alert_line(
    name: str, status: str, since: str, severity: str | None, alerts: int, resolved: str = ""
) -> str:
    """The ticket's alert line: which alert, how many, firing since or resolved at."""
    line = f"`{name}`: {alerts} alert(s), firing since {since} UTC"
    if severity:
        line += f", severity {severity}"
    if status == "resolved":
        line += f". Resolved at {resolved} UTC"
    return line


def alert_resolved(name: str, at: str) -> str:
    return (
        f"Alertmanager says `{name}` resolved at {at} UTC. The ticket above shows it; the RCA "
        "stays in this thread and in the cluster."
    )


def storm_summary(
    suppressed: int, started: int, window_s: float, names: Sequence[tuple[str, int]]
) -> str:
    """One message for a storm: how many groups were not investigated, and which."""
    listed = ", ".join(f"`{n}` ({c})" for n, c in names[:15])
    more = len(names) - 15
    tail = f" and {more} more" if more > 0 else ""
    return (
        f"Alert storm: {suppressed + started} alert groups fired in {window_s / 60:.0f} "
        f"minute(s). I investigated the first {started} (their tickets are in this channel) "
        f"and not the other {suppressed}: {listed}{tail}. Each is investigated when "
        "Alertmanager notifies about it again after the storm, or when someone mentions me "
        "with it."
    )


# -- ticket ----------------------------------------------------------------------------------

TICKET_HEADER = "Incident ticket"
STATUS_INVESTIGATING = "Investigating"
STATUS_ANSWERED = "Answered"
STATUS_AWAITING_APPROVAL = "Waiting for approval"
STATUS_FAILED = "Failed"
LABEL_STATUS = "Status"
LABEL_OWNER = "Owner"
LABEL_ALERT = "Alert"
LABEL_OUTCOME = "Outcome"
LABEL_ROOT_CAUSE = "Root cause"
LABEL_REPORT = "Report"
LABEL_LINKS = "Links"
LINK_REQUEST = "the request"
LABEL_CHANGES = "Changes"
NO_REPORT = "none written (the request asked for an answer, not a report)"
REPORT_NOT_WRITTEN = (
    "not written to the cluster (see the answer below for why); ask again once it is reachable"
)

OUTCOME_WORDS = {
    "verified": "Verified: the checker confirmed the answer against the evidence.",
    "rejected": "Not verified: the checker rejected it. Treat it as a lead, not a conclusion.",
    "budget_exhausted": "Not verified: the budget ran out before the answer could be checked.",
    "evaluator_unavailable": (
        "Not verified: the checker's model did not answer; only the automatic checks ran."
    ),
    "unchecked": "Not checked: checking is switched off by the operator's policy.",
    "awaiting_approval": (
        "Not checked yet: the change you asked for waits for an approver; the answer is "
        "checked once it is applied."
    ),
}


def outcome_line(outcome: str) -> str:
    return OUTCOME_WORDS.get(outcome, f"Outcome: {outcome}")


def report_line(namespace: str, name: str) -> str:
    return f"`kubectl get rcareport {name} -n {namespace}`"


def missing_line(missing: Sequence[str]) -> str:
    return "Still missing: " + "; ".join(missing)


def nonexistent_line(names: Sequence[str]) -> str:
    return "Named in the request but not found: " + ", ".join(names)


def owner(user: str) -> str:
    return f"<@{user}>" if user else ALERT_OWNER


# -- the answer ------------------------------------------------------------------------------

ANSWER_UNVERIFIED_PREFIX = "Unverified answer (see the ticket for why):"


def part_of(index: int, total: int) -> str:
    return f"(part {index} of {total})"


def attached_as_file(chars: int) -> str:
    return (
        f"The full answer is {chars} characters, too long for a few messages, so it is "
        "attached as a file. The ticket above has the outcome and the one-line root cause."
    )


RCA_FILE_TITLE = "Root-cause analysis"
NOTHING_FOUND = "I found nothing to report for that request."

# -- changes and approvals -------------------------------------------------------------------


def approval_needed(action: str, target: str) -> str:
    return f"Approval needed: {action} on {target}"


LABEL_ARGUMENTS = "Arguments (exactly what will be applied)"
LABEL_DRY_RUN = "Planned against the live cluster (read just now; nothing applied yet)"
LABEL_OPERATION = "Operation"
BUTTON_APPROVE = "Approve"
BUTTON_REFUSE = "Refuse"


def _who(approvers: Sequence[str]) -> str:
    """Approvers as Slack shows them: `slack:T1/U2` and `slack:U2` as mentions."""
    shown = []
    for a in approvers:
        user = a.removeprefix("slack:").rpartition("/")[2] if a.startswith("slack:") else ""
        shown.append(f"<@{user}>" if user else a)
    return ", ".join(shown) or "nobody"


def approvers_line(approvers: Sequence[str], ttl_s: int) -> str:
    return (
        f"Who may approve: {_who(approvers)}. An approval is good once, for {ttl_s // 60} "
        "minutes, for exactly these arguments."
    )


def not_an_approver(action: str, approvers: Sequence[str]) -> str:
    return f"You may not approve {action}; ask one of: {_who(approvers)}. Nothing was changed."


def approved_by(user: str, op_id: str) -> str:
    return f"Approved by <@{user}>; applying {op_id} once through the ledger."


def refused_by(user: str, op_id: str) -> str:
    return f"Refused by <@{user}>: {op_id} will not be applied. Nothing was changed."


def applied(op_id: str, phase: str, detail: str) -> str:
    return f"{op_id}: {phase}. {detail} (see `triage ops show {op_id}`)"


def already_decided(op_id: str, phase: str) -> str:
    return f"{op_id} is already {phase}; this click changed nothing."


def stale_button(op_id: str) -> str:
    return (
        f"This button was for different arguments than {op_id} now has; nothing was changed. "
        "Ask me again for a fresh approval request."
    )


def approval_expired(op_id: str) -> str:
    return f"The approval request for {op_id} has expired; ask me again to get a fresh one."


def cannot_decide(op_id: str, why: str) -> str:
    return f"Could not record that for {op_id}: {why}. Nothing was changed."


def change_result(action: str, target: str, excerpt: str) -> str:
    return f"{action} on {target}: {excerpt}"


APPROVALS_NOT_CONFIGURED = (
    "Approvals from Slack are not configured for this bot (no approval recorder identity). "
    "Nothing was changed; an approver can run `triage ops approve ID` from a terminal."
)


# -- offers: changes mentioned without being commanded -----------------------------------


def offer_line(sentence: str) -> str:
    return (
        f"You mentioned *{sentence}* but did not command it, so nothing was changed. If you "
        "want it, plan it: the operation is created only when someone clicks, and the usual "
        "approval rules apply."
    )


def button_plan(sentence: str) -> str:
    return f"Plan: {sentence}"


def planned_by(user: str, sentence: str) -> str:
    return f"Planned by <@{user}>: {sentence}. Follow it in this thread."


def plan_started(sentence: str) -> str:
    return (
        f"Planning {sentence} on your behalf. Where the policy needs an approver, you will "
        "see an approval card in this thread; nothing runs before that."
    )


def cannot_plan(why: str) -> str:
    return f"Could not plan that: {why}. Nothing was changed."


CHANGES_NOT_CONFIGURED = (
    "You asked for a change, but changes are not configured for this bot (no ledger). Nothing "
    "was changed; an operator can enable them, or use `triage ops` from a terminal."
)

# -- reviewing the RCA -----------------------------------------------------------------------

BUTTON_CONFIRM_CAUSE = "Confirm cause"
BUTTON_DISPUTE = "Dispute"
BUTTON_OPEN_REPORT = "Open report"
LABEL_REVIEW = "Review"
DISPUTE_TITLE = "Dispute the cause"
DISPUTE_SUBMIT = "Dispute"
DISPUTE_CANCEL = "Cancel"
DISPUTE_NOTE_LABEL = "Why is it wrong? (optional)"
DISPUTE_NOTE_HINT = "e.g. the real cause was the database failover at 14:02"


def review_line(verdict: str, user: str, note: str) -> str:
    said = f": “{note}”" if note else ""
    word = "Cause confirmed" if verdict == "confirmed" else "Cause disputed"
    return f"{word} by <@{user}>{said}"


def review_recorded(verdict: str, namespace: str, name: str) -> str:
    return (
        f"Recorded: you {'confirmed' if verdict == 'confirmed' else 'disputed'} the cause of "
        f"{namespace}/{name}. It is on the report (`triage reports show {name} -n {namespace}`)."
    )


def review_failed(name: str, why: str) -> str:
    return (
        f"Your review of {name} was not recorded: {why}. Try again, or use `triage reports review`."
    )


REVIEW_NO_STORE = "Reviews cannot be recorded here: this bot writes no reports."
NOT_A_REVIEWER = (
    "You are not on this bot's list of reviewers (TRIAGE_REVIEW__SLACK_REVIEWERS); nothing was "
    "recorded."
)
