"""The ledger: one record per mutation, kept in the cluster, claimed once by operation ID.

Why: the worst an incident bot can do is apply a write twice, or report a write that never
happened. Every mutation is an `Operation` named by an ID derived from what was asked (run,
step, action, target, arguments), so a process that crashed can recompute it and find its own
record. Creating the record is the claim: a second creator gets the existing record back
(`409 AlreadyExists` in the cluster) and must not write. Every later change is a
compare-and-swap on the record's version, so two processes cannot both move it on.

    AwaitingApproval ──approve──▶ Pending ──write──▶ Succeeded | Failed
          │                          │
          └──refuse/expire──▶ Refused └─lost response─▶ Unknown ──read target──▶
                                         Succeeded (stamp there) | Pending again (precondition
                                         holds: re-apply, same ID) | Superseded (never forced)

What was asked (`spec`: run, step, action, target, arguments and their digest, the pinned plan,
who asked and from where) never changes once recorded: the CRD refuses any change to `spec`
(`x-kubernetes-validations: self == oldSelf`), so nobody — the mutator included — can edit
the arguments an approver saw. Approvals are not written on the Operation at all: each
decision is an `Approval` object of its own (tools/mutate/approvals.py), created by the person
(or, for Slack, the approval recorder identity) and checked by the apiserver; the Operation's
status only notes which approval its execution used.

Backends: `KubeLedger` (the `Operation` and `Approval` custom resources, the product) and
`MemoryLedger` (unit tests); both pass tests/tools/mutate's conformance suite.
"""

from __future__ import annotations

import builtins
import copy
import functools
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Protocol

from kubernetes import client as k8s

from tools.errors import Conflict, NotFound
from tools.mutate.kube import KubeCall
from tools.mutate.records import (
    APPROVAL_KIND,
    APPROVALS,
    GROUP,
    KIND,
    PLURAL,
    VERSION,
    Approval,
    Decision,
    Holder,
    Inverse,
    Json,
    Operation,
    Phase,
    Target,
    args_digest,
    canonical,
    decision_from_resource,
    decision_resource,
    from_resource,
    operation_id,
    to_resource,
    utcnow,
)

__all__ = [
    "APPROVALS",
    "APPROVAL_KIND",
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "Approval",
    "Decision",
    "Holder",
    "Inverse",
    "KubeLedger",
    "Ledger",
    "MemoryLedger",
    "Operation",
    "Phase",
    "Target",
    "args_digest",
    "canonical",
    "operation_id",
    "utcnow",
]


class Ledger(Protocol):
    """Where operations and decisions are recorded. Every backend passes tests/tools/mutate's
    conformance suite."""

    def claim(self, op: Operation) -> tuple[Operation, bool]:
        """Create `op` unless its ID exists. Returns (the stored record, True if we created
        it); (the existing record, False) when someone already holds the ID."""
        ...

    def get(self, op_id: str) -> Operation | None: ...

    def update(self, op: Operation) -> Operation:
        """Store `op` if its `version` is still current; `Conflict` if someone moved it first,
        `NotFound` if it is gone. Returns the stored record with its new version."""
        ...

    def list(self) -> list[Operation]:
        """Every operation, oldest first."""
        ...

    def decide(self, decision: Decision) -> tuple[Decision, bool]:
        """Record a decision unless one of that name exists (the same person deciding the same
        way again): (the stored decision, True if we created it). Who may is the backend's
        call: in the cluster, the apiserver's (RBAC and the approvals admission policy)."""
        ...

    def decisions(self, op_id: str) -> builtins.list[Decision]:
        """The decisions recorded for one operation, oldest first."""
        ...

    def decision(self, name: str) -> Decision | None: ...


class MemoryLedger:
    """In-process ledger for unit tests: same semantics, a dict and a lock."""

    def __init__(self, clock: Callable[[], datetime] = utcnow) -> None:
        self._ops: dict[str, Operation] = {}
        self._decisions: dict[str, Decision] = {}
        self._counter = 0
        self._lock = threading.Lock()
        self._clock = clock

    def _next_version(self) -> str:
        self._counter += 1
        return str(self._counter)

    def claim(self, op: Operation) -> tuple[Operation, bool]:
        with self._lock:
            existing = self._ops.get(op.id)
            if existing is not None:
                return existing, False
            stored = op.model_copy(update={"version": self._next_version()})
            self._ops[op.id] = stored
            return stored, True

    def get(self, op_id: str) -> Operation | None:
        with self._lock:
            return self._ops.get(op_id)

    def update(self, op: Operation) -> Operation:
        with self._lock:
            current = self._ops.get(op.id)
            if current is None:
                raise NotFound(f"operation {op.id} does not exist", http_status=404)
            if current.version != op.version:
                raise Conflict(
                    f"operation {op.id} was changed by someone else (version {current.version}, "
                    f"ours {op.version})",
                    http_status=409,
                )
            stored = op.model_copy(update={"version": self._next_version()})
            self._ops[op.id] = stored
            return stored

    def list(self) -> list[Operation]:
        with self._lock:
            return sorted(copy.copy(list(self._ops.values())), key=lambda o: o.created_at)

    def decide(self, decision: Decision) -> tuple[Decision, bool]:
        with self._lock:
            existing = self._decisions.get(decision.name)
            if existing is not None:
                return existing, False
            stored = decision.model_copy(update={"created_at": self._clock()})
            self._decisions[decision.name] = stored
            return stored, True

    def decisions(self, op_id: str) -> builtins.list[Decision]:
        with self._lock:
            found = [d for d in self._decisions.values() if d.operation == op_id]
        return sorted(found, key=lambda d: d.created_at)

    def decision(self, name: str) -> Decision | None:
        with self._lock:
            return self._decisions.get(name)


