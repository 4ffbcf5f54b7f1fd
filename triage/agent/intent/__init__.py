"""Which changes a message commands, read from the user's own words by a small grammar.

`parse(text)` returns the commands (explicit imperatives with an explicit target, in the order
of the text) and the offers (changes mentioned without being commanded). The pipeline:
`markup.read` keeps only the user's own words (no quotes, code, pastes; mentions as tokens;
whether it is all English), `grammar.understand` splits sentences and clauses and recognises
imperative verb phrases, `targets` holds each action's target and argument grammar and
`lexicon` the closed word lists. The README's "What counts as a command" is this module's
contract; tests/corpus/commands is its measurement.
"""

from __future__ import annotations

from dataclasses import dataclass

from triage.agent.intent.grammar import understand
from triage.agent.intent.markup import read
from triage.core.models import Command

__all__ = ["Intent", "parse"]


@dataclass(frozen=True)
class Intent:
    commands: tuple[Command, ...]
    offers: tuple[Command, ...]


def parse(text: str, *, bot_user_id: str | None = None) -> Intent:
    """The commands and offers in `text` (a Slack message's text, or a CLI question).

    `bot_user_id`: the bot's own Slack user id, whose mention is a vocative; any other mention
    is another addressee (a command addressed to someone else is not one to the bot).
    """
    understood = understand(read(text, bot_user_id=bot_user_id))
    return Intent(tuple(understood.commands), tuple(understood.offers))
