"""The policy file: the shipped default loads, the committed schema matches the models, and a
broken file is refused with the place and the problem."""

from __future__ import annotations

import json

import pytest

from policies import DEFAULT_POLICY, SCHEMA_PATH, PolicyError, load_policy
from policies.model import MutationAction
from policies.schema import schema_text


def test_the_shipped_default_loads_and_allows_nothing_until_namespaces_are_listed():
    policy = load_policy(DEFAULT_POLICY).mutations
    assert policy.namespaces == ()
    assert policy.approvers == ()
    # and once an operator lists a namespace, every action still waits for an approver
    assert all(policy.needs_approval(a) for a in MutationAction)
    assert set(policy.actions) == set(MutationAction)


def test_an_action_listed_without_a_rule_needs_approval(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text("mutations:\n  namespaces: [shop]\n  actions: {rollout_restart: {}}\n")
    policy = load_policy(path).mutations
    assert policy.needs_approval(MutationAction.ROLLOUT_RESTART)


def test_slack_approvers_are_written_with_their_prefix(tmp_path):
    path = tmp_path / "policy.yaml"
    path.write_text("mutations:\n  approvers: [U0ALICE42]\n")
    with pytest.raises(PolicyError, match="slack:U0ALICE42"):
        load_policy(path)
    path.write_text("mutations:\n  approvers: ['slack:U0ALICE42', alice]\n")
    policy = load_policy(path).mutations
    assert policy.may_approve(MutationAction.SCALE, "slack:T024/U0ALICE42")  # any workspace
    assert policy.may_approve(MutationAction.SCALE, "alice")
    assert not policy.may_approve(MutationAction.SCALE, "U0ALICE42")  # a kube user of that name
    assert not policy.may_approve(MutationAction.SCALE, "slack:T024/alice")


def test_the_committed_schema_matches_the_models():
    assert json.loads(SCHEMA_PATH.read_text()) == json.loads(schema_text()), (
        "policies/policy.schema.json is stale: run `python -m policies.schema`"
    )


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("mutations:\n  namespaces: ['*']\n", "no wildcards"),
        ("mutations:\n  max_replicas: -1\n", "mutations.max_replicas"),
        ("mutations:\n  actions: {reboot_node: {}}\n", "mutations.actions.reboot_node"),
        ("mutations:\n  aprovers: [alice]\n", "mutations.aprovers"),
        ("mutations: [\n", "not valid YAML"),
    ],
)
def test_a_broken_policy_is_refused_with_where_and_what(tmp_path, text, says):
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError, match="policy file") as refused:
        load_policy(path)
    assert says in str(refused.value)


def test_a_missing_policy_file_is_a_plain_error(tmp_path):
    with pytest.raises(PolicyError, match="cannot read policy file"):
        load_policy(tmp_path / "nope.yaml")
