"""What one ledger record is: an `Operation` (what was asked, and how it went) and a `Decision`
(one person's approval or refusal), and their custom-resource form.

Split from tools/mutate/ledger.py (where records are kept, and how they are claimed and moved
on): the models, the digest an approval is bound to, the operation ID and the mapping to the
`operations.triage.dev` and `approvals.triage.dev` resources (helm/triage/crds/).
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tools.errors import BackendError

Json = dict[str, Any]

GROUP = "triage.dev"
VERSION = "v1alpha1"
PLURAL = "operations"
KIND = "Operation"
APPROVALS = "approvals"
APPROVAL_KIND = "Approval"


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
    """Which approval an execution used (a copy on the Operation's status; the approval itself
    is the `Decision` named here, which only its approver could create)."""

    model_config = ConfigDict(frozen=True)
    name: str = ""
    approver: str
    approved_at: datetime
    args_digest: str
    expires_at: datetime
    used_at: datetime | None = None


class Decision(BaseModel):
    """One person's approval or refusal of one operation's exact arguments: an `Approval`
    object in the ledger's namespace. `created_at` is the apiserver's creation time (the
    memory backend's clock in tests), never a value the writer chose."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    operation: str
    approve: bool
    args_digest: str = Field(pattern=r"^sha256:[0-9a-f]{64}$")
    approver: str = Field(min_length=1, max_length=300)
    via: str = Field(default="", max_length=300)
    created_at: datetime = Field(default_factory=utcnow)

    @staticmethod
    def name_for(op_id: str, approve: bool, approver: str) -> str:
        """One decision per operation, person and verdict: a second click finds the first."""
        who = hashlib.sha256(approver.encode()).hexdigest()[:10]
        return f"{op_id}-{'a' if approve else 'r'}-{who}"


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
    requested_by: str = Field(default="", description="Who asked: slack:T/U, kube:alice.")
    requested_via: str = Field(default="", description="From where: a Slack thread, cli.")
    undoes: str | None = None

    phase: Phase
    message: str = ""
    attempts: int = 0
    holder: Holder | None = None
    approval: Approval | None = None
    refused_by: str | None = None
    before: Json | None = None
    after: Json | None = None
    inverse: Inverse | None = None
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
    "requested_via",
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
    "inverse",
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


def decision_resource(decision: Decision, namespace: str) -> Json:
    """The `Approval` custom resource for a decision (its creation time is the apiserver's)."""
    spec: Json = {
        "operation": decision.operation,
        "decision": "approve" if decision.approve else "refuse",
        "argsDigest": decision.args_digest,
        "approver": decision.approver,
    }
    if decision.via:
        spec["via"] = decision.via
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": APPROVAL_KIND,
        "metadata": {
            "name": decision.name,
            "namespace": namespace,
            "labels": {f"{GROUP}/operation": decision.operation},
        },
        "spec": spec,
    }


def decision_from_resource(obj: Json) -> Decision:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    try:
        return Decision(
            name=meta["name"],
            operation=spec["operation"],
            approve=spec["decision"] == "approve",
            args_digest=spec["argsDigest"],
            approver=spec["approver"],
            via=spec.get("via") or "",
            created_at=meta["creationTimestamp"],
        )
    except (KeyError, TypeError, ValidationError) as e:
        raise BackendError(f"approval {meta.get('name', '?')} is malformed: {e}") from e
