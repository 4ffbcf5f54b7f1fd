"""The official openai client understands the scripted server (runs when openai is installed)."""

from __future__ import annotations

import pytest

from tests.support.fake_openai import FakeOpenAI, ToolCall

openai = pytest.importorskip("openai")


def test_openai_client_reads_a_tool_call_and_usage(openai_server: FakeOpenAI) -> None:
    openai_server.reply(tool_calls=[ToolCall("get_pods", {"namespace": "shop"})])
    client = openai.OpenAI(
        base_url=openai_server.base_url, api_key=openai_server.api_key, timeout=5, max_retries=0
    )

    with client:
        completion = client.chat.completions.create(
            model="triage-test-model", messages=[{"role": "user", "content": "why?"}]
        )

    call = completion.choices[0].message.tool_calls[0]
    assert call.function.name == "get_pods"
    assert call.function.arguments == '{"namespace": "shop"}'
    assert completion.usage.total_tokens > 0


def test_openai_client_surfaces_a_scripted_server_error(openai_server: FakeOpenAI) -> None:
    openai_server.fail(500)
    client = openai.OpenAI(
        base_url=openai_server.base_url, api_key=openai_server.api_key, timeout=5, max_retries=0
    )

    with client, pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