class KubeLedger:
    """Operations as `operations.triage.dev` custom resources in one namespace.

    The client should be the mutator's (impersonating client from `tools.k8s_mutate`), or a
    human's for `triage ops approve`: the apiserver decides who may write the ledger.
    """

    def __init__(
        self, api_client: k8s.ApiClient, *, namespace: str = "triage-system", timeout_s: float = 10
    ) -> None:
        self.namespace = namespace
        self._api_client = api_client
        self._call = KubeCall(timeout_s)

    @functools.cached_property
    def _api(self) -> k8s.CustomObjectsApi:
        # Built at the first ledger call: kubernetes 37 spends ~90 ms making the class's
        # validators, and a read-only investigation builds a ledger it never writes.
        return k8s.CustomObjectsApi(self._api_client)

    def claim(self, op: Operation) -> tuple[Operation, bool]:
        body = to_resource(op.model_copy(update={"version": ""}), self.namespace)
        try:
            created = self._call.json(
                self._api.create_namespaced_custom_object,
                GROUP,
                VERSION,
                self.namespace,
                PLURAL,
                body,
            )
        except Conflict:
            existing = self.get(op.id)
            if existing is None:  # deleted between the two calls: let the caller try again
                raise
            return existing, False
        return from_resource(created), True

    def get(self, op_id: str) -> Operation | None:
        try:
            obj = self._call.json(
                self._api.get_namespaced_custom_object,
                GROUP,
                VERSION,
                self.namespace,
                PLURAL,
                op_id,
            )
        except NotFound:
            return None
        return from_resource(obj)

    def update(self, op: Operation) -> Operation:
        if not op.version:
            msg = f"operation {op.id}: update needs the version it was read at"
            raise ValueError(msg)
        stored = self._call.json(
            self._api.replace_namespaced_custom_object,
            GROUP,
            VERSION,
            self.namespace,
            PLURAL,
            op.id,
            to_resource(op, self.namespace),
        )
        return from_resource(stored)

    def list(self, *, max_items: int = 10_000) -> list[Operation]:
        """Every record (paginated, at most `max_items`), oldest first."""
        items: list[Json] = []
        cont: str | None = None
        while len(items) < max_items:
            kw: Json = {"limit": 500}
            if cont:
                kw["_continue"] = cont
            data = self._call.json(
                self._api.list_namespaced_custom_object,
                GROUP,
                VERSION,
                self.namespace,
                PLURAL,
                **kw,
            )
            items.extend(data.get("items") or [])
            cont = (data.get("metadata") or {}).get("continue")
            if not cont:
                break
        ops = [from_resource(i) for i in items[:max_items]]
        return sorted(ops, key=lambda o: o.created_at)

    def decide(self, decision: Decision) -> tuple[Decision, bool]:
        body = decision_resource(decision, self.namespace)
        try:
            created = self._call.json(
                self._api.create_namespaced_custom_object,
                GROUP,
                VERSION,
                self.namespace,
                APPROVALS,
                body,
            )
        except Conflict:
            existing = self.decision(decision.name)
            if existing is None:
                raise
            return existing, False
        return decision_from_resource(created), True

    def decisions(self, op_id: str) -> builtins.list[Decision]:
        data = self._call.json(
            self._api.list_namespaced_custom_object,
            GROUP,
            VERSION,
            self.namespace,
            APPROVALS,
            label_selector=f"{GROUP}/operation={op_id}",
            limit=100,
        )
        found = [decision_from_resource(i) for i in data.get("items") or []]
        return sorted((d for d in found if d.operation == op_id), key=lambda d: d.created_at)

    def decision(self, name: str) -> Decision | None:
        try:
            obj = self._call.json(
                self._api.get_namespaced_custom_object,
                GROUP,
                VERSION,
                self.namespace,
                APPROVALS,
                name,
            )
        except NotFound:
            return None
        return decision_from_resource(obj)
