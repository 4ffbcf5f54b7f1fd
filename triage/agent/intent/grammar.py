"""Sentences → clauses → imperative verb phrases: when the user's words command a change.

    message   := sentence*                  split at . ! ? ; … and line ends
    sentence  := clause ((, | — | : | =) clause)*
    clause    := lead* head ...             leads: please, ok, yes, go ahead and, the bot's mention
    command   := verb target-list modifier* tail   (targets.py has the targets and modifiers)
    tail      := [now | please | thanks | asap | instead | cc @x]* [while …]
                 [(and | then | but | also | plus) clause]

A clause commands only when its head is a verb in the imperative: one of the five actions'
verbs (`restart`, `scale`, `roll back`, `delete|kill|remove pod`, `silence|mute`) with its
target, or another imperative verb ("find out why and roll back X": the coordinated "roll
back X" is a command). Everything else is not a command, by construction:

- a sentence that ends in "?" is a question, and so is a clause led by a question word, a
  modal ("can you", "could you", "would you mind", "I'd like you to", "let's", "we should");
- a clause led by a negation ("don't", "never", "no need to", "nobody", "hold off");
- a clause led by a condition ("if", "unless", "once", "assuming", "worst case", "Plan B") and
  every clause after it in the sentence; a command followed by "if …"/"unless …"/"when …";
- a clause after a label (`Action: …`, `Bob told me to tell you: …`) — someone else's words;
- a clause led by a subject ("we scaled…", "Alice wants you to…"), another person's mention,
  a past tense or an -ing form: its head is not an imperative verb;
- alternatives ("restart X or scale Y"): neither is commanded;
- a command taken back later ("restart X. nvm"), or one the message also negates
  ("don't restart X").

What was asked politely, as a question or under a condition, and names its target fully, is
returned as an *offer*: a person may click it into a plan, never run it by saying so. Negated,
past, reported or quoted phrasings are never offered.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from policies.model import MutationAction
from triage.agent.intent import targets as tg
from triage.agent.intent.lexicon import (
    BULK,
    CHATTER,
    CONDITION_PHRASES,
    CONDITIONS,
    GERUNDS,
    LEADS,
    NEGATION_PHRASES,
    NEGATIONS,
    OTHER_VERBS,
    POLITE,
    QUESTIONS,
    RESTRICTING,
    RETRACTIONS,
    TRAILS,
    VERBS,
)
from triage.agent.intent.markup import Kind, Reading, Token
from triage.core.models import COMMAND_KINDS, Command, CommandTarget

_END = (".", "!", "?", ";", "…", "...")
_SPLIT = (",", "—", "–", "-", "(", ")", "[", "]")  # noqa: RUF001
_LABEL = (":", "=")
_COORDINATORS = frozenset({"and", "then", "but", "or", "plus", "also", "&", "so"})


class Mood(StrEnum):
    IMPERATIVE = "imperative"
    CHATTER = "chatter"  # "ok", "thanks", "hey": nothing, and harmless
    QUESTION = "question"
    POLITE = "polite"  # a modal or an indirect request
    CONDITIONAL = "conditional"
    NEGATED = "negated"
    OTHER = "other"  # a statement, another addressee, someone else's words


_OFFERABLE = {Mood.QUESTION, Mood.POLITE, Mood.CONDITIONAL, Mood.IMPERATIVE}
#: Questions about what already happened ("did you restart X?") are never offered.
_PAST = frozenset({"did", "didn't", "was", "were", "had", "has", "have", "hasn't", "haven't"})


@dataclass
class Clause:
    tokens: list[Token]
    after_label: bool = False  # a ":" or "=" came before it in the sentence


@dataclass
class Sentence:
    clauses: list[Clause]
    question: bool = False

    def words(self) -> tuple[str, ...]:
        return tuple(t.low for c in self.clauses for t in c.tokens if t.kind is Kind.WORD)


@dataclass
class Understood:
    """What one message asks for: commands to run, offers to show, and what it negates."""

    commands: list[Command] = field(default_factory=list)
    offers: list[Command] = field(default_factory=list)
    negated: set[tuple[str, str]] = field(default_factory=set)


# -- splitting ------------------------------------------------------------------------------


def sentences(reading: Reading) -> list[Sentence]:
    out: list[Sentence] = []
    for line in reading.lines:
        current: list[Token] = []
        for token in line:
            if token.kind is Kind.QUOTED and not current and len(line) == 1:
                break  # a quoted or pasted line: nothing of the user's own
            current.append(token)
            if token.kind is Kind.PUNCT and token.text in _END:
                out.append(_sentence(current))
                current = []
        if current:
            out.append(_sentence(current))
    return [s for s in out if s.clauses]


def _sentence(tokens: list[Token]) -> Sentence:
    question = any(t.is_punct("?") for t in tokens)
    clauses: list[Clause] = []
    current: list[Token] = []
    labelled = False
    for i, t in enumerate(tokens):
        if t.kind is Kind.PUNCT and t.text in _END:
            continue
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        glue = t.is_punct(",") and nxt is not None and nxt.low in _COORDINATORS
        if t.kind is Kind.PUNCT and t.text == "&":
            current.append(Token(Kind.WORD, "and"))
        elif t.kind is Kind.PUNCT and (t.text in _SPLIT or t.text in _LABEL) and not glue:
            # "Action: …", "Bob told me to tell you: …" label someone else's words; the bot's
            # mention or an "urgent:" does not.
            label = t.text in _LABEL and not _vocative(current) and bool(current or clauses)
            if current:
                clauses.append(Clause(current, labelled))
            current = []
            labelled = labelled or label
        elif not (t.kind is Kind.PUNCT and glue):
            current.append(t)
    if current:
        clauses.append(Clause(current, labelled))
    return Sentence(clauses, question)


def _vocative(tokens: Sequence[Token]) -> bool:
    """Only the bot's mention and leads ("<@bot>:", "ok:", "urgent:")."""
    return bool(tokens) and all(
        t.kind is Kind.BOT or (t.kind is Kind.WORD and t.low in LEADS) for t in tokens
    )


