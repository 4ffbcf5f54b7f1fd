"""`kubectl get operations` shows the ledger: action, target, phase, approver, age."""

from __future__ import annotations

import subprocess

import pytest

from tests.tools.mutate.cluster import LEDGER_NS, policy_for
from tests.tools.mutate.rig import Rig

pytestmark = pytest.mark.cluster


def test_kubectl_get_operations_lists_the_ledger(ledger_cluster, target_ns):
    rig = Rig(ledger_cluster, target_ns)
    rig.policy = policy_for(target_ns, approval=("scale",))
    registry = rig.registry()
    restarted = registry.submit(rig.case("rollout_restart").request)
    scale = rig.case("scale", name="api", step="1")
    waiting = registry.submit(scale.request).operation
    assert waiting is not None
    rig.approve(waiting)
    scaled = registry.resume(waiting.id)
    rig.close()
    assert restarted.operation is not None
    assert scaled.operation is not None

    out = subprocess.run(
        [
            "kubectl",
            f"--kubeconfig={ledger_cluster.admin_kubeconfig}",
            "get",
            "operations",
            f"--namespace={LEDGER_NS}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout.splitlines()
    assert out[0].split() == ["NAME", "ACTION", "TARGET", "PHASE", "APPROVER", "AGE"]
    rows = {line.split()[0]: line.split() for line in out[1:]}
    assert rows[restarted.operation.id][1:4] == [
        "rollout_restart",
        f"Deployment/{target_ns}/web",
        "Succeeded",
    ]
    assert rows[scaled.operation.id][1:5] == [
        "scale",
        f"Deployment/{target_ns}/api",
        "Succeeded",
        "alice",
    ]
