"""A dependency that refuses writes at its own memory cap (Redis, Valkey and KeyDB reply "OOM
command not allowed when used memory > 'maxmemory'", however the client wraps it) is told from
a process killed for memory or a runtime out of heap, which are other causes."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from triage.agent.planners.rules.analyzers.metrics import _OVER_MEMORY_CAP

REPLY = "OOM command not allowed when used memory > 'maxmemory'."
commands = st.sampled_from(["set", "lpush", "hset", "xadd", "incr", "sadd"])
keys = st.from_regex(r"[a-z]{2,8}:[a-z0-9_]{1,12}", fullmatch=True)


@given(cmd=commands, key=keys, shape=st.sampled_from(["json", "go", "python", "java"]))
def test_the_reply_is_recognised_however_the_client_logs_it(cmd: str, key: str, shape: str) -> None:
    line = {
        "json": json.dumps({"level": 50, "err": {"type": "ReplyError", "message": REPLY}}),
        "go": f"ERR write {key}: {REPLY}",
        "python": f"redis.exceptions.ResponseError: {REPLY} (command {cmd.upper()} {key})",
        "java": f"io.lettuce.core.RedisCommandExecutionException: {REPLY}",
    }[shape]
    assert _OVER_MEMORY_CAP.search(line)


def test_other_out_of_memory_is_not_a_full_server() -> None:
    for line in (
        "Last State: Terminated, Reason: OOMKilled, Exit Code: 137",
        "java.lang.OutOfMemoryError: Java heap space",
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
        "Memory cgroup out of memory: Killed process 4242 (redis-server)",
    ):
        assert not _OVER_MEMORY_CAP.search(line)