# -- moods ------------------------------------------------------------------------------------


def _phrase_at(tokens: Sequence[Token], i: int, phrases: Sequence[tuple[str, ...]]) -> int:
    """The length of the first of `phrases` that starts at `i` (0: none does)."""
    for phrase in phrases:
        if all(tg.is_low(tokens, i + k, w) for k, w in enumerate(phrase)):
            return len(phrase)
    return 0


def _skip_leads(tokens: Sequence[Token], i: int = 0) -> int:
    while i < len(tokens) and (
        tokens[i].kind is Kind.BOT or (tokens[i].kind is Kind.WORD and tokens[i].low in LEADS)
    ):
        i += 1
    return i


def mood(tokens: Sequence[Token], i: int) -> Mood:
    """The mood of the clause whose first word after the leads is at `i`."""
    if i >= len(tokens):
        return Mood.CHATTER
    t = tokens[i]
    if t.kind is not Kind.WORD:
        return Mood.OTHER  # another person's mention, a quote, a link
    low = t.low
    if _phrase_at(tokens, i, CONDITION_PHRASES) or low in CONDITIONS:
        return Mood.CONDITIONAL
    if _phrase_at(tokens, i, NEGATION_PHRASES) or low in NEGATIONS:
        return Mood.NEGATED
    if low in QUESTIONS:
        return Mood.QUESTION
    if low in POLITE or low == "i":
        return Mood.POLITE
    if (low in VERBS or low in OTHER_VERBS) and not t.code:
        return Mood.IMPERATIVE
    if all(x.kind is Kind.WORD and x.low in CHATTER for x in tokens[i:]):
        return Mood.CHATTER
    return Mood.OTHER


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


