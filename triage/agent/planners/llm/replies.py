"""What the worker model may answer, and how an answer is read.

The planner's two requests have two reply shapes: read-tool calls while investigating
(`parse_plan`: anything that is not a read tool is refused, arguments are validated by the
read registry's own models, defaults dropped so a call is recognised when repeated) and one
`submit_rca` call when drafting (`parse_draft`: the RCADraft's parts, with evidence on every
remediation; over-long text is clipped, not refused). A reply that cannot be used raises
`ModelOutputInvalid`, which `ModelClient` retries within its bound.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

from langchain_core.messages import AIMessage
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError

from tools.read.registry import SPEC_BY_NAME, validate
from tools.results import ToolResult, clip
from triage.agent.planners.base import ToolCall
from triage.agent.planners.llm import prompts
from triage.core import quarantine
from triage.core.causes import CauseClass
from triage.core.errors import ModelOutputInvalid
from triage.core.models import LinkRole

SUBMIT_RCA = "submit_rca"


# -- what the model must submit (the RCADraft's parts, with evidence on remediations) ---------


def _clipped(limit: int) -> BeforeValidator:
    """Long text from a model is cut, not refused: a wordy RCA is still an RCA."""
    return BeforeValidator(lambda v: clip(v, limit) if isinstance(v, str) else v)


Short = Annotated[str, _clipped(200)]
Text = Annotated[str, _clipped(1500)]


class _Out(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ClaimOut(_Out):
    text: Text = Field(min_length=1)
    evidence: list[str] = Field(min_length=1, description="Ids of ok evidence, e.g. ['E3'].")
    role: LinkRole | None = Field(
        default=None, description="symptom, mechanism or cause: its place in the causal chain."
    )


class TimelineOut(_Out):
    at: Short
    what: Text
    evidence: list[str] = Field(default_factory=list)


class RemediationOut(_Out):
    action: Literal["rollout_restart", "scale", "rollback", "delete_pod", "silence_create", "none"]
    target: Short = Field(description="kind/namespace/name")
    args: dict[str, Any] = Field(default_factory=dict)
    rationale: Text
    evidence: list[str] = Field(default_factory=list, description="Ids of ok evidence.")


class RCAProposal(_Out):
    title: Short = Field(min_length=1)
    summary: Text = Field(min_length=1)
    root_cause_class: CauseClass = Field(
        description="Exactly one of the listed classes; any other spelling is refused."
    )
    cause: Short = Field(default="", description="The cause a human acts on, in one sentence.")
    impact: Text = ""
    inconclusive: bool = False
    root_cause: list[ClaimOut] = Field(default_factory=list, max_length=20)
    contributing_factors: list[ClaimOut] = Field(default_factory=list, max_length=20)
    timeline: list[TimelineOut] = Field(default_factory=list, max_length=40)
    remediation: list[RemediationOut] = Field(default_factory=list, max_length=10)
    follow_ups: list[Text] = Field(default_factory=list, max_length=20)


def submit_tool() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": SUBMIT_RCA,
            "description": prompts.DRAFT_TOOL_DESCRIPTION,
            "parameters": RCAProposal.model_json_schema(),
        },
    }


# -- reading the model's replies ----------------------------------------------------------------


class PlanReply(BaseModel):
    calls: list[ToolCall]
    refused: list[str]


def parse_plan(reply: AIMessage) -> PlanReply:
    """Read-tool calls from a reply; anything else is refused. Raises ModelOutputInvalid when
    the reply asked for calls and none of them could be read (garbage, bad arguments)."""
    calls: list[ToolCall] = []
    refused: list[str] = []
    problems: list[str] = []
    for tc in reply.tool_calls:
        name = prompts.TOOL_BY_FUNCTION.get(tc["name"], tc["name"])
        if name not in SPEC_BY_NAME:
            refused.append(f"refused a call to {quote(tc['name'])}: not a read tool")
            continue
        parsed = validate(name, dict(tc["args"]))
        if isinstance(parsed, ToolResult):
            problems.append(clip(parsed.excerpt, 200))
        else:
            calls.append(ToolCall(name=name, args=parsed.model_dump(exclude_defaults=True)))
    for bad in reply.invalid_tool_calls:
        problems.append(f"malformed call to {quote(str(bad.get('name')))}")
    if problems and not calls and not refused:
        raise ModelOutputInvalid("; ".join(problems))
    return PlanReply(calls=calls, refused=refused + problems)


def quote(text: str, limit: int = 60) -> str:
    """A model-provided fragment as it may appear in a note: clipped, quarantined if it reads
    like an instruction (a turned model can put one in a tool name)."""
    return repr(quarantine.clean_text(clip(text, limit)))


def _json_object(text: str) -> Any:
    text = text.strip()
    fenced = re.search(r"```(?:json)?\s*(\{.*\})\s*```", text, re.S)
    if fenced:
        text = fenced.group(1)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        return json.loads(text[start : end + 1])
    except json.JSONDecodeError:
        return None


def parse_draft(reply: AIMessage) -> RCAProposal:
    """The submitted RCA (a submit_rca call, or a JSON object as text)."""
    candidates: list[Any] = [tc["args"] for tc in reply.tool_calls if tc["name"] == SUBMIT_RCA]
    if not candidates and isinstance(reply.content, str):
        candidates.append(_json_object(reply.content))
    for candidate in candidates:
        if not isinstance(candidate, dict):
            continue
        try:
            return RCAProposal.model_validate(candidate)
        except ValidationError as e:
            msg = f"{SUBMIT_RCA} arguments invalid: {clip(str(e), 300)}"
            raise ModelOutputInvalid(msg) from e
    msg = f"no {SUBMIT_RCA} call in the reply"
    raise ModelOutputInvalid(msg)
