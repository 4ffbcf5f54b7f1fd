"""A change that needs approval is shown with its exact arguments and plan and two buttons bound
to the operation's argument digest; only a listed approver's click applies it, once, inside the
paused run, which then finishes (the ticket shows what came of the change)."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from datetime import timedelta
from typing import Any

import pytest
from kubernetes import client

from policies import Policy
from tests.slack.support import (
    CHANNEL,
    BotServer,
    deliver_concurrently,
    mention,
    settings_for,
    sign,
    user_message,
)
from tests.support.fake_slack import TEAM_ID, FakeSlack
from tests.tools.mutate.cluster import create_deployment, policy_for
from tests.tools.mutate.rig import Rig
from tools.mutate.ledger import Phase, utcnow
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from tools.redact import Redactor
from triage.app import App
from triage.slack.blocks import ACTION_APPROVE
from triage.slack.inbox import Kind

pytestmark = pytest.mark.cluster

ALICE, BOB = "U0ALICE", "U0BOB"


@pytest.fixture
def setup(ledger_cluster, target_ns, slack_api: FakeSlack, tmp_path):
    rig = Rig(ledger_cluster, target_ns)
    policy = policy_for(target_ns, approval=("scale",), approval_ttl_s=60)
    policy = policy.model_copy(update={"approvers": (f"slack:{ALICE}",)})
    create_deployment(ledger_cluster, rig.admin, target_ns, "web", replicas=2)
    registry = rig.registry(policy=policy)
    reader = ledger_cluster.api_client(ledger_cluster.reader_kubeconfig)
    settings = settings_for(slack_api, tmp_path)
    product = App(
        settings=settings,
        tools=ReadRegistry(KubeReader(reader, timeout_s=5)),
        store=None,  # this test is about the change; the judge still checks its effect
        policy=Policy(mutations=policy),
        redactor=Redactor(),
        registry=registry,
        approvals=rig.recorder(),  # Slack decisions are recorded as the approval recorder
    )
    with BotServer(settings, product) as server:
        yield server, rig, registry
    reader.close()
    rig.close()


def _click(card: dict[str, Any], user: str, n: int, action_id: str = ACTION_APPROVE) -> bytes:
    button = next(
        e
        for b in card["blocks"]
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
        "container": {"type": "message", "message_ts": card["ts"], "channel_id": CHANNEL},
        "message": {"ts": card["ts"], "thread_ts": card.get("thread_ts")},
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


def _replicas(rig: Rig) -> int:
    return int(client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns).spec.replicas)


def test_only_an_approver_applies_it_and_a_double_click_applies_once(setup, slack_api):
    server, rig, registry = setup
    words = f"scale deployment web to 3 in namespace {rig.ns}"
    server.deliver(mention("Ev0SCALE", words, ts=user_message(slack_api, words)))
    server.wait_done("Ev0SCALE", timeout=120)
    card = next(m for m in slack_api.channel_messages(CHANNEL) if "Approval needed" in m["text"])
    (op,) = [o for o in registry.ledger.list() if o.target.namespace == rig.ns]
    shown = json.dumps(card["blocks"])
    assert op.phase is Phase.AWAITING_APPROVAL
    assert '\\"replicas\\": 3' in shown or '"replicas": 3' in shown  # the exact arguments
    assert op.args_digest in shown  # the buttons carry the digest they were shown with
    assert _replicas(rig) == 2

    bob = _click(card, BOB, 1)
    assert server.post(bob, _form(bob)).status_code == 200
    server.wait_done(next(r for r in _action_ids(server) if BOB in r))
    assert registry.ledger.get(op.id).phase is Phase.AWAITING_APPROVAL  # type: ignore[union-attr]
    assert _replicas(rig) == 2
    assert "may not approve" in slack_api.ephemeral[-1]["text"]

    clicks = [_click(card, ALICE, 2), _click(card, ALICE, 3)]
    statuses = asyncio.run(deliver_concurrently(server.url, [(c, _form(c)) for c in clicks]))
    assert statuses == [200, 200]
    for request_id in [r for r in _action_ids(server) if ALICE in r]:
        server.wait_done(request_id, timeout=60)

    row = server.wait_done("Ev0SCALE", timeout=120)  # the paused run went on and finished
    assert row["state"] == "done"
    done = registry.ledger.get(op.id)
    assert done is not None
    assert done.phase is Phase.SUCCEEDED
    assert done.attempts == 1  # one write
    assert done.approval is not None
    assert done.approval.approver == f"slack:{TEAM_ID}/{ALICE}"
    (decision,) = registry.ledger.decisions(op.id)  # the Approval object, one for two clicks
    assert decision.approver == f"slack:{TEAM_ID}/{ALICE}"
    assert decision.args_digest == op.args_digest
    assert _replicas(rig) == 3
    assert done.requested_by.startswith(f"slack:{TEAM_ID}/")  # who asked, and from where
    ticket = slack_api.message(CHANNEL, row["steps"]["ticket_ts"])
    assert ticket is not None
    assert "scale" in json.dumps(ticket["blocks"])
    answers = [k for k in row["steps"] if k.startswith("answer") and k.endswith("_ts")]
    assert len(answers) >= 1  # answered once the change was applied and checked
    assert any("already" in e["text"] for e in slack_api.ephemeral)


def _action_ids(server: BotServer) -> list[str]:
    return server.bot.inbox.ids(Kind.ACTION)


def test_a_click_after_the_request_expired_changes_nothing(setup, slack_api):
    server, rig, registry = setup
    words = f"scale deployment web to 3 in namespace {rig.ns}"
    server.deliver(mention("Ev0LATE", words, ts=user_message(slack_api, words)))
    server.wait_done("Ev0LATE", timeout=120)
    card = next(m for m in slack_api.channel_messages(CHANNEL) if "Approval needed" in m["text"])
    later = utcnow() + timedelta(seconds=61)
    registry.clock = lambda: later  # the approver comes back after the request expired

    late = _click(card, ALICE, 1)
    server.post(late, _form(late))
    server.wait_done(server.bot.inbox.ids(Kind.ACTION)[0])

    (op,) = [o for o in registry.ledger.list() if o.target.namespace == rig.ns]
    assert op.phase is Phase.AWAITING_APPROVAL
    assert op.approval is None
    assert registry.ledger.decisions(op.id) == []
    assert _replicas(rig) == 2
    assert "expired" in slack_api.ephemeral[-1]["text"]


def test_a_policy_tightened_between_card_and_click_is_applied_at_execution(setup, slack_api):
    """The card says 3 replicas (max_replicas 20 then); the operator lowers the bound to 2
    before the approver clicks. The click is recorded, the run resumes, and the execution
    checks the policy in force: nothing is scaled, and the ticket says the change was refused."""
    server, rig, registry = setup
    words = f"scale deployment web to 3 in namespace {rig.ns}"
    server.deliver(mention("Ev0TIGHT", words, ts=user_message(slack_api, words)))
    server.wait_done("Ev0TIGHT", timeout=120)
    card = next(m for m in slack_api.channel_messages(CHANNEL) if "Approval needed" in m["text"])
    registry.policy = registry.policy.model_copy(update={"max_replicas": 2})  # new policy file

    click = _click(card, ALICE, 1)
    server.post(click, _form(click))
    for request_id in server.bot.inbox.ids(Kind.ACTION):
        server.wait_done(request_id, timeout=60)
    row = server.wait_done("Ev0TIGHT", timeout=120)
    deadline = time.monotonic() + 60
    while row["state"] != "done" and time.monotonic() < deadline:
        time.sleep(0.2)
        row = server.wait_done("Ev0TIGHT")

    assert row["state"] == "done"
    assert _replicas(rig) == 2  # not scaled
    (op,) = [o for o in registry.ledger.list() if o.target.namespace == rig.ns]
    assert op.phase is not Phase.SUCCEEDED
    assert op.attempts == 0  # no write was ever sent
    ticket = slack_api.message(CHANNEL, row["steps"]["ticket_ts"])
    assert "above the policy" in json.dumps(ticket["blocks"])
