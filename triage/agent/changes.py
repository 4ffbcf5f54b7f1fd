"""Changes the user asked for, the human approval some of them need, and the graph steps that
apply them through the ledger.

Only the user's own words can ask for a change: `requests_from_goal` reads `Goal.words` and
`Goal.mutations_named` (intake), never the draft's remediation and never tool output, so nothing
in a log, an event or an annotation can trigger a mutation.

The steps run inside the checked run, after the draft and before the report is submitted and
judged, so the judge sees what was executed and checks its effect in the cluster; nothing is
applied after a verdict. `approve` pauses the graph (a LangGraph interrupt) while an operation
that policy says needs a human has no usable approval; the surface asks for it (an approval
card in Slack, `triage ops approve` for the CLI) and resumes the run. Approvals are recorded
on the Operation itself (who, when, the exact argument digest, expiry) by `approve()`, and the
resumed graph re-reads the ledger: the resume value can never approve anything by itself.
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
import re
import time
from datetime import datetime
from typing import Any

from kubernetes import client as k8s
from langgraph.types import RetryPolicy, interrupt

from policies.model import MutationAction, MutationPolicy
from tools.mutate.kube import KubeCall
from tools.mutate.ledger import (
    Ledger,
    Operation,
    Phase,
    Target,
    approval_problem,
    record_approval,
    record_refusal,
    utcnow,
)
from tools.mutate.registry import MutateRegistry, MutationRequest, Outcome
from triage.agent.state import TriageState, goal_of

__all__ = [
    "NO_RETRY",
    "ChangeSteps",
    "MutateRegistry",
    "MutationRequest",
    "Operation",
    "Phase",
    "approve",
    "decided",
    "refuse",
    "requests_from_goal",
    "usable_approval",
    "whoami",
]
from triage.core.models import Goal

#: Mutation nodes never retry on their own: a retry is a decision the registry takes only
#: after reading the cluster.
NO_RETRY = RetryPolicy(max_attempts=1)

_SCALE_TO = re.compile(r"\b(?:to|at)\s+(\d{1,7})\b|\b(\d{1,7})\s+(?:replicas?|pods?|instances?)\b")
_REVISION = re.compile(r"\brevision\s+(\d{1,6})\b", re.I)
_ALERT = re.compile(r"\b(?:silence|mute)\s+(?:the\s+)?(?:alert\s+)?([A-Z][A-Za-z0-9_:]{2,100})\b")
_FOR = re.compile(r"\bfor\s+(\d{1,4})\s*(m|min|mins|minutes?|h|hrs?|hours?)\b", re.I)
_POD = re.compile(r"\bpod\s+([a-z0-9]([-a-z0-9]*[a-z0-9])?)\b")
DEFAULT_SILENCE_S = 3600


def _deployment(goal: Goal) -> str | None:
    for w in goal.scope.workloads:
        if w.kind in (None, "Deployment"):
            return w.name
    return None


def requests_from_goal(
    goal: Goal, run: str, requested_by: str = ""
) -> tuple[list[MutationRequest], list[str]]:
    """The changes named in the user's words, as requests; and what could not be understood."""
    namespace = goal.scope.namespace
    if not goal.mutations_named:
        return [], []
    if namespace is None:
        return [], ["say which namespace to change (e.g. 'in namespace shop')"]
    words = goal.words
    requests: list[MutationRequest] = []
    problems: list[str] = []
    for i, action in enumerate(goal.mutations_named):
        step = f"mutation:{i}:{action}"
        target: Target | None = None
        args: dict[str, Any] = {}
        if action in ("rollout_restart", "scale", "rollback"):
            name = _deployment(goal)
            if name is None:
                problems.append(f"{action}: name the Deployment (e.g. 'deployment checkout-api')")
                continue
            target = Target(kind="Deployment", namespace=namespace, name=name)
            if action == "scale":
                m = _SCALE_TO.search(words)
                if m is None:
                    problems.append("scale: say how many replicas (e.g. 'scale it to 5')")
                    continue
                args = {"replicas": int(m.group(1) or m.group(2))}
            elif action == "rollback":
                m = _REVISION.search(words)
                args = {"revision": int(m.group(1))} if m else {}
        elif action == "delete_pod":
            m = _POD.search(words)
            pod = next((w.name for w in goal.scope.workloads if w.kind == "Pod"), None)
            pod = pod or (m.group(1) if m else None)
            if pod is None:
                problems.append("delete_pod: name the pod (e.g. 'delete pod api-7d9f-abcde')")
                continue
            target = Target(kind="Pod", namespace=namespace, name=pod)
        elif action == "silence_create":
            m = _ALERT.search(words)
            if m is None:
                problems.append("silence: name the alert (e.g. 'silence HighErrorRate for 1h')")
                continue
            alertname = m.group(1)
            d = _FOR.search(words)
            seconds = DEFAULT_SILENCE_S
            if d is not None:
                seconds = int(d.group(1)) * (3600 if d.group(2).lower().startswith("h") else 60)
            target = Target(kind="Silence", namespace=namespace, name=alertname)
            args = {
                "matchers": [
                    {"name": "alertname", "value": alertname},
                    {"name": "namespace", "value": namespace},
                ],
                "duration_s": seconds,
                "comment": f"asked in {run}",
            }
        if target is None:
            problems.append(f"{action}: not something Triage can do from a message")
            continue
        requests.append(
            MutationRequest(
                run=run,
                step=step,
                action=action,
                target=target,
                args=args,
                requested_by=requested_by,
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


def approve(
    ledger: Ledger,
    policy: MutationPolicy,
    op_id: str,
    approver: str,
    *,
    now: datetime | None = None,
) -> Operation:
    """Record `approver`'s approval of exactly this operation's arguments (ValueError: why not)."""
    return record_approval(ledger, policy, op_id, approver, now=now or utcnow())


def refuse(ledger: Ledger, policy: MutationPolicy, op_id: str, who: str) -> Operation:
    """Record that `who` refused the operation; it will never be applied."""
    return record_refusal(ledger, policy, op_id, who)


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
        "args_digest": op.args_digest,
        "approvers": list(registry.policy.approvers_for(MutationAction(op.action))),
        "expires_at": (op.created_at.timestamp() + registry.policy.approval_ttl_s),
    }


class ChangeSteps:
    """The approve and mutate nodes of one graph, over one mutate registry."""

    def __init__(self, registry: MutateRegistry) -> None:
        self.registry = registry

    def _requests(self, state: TriageState) -> tuple[list[MutationRequest], list[str]]:
        return requests_from_goal(
            goal_of(state), state.get("run") or "run", state.get("requested_by") or ""
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
                and approval_problem(op, registry.policy, registry.clock()) is not None
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


def usable_approval(registry: MutateRegistry, op: Operation) -> bool:
    """Does `op` carry an approval that its execution can use now?"""
    return approval_problem(op, registry.policy, registry.clock()) is None


def decided(registry: MutateRegistry, op_ids: list[str]) -> bool:
    """Has every one of these operations been decided: approved (usably), refused, expired?"""
    now = registry.clock()
    for op_id in op_ids:
        op = registry.ledger.get(op_id)
        if op is None or op.phase is not Phase.AWAITING_APPROVAL:
            continue
        expired = now.timestamp() >= op.created_at.timestamp() + registry.policy.approval_ttl_s
        if not expired and approval_problem(op, registry.policy, now) is not None:
            return False
    return True


def wants_changes(state: TriageState) -> bool:
    return bool(goal_of(state).mutations_named)
