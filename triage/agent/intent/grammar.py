"""Sentences → clauses → imperative verb phrases: when the user's words command a change.

    message   := sentence*                  split at . ! ? ; … and line ends
    sentence  := clause ((, | — | : | =) clause)*
    clause    := lead* head ...             leads: please, ok, yes, go ahead and, the bot's mention
    command   := verb target-list modifier* tail   (phrases.py; targets and modifiers in
                                                   targets.py)
    tail      := … [(and | then | but | also | plus) clause]

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
- a command followed by a condition that restricts it ("…, but only if Y", "as long as");
- alternatives ("restart X or scale Y"): neither is commanded;
- a command taken back later ("restart X. nvm"), or one the message also negates
  ("don't restart X").

What was asked politely, as a question or under a condition, and names its target fully, is
returned as an *offer*: a person may click it into a plan, never run it by saying so. Negated,
past, reported or quoted phrasings are never offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

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
    TAGS,
    VERBS,
)
from triage.agent.intent.markup import Kind, Reading, Token
from triage.agent.intent.phrases import (
    COORDINATORS,
    conditional_at,
    ends,
    phrase,
    phrase_at,
    skip_tail,
)
from triage.core.models import Command

_END = (".", "!", "?", ";", "…", "...")
_SPLIT = (",", "—", "–", "-", "(", ")", "[", "]")  # noqa: RUF001
_LABEL = (":", "=")


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
        glue = t.is_punct(",") and nxt is not None and nxt.low in COORDINATORS
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
    if phrase_at(tokens, i, CONDITION_PHRASES) or low in CONDITIONS:
        return Mood.CONDITIONAL
    if phrase_at(tokens, i, NEGATION_PHRASES) or low in NEGATIONS:
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
            if _retracts([t.low for t in tokens[i:] if t.kind is Kind.WORD]):
                result.commands = []  # "restart X and never mind"
                break
            _negated(tokens, i, out)
            i = _next_coordinated(tokens, i + 1)
            continue
        found = phrase(tokens, i, ends) if tokens[i].low in VERBS else None
        if found is None:
            if tokens[i].low in VERBS or sub is not Mood.IMPERATIVE:
                break  # an action verb without its target, or no imperative: stop here
            i = _next_coordinated(tokens, i + 1)
            continue
        j = skip_tail(tokens, found.end)
        if conditional_at(tokens, j):
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
    while i < len(tokens) and tokens[i].low not in COORDINATORS - {"so"}:
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
            got = phrase(tokens, i, ends)
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
    """A sentence or clause that only takes back what came before ("nvm", "or not",
    "actually, don't")."""
    words = tuple(words)
    while words and words[0] in LEADS:
        words = words[1:]
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
        if commands and words and all(w in TAGS for w in words):
            offers, commands = commands + offers, []  # "restart X, right": a question
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
