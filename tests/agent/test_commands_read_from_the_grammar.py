"""Phrasings beyond the corpus, written while attacking the grammar: each a command exactly, or
none (and then perhaps offered, never run)."""

from __future__ import annotations

import pytest

from triage.agent.intent import parse

BOT = "U0BOT123"

COMMANDS = [
    (
        "restart checkout-api and cart in namespace shop",
        [
            "restart deployment checkout-api in namespace shop",
            "restart deployment cart in namespace shop",
        ],
    ),
    (
        "please restart deployment checkout-api in the shop namespace",
        [
            "restart deployment checkout-api in namespace shop",
        ],
    ),
    (
        "restart deployment/checkout-api --namespace=shop",
        [
            "restart deployment checkout-api in namespace shop",
        ],
    ),
    ("scale deploy/web --replicas=3 -n shop", ["scale deployment web to 3 in namespace shop"]),
    ("set the replicas of checkout-api to 4", ["scale deployment checkout-api to 4"]),
    ("silence HighErrorRate for half an hour", ["silence HighErrorRate for 30m"]),
    ("silence HighErrorRate for 90 minutes", ["silence HighErrorRate for 1h30m"]),
    ("roll back checkout-api to the previous revision", ["roll back deployment checkout-api"]),
    ("<@U0BOT123>: restart checkout-api", ["restart deployment checkout-api"]),
    ("urgent: restart checkout-api", ["restart deployment checkout-api"]),
    ("restart checkout-api thanks in advance", ["restart deployment checkout-api"]),
    ("restart checkout-api cc <@U02ALICE>", ["restart deployment checkout-api"]),
    ("checkout-api is down, restart checkout-api", ["restart deployment checkout-api"]),
    ("don't restart checkout-api but scale cart to 5", ["scale deployment cart to 5"]),
    (
        "Bob wants you to restart cart, but scale cart to 3 instead",
        [
            "scale deployment cart to 3",
        ],
    ),
    ("scale checkout-api to 0", ["scale deployment checkout-api to 0"]),
]

NOT_COMMANDS = [
    # a condition after "but"/"only if" restricts the command before it
    ("restart checkout-api, but only if it is still failing", True),
    ("restart checkout-api as long as payments is fine", True),
    ("restart cart and only if it fails scale web to 3", True),
    # alternatives: neither is commanded
    ("restart checkout-api or scale cart to 3", True),
    ("restart checkout-api or roll it back", True),
    # taken back, deferred, or not addressed to the bot
    ("restart checkout-api. actually no", False),
    ("delete pod web-1 — or not, nvm", False),
    ("don't restart checkout-api. restart checkout-api", False),
    ("restart checkout-api tomorrow", True),  # deferred: offered
    ("restart checkout-api in 10 minutes", False),
    ("<@U02ALICE> <@U0BOT123> restart checkout-api", False),
    ("why is checkout-api down in prod? restart it", False),
    ("payments is down and restart payments", False),
    ("RESTART DEPLOYMENT CHECKOUT-API", False),  # a name as written: not a Kubernetes name
    ("Plan B: roll back pricing", False),
    ("note: restart checkout-api", False),
    ("I need you to restart checkout-api", True),
    ("did you restart checkout-api?", False),
    ("restart deployment checkout-api -n shop, bitte", True),
    # tags, jokes, examples and deferrals
    ("restart checkout-api, right", True),
    ("restart checkout-api (just kidding)", False),
    ("restart checkout-api... actually don't", False),
    ("restart checkout-api and never mind", False),
    ("Hypothetically, restart checkout-api", True),
    ("For example, restart checkout-api", True),
    ("e.g. restart checkout-api", True),
    ("restart checkout-api later", True),
]


@pytest.mark.parametrize(("text", "expected"), COMMANDS)
def test_commands(text, expected):
    got = parse(text, bot_user_id=BOT)
    assert [c.sentence() for c in got.commands] == expected


@pytest.mark.parametrize(("text", "offered"), NOT_COMMANDS)
def test_not_commands(text, offered):
    got = parse(text, bot_user_id=BOT)
    assert got.commands == ()
    assert bool(got.offers) is offered, [c.sentence() for c in got.offers]
