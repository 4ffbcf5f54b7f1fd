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

Backends: `KubeLedger` (the `Operation` custom resource, the product) and `MemoryLedger` (unit
tests); both pass tests/tools/mutate's conformance suite.
"""

from __future__ import annotations

import copy
import hashlib
import json
import threading
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any, Protocol

from kubernetes import client as k8s
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from policies.model import MutationAction, MutationPolicy
from tools.errors import BackendError, Conflict, NotAnApprover, NotAwaitingApproval, NotFound
from tools.mutate.kube import KubeCall

GROUP = "triage.dev"
VERSION = "v1alpha1"
PLURAL = "operations"
KIND = "Operation"

Json = dict[str, Any]


class Phase(StrEnum):
    AWAITING_APPROVAL = "AwaitingApproval"
    PENDING = "Pending"
    UNKNOWN = "Unknown"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    SUPERSEDED = "Superseded"
    REFUSED = "Refused"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL


_TERMINAL = {Phase.SUCCEEDED, Phase.FAILED, Phase.SUPERSEDED, Phase.REFUSED}


def utcnow() -> datetime:
    return datetime.now(UTC)


class Target(BaseModel):
    """What a mutation changes: `Deployment/shop/checkout-api`, `Silence/shop/HighLatency`."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: str = Field(pattern=r"^(Deployment|Pod|Silence)$")
    namespace: str = Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)
    name: str = Field(min_length=1, max_length=253)

    def __str__(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> Target:
        """`Kind/namespace/name` (also accepts lower-case kinds: `deployment/shop/api`)."""
        parts = text.split("/")
        if len(parts) != 3:
            msg = f"target {text!r}: expected kind/namespace/name, e.g. deployment/shop/api"
            raise ValueError(msg)
        kind = {"deployment": "Deployment", "deploy": "Deployment", "pod": "Pod"}.get(
            parts[0].lower(), "Silence" if parts[0].lower() == "silence" else parts[0]
        )
        return cls(kind=kind, namespace=parts[1], name=parts[2])


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def args_digest(action: str, target: Target, args: Json) -> str:
    """What an approval is bound to: the action, its target and its exact arguments."""
    body = canonical({"action": action, "target": str(target), "args": args})
    return "sha256:" + hashlib.sha256(body.encode()).hexdigest()


def operation_id(run: str, step: str, action: str, target: Target, args: Json) -> str:
    """Deterministic: the same request in the same run and step always gets the same ID.

    A DNS-1123 name (the Operation's metadata.name): the action, then 16 hex digits of a sha256
    over the canonical request.
    """
    body = canonical(
        {"run": run, "step": step, "action": action, "target": str(target), "args": args}
    )
    return f"{action.replace('_', '-')}-{hashlib.sha256(body.encode()).hexdigest()[:16]}"


class Approval(BaseModel):
    model_config = ConfigDict(frozen=True)
    approver: str
    approved_at: datetime
    args_digest: str
    expires_at: datetime
    used_at: datetime | None = None


class Holder(BaseModel):
    """Which process is working on the operation, and until when its claim stands."""

    model_config = ConfigDict(frozen=True)
    id: str
    until: datetime


class Inverse(BaseModel):
    """The mutation that undoes this one, fixed when it was planned."""

    model_config = ConfigDict(frozen=True)
    action: str
    target: Target
    args: Json


class Operation(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    run: str
    step: str
    action: str
    target: Target
    args: Json
    args_digest: str
    plan: Json = Field(default_factory=dict, description="Preconditions pinned when planned.")
    requested_by: str = ""
    inverse: Inverse | None = None
    undoes: str | None = None

    phase: Phase
    message: str = ""
    attempts: int = 0
    holder: Holder | None = None
    approval: Approval | None = None
    refused_by: str | None = None
    before: Json | None = None
    after: Json | None = None
    undone_by: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)

    version: str = Field(default="", description="The backend's concurrency token.")

    def moved(self, **changes: Any) -> Operation:
        """A copy with `changes` and a fresh `updated_at` (for `Ledger.update`)."""
        return self.model_copy(update={**changes, "updated_at": utcnow()})


_SPEC_FIELDS = (
    "run",
    "step",
    "action",
    "target",
    "args",
    "args_digest",
    "plan",
    "requested_by",
    "inverse",
    "undoes",
)
_STATUS_FIELDS = (
    "phase",
    "message",
    "attempts",
    "holder",
    "approval",
    "refused_by",
    "before",
    "after",
    "undone_by",
    "updated_at",
)


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


def to_resource(op: Operation, namespace: str) -> Json:
    """The Operation custom resource for `op` (camelCase, `spec` what was asked, `status` how
    it went). `spec.targetRef` is the target as one string, for `kubectl get operations`."""
    data = op.model_dump(mode="json")
    spec = {_camel(k): data[k] for k in _SPEC_FIELDS if data[k] is not None}
    spec["targetRef"] = str(op.target)
    status = {_camel(k): data[k] for k in _STATUS_FIELDS if data[k] is not None}
    if "approval" in status:
        status["approval"] = {_camel(k): v for k, v in status["approval"].items() if v is not None}
    metadata: Json = {
        "name": op.id,
        "namespace": namespace,
        "labels": {
            f"{GROUP}/action": op.action.replace("_", "-"),
            f"{GROUP}/target-namespace": op.target.namespace,
        },
    }
    if op.version:
        metadata["resourceVersion"] = op.version
    if op.created_at:
        metadata.setdefault("annotations", {})[f"{GROUP}/created-at"] = data["created_at"]
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


def from_resource(obj: Json) -> Operation:
    """The record in a custom resource; `BackendError` when it is not a valid Operation."""
    try:
        return _from_resource(obj)
    except (KeyError, TypeError, ValidationError) as e:
        name = (obj.get("metadata") or {}).get("name", "?")
        raise BackendError(f"operation {name} in the ledger is malformed: {e}") from e


def _from_resource(obj: Json) -> Operation:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    data: Json = {k: spec.get(_camel(k)) for k in _SPEC_FIELDS}
    data.update({k: status.get(_camel(k)) for k in _STATUS_FIELDS})
    if data.get("approval"):
        data["approval"] = {_snake(k): v for k, v in data["approval"].items()}
    data = {k: v for k, v in data.items() if v is not None}
    data["id"] = meta["name"]
    data["version"] = str(meta.get("resourceVersion") or "")
    created = (meta.get("annotations") or {}).get(f"{GROUP}/created-at") or meta.get(
        "creationTimestamp"
    )
    if created:
        data["created_at"] = created
    return Operation.model_validate(data)


class Ledger(Protocol):
    """Where operations are recorded; every backend passes one conformance suite."""

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


class MemoryLedger:
    """In-process ledger for unit tests: same semantics, a dict and a lock."""

    def __init__(self) -> None:
        self._ops: dict[str, Operation] = {}
        self._counter = 0
        self._lock = threading.Lock()

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


class KubeLedger:
    """Operations as `operations.triage.dev` custom resources in one namespace.

    The client should be the mutator's (impersonating client from `tools.k8s_mutate`), or a
    human's for `triage ops approve`: the apiserver decides who may write the ledger.
    """

    def __init__(
        self, api_client: k8s.ApiClient, *, namespace: str = "triage-system", timeout_s: float = 10
    ) -> None:
        self.namespace = namespace
        self._api = k8s.CustomObjectsApi(api_client)
        self._call = KubeCall(timeout_s)

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


# -- approvals: recorded on the operation, bound to its arguments, used once, expiring ----------


def approval_problem(op: Operation, policy: MutationPolicy, now: datetime) -> str | None:
    """Why `op`'s recorded approval cannot be used now (None: it can)."""
    a = op.approval
    if a is None:
        return f"{op.id} needs approval: run `triage ops approve {op.id}`"
    if a.args_digest != op.args_digest:
        return f"the approval of {op.id} was for different arguments; approve it again"
    if a.used_at is not None:
        return f"the approval of {op.id} by {a.approver} was already used"
    if now > a.expires_at:
        return (
            f"the approval of {op.id} by {a.approver} expired at "
            f"{a.expires_at:%H:%M:%S} UTC; approve it again"
        )
    allowed = policy.approvers_for(MutationAction(op.action))
    if a.approver not in allowed:
        return f"{a.approver} may not approve {op.action}; approvers: {', '.join(allowed) or '-'}"
    return None


def record_approval(
    ledger: Ledger, policy: MutationPolicy, op_id: str, approver: str, *, now: datetime
) -> Operation:
    """Bind an approval by `approver` to the operation's exact arguments (raises a `Refused` or
    `NotFound` with a plain message when it cannot be recorded)."""
    op = ledger.get(op_id)
    if op is None:
        msg = f"no operation {op_id}; list them with `triage ops list`"
        raise NotFound(msg)
    if op.phase is not Phase.AWAITING_APPROVAL:
        msg = f"{op_id} is {op.phase}, not waiting for approval; nothing to approve"
        raise NotAwaitingApproval(msg)
    allowed = policy.approvers_for(MutationAction(op.action))
    if approver not in allowed:
        msg = (
            f"{approver} may not approve {op.action} (approvers: {', '.join(allowed) or 'none'}); "
            "ask one of them"
        )
        raise NotAnApprover(msg)
    approval = Approval(
        approver=approver,
        approved_at=now,
        args_digest=op.args_digest,
        expires_at=now + timedelta(seconds=policy.approval_ttl_s),
    )
    return ledger.update(op.moved(approval=approval, message=f"approved by {approver}"))


def record_refusal(ledger: Ledger, policy: MutationPolicy, op_id: str, who: str) -> Operation:
    op = ledger.get(op_id)
    if op is None:
        msg = f"no operation {op_id}; list them with `triage ops list`"
        raise NotFound(msg)
    if op.phase is not Phase.AWAITING_APPROVAL:
        msg = f"{op_id} is {op.phase}, not waiting for approval; nothing to refuse"
        raise NotAwaitingApproval(msg)
    allowed = policy.approvers_for(MutationAction(op.action))
    if who not in allowed:
        msg = f"{who} may not decide on {op.action} (approvers: {', '.join(allowed) or 'none'})"
        raise NotAnApprover(msg)
    return ledger.update(
        op.moved(phase=Phase.REFUSED, refused_by=who, message=f"refused by {who}", holder=None)
    )
