"""What each mutation is: its arguments and bounds, its precondition, its stamp, its read-back,
its inverse. The engine in `tools.mutate` runs them all the same way.

Arguments are pydantic models validated against the operator's policy (passed as validation
context) before anything is sent anywhere, so `replicas: 100000` or a match-everything silence
never reaches an API. A spec's parts, for the engine:

- `observe` reads the target as it is now (None: it does not exist);
- `plan` pins the precondition the write will be conditional on (a generation, a replica
  count, a pod UID, a pinned template) — a human change after the plan makes the write fail;
- `effect_present` says from an observation whether this operation's write happened (the
  stamp, or the state only this write produces);
- `precondition_holds` says whether re-applying is still what was planned;
- `write` sends the one conditional write; `inverse` names what would undo it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from policies.model import MutationAction, MutationPolicy
from tools.mutate import kube as km
from tools.mutate.kube import KubeMutator
from tools.mutate.ledger import Inverse, Operation, Target, canonical

Json = dict[str, Any]


class PlanError(Exception):
    """The target's current state does not allow this mutation (said in plain words)."""


def _policy(info: ValidationInfo) -> MutationPolicy:
    ctx = info.context or {}
    policy = ctx.get("policy")
    return policy if isinstance(policy, MutationPolicy) else MutationPolicy()


class MutationArgs(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NoArgs(MutationArgs):
    pass


class ScaleArgs(MutationArgs):
    replicas: int = Field(ge=0, description="The replica count to set.")

    @field_validator("replicas")
    @classmethod
    def _within_policy(cls, value: int, info: ValidationInfo) -> int:
        limit = _policy(info).max_replicas
        if value > limit:
            msg = (
                f"replicas {value} is above the policy's limit of {limit}; ask for at most "
                f"{limit}, or have an operator raise mutations.max_replicas"
            )
            raise ValueError(msg)
        return value


class RollbackArgs(MutationArgs):
    revision: int | None = Field(
        default=None, ge=1, description="Revision to go back to; default: the previous one."
    )
    template_hash: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9]{1,20}$",
        description="Pin the ReplicaSet by its pod-template-hash instead of a revision.",
    )

    @model_validator(mode="after")
    def _one_of(self) -> RollbackArgs:
        if self.revision is not None and self.template_hash is not None:
            msg = "give revision or template_hash, not both"
            raise ValueError(msg)
        return self


class DeletePodArgs(MutationArgs):
    uid: str | None = Field(
        default=None, max_length=64, description="Only this pod UID; default: the one seen."
    )
    evict: bool = Field(
        default=True, description="Evict (honours PodDisruptionBudgets) rather than delete."
    )


class MutationSpec(ABC):
    action: ClassVar[MutationAction]
    kind: ClassVar[str]
    args_model: ClassVar[type[MutationArgs]]
    description: ClassVar[str]

    def check(self, target: Target, args: MutationArgs) -> str | None:
        """Policy checks that need the target as well as the arguments (None: fine)."""
        return None

    @abstractmethod
    def observe(self, target: Target, op_id: str) -> Json | None: ...

    @abstractmethod
    def plan(self, target: Target, args: MutationArgs, observed: Json) -> Json: ...

    @abstractmethod
    def snapshot(self, observed: Json | None) -> Json: ...

    @abstractmethod
    def effect_present(self, op: Operation, observed: Json | None) -> bool: ...

    @abstractmethod
    def precondition_holds(self, op: Operation, observed: Json | None) -> bool: ...

    @abstractmethod
    def write(self, op: Operation) -> Json:
        """The one write; returns facts learned from the answer (e.g. a silence ID)."""

    def still_as_left(self, op: Operation, observed: Json | None) -> bool:
        """The target is as this operation left it (undo would overwrite nothing newer)."""
        return self.effect_present(op, observed)

    def settle(self, op: Operation, observed: Json | None) -> None:  # noqa: B027
        """After success: anything left to record on the target (e.g. a missing stamp)."""

    def inverse(self, op: Operation, facts: Json) -> Inverse | None:
        return None


def _meta(obj: Json | None) -> Json:
    return (obj or {}).get("metadata") or {}


