"""The words of DESIGN.md as types: Goal, Evidence, RCADraft and their parts.

These are the contracts between intake, planners, the judge and every surface. Evidence is a
tool outcome with an id; a claim may cite only evidence ids, and only evidence whose status is
`ok` can support a claim (the judge checks this; the rules planner never cites anything else).

An RCA's root cause is a causal chain: claims from the symptom the user sees, through the
mechanism, to the cause a human acts on (the last link), each citing its evidence. Its class is
a `CauseClass` (triage/core/causes.py); any other spelling is refused when a draft is built,
so a wrong RCA cannot pass the judge by a spelling.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from policies.model import MutationAction
from tools.results import ErrorKind, ToolResult, ToolStatus, digest
from triage.core.causes import CauseClass


class RequestKind(StrEnum):
    CASUAL = "casual"  # "thanks", "hi": answered, never investigated
    FIND_TELL = "find_tell"  # "why is X broken": an answer, judged by the answer
    KEEP_SEND_CHANGE = "keep_send_change"  # write the RCA, restart, scale…: checked in the cluster


class Deliverable(StrEnum):
    RCA = "rca"
    ANSWER = "answer"
    MUTATION = "mutation"


class Workload(BaseModel):
    model_config = ConfigDict(frozen=True)
    kind: str | None = None  # Deployment, Service, Job … when the request says
    name: str
    explicit: bool = Field(
        default=False,
        description="Named as an object (with a kind, as kind/name or in `code`), not merely a "
        "hyphenated word: only explicit names that match nothing are reported as nonexistent.",
    )


class Alert(BaseModel):
    """An alert the investigation starts from (Alertmanager's, or one pasted in the words)."""

    model_config = ConfigDict(frozen=True)
    name: str
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    status: str = "firing"


class Scope(BaseModel):
    model_config = ConfigDict(frozen=True)
    cluster: str | None = None
    namespace: str | None = None
    namespace_candidates: tuple[str, ...] = Field(
        default=(),
        description="Other names in the words that may be the namespace, most likely first; "
        "the composition root keeps the first one that exists when `namespace` does not.",
    )
    namespace_is_default: bool = Field(
        default=False,
        description="`namespace` is only the context's or channel's default: a candidate "
        "from the words that exists wins over it.",
    )
    workloads: tuple[Workload, ...] = ()
    since: float | None = Field(default=None, description="Window start, unix seconds.")
    until: float | None = Field(default=None, description="Window end, unix seconds.")


class CommandTarget(BaseModel):
    """What a command names: a Deployment or a Pod by name, or an alert by its alertname."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["Deployment", "Pod", "Alert"]
    name: str = Field(min_length=1, max_length=253)


#: The kind each commandable action acts on, and the arguments a message may give it.
COMMAND_KINDS = {
    MutationAction.ROLLOUT_RESTART: "Deployment",
    MutationAction.SCALE: "Deployment",
    MutationAction.ROLLBACK: "Deployment",
    MutationAction.DELETE_POD: "Pod",
    MutationAction.SILENCE_CREATE: "Alert",
}
COMMAND_ARGS = {
    MutationAction.ROLLOUT_RESTART: frozenset(),
    MutationAction.SCALE: frozenset({"replicas"}),
    MutationAction.ROLLBACK: frozenset({"revision"}),
    MutationAction.DELETE_POD: frozenset(),
    MutationAction.SILENCE_CREATE: frozenset({"duration_s"}),
}


class Command(BaseModel):
    """One change, typed: what the user's own imperative words command (`Goal.commands`), or
    what Triage may offer as a button (`Goal.offers`). Never a free string: the action, the
    target's kind and name, the namespace only when the words name one, and the arguments the
    words give (`replicas` for scale, always; `revision`, `duration_s` only when said)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    action: MutationAction
    target: CommandTarget
    namespace: str | None = Field(default=None, max_length=63)
    args: dict[str, int] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Command:
        kind = COMMAND_KINDS.get(self.action)
        if kind is None:
            msg = f"{self.action} cannot be commanded from a message"
            raise ValueError(msg)
        if self.target.kind != kind:
            msg = f"{self.action} acts on a {kind}, not a {self.target.kind}"
            raise ValueError(msg)
        extra = set(self.args) - COMMAND_ARGS[self.action]
        if extra:
            msg = f"{self.action} takes no {', '.join(sorted(extra))}"
            raise ValueError(msg)
        if self.action is MutationAction.SCALE and "replicas" not in self.args:
            msg = "scale needs an absolute replica count"
            raise ValueError(msg)
        return self

    def sentence(self) -> str:
        """The command as one plain imperative sentence, which intake reads back to exactly
        this command (a button's plan, a log line)."""
        name = self.target.name
        ns = f" in namespace {self.namespace}" if self.namespace else ""
        if self.action is MutationAction.ROLLOUT_RESTART:
            return f"restart deployment {name}{ns}"
        if self.action is MutationAction.SCALE:
            return f"scale deployment {name} to {self.args['replicas']}{ns}"
        if self.action is MutationAction.ROLLBACK:
            rev = self.args.get("revision")
            return f"roll back deployment {name}{f' to revision {rev}' if rev else ''}{ns}"
        if self.action is MutationAction.DELETE_POD:
            return f"delete pod {name}{ns}"
        seconds = self.args.get("duration_s")
        return f"silence {name}{f' for {_duration(seconds)}' if seconds else ''}{ns}"


def _duration(seconds: int) -> str:
    """`5400` → `1h30m`: the compact form intake reads."""
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"


class Goal(BaseModel):
    """What was asked, kept in the user's own words for the judge."""

    model_config = ConfigDict(frozen=True)
    words: str
    kind: RequestKind
    scope: Scope
    deliverables: tuple[Deliverable, ...]
    commands: tuple[Command, ...] = Field(
        default=(),
        description="Changes the user's own words command (explicit imperatives only).",
    )
    offers: tuple[Command, ...] = Field(
        default=(),
        description="Changes the words mention without commanding them (a question, a polite "
        "request, a condition): shown as buttons, never executed by themselves.",
    )
    checks: tuple[str, ...] = Field(
        default=(), description="What the user asked to be checked: logs, metrics, events."
    )
    alert: Alert | None = None


class Evidence(BaseModel):
    """One tool outcome, as recorded: what ran, what came back, how it ended."""

    model_config = ConfigDict(frozen=True)
    id: str
    tool: str
    args: dict[str, Any]
    status: ToolStatus
    excerpt: str
    digest: str
    error_kind: ErrorKind | None = None
    data: Any = Field(default=None, exclude=False)
    truncated: bool = Field(default=False, description="A capped list: incomplete.")
    purpose: str | None = Field(
        default=None,
        description="What the call was made for, when its arguments do not say it (e.g. which "
        "metric signal a PromQL query measures); readers look evidence up by it.",
    )

    @classmethod
    def from_result(
        cls,
        evidence_id: str,
        result: ToolResult,
        args: dict[str, Any] | None = None,
        purpose: str | None = None,
    ) -> Evidence:
        """`args` are the call's arguments as the planner asked (the key that makes a repeat
        call recognisable); the tool's normalised arguments stay in its result."""
        return cls(
            id=evidence_id,
            tool=result.tool,
            args=result.args if args is None else args,
            status=result.status,
            excerpt=result.excerpt,
            digest=result.raw_digest,
            error_kind=result.error_kind,
            data=result.data,
            truncated=result.truncated,
            purpose=purpose,
        )

    @property
    def ok(self) -> bool:
        return self.status is ToolStatus.OK


class LinkRole(StrEnum):
    """Where a claim sits in the causal chain."""

    SYMPTOM = "symptom"  # what the user sees (errors, restarts, a stuck rollout)
    MECHANISM = "mechanism"  # how the cause produces the symptom
    CAUSE = "cause"  # what a human acts on: the chain's last link


FactOp = Literal["eq", "ne", "contains", "ge", "le", "present", "absent"]


class Fact(BaseModel):
    """A checkable statement a claim rests on: re-reading `tool` with `args` gives data in
    which `path` (triage/core/paths.py) satisfies `op` `value`. The judge re-reads it in the
    cluster as it is now, so a claim cannot pass on wording alone."""

    model_config = ConfigDict(frozen=True)
    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    path: str = Field(default="", description="e.g. [name=api-1].containers[name=app].restarts")
    op: FactOp = "eq"
    value: Any = None


class Claim(BaseModel):
    model_config = ConfigDict(frozen=True)
    text: str
    evidence: tuple[str, ...] = Field(min_length=1, description="Ids of the evidence it rests on.")
    role: LinkRole | None = Field(default=None, description="Its place in the causal chain.")
    subject: str | None = Field(
        default=None, description="The object the claim is about: Kind/namespace/name."
    )
    facts: tuple[Fact, ...] = Field(default=(), description="What the judge re-checks.")


class TimelineEntry(BaseModel):
    model_config = ConfigDict(frozen=True)
    at: str
    what: str
    evidence: tuple[str, ...] = ()


class MutationProposal(BaseModel):
    """A typed remediation the ledger could execute; proposing is never executing."""

    model_config = ConfigDict(frozen=True)
    action: Literal["rollout_restart", "scale", "rollback", "delete_pod", "silence_create", "none"]
    target: str = Field(description="kind/namespace/name of what would change")
    args: dict[str, Any] = Field(default_factory=dict)
    rationale: str


class SuspiciousInput(BaseModel):
    """Instruction-like text found in tool output: quoted for a human, never obeyed."""

    model_config = ConfigDict(frozen=True)
    evidence: str = Field(description="Id of the evidence it was found in.")
    where: str = Field(description="Where in that evidence (excerpt, data path).")
    text: str = Field(description="The text, redacted and clipped.")
    reason: str = Field(description="Which rule flagged it.")


class RCADraft(BaseModel):
    model_config = ConfigDict(frozen=True)
    title: str
    summary: str = Field(description="The symptom and its impact, for a reader in a hurry.")
    root_cause_class: CauseClass
    cause: str = Field(
        default="",
        description="The cause in one sentence, e.g. 'DATABASE_URL lacks the scheme "
        "separator; the container exits at start' (the printer column, the ticket, the page).",
    )
    impact: str
    timeline: tuple[TimelineEntry, ...] = ()
    root_cause: tuple[Claim, ...] = Field(
        default=(),
        description="The causal chain, symptom first, the cause a human acts on last.",
    )
    what_changed: tuple[Claim, ...] = Field(
        default=(), description="The failing revision against the last good one, cited."
    )
    contributing_factors: tuple[Claim, ...] = ()
    remediation: tuple[MutationProposal, ...] = ()
    follow_ups: tuple[str, ...] = ()
    inconclusive: bool = False
    checked: tuple[str, ...] = Field(
        default=(), description="What was looked at, in plain words, for an honest reader."
    )
    unavailable: tuple[str, ...] = Field(
        default=(), description="Sources that could not be consulted (e.g. Prometheus down)."
    )
    nonexistent: tuple[str, ...] = Field(
        default=(), description="Things the request named that do not exist."
    )
    planner: str = "rules"
    suspicious_inputs: tuple[SuspiciousInput, ...] = Field(
        default=(), description="Instruction-like text found in tool output (not obeyed)."
    )
    notes: tuple[str, ...] = Field(
        default=(),
        description="How the draft was made: model fallbacks, dropped claims, refused calls.",
    )

    @field_validator("root_cause_class", mode="before")
    @classmethod
    def _known_class(cls, value: object) -> CauseClass:
        return CauseClass.parse(value)

    def cited_ids(self) -> set[str]:
        ids: set[str] = set()
        for claim in (*self.root_cause, *self.what_changed, *self.contributing_factors):
            ids.update(claim.evidence)
        for entry in self.timeline:
            ids.update(entry.evidence)
        return ids

    def cause_link(self) -> Claim | None:
        """The chain's last link: the claim a human acts on (None when there is no chain)."""
        causes = [c for c in self.root_cause if c.role is LinkRole.CAUSE]
        if causes:
            return causes[-1]
        return self.root_cause[-1] if self.root_cause else None

    def cause_line(self) -> str:
        """The cause in one line: `cause`, else the chain's last link, else the summary."""
        link = self.cause_link()
        text = self.cause or (link.text if link else self.summary)
        return " ".join(text.split())


def draft_digest(draft: RCADraft) -> str:
    """sha256 of the draft's canonical JSON: what submit stores and the judge compares."""
    return digest(draft.model_dump(mode="json"))