def _skip_tail(tokens: Sequence[Token], i: int) -> int:
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


def _ends(tokens: Sequence[Token], i: int) -> bool:
    """The clause ends here, or goes on with something a command may be followed by."""
    i = _skip_tail(tokens, i)
    return (
        i >= len(tokens)
        or tokens[i].low in _COORDINATORS
        or tokens[i].low in ("while", "meanwhile")
        or _conditional_at(tokens, i)
    )


def _conditional_at(tokens: Sequence[Token], i: int) -> bool:
    return i < len(tokens) and (
        tokens[i].low in CONDITIONS or bool(_phrase_at(tokens, i, CONDITION_PHRASES))
    )


# -- clauses and sentences -------------------------------------------------------------------


@dataclass
class _Clause:
    commands: list[Command] = field(default_factory=list)
    offers: list[Command] = field(default_factory=list)
    taints: bool = False  # what follows in the sentence is conditional


def _imperative(tokens: Sequence[Token], start: int, out: Understood) -> _Clause:
    """Commands of an imperative clause: its head and every coordinated action after it."""
    result = _Clause()
    i = start
    alternatives = False
    joined_by = ""  # the coordinator before this sub-clause
    while i < len(tokens):
        i = _skip_leads(tokens, i)
        if i >= len(tokens):
            break
        sub = mood(tokens, i)
        if sub is Mood.CONDITIONAL:
            if joined_by == "but" or tokens[i].low in RESTRICTING:
                # "restart X, but only if Y": the condition restricts what came before
                result.offers = result.commands + result.offers
                result.commands = []
            result.taints = True
            result.offers += _scan(tokens, i, out)
            break
        if sub is Mood.NEGATED:
            _negated(tokens, i, out)
            i = _next_coordinated(tokens, i + 1)
            continue
        found = phrase(tokens, i, _ends) if tokens[i].low in VERBS else None
        if found is None:
            if tokens[i].low in VERBS or sub is not Mood.IMPERATIVE:
                break  # an action verb without its target, or no imperative: stop here
            i = _next_coordinated(tokens, i + 1)
            continue
        j = _skip_tail(tokens, found.end)
        if _conditional_at(tokens, j):
            result.offers += found.commands  # "restart X if it OOMs again"
            result.taints = True
            break
        result.commands += found.commands
        if j < len(tokens) and tokens[j].low == "or":
            alternatives = True
        if j >= len(tokens) or tokens[j].low in ("while", "meanwhile"):
            break
        joined_by = tokens[j].low
        i = j + 1
    if alternatives:
        result.offers = result.commands + result.offers
        result.commands = []
    return result


def _next_coordinated(tokens: Sequence[Token], i: int) -> int:
    while i < len(tokens) and tokens[i].low not in _COORDINATORS - {"so"}:
        i += 1
    return i + 1 if i < len(tokens) else i


def _contrasted(clauses: list[Clause]) -> list[Clause]:
    """A statement or a negation followed by "but" and an imperative ("Alice said to roll back
    X, but restart Y instead"; "don't restart X but scale X to 5"): the part after "but" is the
    sender's own clause, not a continuation of the other's words."""
    out: list[Clause] = []
    for clause in clauses:
        tokens = clause.tokens
        start = _skip_leads(tokens)
        split = None
        if mood(tokens, start) in (Mood.OTHER, Mood.NEGATED):
            for k in range(start + 1, len(tokens)):
                after = _skip_leads(tokens, k + 1)
                if tokens[k].is_word("but") and mood(tokens, after) is Mood.IMPERATIVE:
                    split = k
                    break
        if split is None:
            out.append(clause)
        else:
            out.append(Clause(tokens[:split], clause.after_label))
            out.append(Clause(tokens[split + 1 :], clause.after_label))
    return out