def _deployment_snapshot(dep: Json | None) -> Json:
    if dep is None:
        return {"exists": False}
    spec = dep.get("spec") or {}
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
    return {
        "generation": _meta(dep).get("generation"),
        "replicas": spec.get("replicas"),
        "revision": km.annotation(dep, km.REVISION),
        "images": [c.get("image") for c in containers],
        "operation": km.annotation(dep, km.STAMP),
        "restart": km.template_annotation(dep, km.RESTART_STAMP),
    }


class _DeploymentSpec(MutationSpec):
    kind = "Deployment"

    def __init__(self, kube: KubeMutator) -> None:
        self.kube = kube

    def observe(self, target: Target, op_id: str) -> Json | None:
        return self.kube.deployment(target.namespace, target.name)

    def snapshot(self, observed: Json | None) -> Json:
        return _deployment_snapshot(observed)

    def precondition_holds(self, op: Operation, observed: Json | None) -> bool:
        return observed is not None and _meta(observed).get("generation") == op.plan.get(
            "generation"
        )


def _not_paused(target: Target, observed: Json, what: str) -> None:
    """A paused Deployment rolls nothing out: the write would not do what was asked."""
    if (observed.get("spec") or {}).get("paused"):
        msg = (
            f"{target} is paused, so a {what} would not roll anything out; resume it first "
            f"(`kubectl rollout resume deployment/{target.name} -n {target.namespace}`) and "
            "ask again"
        )
        raise PlanError(msg)


class RolloutRestart(_DeploymentSpec):
    action = MutationAction.ROLLOUT_RESTART
    args_model = NoArgs
    description = "Restart a Deployment's pods with a rolling update (one new ReplicaSet)."

    def plan(self, target: Target, args: MutationArgs, observed: Json) -> Json:
        _not_paused(target, observed, "restart")
        return {"generation": _meta(observed).get("generation")}

    def effect_present(self, op: Operation, observed: Json | None) -> bool:
        return observed is not None and km.template_annotation(observed, km.RESTART_STAMP) == op.id

    def write(self, op: Operation) -> Json:
        t = op.target
        self.kube.restart(t.namespace, t.name, op_id=op.id, generation=op.plan["generation"])
        return {}


class Scale(_DeploymentSpec):
    action = MutationAction.SCALE
    args_model = ScaleArgs
    description = "Set a Deployment's replicas through the scale subresource."

    def plan(self, target: Target, args: MutationArgs, observed: Json) -> Json:
        return {"replicas": (observed.get("spec") or {}).get("replicas")}

    def effect_present(self, op: Operation, observed: Json | None) -> bool:
        replicas = ((observed or {}).get("spec") or {}).get("replicas")
        return observed is not None and replicas == op.args["replicas"]

    def precondition_holds(self, op: Operation, observed: Json | None) -> bool:
        replicas = ((observed or {}).get("spec") or {}).get("replicas")
        return observed is not None and replicas == op.plan["replicas"]

    def write(self, op: Operation) -> Json:
        t = op.target
        self.kube.scale(
            t.namespace, t.name, expected=op.plan["replicas"], replicas=op.args["replicas"]
        )
        return {}

    def still_as_left(self, op: Operation, observed: Json | None) -> bool:
        return self.effect_present(op, observed)  # the replica count is all an undo touches

    def settle(self, op: Operation, observed: Json | None) -> None:
        if observed is not None and km.annotation(observed, km.STAMP) != op.id:
            self.kube.stamp(op.target.namespace, op.target.name, op.id)

    def inverse(self, op: Operation, facts: Json) -> Inverse | None:
        before = op.plan.get("replicas")
        if before is None:
            return None
        return Inverse(action=self.action, target=op.target, args={"replicas": before})


