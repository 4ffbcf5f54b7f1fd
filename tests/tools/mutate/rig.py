"""One prepared target per mutation, the registry the agent would build, and the check that
the cluster shows exactly one effect. Shared by the crash matrix, the randomized trials and
the race tests.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from kubernetes import client

from policies.model import MutationPolicy
from tests.support.controlplane import ControlPlane
from tests.tools.mutate.cluster import (
    LEDGER_NS,
    MUTATOR_SA,
    as_user,
    create_deployment,
    policy_for,
    recorder_ledger,
    replicasets,
    set_image,
    wait_until,
)
from tests.tools.mutate.wire import Fault, FaultyTransport, Wire, on_kube
from tools.mutate.alertmanager import AlertmanagerMutator
from tools.mutate.approvals import recomputed, record_decision
from tools.mutate.kube import RESTART_STAMP, KubeMutator, impersonating
from tools.mutate.ledger import Decision, KubeLedger, Operation, Target, utcnow
from tools.mutate.registry import MutateRegistry, MutationRequest

ROOT = Path(__file__).resolve().parents[3]
LEASE_S = 1.0
OPS = r"/apis/triage\.dev/v1alpha1/namespaces/triage-system/operations"

ACTIONS = (
    "rollout_restart",
    "scale",
    "rollback",
    "delete_pod",
    "silence_create",
    "silence_expire",
)
SILENCE_ACTIONS = {"silence_create", "silence_expire"}


def action_params(actions: tuple[str, ...] | list[str]) -> list[Any]:
    """Actions as pytest params; silences also need Alertmanager (the `prometheus` marker)."""
    return [
        pytest.param(a, marks=pytest.mark.prometheus) if a in SILENCE_ACTIONS else a
        for a in actions
    ]


@dataclass
class Case:
    """A request against a prepared target, the one write that is its effect, and the check."""

    request: MutationRequest
    write: tuple[str, str]  # (method, path regex) of the effect write
    check: Callable[[Operation], None]
    notes: dict[str, Any] = field(default_factory=dict)


def silence(am_url: str, alertname: str, namespace: str) -> str:
    now = utcnow()
    r = httpx.post(
        f"{am_url}/api/v2/silences",
        json={
            "matchers": [
                {"name": "alertname", "value": alertname, "isRegex": False, "isEqual": True},
                {"name": "namespace", "value": namespace, "isRegex": False, "isEqual": True},
            ],
            "startsAt": now.isoformat(),
            "endsAt": (now + timedelta(hours=1)).isoformat(),
            "createdBy": "a-human",
            "comment": "set by hand",
        },
        timeout=5,
    )
    r.raise_for_status()
    return str(r.json()["silenceID"])


def silences_for(am_url: str, alertname: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{am_url}/api/v2/silences", timeout=5)
    r.raise_for_status()
    return [
        s
        for s in r.json()
        if any(m["name"] == "alertname" and m["value"] == alertname for m in s["matchers"])
    ]


class Rig:
    """A namespace the mutator may change, and registries built like the product builds them."""

    def __init__(
        self, cp: ControlPlane, namespace: str, am_url: str | None = None, *, run: str = ""
    ) -> None:
        self.cp = cp
        self.ns = namespace
        self.am_url = am_url
        self.admin = cp.api_client()
        self.run = run or f"test:{namespace}:{uuid.uuid4().hex[:6]}"
        self.policy: MutationPolicy = policy_for(namespace)
        self._clients: list[Any] = []

    def close(self) -> None:
        for c in self._clients:
            c.close()
        self.admin.close()

    def recorder(self) -> KubeLedger:
        """The ledger as the product's Slack approval recorder identity."""
        api, ledger = recorder_ledger(self.cp)
        self._clients.append(api)
        return ledger

    def approver(self, user: str = "alice") -> KubeLedger:
        """The ledger as a person with their own identity (as `triage ops approve` uses it)."""
        api = as_user(self.cp, user)
        self._clients.append(api)
        return KubeLedger(api, namespace=LEDGER_NS, timeout_s=5)

    def approve(
        self,
        op: Operation,
        user: str = "alice",
        *,
        policy: MutationPolicy | None = None,
        approve: bool = True,
    ) -> Decision:
        """`user` decides on exactly `op`'s arguments, with their own identity."""
        return record_decision(
            self.approver(user),
            policy or self.policy,
            op.id,
            user,
            approve=approve,
            digest=recomputed(op),
            via="test",
            now=utcnow(),
        )

    def registry(
        self,
        wire: Wire | None = None,
        *,
        later_s: float = 0.0,
        policy: MutationPolicy | None = None,
    ) -> MutateRegistry:
        """A fresh agent 'process': its own clients and holder ID; `later_s` runs its clock
        ahead, as if it started after an earlier process's claim ran out."""
        reader = self.cp.api_client(self.cp.reader_kubeconfig)
        mutator = impersonating(reader, MUTATOR_SA)
        self._clients += [reader, mutator]
        if wire is not None:
            on_kube(mutator, wire)
        am = None
        if self.am_url:
            transport = FaultyTransport(wire) if wire is not None else None
            am = AlertmanagerMutator(self.am_url, timeout_s=5, transport=transport)
            self._clients.append(am)
        return MutateRegistry(
            policy or self.policy,
            KubeLedger(mutator, namespace=LEDGER_NS, timeout_s=5),
            kube=KubeMutator(mutator, timeout_s=5),
            alertmanager=am,
            lease_s=LEASE_S,
            clock=lambda: utcnow() + timedelta(seconds=later_s),
        )

    def request(
        self, action: str, target: Target, args: dict[str, Any], step: str = "0"
    ) -> MutationRequest:
        return MutationRequest(
            run=self.run,
            step=step,
            action=action,
            target=target,
            args=args,
            requested_by="kube:test-rig",
            requested_via="test",
        )

    # -- cases -------------------------------------------------------------------------------

    def case(self, action: str, name: str = "web", step: str = "0") -> Case:
        return getattr(self, f"_case_{action}")(name, step)

    def _dep(self, name: str) -> Any:
        return client.AppsV1Api(self.admin).read_namespaced_deployment(name, self.ns)

    def _deploy_path(self, name: str, sub: str = "") -> str:
        return rf"/apis/apps/v1/namespaces/{self.ns}/deployments/{name}{sub}$"

    def _case_rollout_restart(self, name: str, step: str) -> Case:
        create_deployment(self.cp, self.admin, self.ns, name)
        before = {rs.metadata.name for rs in replicasets(self.admin, self.ns, name)}

        def check(op: Operation) -> None:
            dep = self._dep(name)
            assert dep.spec.template.metadata.annotations[RESTART_STAMP] == op.id
            wait_until(
                lambda: len(replicasets(self.admin, self.ns, name)) >= 2, 20, "the new ReplicaSet"
            )
            new = {rs.metadata.name for rs in replicasets(self.admin, self.ns, name)} - before
            assert len(new) == 1, f"expected exactly one new ReplicaSet, got {sorted(new)}"

        t = Target(kind="Deployment", namespace=self.ns, name=name)
        return Case(
            self.request("rollout_restart", t, {}, step), ("PATCH", self._deploy_path(name)), check
        )

    def _case_scale(self, name: str, step: str) -> Case:
        create_deployment(self.cp, self.admin, self.ns, name, replicas=2)

        def check(op: Operation) -> None:
            assert self._dep(name).spec.replicas == 5

        t = Target(kind="Deployment", namespace=self.ns, name=name)
        return Case(
            self.request("scale", t, {"replicas": 5}, step),
            ("PATCH", self._deploy_path(name, "/scale")),
            check,
        )

    def _case_rollback(self, name: str, step: str) -> Case:
        create_deployment(self.cp, self.admin, self.ns, name, image="shop/api:1.0")
        set_image(self.cp, self.admin, self.ns, name, "shop/api:2.0")
        wait_until(lambda: len(replicasets(self.admin, self.ns, name)) == 2, 20, "two revisions")

        def check(op: Operation) -> None:
            dep = self._dep(name)
            assert dep.spec.template.spec.containers[0].image == "shop/api:1.0"
            assert dep.metadata.annotations["triage.dev/operation"] == op.id
            time.sleep(0.3)
            assert len(replicasets(self.admin, self.ns, name)) == 2, "a rollback makes no new RS"

        t = Target(kind="Deployment", namespace=self.ns, name=name)
        return Case(
            self.request("rollback", t, {}, step), ("PATCH", self._deploy_path(name)), check
        )

    def _case_delete_pod(self, name: str, step: str) -> Case:
        create_deployment(self.cp, self.admin, self.ns, name, replicas=1)
        core = client.CoreV1Api(self.admin)

        def one_pod() -> bool:
            return len(core.list_namespaced_pod(self.ns, label_selector=f"app={name}").items) == 1

        wait_until(one_pod, 20, "the pod")
        pod: Any = core.list_namespaced_pod(self.ns, label_selector=f"app={name}").items[0]
        uid = pod.metadata.uid

        def check(op: Operation) -> None:
            pods: list[Any] = core.list_namespaced_pod(self.ns, label_selector=f"app={name}").items
            same = [p for p in pods if p.metadata.uid == uid and not p.metadata.deletion_timestamp]
            assert not same, "the pod with the planned UID is still there"
            assert op.plan["uid"] == uid

        t = Target(kind="Pod", namespace=self.ns, name=pod.metadata.name)
        return Case(
            self.request("delete_pod", t, {}, step),
            ("POST", rf"/api/v1/namespaces/{self.ns}/pods/{pod.metadata.name}/eviction$"),
            check,
        )

    def _case_silence_create(self, name: str, step: str) -> Case:
        assert self.am_url
        alertname = f"Alert{uuid.uuid4().hex[:8]}"
        am_url = self.am_url

        def check(op: Operation) -> None:
            found = silences_for(am_url, alertname)
            assert len(found) == 1, f"expected one silence, found {len(found)}"
            assert found[0]["status"]["state"] == "active"
            assert op.id in found[0]["comment"]

        t = Target(kind="Silence", namespace=self.ns, name=alertname)
        args = {
            "matchers": [
                {"name": "alertname", "value": alertname},
                {"name": "namespace", "value": self.ns},
            ],
            "duration_s": 600,
            "comment": "incident in progress",
        }
        return Case(
            self.request("silence_create", t, args, step), ("POST", r"/api/v2/silences$"), check
        )

    def _case_silence_expire(self, name: str, step: str) -> Case:
        assert self.am_url
        alertname = f"Alert{uuid.uuid4().hex[:8]}"
        silence_id = silence(self.am_url, alertname, self.ns)
        am_url = self.am_url

        def check(op: Operation) -> None:
            found = silences_for(am_url, alertname)
            assert [s["status"]["state"] for s in found] == ["expired"]

        t = Target(kind="Silence", namespace=self.ns, name=silence_id)
        return Case(
            self.request("silence_expire", t, {"silence_id": silence_id}, step),
            ("DELETE", rf"/api/v2/silence/{silence_id}$"),
            check,
        )

    # -- worker processes ------------------------------------------------------------------

    def worker(
        self,
        tmp: Path,
        request: MutationRequest,
        *,
        faults: list[dict[str, Any]] | None = None,
        log_name: str = "wire.log",
        start_at: float | None = None,
    ) -> subprocess.Popen[str]:
        cfg = {
            "kubeconfig": str(self.cp.reader_kubeconfig),
            "policy": self.policy.model_dump(mode="json"),
            "request": request.model_dump(mode="json"),
            "lease_s": LEASE_S,
            "alertmanager_url": self.am_url,
            "faults": faults or [],
            "log_path": str(tmp / log_name),
            "start_at": start_at,
        }
        path = tmp / f"cfg-{uuid.uuid4().hex[:6]}.json"
        path.write_text(json.dumps(cfg))
        return subprocess.Popen(
            [sys.executable, "-m", "tests.tools.mutate.worker", str(path)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )


def crash_faults(case: Case, point: str, *, kill: bool) -> list[Fault]:
    """The fault that stops a run at one of the four points of the crash matrix."""
    method, path = case.write
    op_path = rf"{OPS}/[a-z0-9-]+$"
    if point == "before_intent":
        return [Fault("POST", rf"{OPS}$", "kill_before" if kill else "drop_request")]
    if point == "after_intent":
        return [Fault(method, path, "kill_before" if kill else "drop_request")]
    if point == "after_write":
        return [Fault(method, path, "kill_after" if kill else "drop_response")]
    if point == "after_response":
        # PUTs on the record: the fence before the write, then the outcome. Stop the second.
        return [Fault("PUT", op_path, "kill_before" if kill else "drop_request", skip=1, times=5)]
    raise ValueError(point)


POINTS = ("before_intent", "after_intent", "after_write", "after_response")
