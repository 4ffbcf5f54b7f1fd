"""Verb phrases: an action verb, its target list, its modifiers and what may follow.

    command   := verb target-list modifier* tail
    verb      := restart | rollout restart | do a rolling restart of | scale [up|down]
               | set the replicas of | roll back | rollback | roll X back | undo the [last]
               rollout of | revert (revision required) | delete|kill|remove pod | silence|mute
    target-list := target ((and | ,) target)*          tried longest first
    modifier  := namespace | count (scale) | revision (rollback) | duration (silence)
    tail      := [now | please | thanks | asap | instead | cc @x]* then the clause ends, or
                 goes on with a coordinator, "while …", or a condition

Split from grammar.py (sentences and clauses); the targets and modifiers are in targets.py.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from policies.model import MutationAction
from triage.agent.intent import targets as tg
from triage.agent.intent.lexicon import CONDITION_PHRASES, CONDITIONS, GERUNDS, TRAILS
from triage.agent.intent.markup import Kind, Token
from triage.core.models import COMMAND_KINDS, Command, CommandTarget

COORDINATORS = frozenset({"and", "then", "but", "or", "plus", "also", "&", "so"})


def phrase_at(tokens: Sequence[Token], i: int, phrases: Sequence[tuple[str, ...]]) -> int:
    """The length of the first of `phrases` that starts at `i` (0: none does)."""
    for phrase in phrases:
        if all(tg.is_low(tokens, i + k, w) for k, w in enumerate(phrase)):
            return len(phrase)
    return 0


# -- verb phrases ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Phrase:
    """A parsed verb phrase: its commands (one per target) and where it ended."""

    commands: tuple[Command, ...]
    end: int


Parser = Callable[[Sequence[Token], int], tuple[list[str], int] | None]


def _listed(parse: Parser, tokens: Sequence[Token], i: int) -> list[tuple[list[str], int]]:
    """Target lists at `i` ("a", "a and b", "a, b and c"), longest first."""
    first = parse(tokens, i)
    if first is None:
        return []
    found, j = first
    choices = [(list(found), j)]
    while tg.is_low(tokens, j, "and"):
        nxt = parse(tokens, j + 1)
        if nxt is None:
            break
        found = found + nxt[0]
        j = nxt[1]
        choices.append((list(found), j))
    return list(reversed(choices))


def _one(fn: Callable[..., tuple[str, int] | None], **kw: Any) -> Parser:
    def parse(tokens: Sequence[Token], i: int) -> tuple[list[str], int] | None:
        got = fn(tokens, i, **kw)
        return ([got[0]], got[1]) if got else None

    return parse


_DEPLOYMENTS = _one(tg.deployment)


def _pods(tokens: Sequence[Token], i: int) -> tuple[list[str], int] | None:
    first = tg.pod(tokens, i)
    if first is None:
        return None
    found, j = [first[0]], first[1]
    while tg.is_low(tokens, j, "and"):
        nxt = tg.pod(tokens, j + 1, bare=True)
        if nxt is None:
            break
        found.append(nxt[0])
        j = nxt[1]
    return found, j


_ALERTS = _one(tg.alert)


@dataclass
class _Mods:
    namespace: str | None = None
    args: dict[str, int] = field(default_factory=dict)
    given: set[str] = field(default_factory=set)


def _modifiers(tokens: Sequence[Token], i: int, action: MutationAction) -> tuple[_Mods, int]:
    """Namespace and the action's own argument, in any order, each at most once."""
    mods = _Mods()
    while True:
        ns = tg.namespace(tokens, i) if "ns" not in mods.given else None
        if ns is not None:
            mods.namespace, i = ns
            mods.given.add("ns")
            continue
        if action is MutationAction.SCALE and "count" not in mods.given:
            got = tg.count(tokens, i)
            if got is not None:
                mods.args["replicas"], i = got
                mods.given.add("count")
                continue
            if tg.is_low(tokens, i, "down", "up"):
                i += 1
                continue
        if action is MutationAction.ROLLBACK and "rev" not in mods.given:
            rev = tg.revision(tokens, i)
            if rev is not None:
                if rev[0] is not None:
                    mods.args["revision"] = rev[0]
                i = rev[1]
                mods.given.add("rev")
                continue
        if action is MutationAction.SILENCE_CREATE and "for" not in mods.given:
            got = tg.duration(tokens, i)
            if got is not None:
                mods.args["duration_s"], i = got
                mods.given.add("for")
                continue
        return mods, i


