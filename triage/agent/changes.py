"""Changes the user asked for, the human approval some of them need, and the graph steps that
apply them through the ledger.

Only the user's own words can ask for a change: `requests_from_goal` reads `Goal.commands`
(typed by intake's command grammar, triage/agent/intent/), never the draft's remediation and
never tool output, so nothing in a log, an event or an annotation can trigger a mutation; and
only when a person asked (`requested_by`, `requested_via` are recorded on every Operation).

The steps run inside the checked run, after the draft and before the report is submitted and
judged, so the judge sees what was executed and checks its effect in the cluster; nothing is
applied after a verdict. `approve` pauses the graph (a LangGraph interrupt) while an operation
that policy says needs a human has no usable approval; the surface asks for it (an approval
card in Slack, `triage ops approve` for the CLI) and resumes the run. A decision is an
`Approval` object of its own, created by `approve()`/`refuse()` with the decider's identity
(tools/mutate/approvals.py), bound to the argument digest the decider was shown; the resumed
graph re-reads the ledger, recomputes the digest and re-checks the policy before any write:
the resume value can never approve anything by itself.
`mutate` then submits every request through the mutate registry; neither node has an
automatic retry (the registry does its own bounded, state-checked retries). Operation IDs are
derived from the run id, which is the same for every attempt of a run: a retry finds the
operation already done instead of doing it again.

This is the only module of the agent that holds the mutate side (import contract); surfaces
that show or decide operations (Slack's approval cards, `triage ops`) use the names exported
here.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from kubernetes import client as k8s
from langgraph.types import RetryPolicy, interrupt

from policies.model import MutationAction, MutationPolicy
from tools.mutate.approvals import judge_decisions, recomputed, record_decision
from tools.mutate.kube import KubeCall
from tools.mutate.ledger import Decision, Ledger, Operation, Phase, Target, utcnow
from tools.mutate.registry import MutateRegistry, MutationRequest, Outcome
from triage.agent.state import TriageState, goal_of
from triage.core.models import Command, Goal

__all__ = [
    "NO_RETRY",
    "ChangeSteps",
    "Decision",
    "Ledger",
    "MutateRegistry",
    "MutationRequest",
    "Operation",
    "Phase",
    "approve",
    "decided",
    "digest_of",
    "refuse",
    "request_for",
    "requests_from_goal",
    "usable_approval",
    "whoami",
]

#: Mutation nodes never retry on their own: a retry is a decision the registry takes only
#: after reading the cluster.
NO_RETRY = RetryPolicy(max_attempts=1)

DEFAULT_SILENCE_S = 3600


def request_for(
    command: Command,
    *,
    namespace: str,
    run: str,
    step: str,
    requested_by: str,
    requested_via: str,
) -> MutationRequest:
    """The ledger request for one typed command, in `namespace`."""
    name = command.target.name
    args: dict[str, Any] = dict(command.args)
    if command.target.kind == "Alert":
        target = Target(kind="Silence", namespace=namespace, name=name)
        args = {
            "matchers": [
                {"name": "alertname", "value": name},
                {"name": "namespace", "value": namespace},
            ],
            "duration_s": command.args.get("duration_s", DEFAULT_SILENCE_S),
            "comment": f"asked by {requested_by} in {run}"[:300],
        }
    else:
        target = Target(kind=command.target.kind, namespace=namespace, name=name)
    return MutationRequest(
        run=run,
        step=step,
        action=command.action.value,
        target=target,
        args=args,
        requested_by=requested_by,
        requested_via=requested_via,
    )


def requests_from_goal(
    goal: Goal, run: str, requested_by: str, requested_via: str
) -> tuple[list[MutationRequest], list[str]]:
    """The changes the user's words command, as requests; and what stops one from being made.

    A command's own namespace ("restart X in namespace shop") wins; otherwise the request's
    (an explicit -n, the words, the Slack channel's default). Nobody known, nothing made.
    """
    if not goal.commands:
        return [], []
    if not requested_by or not requested_via:
        return [], ["changes are only made for a known person; who asked is not known"]
    requests: list[MutationRequest] = []
    problems: list[str] = []
    for i, command in enumerate(goal.commands):
        namespace = command.namespace or goal.scope.namespace
        if namespace is None:
            problems.append(f"{command.sentence()}: say which namespace (e.g. 'in namespace shop')")
            continue
        requests.append(
            request_for(
                command,
                namespace=namespace,
                run=run,
                step=f"command:{i}:{command.action.value}",
                requested_by=requested_by,
                requested_via=requested_via,
            )
        )
    return requests, problems


# -- people ----------------------------------------------------------------------------------


def whoami(api_client: k8s.ApiClient, *, timeout_s: float = 10.0) -> str:
    """The user name the apiserver sees for this client (a SelfSubjectReview), so an approval
    names the person the cluster authenticated, not one they typed."""
    review = KubeCall(timeout_s).json(
        k8s.AuthenticationV1Api(api_client).create_self_subject_review,
        k8s.V1SelfSubjectReview(api_version="authentication.k8s.io/v1", kind="SelfSubjectReview"),
    )
    return str(((review.get("status") or {}).get("userInfo") or {}).get("username") or "")


def digest_of(op: Operation) -> str:
    """The digest of `op`'s arguments, recomputed: what an approval card shows and binds."""
    return recomputed(op)


def approve(
    ledger: Ledger,
    policy: MutationPolicy,
    op_id: str,
    approver: str,
    *,
    digest: str,
    via: str,
    now: datetime | None = None,
) -> Decision:
    """Record `approver`'s approval of exactly the arguments with `digest` (a `Refused` or
    `NotFound` says why not). `ledger` acts as the approver (their kubeconfig) or as the Slack
    approval recorder; the apiserver refuses anyone else, the mutator first of all."""
    return record_decision(
        ledger, policy, op_id, approver, approve=True, digest=digest, via=via, now=now or utcnow()
    )


def refuse(
    ledger: Ledger,
    policy: MutationPolicy,
    op_id: str,
    who: str,
    *,
    digest: str,
    via: str,
    now: datetime | None = None,
) -> Decision:
    """Record that `who` refused the operation; it will never be applied."""
    return record_decision(
        ledger, policy, op_id, who, approve=False, digest=digest, via=via, now=now or utcnow()
    )


# -- graph steps -----------------------------------------------------------------------------


def _summary(req: MutationRequest, outcome: Outcome) -> dict[str, Any]:
    op = outcome.operation
    return {
        "operation": op.id if op else None,
        "action": outcome.result.tool.removeprefix("mutate."),
        "target": str(op.target if op else req.target),
        "args": outcome.result.args,
        "phase": op.phase.value if op else None,
        "status": outcome.result.status.value,
        "excerpt": outcome.result.excerpt,
    }


def _waiting(op: Operation, registry: MutateRegistry) -> dict[str, Any]:
    return {
        "operation": op.id,
        "action": op.action,
        "target": str(op.target),
        "args": op.args,
        "args_digest": recomputed(op),
        "approvers": list(registry.policy.approvers_for(MutationAction(op.action))),
        "expires_at": (op.created_at.timestamp() + registry.policy.approval_ttl_s),
    }


class ChangeSteps:
    """The approve and mutate nodes of one graph, over one mutate registry."""

    def __init__(self, registry: MutateRegistry) -> None:
        self.registry = registry

    def _requests(self, state: TriageState) -> tuple[list[MutationRequest], list[str]]:
        return requests_from_goal(
            goal_of(state),
            state.get("run") or "run",
            state.get("requested_by") or "",
            state.get("requested_via") or "",
        )

    def waiting(self, state: TriageState) -> list[Operation]:
        """The operations of this run that need a human and have no usable approval yet."""
        registry = self.registry
        requests, _ = self._requests(state)
        out: list[Operation] = []
        for req in requests:
            action = MutationAction(req.action)
            if not registry.policy.allows(action) or not registry.policy.needs_approval(action):
                continue
            op = registry.submit(req, apply=False).operation
            if (
                op is not None
                and op.phase is Phase.AWAITING_APPROVAL
                and not _decided(registry, op)
                and registry.clock().timestamp()
                < op.created_at.timestamp() + registry.policy.approval_ttl_s
            ):
                out.append(op)
        return out

    def approve(self, state: TriageState) -> TriageState:
        """Pause until every operation that needs a person is decided (or has expired)."""
        waiting = self.waiting(state)
        if not waiting:
            return {"awaiting": []}
        # Resumed only after a decision (a click, `triage ops approve|refuse`) or the expiry;
        # the ledger is read again in `mutate`, whatever the resume value says.
        interrupt({"awaiting_approval": [_waiting(op, self.registry) for op in waiting]})
        return {"awaiting": []}

    def mutate(self, state: TriageState) -> TriageState:
        requests, problems = self._requests(state)
        results = [_summary(req, _submit(self.registry, req)) for req in requests]
        results += [
            {"operation": None, "status": "error", "excerpt": p, "phase": None} for p in problems
        ]
        return {"mutations": json.loads(json.dumps(results, default=str))}


def _submit(registry: MutateRegistry, req: MutationRequest) -> Outcome:
    """Submit; if another process holds the operation (say, this run before a crash), wait once
    for its claim to run out and submit again: the registry reads the target before any write."""
    outcome = registry.submit(req)
    op = outcome.operation
    if op is None or op.phase not in (Phase.PENDING, Phase.UNKNOWN) or op.holder is None:
        return outcome
    if op.holder.id == registry.holder_id:
        return outcome
    wait_s = (op.holder.until - registry.clock()).total_seconds()
    time.sleep(min(max(wait_s, 0.0) + 0.5, registry.lease_s + 1.0))
    return registry.submit(req)


def _decided(registry: MutateRegistry, op: Operation) -> bool:
    """Does `op` carry a decision that counts now (a usable approval, or a refusal)?"""
    verdict = judge_decisions(
        op, registry.ledger.decisions(op.id), registry.policy, registry.clock()
    )
    return verdict.approval is not None or verdict.refusal is not None


def usable_approval(registry: MutateRegistry, op: Operation) -> Decision | None:
    """The approval `op`'s execution could use now, if any."""
    verdict = judge_decisions(
        op, registry.ledger.decisions(op.id), registry.policy, registry.clock()
    )
    return verdict.approval


def decided(registry: MutateRegistry, op_ids: list[str]) -> bool:
    """Has every one of these operations been decided: approved (usably), refused, expired?"""
    now = registry.clock()
    for op_id in op_ids:
        op = registry.ledger.get(op_id)
        if op is None or op.phase is not Phase.AWAITING_APPROVAL:
            continue
        expired = now.timestamp() >= op.created_at.timestamp() + registry.policy.approval_ttl_s
        if not expired and not _decided(registry, op):
            return False
    return True


def wants_changes(state: TriageState) -> bool:
    return bool(goal_of(state).commands)
