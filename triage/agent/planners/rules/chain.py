"""Causal chains: what an analyzer finds, and how the most explanatory one is chosen.

A `Finding` is a chain of links — the symptom the user sees, the mechanism, the cause a
human acts on (last) — each link a claim citing `ok` evidence, about one object, carrying
the facts the judge re-checks in the cluster. Findings are ranked without hand-set scores:
a chain that reaches the object the user asked about beats one that does not; then the one
whose cause is decided by an explicit message (the kubelet's, the scheduler's, the program's
own log line) or by the objects' structure rather than by timing alone (a symptom that merely
follows a deploy, or a probe failing on something the app depends on); then a chain that
explains more of the incident's symptoms (a database with no endpoints explains the caller's
timeouts, its 5xx and its alert); then the deeper chain.

`compose` joins chains: a chain whose cause is the failure of another object (a dependency
with no ready endpoints, a readiness probe failing on a lookup or a 403) continues with the
chain that explains that object, so the RCA reads from the symptom the user sees to the cause
a human acts on; a chain left open ranks below closed ones.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from triage.agent.planners.rules.facts import Ref
from triage.core.causes import CauseClass
from triage.core.models import Claim, Fact, FactOp, LinkRole, MutationProposal, TimelineEntry


class Strength(IntEnum):
    """How the cause was decided."""

    CORRELATED = 1  # it happened at the same time (a deploy before an error rise)
    INFERRED = 2  # the objects' structure says so (a selector that matches nothing)
    STATED = 3  # a message says so (the kubelet, the scheduler, the program's log)


def unique(*ids: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in ids if i))


def link(
    role: LinkRole | None,
    text: str,
    *ids: str | None,
    about: Ref | None = None,
    facts: tuple[Fact, ...] = (),
) -> Claim | None:
    cited = unique(*ids)
    if not cited:
        return None
    return Claim(
        text=text,
        evidence=cited,
        role=role,
        subject=str(about) if about else None,
        facts=facts,
    )


def fact(tool: str, path: str, op: FactOp, value: Any, **args: Any) -> Fact:
    return Fact(
        tool=tool,
        args={k: v for k, v in args.items() if v is not None},
        path=path,
        op=op,
        value=value,
    )


# Sentences of an error message that point elsewhere rather than say what failed.
_HELP = re.compile(
    r"\s*(If you [^.]*\.|For (more )?(help|details|information)[^.]*(\.|$)|(please )?see https?://\S+"
    r"|https?://\S+)",
    re.I,
)
_HINT = re.compile(r"\s*(https?://\S+|see \S+|for more (details|information).*)\s*", re.I)


# What a structured log line carries besides what it says: dropped when one is shortened.
_LOG_NOISE = frozenset(
    {
        "time",
        "ts",
        "timestamp",
        "@timestamp",
        "level",
        "lvl",
        "severity",
        "logger",
        "caller",
        "hostname",
        "pid",
        "thread",
        "v",
        "name",
        "source",
        "span_id",
        "trace_id",
    }
)


def _compact(text: str) -> str:
    """A JSON log line as what it says: its message, then its other fields (k=v, nested
    values as compact JSON), without the time, level and logger that every line has."""
    try:
        doc = json.loads(text)
    except ValueError:
        return text
    if not isinstance(doc, dict):
        return text
    msg = next((str(doc[k]) for k in ("msg", "message", "event") if k in doc), "")
    rest = [
        f"{k}={v if isinstance(v, str) else json.dumps(v, separators=(',', ':'))}"
        for k, v in doc.items()
        if k not in _LOG_NOISE and k not in ("msg", "message", "event")
    ]
    return "; ".join(x for x in (msg, *rest) if x) or text


def short(text: str, limit: int = 220) -> str:
    """`text` in at most `limit` characters. An error chain ("pull failed: resolve: authorize:
    401 Unauthorized") keeps its head and its innermost error, which is where the cause is; a
    JSON log line too long to quote whole keeps what it says, not its timestamp and level."""
    text = " ".join(str(text).split())
    if len(text) > limit and text.startswith("{") and text.endswith("}"):
        text = _compact(text)
    if len(text) <= limit:
        return text
    parts = text.split(": ")
    while len(parts) > 3 and _HINT.fullmatch(parts[-1]):  # a trailing link says no error
        parts.pop()
    if len(parts) >= 3:
        tail = ""
        for part in reversed(parts[1:]):
            candidate = f"{part}: {tail}" if tail else part
            if len(candidate) > limit // 2:
                break
            tail = candidate
        if not tail and "{" not in text:
            # the innermost error alone is too long: its start says what failed (a server's
            # "Code=SecretNotFound Message=…"), the help sentences after it say nothing (a
            # JSON body is not a chain of errors: its ": " separate keys from values)
            inner = _HELP.sub("", parts[-1]).strip()
            room = limit * 2 // 3
            tail = inner[: room - 1].rstrip() + ("…" if len(inner) > room - 1 else "")
        if tail:
            head = text[: limit - len(tail) - 4].rstrip()
            return f"{head} …: {tail}"
    return text[: limit - 1] + "…"


@dataclass
class Finding:
    cls: CauseClass
    cause: str  # the cause in one sentence
    chain: list[Claim]  # symptom first, cause last
    summary: str  # the symptom and its scope, for a reader in a hurry
    impact: str = ""
    strength: Strength = Strength.STATED
    explains: set[str] = field(default_factory=set)  # objects whose symptoms it explains
    what_changed: list[Claim] = field(default_factory=list)
    contributing: list[Claim] = field(default_factory=list)
    remediation: list[MutationProposal] = field(default_factory=list)
    follow_ups: list[str] = field(default_factory=list)
    timeline: list[TimelineEntry] = field(default_factory=list)
    # The objects whose own failure this chain's cause is (a dependency whose pods are not
    # ready): a chain that explains one of them goes deeper (see `compose`).
    open_at: set[str] = field(default_factory=set)
    headline: str = ""  # a joined chain: the first consequence's summary
    absorbed: list[Finding] = field(default_factory=list)  # the chains joined into this one

    @property
    def complete(self) -> bool:
        """A chain that names a cause (its last link is a cause) — a symptom alone is not."""
        return bool(self.chain) and self.chain[-1].role is LinkRole.CAUSE and self.cls.is_cause

    def subjects(self) -> set[str]:
        return {c.subject for c in self.chain if c.subject} | self.explains


def chain(*links: Claim | None) -> list[Claim]:
    return [c for c in links if c is not None]


def rank(findings: list[Finding], focus: set[str]) -> list[Finding]:
    """Most explanatory first (see the module docstring). `focus`: the Kind/ns/name refs of
    what the user asked about (and their pods and Services)."""

    def key(f: Finding) -> tuple[int, int, int, int, int, int]:
        subjects = f.subjects()
        touches = int(bool(focus & subjects)) if focus else 1
        closed = int(not f.open_at)
        return (touches, int(f.complete), closed, int(f.strength), len(subjects), len(f.chain))

    return sorted(findings, key=key, reverse=True)


def _demote(claims: list[Claim], first: LinkRole) -> list[Claim]:
    return [
        c.model_copy(update={"role": first if i == 0 else LinkRole.MECHANISM})
        for i, c in enumerate(claims)
    ]


def join(consequence: Finding, cause: Finding) -> Finding:
    """One chain from two: the consequence's links (its cause demoted to a mechanism), then
    the cause's (its symptom demoted too) — symptom -> ... -> the cause a human acts on."""
    links = _demote(consequence.chain, LinkRole.SYMPTOM)
    seen = {c.text for c in links}
    links += [c for c in _demote(cause.chain, LinkRole.MECHANISM) if c.text not in seen]
    links[-1] = links[-1].model_copy(update={"role": LinkRole.CAUSE})
    return Finding(
        cls=cause.cls,
        cause=cause.cause,
        chain=links,
        summary=f"{consequence.headline or consequence.summary}, because "
        f"{short(cause.cause[0].lower() + cause.cause[1:], 200)}",
        headline=consequence.headline or consequence.summary,
        impact=consequence.impact or cause.impact,
        strength=cause.strength,
        explains=consequence.subjects() | cause.explains,
        what_changed=[*cause.what_changed, *consequence.what_changed],
        contributing=[*cause.contributing, *consequence.contributing],
        remediation=[*cause.remediation, *consequence.remediation],
        follow_ups=[*cause.follow_ups, *consequence.follow_ups],
        timeline=[*consequence.timeline, *cause.timeline],
        open_at=cause.open_at,
        absorbed=[consequence, cause, *consequence.absorbed, *cause.absorbed],
    )


def compose(findings: list[Finding]) -> list[Finding]:
    """Each finding followed to the cause of its cause: an *open* finding (its cause is the
    failure of another object: a dependency whose pods are not ready, a probe failing on a
    lookup) is joined with the chain that explains that object, closed ones first, until the
    chain is closed or nothing explains it. The open ones joined are replaced."""
    out: list[Finding] = []
    for f in findings:
        current, used = f, {id(f)}
        while current.open_at:
            explaining = [
                g
                for g in findings
                if id(g) not in used and g.complete and current.open_at & g.subjects()
            ]
            if not explaining:
                break
            # the chain that starts where this one stops (its first link is about an object
            # this one is open at), then a closed one, then the stronger
            best = max(
                explaining,
                key=lambda g: (
                    (g.chain[0].subject or "") in current.open_at,
                    not g.open_at,
                    int(g.strength),
                    len(g.chain),
                ),
            )
            used.add(id(best))
            current = join(current, best)
        out.append(current)
    return out
