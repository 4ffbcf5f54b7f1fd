"""The scripted OpenAI-compatible server answers at the wire like a chat-completions API."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.support.fake_openai import FakeOpenAI, ToolCall


def _chat(server: FakeOpenAI, content: str, **extra: object) -> httpx.Response:
    return httpx.post(
        f"{server.base_url}/chat/completions",
        headers={"Authorization": f"Bearer {server.api_key}"},
        json={"model": "triage-test-model", "messages": [{"role": "user", "content": content}]}
        | extra,
        timeout=5,
    )


def test_replies_come_back_in_queue_order_with_usage(openai_server: FakeOpenAI) -> None:
    openai_server.reply("first", prompt_tokens=11, completion_tokens=3).reply("second")

    first = _chat(openai_server, "hello").json()
    second = _chat(openai_server, "again").json()

    assert first["choices"][0]["message"] == {
        "role": "assistant",
        "content": "first",
        "refusal": None,
    }
    assert first["choices"][0]["finish_reason"] == "stop"
    assert first["usage"] == {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}
    assert second["choices"][0]["message"]["content"] == "second"
    assert second["usage"]["prompt_tokens"] > 0
    assert openai_server.remaining == 0


def test_tool_call_reply_carries_json_arguments(openai_server: FakeOpenAI) -> None:
    openai_server.reply(
        tool_calls=[ToolCall("get_pods", {"namespace": "shop", "selector": "app=checkout"})]
    )

    body = _chat(openai_server, "why 503?", tools=[{"type": "function"}]).json()

    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call["type"] == "function"
    assert call["function"]["name"] == "get_pods"
    assert json.loads(call["function"]["arguments"]) == {
        "namespace": "shop",
        "selector": "app=checkout",
    }
    assert openai_server.last_request["tools"] == [{"type": "function"}]


def test_every_request_is_recorded_so_secrets_can_be_ruled_out(openai_server: FakeOpenAI) -> None:
    openai_server.reply("ok").reply("ok")

    _chat(openai_server, "password=[REDACTED]")
    _chat(openai_server, "second question")

    assert len(openai_server.requests) == 2
    assert openai_server.requests[0]["messages"][0]["content"] == "password=[REDACTED]"
    assert "hunter2" not in openai_server.request_text()


def test_scripted_errors_slowness_and_garbage(openai_server: FakeOpenAI) -> None:
    openai_server.fail(500).reply("too late", delay=2).garbage()

    assert _chat(openai_server, "a").status_code == 500
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{openai_server.base_url}/chat/completions",
            headers={"Authorization": f"Bearer {openai_server.api_key}"},
            json={"model": "m", "messages": []},
            timeout=0.5,
        )
    garbage = _chat(openai_server, "c")
    with pytest.raises(json.JSONDecodeError):
        garbage.json()


def test_an_unscripted_call_fails_loudly(openai_server: FakeOpenAI) -> None:
    response = _chat(openai_server, "nobody scripted this")

    assert response.status_code == 500
    assert openai_server.unexpected == 1


def test_wrong_api_key_is_refused_and_models_are_listed(openai_server: FakeOpenAI) -> None:
    refused = httpx.get(
        f"{openai_server.base_url}/models", headers={"Authorization": "Bearer nope"}, timeout=5
    )
    models = httpx.get(
        f"{openai_server.base_url}/models",
        headers={"Authorization": f"Bearer {openai_server.api_key}"},
        timeout=5,
    )

    assert refused.status_code == 401
    assert [m["id"] for m in models.json()["data"]] == ["triage-test-model"]


def test_streaming_sends_deltas_finish_and_usage(openai_server: FakeOpenAI) -> None:
    openai_server.reply(tool_calls=[ToolCall("get_events", {"namespace": "shop"}, id="call_x")])

    with httpx.stream(
        "POST",
        f"{openai_server.base_url}/chat/completions",
        headers={"Authorization": f"Bearer {openai_server.api_key}"},
        json={
            "model": "m",
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
        timeout=5,
    ) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]

    assert lines[-1] == "data: [DONE]"
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert chunks[0]["choices"][0]["delta"]["tool_calls"][0]["id"] == "call_x"
    assert chunks[1]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[2]["usage"]["total_tokens"] > 0


def test_a_slow_reply_abandoned_by_the_client_does_not_leak_past_reset(
    openai_server: FakeOpenAI,
) -> None:
    openai_server.reply("late", delay=1.5)
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            f"{openai_server.base_url}/chat/completions",
            headers={"Authorization": f"Bearer {openai_server.api_key}"},
            json={"model": "m", "messages": []},
            timeout=0.3,
        )

    openai_server.reset()
    openai_server.reply("fresh")

    assert _chat(openai_server, "next").json()["choices"][0]["message"]["content"] == "fresh"
    assert len(openai_server.requests) == 1
