"""Which changes a message commands, read from the user's words only (no cluster needed): typed
commands become ledger requests in the right namespace, and nothing else does."""

from __future__ import annotations

import time

from triage.agent import intake
from triage.agent.changes import requests_from_goal


def _requests(words: str, namespace: str | None = "shop"):
    goal = intake.parse(words, now=time.time(), namespace=namespace)
    return requests_from_goal(goal, "cli:run-1", "kube:alice", "cli")


def test_restart_and_scale_are_read_with_their_target_and_count():
    requests, problems = _requests("restart deployment checkout-api and scale cart to 5")
    assert problems == []
    assert [(r.action, str(r.target), r.args) for r in requests] == [
        ("rollout_restart", "Deployment/shop/checkout-api", {}),
        ("scale", "Deployment/shop/cart", {"replicas": 5}),
    ]
    assert {(r.requested_by, r.requested_via) for r in requests} == {("kube:alice", "cli")}


def test_a_silence_names_its_alert_and_is_scoped_to_the_namespace():
    requests, problems = _requests("silence HighErrorRate for 2h please")
    assert problems == []
    (req,) = requests
    assert req.action == "silence_create"
    assert req.args["duration_s"] == 7200
    assert {"name": "namespace", "value": "shop"} in req.args["matchers"]
    assert {"name": "alertname", "value": "HighErrorRate"} in req.args["matchers"]


def test_a_command_s_own_namespace_wins():
    requests, _ = _requests("restart deployment checkout-api in namespace payments")
    assert [str(r.target) for r in requests] == ["Deployment/payments/checkout-api"]


def test_what_cannot_be_understood_is_no_command():
    assert _requests("scale checkout-api up a bit") == ([], [])
    assert _requests("scale it to 5") == ([], [])
    requests, problems = _requests("restart checkout-api", namespace=None)
    assert requests == []
    assert "namespace" in problems[0]


def test_questions_negations_and_hypotheticals_ask_for_nothing():
    for words in (
        "why is checkout-api returning 503?",
        "why did checkout-api restart at 14:05 in namespace probe-shop?",
        "don't restart checkout-api, just tell me why it is slow",
        "what would happen if we restart checkout-api?",
        "do NOT scale checkout-api to 10, only investigate",
        "checkout-api pods restart every few minutes, why?",
        "did the HPA scale checkout-api to 2 replicas overnight?",
        "should we roll back checkout-api?",
    ):
        assert _requests(words) == ([], []), words


def test_nobody_known_nothing_made():
    goal = intake.parse("restart deployment checkout-api", now=time.time(), namespace="shop")
    requests, problems = requests_from_goal(goal, "cli:run-1", "", "cli")
    assert requests == []
    assert "known person" in problems[0]


def test_the_same_words_in_the_same_run_give_the_same_operation_ids():
    first, _ = _requests("roll back deployment checkout-api to revision 3")
    second, _ = _requests("roll back deployment checkout-api to revision 3")
    assert first == second
    assert first[0].args == {"revision": 3}
