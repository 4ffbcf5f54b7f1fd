"""Only a person's explicit command changes anything, through the real bot (signed requests,
the local Slack Web API) against the real control plane and its ledger:

- a mention written by another bot or app is dropped (or, allow-listed, only investigated) and
  never creates an Operation;
- the questions, negations and hypotheticals that used to restart or scale the Deployment
  create no Operation and leave it as it was;
- a polite question is answered and offered as a "Plan: …" button; the click (a person's)
  creates the operation in the clicker's name, and the usual approval then applies it;
- every Operation records who asked and from where.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from typing import Any

import pytest
from kubernetes import client

from policies import Policy
from tests.slack.support import (
    CHANNEL,
    USER,
    BotServer,
    mention,
    settings_for,
    sign,
    user_message,
)
from tests.support.fake_slack import TEAM_ID, FakeSlack
from tests.support.product import app_over
from tests.tools.mutate.cluster import create_deployment, policy_for
from tests.tools.mutate.rig import Rig
from tools.mutate.ledger import Phase
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from triage.slack.blocks import ACTION_APPROVE, ACTION_PLAN
from triage.slack.inbox import Kind

pytestmark = pytest.mark.cluster

ALICE = "U0ALICE"


@pytest.fixture
def bot(ledger_cluster, target_ns, slack_api: FakeSlack, tmp_path):
    rig = Rig(ledger_cluster, target_ns)
    create_deployment(ledger_cluster, rig.admin, target_ns, "web", replicas=2)
    policy = policy_for(target_ns, approval=("scale",))
    policy = policy.model_copy(update={"approvers": (f"slack:{ALICE}",)})
    registry = rig.registry(policy=policy)
    reader = ledger_cluster.api_client(ledger_cluster.reader_kubeconfig)
    settings = settings_for(slack_api, tmp_path, allowed_bots=["B0ALLOWED"])
    app = app_over(
        ReadRegistry(KubeReader(reader, timeout_s=5)),
        tmp_path,
        policy=Policy(mutations=policy),
        registry=registry,
        settings=settings,
        approvals=rig.recorder(),
    )
    with BotServer(settings, app) as server:
        yield server, rig, registry
    reader.close()
    rig.close()


def _ops(registry: Any, ns: str) -> list[Any]:
    return [o for o in registry.ledger.list() if o.target.namespace == ns]


def _web(rig: Rig) -> Any:
    return client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns)


def _from_app(event_id: str, text: str, ts: str, **fields: Any) -> bytes:
    body = json.loads(mention(event_id, text, ts=ts))
    body["event"].update(fields)
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    "fields",
    [
        {"bot_id": "B0OTHERBOT"},
        {"subtype": "bot_message", "bot_id": "B0OTHERBOT", "username": "deploy-bot"},
        {"app_id": "A0INTEGRATION"},
        {"bot_profile": {"id": "B0PROFILE", "app_id": "A0PROFILE"}},
    ],
    ids=["bot_id", "bot_message", "app_id", "bot_profile"],
)
def test_a_bot_or_app_mention_is_dropped(bot, slack_api, fields):
    server, rig, registry = bot
    text = f"restart deployment web in namespace {rig.ns}"
    body = _from_app("Ev0BOT", text, "1.000100", **fields)
    response = server.post(body, sign(body))
    time.sleep(0.5)

    assert response.status_code == 200
    assert server.bot.inbox.get("Ev0BOT") is None  # not even stored
    assert slack_api.calls_to("chat.postMessage") == []
    assert _ops(registry, rig.ns) == []


def test_an_allowed_bot_is_investigated_and_commands_nothing(bot, slack_api):
    server, rig, registry = bot
    text = f"restart deployment web in namespace {rig.ns}"
    body = _from_app("Ev0ALLOWED", text, user_message(slack_api, text), bot_id="B0ALLOWED")
    server.post(body, sign(body))
    row = server.wait_done("Ev0ALLOWED", timeout=120)

    assert row["state"] == "done"
    assert _ops(registry, rig.ns) == []
    assert "triage.dev/restart" not in (_web(rig).spec.template.metadata.annotations or {})
    posted = json.dumps([m.get("blocks") for m in slack_api.channel_messages(CHANNEL)])
    assert "Plan:" not in posted  # a bot is not offered changes either


QUESTIONS = [
    "why did web restart at 14:05 in namespace {ns}?",
    "don't restart web in namespace {ns}, just tell me why it is slow",
    "what would happen if we restart deployment web in namespace {ns}?",
    "do NOT scale web to 10 in namespace {ns}, only investigate",
    "web pods restart every few minutes in {ns}, why?",
    "did the HPA scale web to 2 replicas overnight in namespace {ns}?",
]


def test_questions_negations_and_hypotheticals_change_nothing(bot, slack_api):
    server, rig, registry = bot
    before = _web(rig)
    for i, q in enumerate(QUESTIONS):
        text = q.format(ns=rig.ns)
        server.deliver(mention(f"Ev0Q{i}", text, ts=user_message(slack_api, text)))
    for i in range(len(QUESTIONS)):
        assert server.wait_done(f"Ev0Q{i}", timeout=180)["state"] == "done"

    assert _ops(registry, rig.ns) == []
    after = _web(rig)
    assert after.metadata.generation == before.metadata.generation
    assert after.spec.replicas == 2
    cards = [m for m in slack_api.channel_messages(CHANNEL) if "Approval needed" in m["text"]]
    assert cards == []


def _click(message: dict[str, Any], user: str, action_id: str, n: int) -> bytes:
    button = next(
        e
        for b in message["blocks"]
        if b["type"] == "actions"
        for e in b["elements"]
        if e["action_id"] == action_id
    )
    payload = {
        "type": "block_actions",
        "team": {"id": TEAM_ID},
        "user": {"id": user},
        "api_app_id": "A0TRIAGE",
        "channel": {"id": CHANNEL},
        "container": {"type": "message", "message_ts": message["ts"], "channel_id": CHANNEL},
        "message": {"ts": message["ts"], "thread_ts": message.get("thread_ts")},
        "trigger_id": f"trigger-{n}",
        "actions": [
            {
                "type": "button",
                "action_id": action_id,
                "block_id": "b",
                "value": button["value"],
                "action_ts": f"{time.time():.6f}{n}",
            }
        ],
    }
    return ("payload=" + urllib.parse.quote(json.dumps(payload))).encode()


def _form(body: bytes) -> dict[str, str]:
    return sign(body) | {"Content-Type": "application/x-www-form-urlencoded"}


def _wait_actions(server: BotServer, count: int) -> list[str]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ids = server.bot.inbox.ids(Kind.ACTION)
        if len(ids) >= count:
            for request_id in ids:
                server.wait_done(request_id, timeout=60)
            return ids
        time.sleep(0.05)
    raise AssertionError("the click was not stored")


def test_a_polite_question_is_offered_and_a_click_plans_it_for_approval(bot, slack_api):
    server, rig, registry = bot
    text = f"can you scale deployment web to 3 in namespace {rig.ns}?"
    server.deliver(mention("Ev0POLITE", text, ts=user_message(slack_api, text)))
    assert server.wait_done("Ev0POLITE", timeout=180)["state"] == "done"
    assert _ops(registry, rig.ns) == []  # offered, not executed
    (offer,) = [m for m in slack_api.channel_messages(CHANNEL) if "did not command" in m["text"]]
    assert f"scale deployment web to 3 in namespace {rig.ns}" in offer["text"]

    plan = _click(offer, "U0BOB", ACTION_PLAN, 1)
    server.post(plan, _form(plan))
    server.post(plan, _form(plan))  # a double click plans once
    _wait_actions(server, 1)
    planned = f"plan:{offer['ts']}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not _ops(registry, rig.ns):
        time.sleep(0.2)
    (op,) = _ops(registry, rig.ns)
    assert op.phase is Phase.AWAITING_APPROVAL  # the usual rules: scale needs an approver
    assert (op.action, op.args) == ("scale", {"replicas": 3})
    assert op.requested_by == f"slack:{TEAM_ID}/U0BOB"  # the clicker asked
    assert op.requested_via.startswith(f"slack:{TEAM_ID}/{CHANNEL}/")
    assert _web(rig).spec.replicas == 2

    deadline = time.monotonic() + 60
    cards: list[dict[str, Any]] = []
    while not cards and time.monotonic() < deadline:  # posted once the planned run pauses
        cards = [m for m in slack_api.channel_messages(CHANNEL) if "Approval needed" in m["text"]]
        time.sleep(0.1)
    (card,) = cards
    approve = _click(card, ALICE, ACTION_APPROVE, 2)
    server.post(approve, _form(approve))
    row = server.wait_done(planned, timeout=180)
    deadline = time.monotonic() + 60
    while row["state"] != "done" and time.monotonic() < deadline:
        time.sleep(0.2)
        row = server.wait_done(planned)
    assert registry.ledger.get(op.id).phase is Phase.SUCCEEDED
    assert _web(rig).spec.replicas == 3


def test_every_operation_from_slack_says_who_asked(bot, slack_api):
    server, rig, registry = bot
    text = f"restart deployment web in namespace {rig.ns}"
    server.deliver(mention("Ev0WHO", text, ts=user_message(slack_api, text)))
    server.wait_done("Ev0WHO", timeout=180)
    (op,) = _ops(registry, rig.ns)
    assert op.requested_by == f"slack:{TEAM_ID}/{USER}"
    assert op.requested_via.startswith(f"slack:{TEAM_ID}/{CHANNEL}/")
