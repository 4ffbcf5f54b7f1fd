"""26 planted secrets (logs, env values, annotations, ConfigMap data, an event, a metric label,
the user's own words) → none in any request body the model receives, none in the RCA as
stored or rendered.

The canned tools are deliberately leaky (they skip the tools' own redaction), so this proves
the planner's layer: whatever a tool lets through, nothing secret is sent to a model."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from tests.agent.llm.support import (
    SECRET_VALUES,
    SECRETS,
    CannedTools,
    honest_script,
    http_settings,
    investigate,
    script_http,
    scripted_planner,
)
from tools.redact import MASK, Redactor
from triage.agent.planners.llm.planner import LLMPlanner
from triage.reports import render

WORDS = (
    "checkout-api in namespace shop returns 503 since 14:05; I tried DB_PASSWORD=words-pass-1212 "
    "by hand. Find out why and write the RCA"
)


def _rendered(draft, evidence) -> str:
    console = Console(record=True, width=200)
    render.terminal(console, draft, evidence)
    return "\n".join(
        [
            render.markdown(draft, []),
            json.dumps(draft.model_dump(mode="json")),
            console.export_text(),
        ]
    )


def test_at_least_twenty_secrets_are_planted_where_the_model_would_see_them() -> None:
    """The test can fail: the secrets really are in what the tools return."""
    assert len(SECRETS) >= 20
    tools = CannedTools(injections=False)
    raw = json.dumps([r.model_dump(mode="json") for r in tools.results.values()]) + WORDS
    missing = [s for s in SECRET_VALUES if s not in raw]
    assert missing == []


def test_no_secret_reaches_the_model_over_http(openai_server) -> None:
    script_http(openai_server, honest_script())
    planner = LLMPlanner.from_settings(http_settings(openai_server))
    result = investigate(planner, CannedTools(injections=False), words=WORDS)

    assert len(openai_server.requests) == 4
    sent = openai_server.request_text()
    leaked = [where for where, secret in SECRETS if secret in sent]
    assert leaked == []
    assert MASK in sent  # redacted in place, not dropped: the shape stays readable
    assert "postgres://app:[REDACTED]@db:5432/shop" in sent

    draft = result.draft
    assert draft is not None
    assert draft.planner == "llm"
    shown = _rendered(draft, [])
    assert [where for where, secret in SECRETS if secret in shown] == []


def test_no_secret_reaches_the_in_process_model_or_the_fallback_rca() -> None:
    """Same with a model that fails while drafting: the rules RCA that replaces it is clean too."""
    script = [*honest_script()[:-1], TimeoutError("slow"), TimeoutError("slow"), TimeoutError("x")]
    planner, model = scripted_planner(script)
    result = investigate(planner, CannedTools(injections=False), words=WORDS)

    sent = model.sent_text()
    assert [where for where, secret in SECRETS if secret in sent] == []
    draft = result.draft
    assert draft is not None
    assert draft.planner == "rules (llm fallback)"
    shown = _rendered(draft, [])
    assert [where for where, secret in SECRETS if secret in shown] == []


@pytest.mark.parametrize(("where", "secret"), SECRETS)
def test_each_planted_format_is_masked_by_the_redactor(where: str, secret: str) -> None:
    tools = CannedTools(injections=False)
    everything = [r.model_dump(mode="json") for r in tools.results.values()]
    redacted = json.dumps(Redactor().data(everything)) + Redactor().text(WORDS)
    text_pass = Redactor().text(json.dumps(everything))
    assert secret not in redacted, where
    assert secret not in text_pass, where
