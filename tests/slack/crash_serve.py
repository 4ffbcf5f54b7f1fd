"""`triage serve` that kills itself with SIGKILL at a chosen point: the kill -9 matrix's process.

    TRIAGE_TEST_CRASH=checkpoint:N   before the N-th checkpoint write reaches SQLite (a step done,
                                     its checkpoint in flight)
    TRIAGE_TEST_CRASH=before:METHOD:N  just before the N-th `Inbox.METHOD` (nothing written)
    TRIAGE_TEST_CRASH=inbox:METHOD:N right after the N-th committed `Inbox.METHOD` (accept, claim,
                                     save, finish, release, wait): the transition is on disk, what
                                     follows it never ran
    TRIAGE_TEST_COUNT=PATH           append one line per checkpoint write and inbox transition
                                     (how the matrix learns how many points a run has)
    TRIAGE_TEST_SLOW_TOOLS=SECONDS   every read of the replayed cluster takes this much longer
                                     (a slow apiserver: runs stay in flight long enough to be
                                     killed or restarted under)

Checkpoint writes are counted for either checkpointer (SQLite, Postgres).

Nothing of the product is replaced: the real methods run; the process dies between them, as a
liveness probe or the OOM killer would kill it. Run as `python -m tests.slack.crash_serve ARGS`
with the arguments of `triage`.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import time
from collections import Counter
from typing import Any

from langgraph.checkpoint.postgres import PostgresSaver
from langgraph.checkpoint.sqlite import SqliteSaver

from triage.cli.main import main
from triage.core.bundles import ReplayTools
from triage.slack.inbox import Inbox

INBOX_METHODS = ("accept", "claim", "save", "finish", "release", "wait")
counts: Counter[str] = Counter()
crash = os.environ.get("TRIAGE_TEST_CRASH", "")
count_file = os.environ.get("TRIAGE_TEST_COUNT")


def _record(point: str) -> int:
    counts[point] += 1
    if count_file:
        with open(count_file, "a") as f:
            f.write(f"{point}\n")
    return counts[point]


def _die() -> None:
    """SIGKILL the whole `triage serve` (the acking process and its worker process, as a
    container is killed) when it runs in a session of its own, else this process."""
    sys.stdout.flush()
    if os.getsid(0) == os.getpgrp():
        os.killpg(os.getpgrp(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _checkpoint(put: Any) -> Any:
    @functools.wraps(put)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        n = _record("checkpoint")
        if crash == f"checkpoint:{n}":
            _die()
        return put(self, *args, **kwargs)

    return wrapper


def _transition(name: str, method: Any) -> Any:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if crash == f"before:{name}:{counts[f'inbox:{name}'] + 1}":
            _die()
        result = method(self, *args, **kwargs)
        if name == "claim" and result is None:
            return result  # nothing claimed: no transition
        n = _record(f"inbox:{name}")
        if crash == f"inbox:{name}:{n}":
            _die()
        return result

    return wrapper


def _async_transition(name: str, method: Any) -> Any:
    """The ack path's `accept_async`, counted and killed as the transition `name`."""

    @functools.wraps(method)
    async def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if crash == f"before:{name}:{counts[f'inbox:{name}'] + 1}":
            _die()
        result = await method(self, *args, **kwargs)
        n = _record(f"inbox:{name}")
        if crash == f"inbox:{name}:{n}":
            _die()
        return result

    return wrapper


def _slow(call: Any, seconds: float) -> Any:
    @functools.wraps(call)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return call(self, *args, **kwargs)

    return wrapper


SqliteSaver.put = _checkpoint(SqliteSaver.put)  # type: ignore[method-assign]
PostgresSaver.put = _checkpoint(PostgresSaver.put)  # type: ignore[method-assign]
if os.environ.get("TRIAGE_TEST_SLOW_TOOLS"):
    ReplayTools.call = _slow(  # type: ignore[method-assign]
        ReplayTools.call, float(os.environ["TRIAGE_TEST_SLOW_TOOLS"])
    )
for _name in INBOX_METHODS:
    setattr(Inbox, _name, _transition(_name, getattr(Inbox, _name)))
Inbox.accept_async = _async_transition("accept", Inbox.accept_async)  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.argv = ["triage", *sys.argv[1:]]
    main()
