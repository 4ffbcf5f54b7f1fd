"""At least 100 randomized trials: random mutation, random faults at the wire, random crashes.

Each trial asks for one change and then lets the wire misbehave at random: the claim, the fence
before the write, the write itself and the ledger update after it may lose their request or
their answer (the write may also time out or get a 503 before or after the server acted), one
or more times; in half the trials the agent also dies at one of the crash matrix's
points (before the claim, before or after the write, before the ledger update) and another
agent, with a new holder ID and a clock past the first one's claim, takes over. The
trial ends when the operation reaches a final phase. No trial may see two accepted writes. A
Succeeded trial has its effect in the cluster and exactly one accepted write; the only other
acceptable end is Failed after the bounded attempts ran out, with no write accepted.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from typing import Any

import pytest
from kubernetes import client

from tests.tools.mutate.cluster import (
    create_deployment,
    replicasets,
    set_image,
    wait_rollout,
    wait_until,
)
from tests.tools.mutate.rig import LEASE_S, OPS, Rig, silences_for
from tests.tools.mutate.wire import AgentCrashed, Fault, Wire
from tools.mutate.kube import RESTART_STAMP, STAMP
from tools.mutate.ledger import Phase, Target

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus]

TRIALS = 120
WRITE_FAULTS = [
    "drop_request",
    "drop_response",
    "timeout_response",
    "error_503_before",
    "error_503_after",
]
SEED = 20261129


def _faults(rnd: random.Random, write: tuple[str, str]) -> list[Fault]:
    method, path = write
    op_path = rf"{OPS}/[a-z0-9-]+$"
    menu = [
        lambda: Fault("POST", rf"{OPS}$", rnd.choice(["drop_request", "drop_response"])),
        lambda: Fault("PUT", op_path, rnd.choice(["drop_request", "drop_response"])),
        lambda: Fault(method, path, rnd.choice(WRITE_FAULTS), times=rnd.randint(1, 2)),
        lambda: Fault(
            "PUT",
            op_path,
            rnd.choice(["drop_request", "drop_response"]),
            skip=1,
            times=rnd.randint(1, 3),
        ),
    ]
    faults = [f() for f in rnd.sample(menu, rnd.randint(0, 3))]
    if rnd.random() < 0.5:  # the agent dies at one of the four points of the crash matrix
        where = rnd.choice(
            [
                ("POST", rf"{OPS}$", 0),
                (method, path, 0),
                ("PUT", op_path, 1),
            ]
        )
        faults.insert(
            0, Fault(where[0], where[1], rnd.choice(["crash_before", "crash_after"]), skip=where[2])
        )
    return faults


class Targets:
    """Long-lived targets the trials take turns on, so a trial costs requests, not setup."""

    def __init__(self, rig: Rig) -> None:
        self.rig = rig
        self.ns = rig.ns
        self.apps = client.AppsV1Api(rig.admin)
        self.core = client.CoreV1Api(rig.admin)
        for name, kw in (
            ("restart", {}),
            ("scale", {"replicas": 1}),
            ("rollback", {"image": "shop/api:1.0"}),
            ("pods", {"replicas": 1}),
        ):
            create_deployment(rig.cp, rig.admin, self.ns, name, **kw)
        set_image(rig.cp, rig.admin, self.ns, "rollback", "shop/api:2.0")
        wait_until(lambda: len(replicasets(rig.admin, self.ns, "rollback")) == 2, 30, "revision 2")

    def dep(self, name: str) -> Any:
        return self.apps.read_namespaced_deployment(name, self.ns)

    def live_pod(self) -> Any:
        def pick() -> Any:
            pods: list[Any] = self.core.list_namespaced_pod(
                self.ns, label_selector="app=pods"
            ).items
            live = [p for p in pods if not p.metadata.deletion_timestamp]
            return live[0] if live else None

        wait_until(lambda: pick() is not None, 30, "a live pod")
        return pick()


def _request(targets: Targets, rig: Rig, action: str, step: str) -> tuple[Any, Any, Any]:
    """(request, effect write, check) for one trial."""
    ns = rig.ns
    dep_path = rf"/apis/apps/v1/namespaces/{ns}/deployments"
    if action == "rollout_restart":
        t = Target(kind="Deployment", namespace=ns, name="restart")

        def check(op: Any) -> None:
            annotations = targets.dep("restart").spec.template.metadata.annotations
            assert annotations[RESTART_STAMP] == op.id

        return rig.request(action, t, {}, step), ("PATCH", rf"{dep_path}/restart$"), check
    if action == "scale":
        current = targets.dep("scale").spec.replicas
        replicas = random.Random(step).choice([r for r in range(1, 7) if r != current])
        t = Target(kind="Deployment", namespace=ns, name="scale")

        def check_scale(op: Any) -> None:
            assert targets.dep("scale").spec.replicas == replicas

        return (
            rig.request(action, t, {"replicas": replicas}, step),
            ("PATCH", rf"{dep_path}/scale/scale$"),
            check_scale,
        )
    if action == "rollback":
        # "the previous revision" is read from the controller's view: let it catch up first
        wait_rollout(rig.cp, rig.admin, ns, "rollback")
        t = Target(kind="Deployment", namespace=ns, name="rollback")

        def check_rollback(op: Any) -> None:
            assert targets.dep("rollback").metadata.annotations[STAMP] == op.id

        return rig.request(action, t, {}, step), ("PATCH", rf"{dep_path}/rollback$"), check_rollback
    if action == "delete_pod":
        pod = targets.live_pod()
        uid = pod.metadata.uid
        t = Target(kind="Pod", namespace=ns, name=pod.metadata.name)

        def check_pod(op: Any) -> None:
            pods: list[Any] = targets.core.list_namespaced_pod(ns, label_selector="app=pods").items
            assert not [
                p for p in pods if p.metadata.uid == uid and not p.metadata.deletion_timestamp
            ]

        return (
            rig.request(action, t, {}, step),
            ("POST", rf"/api/v1/namespaces/{ns}/pods/{pod.metadata.name}/eviction$"),
            check_pod,
        )
    assert action == "silence_create"
    alertname = f"Trial{step}"
    t = Target(kind="Silence", namespace=ns, name=alertname)
    args = {
        "matchers": [
            {"name": "alertname", "value": alertname},
            {"name": "namespace", "value": ns},
        ],
        "duration_s": 300,
    }
    assert rig.am_url
    am_url = rig.am_url

    def check_silence(op: Any) -> None:
        assert len(silences_for(am_url, alertname)) == 1

    return rig.request(action, t, args, step), ("POST", r"/api/v2/silences$"), check_silence


def test_randomized_faults_and_crashes_never_double_write(
    ledger_cluster, target_ns, alertmanager
) -> None:
    rig = Rig(ledger_cluster, target_ns, alertmanager.url)
    targets = Targets(rig)
    rnd = random.Random(SEED)
    actions = ["rollout_restart", "scale", "rollback", "delete_pod", "silence_create"]
    landed_counts: Counter[int] = Counter()
    phases: Counter[str] = Counter()
    faults_fired = 0
    crashes = 0
    start = time.monotonic()
    try:
        for trial in range(TRIALS):
            action = actions[trial % len(actions)]
            request, write, check = _request(targets, rig, action, step=f"{SEED}-{trial}")
            wire = Wire()
            wire.arm(*_faults(rnd, write))
            registry = rig.registry(wire)
            later = 0.0
            outcome = None
            for _ in range(5):
                try:
                    outcome = registry.submit(request)
                except AgentCrashed:
                    # another agent picks the run up once the dead one's claim has lapsed
                    crashes += 1
                    later += LEASE_S + 1
                    registry = rig.registry(wire, later_s=later)
                    continue
                if outcome.phase is not None and outcome.phase.terminal:
                    break
                if rnd.random() < 0.5:  # or it gives up, and another agent takes over
                    later += LEASE_S + 1
                    registry = rig.registry(wire, later_s=later)
            assert outcome is not None
            faults_fired += sum(f.hits for f in wire.faults)
            wire.disarm()
            if outcome.phase is None or not outcome.phase.terminal:
                outcome = rig.registry(wire, later_s=later + LEASE_S + 1).submit(request)
            where = f"trial {trial} ({action}, seed {SEED}): {outcome.result.excerpt}"
            n = wire.landed(*write)
            landed_counts[n] += 1
            assert outcome.phase is not None, where
            phases[outcome.phase.value] += 1
            assert n <= 1, f"{where}: {n} writes accepted: {wire.log}"
            if outcome.phase is Phase.FAILED:
                # Bounded retries: enough lost writes and the agent gives up, having written
                # nothing (it checked before every attempt).
                assert outcome.operation is not None
                assert outcome.operation.attempts >= registry.max_attempts, where
                assert n == 0, where
                continue
            assert outcome.phase is Phase.SUCCEEDED, where
            assert n == 1, f"{where}: {n} writes accepted: {wire.log}"
            check(outcome.operation)
    finally:
        rig.close()
    seconds = time.monotonic() - start
    print(
        f"\n{TRIALS} randomized trials in {seconds:.1f}s: phases {dict(phases)}, accepted writes "
        f"per trial {dict(landed_counts)}, {faults_fired} faults fired, {crashes} crashes"
    )
    assert max(landed_counts) <= 1, "a double write"
    assert phases["Succeeded"] >= TRIALS * 0.9, phases
