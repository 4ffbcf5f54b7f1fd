"""Intake turns a message into a Goal: kind, scope and deliverables, the words kept verbatim."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from triage.agent.intake import parse
from triage.core.models import Deliverable, RequestKind

NOW = datetime(2026, 11, 29, 15, 0, tzinfo=UTC).timestamp()


@pytest.mark.parametrize("words", ["thanks!", "thank you", "hi", "👍", "ok cool"])
def test_casual_messages_are_not_investigated(words: str) -> None:
    goal = parse(words, now=NOW)
    assert goal.kind is RequestKind.CASUAL
    assert goal.deliverables == ()
    assert goal.scope.workloads == ()


def test_a_request_to_write_the_rca_keeps_something() -> None:
    words = "@triage checkout-api in prod returns 503 since 14:05, find out why and write the RCA"
    goal = parse(words, now=NOW)
    assert goal.words == words
    assert goal.kind is RequestKind.KEEP_SEND_CHANGE
    assert Deliverable.RCA in goal.deliverables
    assert goal.scope.namespace == "prod"
    assert [w.name for w in goal.scope.workloads] == ["checkout-api"]
    # since 14:05 today, with half an hour before it for causes
    assert goal.scope.since == datetime(2026, 11, 29, 13, 35, tzinfo=UTC).timestamp()
    assert goal.scope.until == NOW


def test_a_question_is_find_tell() -> None:
    goal = parse("why is deployment payments crash-looping in namespace shop?", now=NOW)
    assert goal.kind is RequestKind.FIND_TELL
    assert goal.deliverables == (Deliverable.ANSWER,)
    assert goal.scope.namespace == "shop"
    assert goal.scope.workloads[0].kind == "Deployment"
    assert goal.scope.workloads[0].name == "payments"


def test_commands_are_typed() -> None:
    goal = parse("please restart checkout-api in prod and silence HighErrorRate for 1h", now=NOW)
    assert goal.kind is RequestKind.KEEP_SEND_CHANGE
    assert [c.sentence() for c in goal.commands] == [
        "restart deployment checkout-api in namespace prod",
        "silence HighErrorRate for 1h",
    ]
    assert goal.scope.namespace == "prod"


def test_a_polite_question_is_offered_not_commanded() -> None:
    goal = parse("can you restart checkout-api in namespace shop?", now=NOW)
    assert goal.kind is RequestKind.FIND_TELL
    assert goal.commands == ()
    assert [c.sentence() for c in goal.offers] == [
        "restart deployment checkout-api in namespace shop"
    ]


def test_explicit_namespace_wins_and_last_window_is_read() -> None:
    goal = parse("errors in the last 30 minutes in staging", now=NOW, namespace="prod")
    assert goal.scope.namespace == "prod"
    assert goal.scope.since == NOW - 1800


def test_an_explicit_namespace_is_final() -> None:
    """-n names the namespace; neither the words nor the context's default replace it, even
    when it does not exist (that is reported, not worked around)."""
    goal = parse(
        "checkout in staging is down", now=NOW, namespace="prod", default_namespace="default"
    )
    assert goal.scope.namespace == "prod"
    assert goal.scope.namespace_candidates == ()


def test_service_dns_names_give_namespace_and_service() -> None:
    goal = parse("calls to checkout.shop.svc fail with connection refused", now=NOW)
    assert goal.scope.namespace == "shop"
    assert [(w.kind, w.name) for w in goal.scope.workloads] == [("Service", "checkout")]


def test_common_hyphenated_words_are_not_workloads() -> None:
    goal = parse("the pods are crash-looping in namespace shop, find the root-cause", now=NOW)
    assert goal.scope.workloads == ()


def test_deployed_to_names_the_namespace() -> None:
    goal = parse("we just deployed payments to staging and it never became available", now=NOW)
    assert goal.scope.namespace == "staging"
    assert parse("I want to check the pods", now=NOW).scope.namespace is None


def test_kind_words_inside_names_are_not_kinds() -> None:
    goal = parse("the error rate on cart-service in shop jumped", now=NOW)
    assert [(w.kind, w.name) for w in goal.scope.workloads] == [(None, "cart-service")]


def test_a_pasted_secret_is_masked_before_it_is_kept() -> None:
    goal = parse(
        "checkout-api in shop fails to log in with DB_PASSWORD=hunter2-very-secret why?", now=NOW
    )
    assert "hunter2-very-secret" not in goal.model_dump_json()
    assert [w.name for w in goal.scope.workloads] == ["checkout-api"]


@pytest.mark.parametrize(
    ("words", "explicit"),
    [
        ("did the Service lose its endpoints?", False),
        ("why is deployment payments slow", False),
        ("deployment payments-v2 is stuck", True),
        ("is deploy/payments ok", True),
        ("is deployment `payments` ok", True),
    ],
)
def test_a_plain_word_after_a_kind_is_a_name_only_if_the_cluster_has_it(
    words: str, explicit: bool
) -> None:
    """Only a word written as a name is reported missing when nothing has it; a plain word
    after "service" may be prose, and the cluster decides (it is resolved if it exists)."""
    goal = parse(words, now=NOW)
    assert [w.explicit for w in goal.scope.workloads] == [explicit]
