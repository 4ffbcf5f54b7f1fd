"""Model configuration: "provider:model", a base URL for OpenAI-compatible servers, the key from
the environment or a mounted file, timeouts and bounded retries; worker and judge apart."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from tools.redact import Redactor
from triage.core.errors import ModelNotConfigured
from triage.core.llm import ModelClient, chat_model
from triage.core.settings import ModelSettings, Settings


def test_settings_come_from_the_environment_per_role(monkeypatch, tmp_path: Path) -> None:
    key_file = tmp_path / "api-key"
    key_file.write_text("sk-from-mounted-file\n")
    monkeypatch.setenv("TRIAGE_WORKER_MODEL__NAME", "openai:gpt-4.1-mini")
    monkeypatch.setenv("TRIAGE_WORKER_MODEL__BASE_URL", "http://vllm:8000/v1")
    monkeypatch.setenv("TRIAGE_WORKER_MODEL__API_KEY_FILE", str(key_file))
    monkeypatch.setenv("TRIAGE_WORKER_MODEL__TIMEOUT_S", "12.5")
    monkeypatch.setenv("TRIAGE_JUDGE_MODEL__NAME", "openai:o4-mini")
    monkeypatch.setenv("TRIAGE_JUDGE_MODEL__API_KEY", "sk-judge-from-env")
    monkeypatch.setenv("TRIAGE_PLANNER__KIND", "llm")
    settings = Settings()

    assert settings.planner.kind == "llm"
    worker = chat_model(settings.worker_model)
    judge = chat_model(settings.judge_model)
    assert isinstance(worker, ChatOpenAI)
    assert isinstance(judge, ChatOpenAI)
    assert worker.model_name == "gpt-4.1-mini"
    assert worker.openai_api_base == "http://vllm:8000/v1"
    assert isinstance(worker.openai_api_key, SecretStr)
    assert worker.openai_api_key.get_secret_value() == "sk-from-mounted-file"
    assert worker.request_timeout == 12.5
    assert worker.max_retries == 0  # ModelClient's bound is the only one
    assert judge.model_name == "o4-mini"
    assert isinstance(judge.openai_api_key, SecretStr)
    assert judge.openai_api_key.get_secret_value() == "sk-judge-from-env"
    assert "sk-judge-from-env" not in repr(settings)


def test_the_key_from_a_mounted_file_is_sent_on_the_wire(openai_server, tmp_path) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(openai_server.api_key + "\n")
    settings = ModelSettings(
        name="openai:triage-test-model",
        base_url=openai_server.base_url,
        api_key_file=key_file,
        timeout_s=5,
    )
    openai_server.reply("pong")
    client = ModelClient.from_settings(settings, "worker", Redactor())
    reply = client.invoke([HumanMessage(content="ping")], lambda m: m.content)
    assert reply == "pong"  # the server answers 401 to any other key
    assert openai_server.last_request["model"] == "triage-test-model"


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        (ModelSettings(), "no model configured"),
        (ModelSettings(name="no-such-provider:model-x"), "cannot build chat model"),
        (ModelSettings(name="openai:x", api_key_file=Path("/nonexistent/key")), "key file"),
        (ModelSettings(name="openai:x", base_url="http://127.0.0.1:9/v1"), "credentials"),
    ],
)
def test_a_model_that_cannot_be_built_is_a_plain_error(settings, why: str) -> None:
    with pytest.raises(ModelNotConfigured, match=why):
        chat_model(settings)


def test_attempts_and_timeouts_are_bounded() -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        ModelSettings(max_attempts=0)
    with pytest.raises(ValueError, match="max_attempts"):
        ModelSettings(max_attempts=50)
    with pytest.raises(ValueError, match="timeout_s"):
        ModelSettings(timeout_s=0)
