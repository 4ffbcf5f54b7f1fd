"""LangChain's ChatOpenAI drives a tool-calling turn through the scripted server
(runs when langchain-openai is installed)."""

from __future__ import annotations

import pytest
from langchain_core.messages import ToolMessage
from langchain_core.tools import tool

from tests.support.fake_openai import FakeOpenAI, ToolCall

langchain_openai = pytest.importorskip("langchain_openai")


@tool
def get_pods(namespace: str) -> str:
    """List the pods of a namespace."""
    return f"pods in {namespace}"


def test_chat_openai_makes_a_tool_call_then_answers(openai_server: FakeOpenAI) -> None:
    openai_server.reply(
        tool_calls=[ToolCall("get_pods", {"namespace": "shop"}, id="call_1")],
        prompt_tokens=20,
        completion_tokens=5,
    ).reply("checkout-api is crash-looping")
    model = langchain_openai.ChatOpenAI(
        model="triage-test-model",
        base_url=openai_server.base_url,
        api_key=openai_server.api_key,
        timeout=5,
        max_retries=0,
    ).bind_tools([get_pods])

    first = model.invoke("why does checkout-api fail?")
    answer = model.invoke(
        [
            ("user", "why does checkout-api fail?"),
            first,
            ToolMessage(content="pods in shop", tool_call_id="call_1"),
        ]
    )

    assert first.tool_calls == [
        {"name": "get_pods", "args": {"namespace": "shop"}, "id": "call_1", "type": "tool_call"}
    ]
    assert first.usage_metadata["input_tokens"] == 20
    assert first.usage_metadata["output_tokens"] == 5
    assert answer.content == "checkout-api is crash-looping"
    sent = openai_server.last_request
    assert sent["tools"][0]["function"]["name"] == "get_pods"
    assert sent["messages"][-1] == {
        "role": "tool",
        "content": "pods in shop",
        "tool_call_id": "call_1",
    }
    assert openai_server.remaining == 0


def test_streaming_chat_openai_reassembles_the_reply_and_usage(openai_server: FakeOpenAI) -> None:
    openai_server.reply("hello world", prompt_tokens=7, completion_tokens=2)
    model = langchain_openai.ChatOpenAI(
        model="triage-test-model",
        base_url=openai_server.base_url,
        api_key=openai_server.api_key,
        timeout=5,
        max_retries=0,
        streaming=True,
        stream_usage=True,
    )

    reply = model.invoke("hi")

    assert reply.content == "hello world"
    assert reply.usage_metadata["total_tokens"] == 9
    assert openai_server.last_request["stream"] is True