class Rollback(_DeploymentSpec):
    action = MutationAction.ROLLBACK
    args_model = RollbackArgs
    description = "Put back the pod template of an earlier revision, pinned by template hash."

    def plan(self, target: Target, args: MutationArgs, observed: Json) -> Json:
        assert isinstance(args, RollbackArgs)
        _not_paused(target, observed, "rollback")
        replicasets = self.kube.replicasets(observed)
        current = km.current_replicaset(observed, replicasets)
        current_rev = int(km.annotation(observed, km.REVISION) or 0)
        chosen: Json | None = None
        if args.template_hash is not None:
            chosen = next(
                (rs for rs in replicasets if km.template_hash(rs) == args.template_hash), None
            )
            wanted = f"template hash {args.template_hash}"
        elif args.revision is not None:
            chosen = next(
                (rs for rs in replicasets if km.annotation(rs, km.REVISION) == str(args.revision)),
                None,
            )
            wanted = f"revision {args.revision}"
        else:
            older = [
                rs for rs in replicasets if int(km.annotation(rs, km.REVISION) or 0) < current_rev
            ]
            chosen = older[-1] if older else None
            wanted = "previous revision"
        if chosen is None:
            have = ", ".join(
                f"{km.annotation(rs, km.REVISION)} ({km.template_hash(rs)})" for rs in replicasets
            )
            msg = (
                f"{target} has no {wanted} to roll back to (revisions: {have or 'none'}); "
                "see `kubectl rollout history`"
            )
            raise PlanError(msg)
        return {
            "generation": _meta(observed).get("generation"),
            "template_hash": km.template_hash(chosen),
            "revision": km.annotation(chosen, km.REVISION),
            "template": km.strip_template((chosen.get("spec") or {}).get("template") or {}),
            "from_template_hash": km.template_hash(current) if current else None,
        }

    def effect_present(self, op: Operation, observed: Json | None) -> bool:
        if observed is None:
            return False
        if km.annotation(observed, km.STAMP) == op.id:
            return True
        template = (observed.get("spec") or {}).get("template") or {}
        return canonical(template) == canonical(op.plan["template"])

    def still_as_left(self, op: Operation, observed: Json | None) -> bool:
        # The stamp outlives later edits; only the template itself says nobody changed it.
        template = ((observed or {}).get("spec") or {}).get("template") or {}
        return observed is not None and canonical(template) == canonical(op.plan["template"])

    def write(self, op: Operation) -> Json:
        t = op.target
        self.kube.rollback(
            t.namespace,
            t.name,
            op_id=op.id,
            generation=op.plan["generation"],
            template=op.plan["template"],
        )
        return {}

    def inverse(self, op: Operation, facts: Json) -> Inverse | None:
        back = op.plan.get("from_template_hash")
        if not back:
            return None
        return Inverse(action=self.action, target=op.target, args={"template_hash": back})


class DeletePod(MutationSpec):
    action = MutationAction.DELETE_POD
    kind = "Pod"
    args_model = DeletePodArgs
    description = "Evict (or delete) one pod, only the UID that was seen."

    def __init__(self, kube: KubeMutator) -> None:
        self.kube = kube

    def observe(self, target: Target, op_id: str) -> Json | None:
        return self.kube.pod(target.namespace, target.name)

    def plan(self, target: Target, args: MutationArgs, observed: Json) -> Json:
        assert isinstance(args, DeletePodArgs)
        uid = _meta(observed).get("uid")
        if args.uid is not None and args.uid != uid:
            msg = f"{target} is now UID {uid}, not {args.uid}: the pod asked about is gone"
            raise PlanError(msg)
        return {"uid": uid, "evict": args.evict}

    def snapshot(self, observed: Json | None) -> Json:
        if observed is None:
            return {"exists": False}
        meta = _meta(observed)
        return {
            "uid": meta.get("uid"),
            "phase": (observed.get("status") or {}).get("phase"),
            "terminating": meta.get("deletionTimestamp") is not None,
            "node": (observed.get("spec") or {}).get("nodeName"),
        }

    def effect_present(self, op: Operation, observed: Json | None) -> bool:
        meta = _meta(observed)
        return (
            observed is None
            or meta.get("uid") != op.plan["uid"]
            or meta.get("deletionTimestamp") is not None
        )

    def precondition_holds(self, op: Operation, observed: Json | None) -> bool:
        return not self.effect_present(op, observed)

    def write(self, op: Operation) -> Json:
        t = op.target
        self.kube.delete_pod(t.namespace, t.name, uid=op.plan["uid"], evict=op.plan["evict"])
        return {}
