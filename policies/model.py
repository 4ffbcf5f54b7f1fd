"""The policy file as types: what an operator allows Triage to do, validated before use.

One file, one model, sections per concern. This module holds the `mutations` section (which
actions, in which namespaces, within which bounds, approved by whom); later sections (activation,
budgets, pricing, redaction groups) are added beside it as further fields of `Policy`. Unknown
keys are refused, so a typo in an operator's file fails loudly instead of silently allowing
nothing (or everything). `policy.schema.json` is generated from these models
(`python -m policies.schema`) and a test keeps the two in step.
"""

from __future__ import annotations

import re
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field, field_validator

from policies.verification import VerificationPolicy


class MutationAction(StrEnum):
    """Every change Triage knows how to make. A policy allows a subset."""

    ROLLOUT_RESTART = "rollout_restart"
    SCALE = "scale"
    ROLLBACK = "rollback"
    DELETE_POD = "delete_pod"
    SILENCE_CREATE = "silence_create"
    SILENCE_EXPIRE = "silence_expire"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


_BARE_SLACK_ID = re.compile(r"^[UW][A-Z0-9]{6,}$")


def _approver_names(value: tuple[str, ...] | None) -> tuple[str, ...] | None:
    for who in value or ():
        if _BARE_SLACK_ID.match(who):
            msg = (
                f"approver {who!r} looks like a Slack user id: write it as 'slack:{who}' "
                "(Kubernetes users are written as the apiserver reports them, e.g. 'alice')"
            )
            raise ValueError(msg)
        if not who.strip():
            msg = "an approver must not be empty"
            raise ValueError(msg)
    return value


class ActionRule(_Strict):
    """How one allowed action may be used."""

    approval: bool = Field(
        default=True,
        description="True (the default): a person listed in `approvers` must approve each "
        "operation before it is applied (from Slack or `triage ops approve`). False: the "
        "command of a person is enough; only an operator should relax this.",
    )
    approvers: tuple[str, ...] | None = Field(
        default=None,
        description="Who may approve this action: Kubernetes user names as the apiserver "
        "reports them (`kubectl auth whoami`), or Slack users as `slack:U123` (any "
        "workspace) or `slack:T123/U123`. Unset: the section's `approvers`.",
    )

    _names = field_validator("approvers")(_approver_names)


class MutationPolicy(_Strict):
    """The `mutations` section. The default allows nothing: an operator opts in."""

    namespaces: tuple[str, ...] = Field(
        default=(),
        description="Namespaces Triage may change anything in (exact names). Silences must "
        "carry an equality matcher on one of them.",
    )
    actions: dict[MutationAction, ActionRule] = Field(
        default_factory=dict,
        description="Allowed actions; an action not listed here is refused.",
    )
    max_replicas: int = Field(
        default=20,
        ge=0,
        le=10_000,
        description="Highest replica count `scale` may set. 20 covers a typical service's "
        "burst without letting a typo (2000) empty the cluster's capacity.",
    )
    max_silence_s: int = Field(
        default=4 * 3600,
        ge=60,
        le=14 * 86400,
        description="Longest silence, seconds. Four hours covers an incident; a longer "
        "silence should be a human decision in Alertmanager.",
    )
    approvers: tuple[str, ...] = Field(
        default=(),
        description="Who may approve actions that need approval (unless the action names its "
        "own): Kubernetes user names, or Slack users as `slack:U123` / `slack:T123/U123`. "
        "Empty: nobody can, so such actions can never run.",
    )
    approval_ttl_s: int = Field(
        default=900,
        ge=30,
        le=86400,
        description="How long an approval stays usable, seconds. 15 minutes: long enough to "
        "click, short enough that the cluster has not moved on.",
    )

    _names = field_validator("approvers")(_approver_names)

    @field_validator("namespaces")
    @classmethod
    def _no_wildcard_namespaces(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for ns in value:
            if not ns or "*" in ns:
                msg = f"namespace {ns!r}: list namespaces by exact name, no wildcards"
                raise ValueError(msg)
        return value

    def allows(self, action: MutationAction) -> bool:
        return action in self.actions

    def needs_approval(self, action: MutationAction) -> bool:
        rule = self.actions.get(action)
        return bool(rule and rule.approval)

    def approvers_for(self, action: MutationAction) -> tuple[str, ...]:
        rule = self.actions.get(action)
        if rule is not None and rule.approvers is not None:
            return rule.approvers
        return self.approvers

    def may_approve(self, action: MutationAction, who: str) -> bool:
        """Is `who` (`alice`, `slack:T123/U456`) an approver of `action`? A Slack user listed
        without a workspace (`slack:U456`) matches in any workspace."""
        listed = self.approvers_for(action)
        if who in listed:
            return True
        if who.startswith("slack:") and "/" in who:
            return f"slack:{who.rpartition('/')[2]}" in listed
        return False


class Policy(_Strict):
    """The whole policy file. `version` lets a future format be told apart."""

    version: int = Field(default=1, ge=1, le=1, description="Format version; only 1 exists.")
    mutations: MutationPolicy = Field(
        default_factory=MutationPolicy, description="What Triage may change, and how."
    )
    verification: VerificationPolicy = Field(
        default_factory=VerificationPolicy,
        description="When the judge checks, attempts and budget per run, model prices.",
    )
