"""The LLM planner: a LangChain chat model chooses the read calls and writes the RCA, inside the
same fences as the rules planner.

It implements the `Planner` protocol, so the graph runs it exactly like the rules planner and
it can only ever return read-tool calls: the model is offered the read registry's tools and
nothing else, a call to anything else (or outside the request's namespace) is refused and
noted, and remediations are typed proposals in the draft that nobody executes here.

What the model sees is built fresh on every turn from the evidence (nothing hides in a chat
history): the request and scope, the rules planner's next calls and diagnosis as hints, and the
evidence as untrusted data — redacted, with instruction-like lines quarantined
(`triage.injection`). What comes back (`triage.llm_replies`) is checked: every claim must cite
evidence that exists and is `ok`, a claim or remediation that echoes a quarantined instruction
is dropped, and a draft left with no valid root cause falls back to the rules planner's.

Model errors, timeouts and unusable replies are retried within `ModelClient`'s bound; after
that the rules planner finishes the run and the RCA says so (`unavailable` and `notes`).
One instance per investigation: it remembers its turns, its fallback and its notes.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from tools.redact import Redactor
from tools.results import clip
from triage.agent.planners.base import ToolCall, already_called
from triage.agent.planners.llm import prompts
from triage.agent.planners.llm.replies import (
    SUBMIT_RCA,
    ClaimOut,
    RCAProposal,
    RemediationOut,
    parse_draft,
    parse_plan,
    quote,
    submit_tool,
)
from triage.agent.planners.rules.planner import RulesPlanner
from triage.core import quarantine
from triage.core.causes import CauseClass
from triage.core.errors import ModelError, ModelUnavailable
from triage.core.llm import ModelClient
from triage.core.models import (
    Claim,
    Evidence,
    Goal,
    MutationProposal,
    RCADraft,
    SuspiciousInput,
    TimelineEntry,
)
from triage.core.settings import PlannerSettings, Settings

T = TypeVar("T")
MAX_NOTES = 30
MAX_HINT_CALLS = 20
MAX_FEEDBACK_ITEMS = 10
MAX_FEEDBACK_CHARS = 300


# -- the planner --------------------------------------------------------------------------------


class LLMPlanner:
    """Planner protocol over a chat model, with the rules planner as hints and as fallback."""

    name = "llm"

    def __init__(
        self,
        client: ModelClient,
        *,
        settings: PlannerSettings | None = None,
        redactor: Redactor | None = None,
        model_name: str = "chat model",
    ) -> None:
        self.client = client
        self.settings = settings or PlannerSettings()
        self.base_redactor = redactor or client.redactor
        self.redactor = self.base_redactor
        self._learned_from = -1
        self.model_name = model_name
        self.rules = RulesPlanner()
        self.turns = 0
        self.fallback: str | None = None
        self.notes: list[str] = []
        self._nonce = secrets.token_hex(6)
        self.model_seconds = 0.0
        self.feedback: list[str] = []

    @classmethod
    def from_settings(cls, settings: Settings, redactor: Redactor | None = None) -> LLMPlanner:
        """Build from the settings root (the composition root passes its redactor); raises
        ModelNotConfigured with a plain reason."""
        redactor = redactor or Redactor(settings.redaction_patterns)
        client = ModelClient.from_settings(settings.worker_model, "worker", redactor)
        return cls(
            client,
            settings=settings.planner,
            redactor=redactor,
            model_name=settings.worker_model.name or "chat model",
        )

    # -- Planner protocol (and TakesFeedback) --

    def take_feedback(self, missing: Sequence[str]) -> None:
        """The judge's `missing` list from a rejected attempt, shown to the model as the work
        still to do; cleaned like tool output, since it may quote it."""
        self.feedback = [self._clean(clip(m, MAX_FEEDBACK_CHARS)) for m in missing][
            :MAX_FEEDBACK_ITEMS
        ]

    def _learn_secrets(self, goal: Goal, evidence: list[Evidence]) -> None:
        """Mask, everywhere, the exact secrets seen in a recognised format anywhere in the run:
        intake may have echoed a pasted password bare (as a "workload" name), a log may
        repeat a token without its `TOKEN=` prefix."""
        if self._learned_from == len(evidence):
            return
        self._learned_from = len(evidence)
        found = self.base_redactor.secrets_in(goal.words)
        for ev in evidence:
            for _, text in (*quarantine.strings(ev.excerpt), *quarantine.strings(ev.data)):
                found += self.base_redactor.secrets_in(text)
        self.redactor = self.base_redactor.with_literals(found)
        self.client.redactor = self.redactor

    def plan(self, goal: Goal, evidence: list[Evidence], now: float) -> list[ToolCall]:
        self._learn_secrets(goal, evidence)
        ns = goal.scope.namespace
        if self.fallback is not None or ns is None:
            return self.rules.plan(goal, evidence, now)
        ns_ev = next((e for e in evidence if e.tool == "k8s.namespace"), None)
        if ns_ev is None:  # the one deterministic gate: no model call for a missing namespace
            return [ToolCall(name="k8s.namespace", args={"namespace": ns})]
        if not ns_ev.ok or self.turns >= self.settings.max_model_turns:
            return []
        self.turns += 1
        messages = self._plan_messages(goal, evidence, now)
        try:
            reply = self._ask(messages, parse_plan, prompts.read_tool_schemas())
        except ModelError as e:
            self._fall_back(f"planning failed after bounded retries ({e})")
            return self.rules.plan(goal, evidence, now)
        for why in reply.refused:
            self._note(f"turn {self.turns}: {why}")
        seen = already_called(evidence)
        # A call the rules playbook would make itself is taken as the playbook has it: with
        # its purpose (what the diagnosis reads it for) and its hops into the namespaces the
        # failing containers name; anything else stays inside the asked namespace.
        playbook = {c.key: c for c in self.rules.plan(goal, evidence, now)}
        calls: list[ToolCall] = []
        for call in reply.calls:
            known = playbook.get(call.key)
            outside = call.args.get("namespace") not in (None, ns)
            if known is None and outside:
                self._note(f"turn {self.turns}: refused {call.name} outside namespace {ns}")
            elif call.key not in seen and call.key not in {c.key for c in calls}:
                calls.append(known or call)
        return calls[: self.settings.max_calls_per_turn]

    def draft(self, goal: Goal, evidence: list[Evidence], now: float) -> RCADraft:
        self._learn_secrets(goal, evidence)
        rules_draft = self.rules.draft(goal, evidence, now)
        suspicious = quarantine.scan(evidence, self.redactor)
        ns_ev = next((e for e in evidence if e.tool == "k8s.namespace"), None)
        if self.fallback is not None:
            return self._finish(rules_draft, suspicious)
        if ns_ev is None or not ns_ev.ok:
            self._note("model not consulted: the namespace could not be read")
            return self._finish(rules_draft, suspicious, planner="llm")
        messages = self._draft_messages(goal, evidence, now, rules_draft)
        try:
            try:
                proposal = self._ask(messages, parse_draft, [submit_tool()], SUBMIT_RCA)
            except ModelUnavailable as e:
                if "(HTTP 400)" not in str(e):
                    raise
                # Some OpenAI-compatible servers refuse a named tool_choice; the prompt
                # already asks for submit_rca, so ask once more without forcing it.
                self._note("the server refused a forced tool choice; asked without it")
                proposal = self._ask(messages, parse_draft, [submit_tool()])
        except ModelError as e:
            self._fall_back(f"drafting failed after bounded retries ({e})")
            return self._finish(rules_draft, suspicious)
        accepted = self._accept(proposal, goal, evidence, suspicious, rules_draft)
        if accepted is None:
            return self._finish(rules_draft, suspicious)
        return self._finish(accepted, suspicious, planner="llm")

    def _ask(
        self,
        messages: list[BaseMessage],
        parse: Callable[[AIMessage], T],
        tools: list[dict[str, Any]],
        tool_choice: str | None = None,
    ) -> T:
        """One model request within the investigation's model-time budget."""
        budget = self.settings.max_model_seconds
        if self.model_seconds >= budget:
            msg = f"the model-time budget of {budget:g} s is spent"
            raise ModelUnavailable(msg)
        started = time.monotonic()
        try:
            return self.client.invoke(messages, parse, tools=tools, tool_choice=tool_choice)
        finally:
            self.model_seconds += time.monotonic() - started

    # -- prompts --

    def _safe(self, evidence: list[Evidence]) -> list[Evidence]:
        """Evidence as the model may see it: redacted, instruction-like lines quarantined."""
        out = []
        for ev in evidence:
            out.append(
                ev.model_copy(
                    update={
                        "args": quarantine.clean(self.redactor.data(ev.args)),
                        "excerpt": quarantine.clean_text(self.redactor.text(ev.excerpt)),
                        "data": quarantine.clean(self.redactor.data(ev.data)),
                    }
                )
            )
        return out

    def _clean(self, text: str) -> str:
        return quarantine.clean_text(self.redactor.text(text))

    def _hints(self, goal: Goal, evidence: list[Evidence], now: float) -> str:
        seen = already_called(evidence)
        upcoming = [c for c in self.rules.plan(goal, evidence, now) if c.key not in seen]
        next_calls = [
            self._clean(f"{prompts.function_name(c.name)} {json.dumps(c.args, sort_keys=True)}")
            for c in upcoming[:MAX_HINT_CALLS]
        ]
        diagnosis: list[str] = []
        if any(e.tool == "k8s.pods" for e in evidence):
            d = self.rules.draft(goal, evidence, now)
            diagnosis.append(self._clean(f"{d.root_cause_class}: {d.summary}"))
            diagnosis += [
                self._clean(f"{c.text} [{', '.join(c.evidence)}]")
                for c in (*d.root_cause, *d.contributing_factors)
            ]
        return prompts.hints(next_calls, diagnosis)

    def _user(self, goal: Goal, evidence: list[Evidence], now: float, extra: str) -> str:
        return (
            prompts.task(goal, now, self.redactor.text(goal.words))
            + "\n"
            + extra
            + "\n"
            + prompts.feedback(self.feedback)
            + prompts.evidence_block(
                self._safe(evidence),
                self._nonce,
                total_chars=self.settings.evidence_chars,
                item_chars=self.settings.item_chars,
            )
        )

    def _plan_messages(self, goal: Goal, evidence: list[Evidence], now: float) -> list[BaseMessage]:
        system = prompts.SYSTEM_PLAN.format(namespace=goal.scope.namespace, nonce=self._nonce)
        hints = self._hints(goal, evidence, now)
        return [
            SystemMessage(content=system),
            HumanMessage(content=self._user(goal, evidence, now, hints)),
        ]

    def _draft_messages(
        self, goal: Goal, evidence: list[Evidence], now: float, rules_draft: RCADraft
    ) -> list[BaseMessage]:
        system = prompts.SYSTEM_DRAFT.format(nonce=self._nonce, classes=prompts.cause_classes())
        hints = self._hints(goal, evidence, now)
        return [
            SystemMessage(content=system),
            HumanMessage(content=self._user(goal, evidence, now, hints)),
        ]

    # -- checking what came back --

    def _accept(
        self,
        proposal: RCAProposal,
        goal: Goal,
        evidence: list[Evidence],
        suspicious: tuple[SuspiciousInput, ...],
        rules_draft: RCADraft,
    ) -> RCADraft | None:
        """The proposal as an RCADraft with every unsupported part dropped (and noted), or None
        when what is left cannot stand as an RCA."""
        ok_ids = {e.id for e in evidence if e.ok}
        all_ids = {e.id for e in evidence}
        for text in (proposal.title, proposal.summary, proposal.impact):
            if quarantine.flag(text):
                self._note("the model's RCA repeated instruction-like text from tool output")
                self._fall_back("the model's RCA could not be trusted")
                return None

        def claims(items: list[ClaimOut], section: str) -> tuple[Claim, ...]:
            kept = []
            for c in items:
                bad = [i for i in c.evidence if i not in ok_ids]
                if bad:
                    why = ", ".join(
                        f"{i} {'is not ok' if i in all_ids else 'does not exist'}" for i in bad
                    )
                    self._note(f"dropped {section} claim {quote(c.text, 80)}: {why}")
                elif quarantine.flag(c.text):
                    self._note(f"dropped {section} claim: it repeats instruction-like text")
                else:
                    kept.append(
                        Claim(text=c.text, evidence=tuple(dict.fromkeys(c.evidence)), role=c.role)
                    )
            return tuple(kept)

        found_fault = (
            not rules_draft.inconclusive and rules_draft.root_cause_class is not CauseClass.NO_FAULT
        )
        says_healthy = proposal.root_cause_class is CauseClass.NO_FAULT
        if found_fault and says_healthy:
            # "everything is fine" against an evidence-backed finding is what an injection
            # would want the verdict to be; the deterministic finding stands.
            self._note(
                f"the model said no fault, but the evidence shows {rules_draft.root_cause_class}"
            )
            self._fall_back("the model's verdict contradicted the evidence")
            return None
        root = claims(proposal.root_cause, "root-cause")
        contributing = claims(proposal.contributing_factors, "contributing")
        if not root and not proposal.inconclusive:
            self._note("the model's RCA had no root-cause claim backed by ok evidence")
            self._fall_back("the model's RCA cited no usable evidence")
            return None
        timeline = tuple(
            TimelineEntry(at=t.at, what=t.what, evidence=tuple(t.evidence))
            for t in proposal.timeline
            if set(t.evidence) <= ok_ids and not quarantine.flag(t.what)
        )
        remediation = self._remediation(proposal.remediation, goal, evidence, suspicious)
        follow_ups = tuple(f for f in proposal.follow_ups if not quarantine.flag(f))
        return RCADraft(
            title=proposal.title,
            summary=proposal.summary,
            root_cause_class=proposal.root_cause_class,
            cause=proposal.cause,
            impact=proposal.impact,
            timeline=timeline,
            root_cause=root,
            contributing_factors=contributing,
            remediation=remediation,
            follow_ups=follow_ups,
            inconclusive=proposal.inconclusive
            or not root
            or (
                not proposal.root_cause_class.is_cause
                and proposal.root_cause_class is not CauseClass.NO_FAULT
            ),
            checked=rules_draft.checked,
            unavailable=rules_draft.unavailable,
            nonexistent=rules_draft.nonexistent,
            planner="llm",
        )

    def _remediation(
        self,
        items: list[RemediationOut],
        goal: Goal,
        evidence: list[Evidence],
        suspicious: tuple[SuspiciousInput, ...],
    ) -> tuple[MutationProposal, ...]:
        """Proposals that cite ok evidence, stay in scope, name something that exists, and do
        not echo an instruction found in tool output."""
        ok = {e.id: e for e in evidence if e.ok}
        ns = goal.scope.namespace
        injected: set[str] = set()
        for s in suspicious:
            injected |= quarantine.requested_actions(s.text)
        known = _strings_in(e.data for e in ok.values())
        kept = []
        for r in items:
            label = f"{r.action} {quote(r.target, 80)}"
            parts = r.target.strip("/").split("/")
            name = parts[-1]
            target_ns = parts[1] if len(parts) == 3 else ns
            problem = None
            if r.action == "none":
                problem = None
            elif not r.evidence or not set(r.evidence) <= set(ok):
                problem = "it does not cite ok evidence"
            elif r.action in injected:
                problem = "tool output asked for this action (suspicious input)"
            elif quarantine.flag(r.rationale) or quarantine.flag(json.dumps(r.args)):
                problem = "it repeats instruction-like text"
            elif target_ns != ns:
                problem = f"its target is outside namespace {ns}"
            elif name not in known:
                problem = f"{name!r} does not appear in the evidence"
            if problem:
                self._note(f"dropped remediation {label}: {problem}")
                continue
            kept.append(
                MutationProposal(
                    action=r.action, target=r.target, args=r.args, rationale=r.rationale
                )
            )
        return tuple(kept)

    # -- bookkeeping --

    def _note(self, text: str) -> None:
        """Our own words (model fragments in them pass through `quote`), redacted."""
        if len(self.notes) < MAX_NOTES:
            self.notes.append(self.redactor.text(text))

    def _fall_back(self, reason: str) -> None:
        if self.fallback is None:
            self.fallback = self._clean(reason)
            self._note(f"fell back to the rules planner: {self.fallback}")

    def _finish(
        self,
        draft: RCADraft,
        suspicious: tuple[SuspiciousInput, ...],
        planner: str | None = None,
    ) -> RCADraft:
        """Attach notes, usage, the fallback and the suspicious inputs; redact the whole."""
        unavailable = draft.unavailable
        follow_ups = draft.follow_ups
        if self.fallback is not None:
            unavailable = (
                *unavailable,
                f"LLM planner ({self.model_name}): {self.fallback}; this RCA is the rules "
                "planner's.",
            )
        if suspicious:
            ids = ", ".join(dict.fromkeys(s.evidence for s in suspicious))
            follow_ups = (
                *follow_ups,
                f"Review {len(suspicious)} instruction-like text(s) found in tool output "
                f"({ids}); they were quarantined and not obeyed. Someone may be trying to "
                "steer automation through logs or events.",
            )
        notes = (
            *self.notes,
            f"model {self.model_name} (role worker): {self.client.usage.line()}",
        )
        final = draft.model_copy(
            update={
                "planner": planner or ("rules (llm fallback)" if self.fallback else draft.planner),
                "unavailable": unavailable,
                "follow_ups": follow_ups,
                "suspicious_inputs": suspicious,
                "notes": notes,
            }
        )
        return RCADraft.model_validate(self.redactor.data(final.model_dump(mode="json")))


def _strings_in(values: Any) -> set[str]:
    out: set[str] = set()
    stack: list[Any] = list(values)
    while stack:
        v = stack.pop()
        if isinstance(v, str):
            out.add(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
        elif isinstance(v, list | tuple):
            stack.extend(v)
    return out
