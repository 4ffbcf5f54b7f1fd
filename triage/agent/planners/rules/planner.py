"""The rules planner: deterministic playbooks, no model, the honest baseline.

It investigates the way a senior SRE does (triage/agent/planners/rules/reads.py: the
namespace, a survey of every kind that can hold the cause, follow-ups chosen by what the
survey shows, hops to the dependencies a failing container names, the metric signals that
exist) and diagnoses with causal chains (diagnosis.py over the analyzers). The same evidence
always gives the same next step and the same RCA.
"""

from __future__ import annotations

from tools.redact import DEFAULT
from triage.agent.planners.base import ToolCall
from triage.agent.planners.rules import diagnosis, queries, reads
from triage.agent.planners.rules.context import build
from triage.agent.planners.rules.facts import Facts
from triage.core import quarantine
from triage.core.causes import CauseClass
from triage.core.models import Claim, Evidence, Goal, RCADraft


class RulesPlanner:
    name = "rules"

    def plan(self, goal: Goal, evidence: list[Evidence], now: float) -> list[ToolCall]:
        ns = goal.scope.namespace
        if ns is None:
            return []
        facts = Facts(evidence)
        ns_ev = facts.get("k8s.namespace", namespace=ns)
        if ns_ev is None:
            return [reads.call("k8s.namespace", namespace=ns)]
        if not ns_ev.ok:
            return []  # unknown namespace or no apiserver: nothing else can be learned
        first = [
            c
            for c in [*reads.survey(ns), *queries.metric_discovery(goal, ns, now)]
            if not facts.has(c.name, **c.args)
        ]
        if first:
            return first
        ctx = build(goal, facts, ns, now)
        hops = {n for _s, n, _p, _l in reads.hosts_failing(ctx)}
        return [
            *reads.follow_ups(ctx),
            *queries.metrics(goal, facts, ns, now),
            *(c for n in sorted(hops) for c in queries.dependency_metrics(goal, facts, n, now)),
        ]

    def draft(self, goal: Goal, evidence: list[Evidence], now: float) -> RCADraft:
        result = diagnosis.draft(goal, Facts(evidence), now, planner=self.name)
        # Instruction-like text in tool output is reported to a human, never obeyed.
        suspicious = quarantine.scan(evidence, DEFAULT)
        update: dict[str, object] = {"suspicious_inputs": suspicious}
        ok = {e.id for e in evidence if e.ok}
        cited = [s for s in suspicious if s.evidence in ok]
        if cited:
            first = cited[0]
            note = Claim(
                text=f"{len(suspicious)} line(s) of what was read look like instructions to "
                f"an agent (first: {first.where} of {first.evidence}, {first.reason}); they are "
                "untrusted data, reported here and not obeyed.",
                evidence=tuple(dict.fromkeys(s.evidence for s in cited)),
            )
            if result.root_cause_class is CauseClass.NO_FAULT:
                update["root_cause"] = (*result.root_cause, note)
            else:
                update["contributing_factors"] = (*result.contributing_factors, note)
        return result.model_copy(update=update)
