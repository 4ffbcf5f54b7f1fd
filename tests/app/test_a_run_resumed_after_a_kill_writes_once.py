"""An agent dies after recording the intent and before the write; the run is picked up again
(same thread, same words): the graph derives the same operation ID, waits out the dead agent's
claim, reads the target, and writes exactly once."""

from __future__ import annotations

import time
from dataclasses import asdict

import pytest
from kubernetes import client

from policies import Policy
from tests.support.product import app_over
from tests.tools.mutate.cluster import create_deployment
from tests.tools.mutate.rig import Rig
from tests.tools.mutate.wire import Fault, Wire, landed, read_log
from tools.mutate.ledger import Phase
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from triage.agent import intake
from triage.agent.changes import requests_from_goal
from triage.app import Request

pytestmark = pytest.mark.cluster


def test_a_run_resumed_after_its_agent_was_killed_writes_once(ledger_cluster, target_ns, tmp_path):
    rig = Rig(ledger_cluster, target_ns)
    create_deployment(ledger_cluster, rig.admin, target_ns, "web", replicas=2)
    words = "scale deployment web to 3"
    thread = f"cli:{target_ns}-killed"
    goal = intake.parse(words, now=time.time(), namespace=target_ns)
    who = "kube:system:serviceaccount:triage-system:triage-reader"  # as the apiserver says
    (request,) = requests_from_goal(goal, thread, who, "cli")[0]
    write = ("PATCH", rf"/apis/apps/v1/namespaces/{target_ns}/deployments/web/scale$")

    fault = asdict(Fault(*write, "kill_before"))
    for key in ("callback", "seen", "hits"):
        fault.pop(key)
    killed = rig.worker(tmp_path, request, faults=[fault], log_name="killed.log")
    killed.communicate(timeout=60)
    assert killed.returncode == -9

    wire = Wire()
    registry = rig.registry(wire)
    reader = ledger_cluster.api_client(ledger_cluster.reader_kubeconfig)
    product = app_over(
        ReadRegistry(KubeReader(reader, timeout_s=5)),
        tmp_path,
        policy=Policy(mutations=registry.policy),
        registry=registry,
        api_client=reader,
    )
    run = product.checked_run(Request(words=words, namespace=target_ns, run_id=thread))
    reader.close()

    (mutation,) = run.best.mutations
    assert mutation["phase"] == Phase.SUCCEEDED, mutation
    assert landed(read_log(str(tmp_path / "killed.log")) + wire.log, *write) == 1
    dep = client.AppsV1Api(rig.admin).read_namespaced_deployment("web", target_ns)
    assert dep.spec.replicas == 3
    rig.close()
