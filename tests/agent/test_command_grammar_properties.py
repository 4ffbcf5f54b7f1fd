"""Properties of the command grammar over a large input space (hypothesis):

- every typed command, written as its plain sentence, reads back as exactly that command (the
  "Plan: …" button relies on it);
- the same sentence inside a question, a negation, a polite request, a condition, a quote, a
  code span, someone else's words, after a label or addressed to another person commands
  nothing;
- a foreign word anywhere, or a typo in the verb, commands nothing;
- text without an action verb commands nothing, whatever else it holds.
"""

from __future__ import annotations

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from policies.model import MutationAction
from triage.agent.intent import parse
from triage.agent.intent.lexicon import FOREIGN, NOT_NAMES, OTHER_VERBS
from triage.core.models import Command, CommandTarget

BOT = "U0BOT123"
_LOWER = string.ascii_lowercase + string.digits


def _dns(max_parts: int = 3) -> st.SearchStrategy[str]:
    part = st.text(_LOWER, min_size=1, max_size=8)
    return (
        st.lists(part, min_size=1, max_size=max_parts)
        .map("-".join)
        # a name that is also a common word of another language reads as not English (offered)
        .filter(lambda n: not ({n} & (NOT_NAMES | OTHER_VERBS | FOREIGN)) and not n.isdigit())
        .filter(lambda n: n[0].isalpha() and len(n) <= 40)
    )


_ALERT = st.builds(
    lambda a, b: a.capitalize() + b.capitalize(),
    st.text(string.ascii_lowercase, min_size=2, max_size=8),
    st.text(string.ascii_lowercase, min_size=2, max_size=8),
)


@st.composite
def commands(draw: st.DrawFn) -> Command:
    action = draw(st.sampled_from(sorted(MutationAction, key=str)))
    if action is MutationAction.SILENCE_EXPIRE:
        action = MutationAction.SILENCE_CREATE
    ns = draw(st.none() | _dns(2))
    args: dict[str, int] = {}
    if action is MutationAction.SCALE:
        args["replicas"] = draw(st.integers(0, 5000))
    elif action is MutationAction.ROLLBACK and draw(st.booleans()):
        args["revision"] = draw(st.integers(1, 99999))
    elif action is MutationAction.SILENCE_CREATE and draw(st.booleans()):
        args["duration_s"] = draw(st.integers(1, 14 * 86400))
    if action is MutationAction.SILENCE_CREATE:
        target = CommandTarget(kind="Alert", name=draw(_ALERT))
    elif action is MutationAction.DELETE_POD:
        target = CommandTarget(kind="Pod", name=draw(_dns(4)))
    else:
        target = CommandTarget(kind="Deployment", name=draw(_dns()))
    return Command(action=action, target=target, namespace=ns, args=args)


def _commands(text: str) -> tuple[Command, ...]:
    return parse(text, bot_user_id=BOT).commands


@settings(max_examples=300, deadline=None)
@given(commands())
def test_a_command_written_plainly_reads_back_as_itself(command: Command) -> None:
    assert _commands(command.sentence()) == (command,)
    assert _commands(f"<@{BOT}> please {command.sentence()}, thanks") == (command,)


WRAPS = [
    "{}?",
    "can you {}?",
    "could you {} please",
    "would you mind if we {}",
    "don't {}",
    "do not {}",
    "never {}",
    "no need to {}",
    "if it keeps failing, {}",
    "{} if it fails again",
    "{} unless it recovers",
    "once the deploy is done, {}",
    "maybe we should {}",
    "we could {}",
    "let's {}",
    '"{}"',
    "`{}`",
    "&gt; {}",
    "```{}```",
    "~{}~",
    "Alice said: {}",
    "the runbook says to {}",
    "Action: {}",
    "<@U02ALICE> {}",
    "{} — or not, nvm",
    "{}. nvm",
    "{} bitte",
    "{} しないで",
]


@settings(max_examples=300, deadline=None)
@given(commands(), st.sampled_from(WRAPS))
def test_the_same_command_not_in_the_imperative_commands_nothing(command: Command, wrap: str):
    text = wrap.format(command.sentence())
    assert _commands(f"<@{BOT}> {text}") == (), text


TYPOS = {
    "restart": "restrat",
    "scale": "scael",
    "roll back": "rol back",
    "delete": "delte",
    "silence": "silense",
}


@settings(max_examples=200, deadline=None)
@given(commands())
def test_a_typo_in_the_verb_commands_nothing(command: Command) -> None:
    sentence = command.sentence()
    for verb, typo in TYPOS.items():
        if sentence.startswith(verb):
            assert _commands(typo + sentence[len(verb) :]) == ()


_WORDS = st.sampled_from(
    [
        "why",
        "is",
        "the",
        "checkout-api",
        "pod",
        "slow",
        "since",
        "14:05",
        "in",
        "namespace",
        "shop",
        "replicas",
        "revision",
        "deployment",
        "alert",
        "HighErrorRate",
        "please",
        "now",
        "tell",
        "me",
        "what",
        "happened",
        "and",
        "check",
        "the",
        "logs",
        "restarts",
        "rollbacks",
        "scaled",
        "restarted",
        "silenced",
        "killed",
        "deleted",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_WORDS, min_size=1, max_size=25).map(" ".join))
def test_text_without_an_action_verb_commands_nothing(text: str) -> None:
    assert _commands(text) == ()