def _head(tokens: Sequence[Token], i: int) -> tuple[MutationAction, Parser, int, bool] | None:
    """The action verb at `i` and what follows it: (action, target parser, index after the
    verb words, whether the phrase ends in "back" after the target)."""
    low = tokens[i].low if tokens[i].kind is Kind.WORD else ""
    low = GERUNDS.get(low, low)

    def nxt(k: int, *words: str) -> bool:
        return tg.is_low(tokens, i + k, *words)

    if low == "restart":
        return MutationAction.ROLLOUT_RESTART, _DEPLOYMENTS, i + 1, False
    if low == "rollout" and nxt(1, "restart"):
        return MutationAction.ROLLOUT_RESTART, _DEPLOYMENTS, i + 2, False
    if low == "rollout" and nxt(1, "undo"):
        return MutationAction.ROLLBACK, _DEPLOYMENTS, i + 2, False
    rolling = nxt(1, "a") and nxt(2, "rolling", "rollout") and nxt(3, "restart")
    if low == "do" and rolling and nxt(4, "of", "on", "for"):
        return MutationAction.ROLLOUT_RESTART, _DEPLOYMENTS, i + 5, False
    if low == "scale":
        return MutationAction.SCALE, _DEPLOYMENTS, i + 2 if nxt(1, "down", "up") else i + 1, False
    if low == "set":
        j = i + 2 if nxt(1, "the") else i + 1
        if tg.filler(tokens[j].text if j < len(tokens) else "", "replicas") and tg.is_low(
            tokens, j + 1, "of", "for"
        ):
            return MutationAction.SCALE, _DEPLOYMENTS, j + 2, False
        return None
    if low in ("rollback", "roll-back"):
        return MutationAction.ROLLBACK, _DEPLOYMENTS, i + 1, False
    if low == "roll":
        if nxt(1, "back"):
            return MutationAction.ROLLBACK, _DEPLOYMENTS, i + 2, False
        return MutationAction.ROLLBACK, _DEPLOYMENTS, i + 1, True
    if low == "undo":
        j = i + 2 if nxt(1, "the") else i + 1
        j = j + 1 if tg.is_low(tokens, j, "last", "latest", "previous") else j
        if tg.is_low(tokens, j, "rollout", "deploy", "deployment", "release") and tg.is_low(
            tokens, j + 1, "of", "for", "on"
        ):
            return MutationAction.ROLLBACK, _DEPLOYMENTS, j + 2, False
        return None
    if low == "revert":
        return MutationAction.ROLLBACK, _DEPLOYMENTS, i + 1, False
    if low in ("delete", "kill", "remove"):
        return MutationAction.DELETE_POD, _pods, i + 1, False
    if low in ("silence", "mute"):
        return MutationAction.SILENCE_CREATE, _ALERTS, i + 1, False
    return None


def phrase(
    tokens: Sequence[Token], i: int, tail_ok: Callable[[Sequence[Token], int], bool]
) -> Phrase | None:
    """The action verb phrase at `i` whose end satisfies `tail_ok`, or None."""
    head = _head(tokens, i)
    if head is None:
        return None
    action, parse, j, back = head
    revert = tokens[i].low in ("revert", "reverting")
    for names, after in _listed(parse, tokens, j):
        k = after
        if back:
            if not tg.is_low(tokens, k, "back"):
                continue
            k += 1
        mods, end = _modifiers(tokens, k, action)
        if action is MutationAction.SCALE and "replicas" not in mods.args:
            continue
        if revert and "revision" not in mods.args:
            continue
        if not tail_ok(tokens, end):
            continue
        kind = COMMAND_KINDS[action]
        commands = tuple(
            Command(
                action=action,
                target=CommandTarget.model_validate({"kind": kind, "name": n}),
                namespace=mods.namespace,
                args=dict(mods.args),
            )
            for n in names
        )
        return Phrase(commands, end)
    return None


# -- tails ------------------------------------------------------------------------------------


def skip_tail(tokens: Sequence[Token], i: int) -> int:
    """Past the words after a command that change nothing ("now", "please", "cc @alice")."""
    while i < len(tokens):
        t = tokens[i]
        if t.kind is Kind.BOT or (t.kind is Kind.WORD and t.low in TRAILS):
            i += 1
        elif (t.is_word("in") and tg.is_low(tokens, i + 1, "advance")) or (
            t.is_word("as") and tg.is_low(tokens, i + 1, "well")
        ):
            i += 2  # "thanks in advance", "as well"
        elif t.is_word("cc", "fyi"):
            i += 1
            while i < len(tokens) and tokens[i].kind in (Kind.PERSON, Kind.CHANNEL):
                i += 1
        else:
            return i
    return i


def ends(tokens: Sequence[Token], i: int) -> bool:
    """The clause ends here, or goes on with something a command may be followed by."""
    i = skip_tail(tokens, i)
    return (
        i >= len(tokens)
        or tokens[i].low in COORDINATORS
        or tokens[i].low in ("while", "meanwhile")
        or conditional_at(tokens, i)
    )


def conditional_at(tokens: Sequence[Token], i: int) -> bool:
    return i < len(tokens) and (
        tokens[i].low in CONDITIONS or bool(phrase_at(tokens, i, CONDITION_PHRASES))
    )
