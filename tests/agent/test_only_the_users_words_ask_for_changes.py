"""Which changes a message asks for, read from the user's words only (no cluster needed)."""

from __future__ import annotations

import time

from triage.agent import intake
from triage.agent.changes import requests_from_goal


def _requests(words: str, namespace: str | None = "shop"):
    goal = intake.parse(words, now=time.time(), namespace=namespace)
    return requests_from_goal(goal, "cli:run-1")


def test_restart_and_scale_are_read_with_their_target_and_count():
    requests, problems = _requests("restart deployment checkout-api and scale it to 5")
    assert problems == []
    assert [(r.action, str(r.target), r.args) for r in requests] == [
        ("rollout_restart", "Deployment/shop/checkout-api", {}),
        ("scale", "Deployment/shop/checkout-api", {"replicas": 5}),
    ]


def test_a_silence_names_its_alert_and_is_scoped_to_the_namespace():
    requests, problems = _requests("silence HighErrorRate for 2h please")
    assert problems == []
    (req,) = requests
    assert req.action == "silence_create"
    assert req.args["duration_s"] == 7200
    assert {"name": "namespace", "value": "shop"} in req.args["matchers"]


def test_what_cannot_be_understood_is_said_not_guessed():
    requests, problems = _requests("scale checkout-api up a bit")
    assert requests == []
    assert problems == ["scale: say how many replicas (e.g. 'scale it to 5')"]
    requests, problems = _requests("restart checkout-api", namespace=None)
    assert requests == []
    assert "namespace" in problems[0]


def test_a_question_asks_for_nothing():
    assert _requests("why is checkout-api returning 503?") == ([], [])


def test_the_same_words_in_the_same_run_give_the_same_operation_ids():
    first, _ = _requests("roll back deployment checkout-api to revision 3")
    second, _ = _requests("roll back deployment checkout-api to revision 3")
    assert first == second
    assert first[0].args == {"revision": 3}
