"""A long RCA is split into marked parts at line boundaries, or uploaded whole as a file:
every word the report has reaches Slack."""

from __future__ import annotations

from tests.slack.support import BotServer, demo_app, mention, settings_for, user_message
from triage.slack.blocks import answer

LONG = "\n".join(
    f"- finding {i}: " + " ".join(f"word{i}x{j}" for j in range(40)) for i in range(60)
)


def _words(text: str) -> set[str]:
    return {w for w in text.replace("\n", " ").split(" ") if w.startswith("word")}


def test_split_into_marked_parts_with_every_word():
    result = answer(LONG, prefix=None, max_chars=3000, max_messages=20)

    assert result.file is None
    assert len(result.messages) > 1
    assert all(len(text) <= 3000 for text, _ in result.messages)
    assert set().union(*(_words(text) for text, _ in result.messages)) == _words(LONG)
    last_blocks = result.messages[-1][1]
    assert last_blocks[-1]["type"] == "context"
    assert f"of {len(result.messages)}" in last_blocks[-1]["elements"][0]["text"]


def test_one_unbroken_line_longer_than_a_message_is_split_too():
    line = "word" + "y" * 7000

    result = answer(line, prefix=None, max_chars=3000, max_messages=20)

    assert "".join(text for text, _ in result.messages).replace("\n", "") == line


def test_too_many_parts_go_as_one_file():
    result = answer(LONG, prefix=None, max_chars=3000, max_messages=2)

    assert result.file == LONG
    assert len(result.messages) == 1


WRITE_RCA = (
    "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, "
    "find out why and write the RCA"
)


def test_the_bot_uploads_an_answer_too_long_for_its_messages(slack_api, tmp_path):
    settings = settings_for(slack_api, tmp_path, max_messages=1, max_message_chars=500)
    with BotServer(settings, demo_app(settings)) as server:
        server.deliver(mention("Ev0LONG", WRITE_RCA, ts=user_message(slack_api, WRITE_RCA)))
        server.wait_done("Ev0LONG")

    assert slack_api.calls["files.completeUploadExternal"] == 1
    (uploaded,) = slack_api.files.values()
    assert b"Root cause" in uploaded["content"]
    assert b"Verification" in uploaded["content"]
