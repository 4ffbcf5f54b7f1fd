"""Alertmanager's two mutations: create a silence, expire one (split from actions.py).

Same contract as the Kubernetes mutations there: arguments validated against the policy
(bounded duration, no wildcard matchers, scoped to the operation's namespace) before anything is
sent; the operation ID travels in the silence's comment, which is how a lost answer is settled.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, ValidationInfo, field_validator

from policies.model import MutationAction
from tools.mutate.actions import MutationArgs, MutationSpec, PlanError, _policy
from tools.mutate.alertmanager import AlertmanagerMutator
from tools.mutate.ledger import Inverse, Operation, Target

Json = dict[str, Any]

_LABEL = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
_SILENCE_ID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


class Matcher(MutationArgs):
    name: str = Field(pattern=_LABEL, max_length=100)
    value: str = Field(max_length=500)
    is_regex: bool = False
    is_equal: bool = True

    def wildcard(self) -> bool:
        """Matches (nearly) everything: an empty or always-matching regex, or a negation."""
        if not self.is_equal:
            return True
        if not self.is_regex:
            return self.value == ""
        try:
            return re.fullmatch(self.value, "") is not None or self.value in {".+", ".*", "..*"}
        except re.error:
            return True

    def wire(self) -> Json:
        return {
            "name": self.name,
            "value": self.value,
            "isRegex": self.is_regex,
            "isEqual": self.is_equal,
        }


class SilenceCreateArgs(MutationArgs):
    matchers: tuple[Matcher, ...] = Field(min_length=1, max_length=16)
    duration_s: int = Field(ge=60, description="How long the silence lasts, seconds.")
    comment: str = Field(default="", max_length=300)

    @field_validator("matchers")
    @classmethod
    def _no_wildcards(cls, value: tuple[Matcher, ...]) -> tuple[Matcher, ...]:
        wild = [m.name for m in value if m.wildcard()]
        if wild:
            msg = (
                f"matcher(s) {', '.join(wild)} would match (nearly) every alert; name the "
                "alert with exact equality matchers (e.g. alertname=HighLatency)"
            )
            raise ValueError(msg)
        return value

    @field_validator("duration_s")
    @classmethod
    def _within_policy(cls, value: int, info: ValidationInfo) -> int:
        limit = _policy(info).max_silence_s
        if value > limit:
            msg = (
                f"a {value}s silence is longer than the policy's limit of {limit}s; ask for "
                f"at most {limit // 60} minutes, or extend it in Alertmanager yourself"
            )
            raise ValueError(msg)
        return value


class SilenceExpireArgs(MutationArgs):
    silence_id: str = Field(pattern=_SILENCE_ID)


def _namespace_matcher(matchers: list[Json] | tuple[Matcher, ...], namespace: str) -> bool:
    for m in matchers:
        d = m.wire() if isinstance(m, Matcher) else m
        if (
            d.get("name") == "namespace"
            and d.get("value") == namespace
            and d.get("isEqual", True)
            and not d.get("isRegex", False)
        ):
            return True
    return False


class SilenceCreate(MutationSpec):
    action = MutationAction.SILENCE_CREATE
    kind = "Silence"
    args_model = SilenceCreateArgs
    description = "Silence matching alerts for a bounded time (the operation ID in the comment)."

    def __init__(self, alertmanager: AlertmanagerMutator) -> None:
        self.am = alertmanager

    def check(self, target: Target, args: MutationArgs) -> str | None:
        assert isinstance(args, SilenceCreateArgs)
        if not _namespace_matcher(args.matchers, target.namespace):
            return (
                f"a silence must be scoped to its namespace: add the matcher "
                f"namespace={target.namespace}"
            )
        return None

    def observe(self, target: Target, op_id: str) -> Json | None:
        return {"silences": self.am.find(op_id)}

    def plan(self, target: Target, args: MutationArgs, observed: Json) -> Json:
        return {}

    def snapshot(self, observed: Json | None) -> Json:
        found = (observed or {}).get("silences") or []
        return {"silences": [{"id": s.get("id"), "state": s["status"]["state"]} for s in found]}

    def effect_present(self, op: Operation, observed: Json | None) -> bool:
        return bool((observed or {}).get("silences"))

    def precondition_holds(self, op: Operation, observed: Json | None) -> bool:
        return True  # nothing a human can change makes "create this silence" stale

    def write(self, op: Operation) -> Json:
        silence_id = self.am.create(
            op_id=op.id,
            matchers=[Matcher.model_validate(m).wire() for m in op.args["matchers"]],
            duration_s=op.args["duration_s"],
            comment=op.args.get("comment", ""),
        )
        return {"silence_id": silence_id}

    def inverse(self, op: Operation, facts: Json) -> Inverse | None:
        silence_id = facts.get("silence_id")
        if not silence_id:
            found = facts.get("silences") or []
            silence_id = found[0].get("id") if found else None
        if not silence_id:
            return None
        return Inverse(
            action=MutationAction.SILENCE_EXPIRE,
            target=op.target.model_copy(update={"name": silence_id}),
            args={"silence_id": silence_id},
        )


class SilenceExpire(MutationSpec):
    action = MutationAction.SILENCE_EXPIRE
    kind = "Silence"
    args_model = SilenceExpireArgs
    description = "Expire a silence now."

    def __init__(self, alertmanager: AlertmanagerMutator) -> None:
        self.am = alertmanager

    def observe(self, target: Target, op_id: str) -> Json | None:
        return self.am.silence(target.name)

    def plan(self, target: Target, args: MutationArgs, observed: Json) -> Json:
        if not _namespace_matcher(observed.get("matchers") or [], target.namespace):
            msg = f"silence {target.name} is not scoped to namespace {target.namespace}"
            raise PlanError(msg)
        state = observed["status"]["state"]
        if state == "expired":
            msg = f"silence {target.name} has already expired; there is nothing to expire"
            raise PlanError(msg)
        return {"state": state}

    def snapshot(self, observed: Json | None) -> Json:
        if observed is None:
            return {"exists": False}
        return {"id": observed.get("id"), "state": observed["status"]["state"]}

    def effect_present(self, op: Operation, observed: Json | None) -> bool:
        return observed is not None and observed["status"]["state"] == "expired"

    def precondition_holds(self, op: Operation, observed: Json | None) -> bool:
        return observed is not None and observed["status"]["state"] != "expired"

    def write(self, op: Operation) -> Json:
        self.am.expire(op.target.name)
        return {}