def _negated(tokens: Sequence[Token], i: int, out: Understood) -> None:
    """Remember what a negated clause names ("don't restart X"), to drop it elsewhere."""
    for j in range(i, min(i + 8, len(tokens))):
        if tokens[j].kind is Kind.WORD and (tokens[j].low in VERBS or tokens[j].low in GERUNDS):
            found = phrase(tokens, j, lambda _t, _i: True)
            if found is not None:
                out.negated.update((c.action.value, c.target.name) for c in found.commands)
                return


def _scan(tokens: Sequence[Token], i: int, out: Understood) -> list[Command]:
    """What a polite, questioning or conditional clause would do, to offer (never to run).
    A negation anywhere before the verb ("I don't want you to restart X") offers nothing."""
    found: list[Command] = []
    while i < len(tokens):
        t = tokens[i]
        if t.kind is Kind.WORD and (t.low in NEGATIONS or t.low.endswith("n't")):
            _negated(tokens, i + 1, out)
            return found
        if t.kind is Kind.WORD and (t.low in VERBS or t.low in GERUNDS):
            got = phrase(tokens, i, _ends)
            if got is not None:
                found += got.commands
                i = got.end
                continue
        i += 1
    return found


def _shared_namespace(tokens: Sequence[Token]) -> str | None:
    """A clause "all in shop" / "both in namespace shop": the namespace of the commands."""
    i = 0
    if tg.is_low(tokens, i, *BULK):
        i += 1
    got = tg.namespace(tokens, i)
    if got is None or got[1] != len(tokens):
        return None
    return got[0]


def _retracts(words: Sequence[str]) -> bool:
    """A sentence or clause that only takes back what came before ("nvm", "or not")."""
    words = tuple(words)
    return any(words == phrase for phrase in RETRACTIONS) or words in (("no",), ("no", "no"))


def understand(reading: Reading) -> Understood:
    out = Understood()
    for sentence in sentences(reading):
        if _retracts(sentence.words()):
            out.commands.clear()
            out.offers.clear()
            continue
        _one_sentence(sentence, out)
    out.commands = [c for c in out.commands if (c.action.value, c.target.name) not in out.negated]
    out.offers = [c for c in out.offers if (c.action.value, c.target.name) not in out.negated]
    if reading.foreign:
        out.offers = out.commands + out.offers
        out.commands = []
    out.commands = _unique(out.commands)
    out.offers = [c for c in _unique(out.offers) if c not in out.commands]
    return out


def _one_sentence(sentence: Sentence, out: Understood) -> None:
    commands: list[Command] = []
    offers: list[Command] = []
    tainted = False
    for clause in _contrasted(sentence.clauses):
        tokens = clause.tokens
        words = [t.low for t in tokens if t.kind is Kind.WORD]
        if commands and _retracts(words):
            out.commands.clear()
            out.offers.clear()
            commands, offers = [], []
            continue
        shared = _shared_namespace(tokens)
        if shared is not None:
            commands = [
                c if c.namespace else c.model_copy(update={"namespace": shared}) for c in commands
            ]
            offers = [
                c if c.namespace else c.model_copy(update={"namespace": shared}) for c in offers
            ]
            continue
        start = _skip_leads(tokens)
        m = mood(tokens, start)
        if clause.after_label or m in (Mood.OTHER, Mood.CHATTER):
            continue
        if m is Mood.NEGATED:
            _negated(tokens, start, out)
            continue
        if m is Mood.CONDITIONAL:
            tainted = True
        if m is not Mood.IMPERATIVE or tainted or sentence.question:
            if m in _OFFERABLE and tokens[start].low not in _PAST:
                offers += _scan(tokens, start, out)
            continue
        found = _imperative(tokens, start, out)
        commands += found.commands
        offers += found.offers
        tainted = tainted or found.taints
    out.commands += commands
    out.offers += offers


def _unique(commands: list[Command]) -> list[Command]:
    seen: list[Command] = []
    for c in commands:
        if c not in seen:
            seen.append(c)
    return seen
