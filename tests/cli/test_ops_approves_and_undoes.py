"""`triage ops` against the real control plane: list, show, approve as a named person (checked
against the policy's approvers), refuse, undo — each a ledgered operation, each applied once."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from tests.cli.contract import valid
from tests.tools.mutate.cluster import LEDGER_NS, create_deployment, policy_for
from tests.tools.mutate.rig import Rig
from tests.tools.mutate.wire import Wire
from tools.mutate.ledger import Approval, Phase, Target, utcnow
from triage.cli.main import app
from triage.cli.ops import EXIT_NOT_DONE, EXIT_REFUSED
from triage.core.errors import EXIT_NOT_FOUND, EXIT_OK

pytestmark = pytest.mark.cluster


@pytest.fixture
def env(ledger_cluster, target_ns, tmp_path):
    rig = Rig(ledger_cluster, target_ns)
    rig.policy = policy_for(target_ns, approval=("scale",))
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(yaml.safe_dump({"mutations": rig.policy.model_dump(mode="json")}))
    create_deployment(ledger_cluster, rig.admin, target_ns, "web", replicas=2)
    yield rig, policy_file
    rig.close()


def ops(rig, policy_file, *args):
    base = ["ops", *args, "--kubeconfig", str(rig.cp.admin_kubeconfig)]
    if args[0] in ("approve", "refuse", "undo"):
        base += ["--policy", str(policy_file)]
    result = CliRunner().invoke(app, base)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def replicas(rig):
    return client.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns).spec.replicas


def test_approve_as_an_approver_applies_once_and_undo_restores(env):
    rig, policy_file = env
    wire = Wire()
    registry = rig.registry(wire)
    t = Target(kind="Deployment", namespace=rig.ns, name="web")
    waiting = registry.submit(rig.request("scale", t, {"replicas": 5}))
    op_id = waiting.operation.id
    assert waiting.phase is Phase.AWAITING_APPROVAL

    listed = ops(rig, policy_file, "list", "--phase", "AwaitingApproval", "-o", "json")
    assert listed.exit_code == EXIT_OK
    assert op_id in [o["id"] for o in valid(listed.stdout, kind="OperationList")["items"]]

    refused = ops(rig, policy_file, "approve", op_id, "--as", "mallory")
    assert refused.exit_code == EXIT_REFUSED
    assert "mallory may not decide on scale" in refused.stderr
    assert replicas(rig) == 2

    approved = ops(rig, policy_file, "approve", op_id, "--as", "alice")
    assert approved.exit_code == EXIT_OK, approved.output
    assert replicas(rig) == 5

    text = ops(rig, policy_file, "show", op_id).stdout
    assert "approved:   by alice" in text
    assert "for these arguments" in text
    assert "approval:   alice's, used at" in text
    assert "asked by:   kube:test-rig via test" in text

    shown = valid(ops(rig, policy_file, "show", op_id, "-o", "json").stdout, kind="Operation")
    assert shown["phase"] == "Succeeded"
    assert shown["approval"]["approver"] == "alice"
    assert shown["approval"]["used_at"]
    assert shown["inverse"]["args"] == {"replicas": 2}

    twice = ops(rig, policy_file, "approve", op_id, "--as", "alice")
    assert twice.exit_code == EXIT_REFUSED
    assert "not waiting for approval" in twice.stderr

    undone = ops(rig, policy_file, "undo", op_id, "-o", "json")
    # undoing a scale is a scale: policy wants alice's approval for it too
    assert undone.exit_code == EXIT_NOT_DONE
    undo_id = valid(undone.stdout, kind="OperationOutcome")["operation"]["id"]
    assert json.loads(undone.stdout)["operation"]["undoes"] == op_id
    assert ops(rig, policy_file, "approve", undo_id, "--as", "alice").exit_code == EXIT_OK
    assert replicas(rig) == 2
    original = registry.ledger.get(op_id)
    assert original.undone_by == undo_id
    assert ops(rig, policy_file, "undo", op_id).exit_code == EXIT_OK  # same undo, not again
    assert replicas(rig) == 2


def test_refuse_means_never_applied(env):
    rig, policy_file = env
    registry = rig.registry()
    t = Target(kind="Deployment", namespace=rig.ns, name="web")
    op_id = registry.submit(rig.request("scale", t, {"replicas": 7})).operation.id

    refused = ops(rig, policy_file, "refuse", op_id, "--as", "alice")
    assert refused.exit_code == EXIT_OK
    assert registry.ledger.get(op_id).phase is Phase.REFUSED
    assert ops(rig, policy_file, "approve", op_id, "--as", "alice").exit_code == EXIT_REFUSED
    assert registry.resume(op_id).phase is Phase.REFUSED
    assert replicas(rig) == 2


def test_unknown_operation_is_a_plain_not_found(env):
    rig, policy_file = env
    result = ops(rig, policy_file, "show", "scale-0000000000000000")
    assert result.exit_code == EXIT_NOT_FOUND
    assert "triage ops list" in result.stderr


def test_list_table_shows_the_ledger(env):
    rig, policy_file = env
    restarted = rig.registry().submit(rig.case("rollout_restart", name="api").request)
    table = ops(rig, policy_file, "list")
    assert table.exit_code == EXIT_OK
    row = next(line for line in table.stdout.splitlines() if restarted.operation.id in line)
    assert row.split()[1:4] == ["rollout_restart", f"Deployment/{rig.ns}/api", "Succeeded"]
    assert LEDGER_NS == "triage-system"


def test_show_says_when_an_approval_on_record_is_not_genuine(env):
    """The mutator may write its Operations, so it could write an approval there; `show` reads
    the Approval objects (which only approvers can create) and says the record is not one."""
    rig, policy_file = env
    registry = rig.registry()
    t = Target(kind="Deployment", namespace=rig.ns, name="web")
    op = registry.submit(rig.request("scale", t, {"replicas": 6})).operation
    forged = op.moved(
        approval=Approval(
            name="scale-forged-a-0000000000",
            approver="alice",
            approved_at=utcnow(),
            args_digest=op.args_digest,
            expires_at=utcnow(),
        )
    )
    registry.ledger.update(forged)  # as the mutator

    text = ops(rig, policy_file, "show", op.id).stdout
    assert "NOT a genuine approval" in text
    assert "approved:" not in text


def test_approve_binds_the_digest_that_was_checked(env):
    rig, policy_file = env
    registry = rig.registry()
    t = Target(kind="Deployment", namespace=rig.ns, name="web")
    op = registry.submit(rig.request("scale", t, {"replicas": 4})).operation
    stale = ops(
        rig, policy_file, "approve", op.id, "--as", "alice", "--digest", "sha256:" + "3" * 64
    )
    assert stale.exit_code == EXIT_REFUSED
    assert "not" in stale.stderr
    assert "arguments" in stale.stderr
    assert registry.ledger.decisions(op.id) == []
    assert replicas(rig) == 2
