"""A separate agent process for the kill and race tests:
`python -m tests.tools.mutate.worker CONFIG`.

CONFIG is a JSON file: kubeconfig (the reader's), policy, request, lease_s, optional
alertmanager_url, faults (as `wire.Fault` fields), log_path (the wire log, appended as it goes)
and start_at (a unix time to wait for, so racers start together). It submits the request
through the real registry and prints the outcome as JSON; a `kill_*` fault ends it by SIGKILL.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from kubernetes import config as kube_config

from policies.model import MutationPolicy
from tests.tools.mutate.wire import Fault, FaultyTransport, Wire, on_kube
from tools.mutate.alertmanager import AlertmanagerMutator
from tools.mutate.kube import KubeMutator, impersonating
from tools.mutate.ledger import KubeLedger
from tools.mutate.registry import MutateRegistry, MutationRequest

LEDGER_NS = "triage-system"
MUTATOR_SA = "triage-system/triage-mutator"


def main(path: str) -> None:
    cfg = json.loads(Path(path).read_text())
    wire = Wire(log_path=cfg["log_path"])
    wire.arm(*(Fault(**f) for f in cfg.get("faults", [])))
    reader = kube_config.new_client_from_config(config_file=cfg["kubeconfig"])
    mutator = impersonating(reader, MUTATOR_SA)
    on_kube(mutator, wire)
    am = None
    if cfg.get("alertmanager_url"):
        am = AlertmanagerMutator(
            cfg["alertmanager_url"], timeout_s=5, transport=FaultyTransport(wire)
        )
    registry = MutateRegistry(
        MutationPolicy.model_validate(cfg["policy"]),
        KubeLedger(mutator, namespace=LEDGER_NS, timeout_s=5),
        kube=KubeMutator(mutator, timeout_s=5),
        alertmanager=am,
        lease_s=cfg.get("lease_s", 1.0),
    )
    start_at = cfg.get("start_at")
    if start_at:
        time.sleep(max(0.0, start_at - time.time()))
    outcome = registry.submit(MutationRequest.model_validate(cfg["request"]))
    sys.stdout.write(
        json.dumps(
            {
                "status": outcome.result.status.value,
                "excerpt": outcome.result.excerpt,
                "phase": outcome.phase.value if outcome.phase else None,
                "operation": outcome.operation.id if outcome.operation else None,
            }
        )
        + "\n"
    )


if __name__ == "__main__":
    main(sys.argv[1])
