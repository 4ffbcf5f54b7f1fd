"""`triage serve`'s investigations in a process of their own, beside the one that acks Slack.

Why a process and not threads: an investigation is CPU-bound Python (the graph, the planner,
redaction, the judge). In threads of the server's process it shares one GIL with the event loop
that acks Slack, and with four investigations running the loop gets a fifth of it: fifty acks
arriving together waited 200-330 ms at p99 on a 2-core machine (1 worker: 75 ms). In a process
of its own the operating system shares the cores, the worker runs at a lower priority (nice),
and the acking process never waits for it.

The two share nothing but the inbox (the SQLite file or the shared Postgres, which several
processes may use: claims, leases, de-duplication are the inbox's), so this is the same
arrangement as two replicas. The server writes one byte to the worker's stdin when a request
arrives (a "kick": look now rather than at the next poll); the worker stops when its stdin
closes (the server is gone) or on SIGTERM (its requests go back to the inbox). A worker that
exits on its own is started again, after a bounded, growing pause.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Callable

log = logging.getLogger("triage.server")
RESTART_PAUSE_S = (1.0, 2.0, 5.0, 10.0, 30.0)  # after the 1st, 2nd, ... unexpected exit
STOP_WAIT_S = 30.0  # a worker hands its requests back and exits within this after SIGTERM
WORKER_NICE = 19  # the acking process goes first when both want a core


def yield_to_acks() -> None:
    """Lower this process below the acking one: SCHED_IDLE where Linux allows it (a waking ack
    preempts it at once; at nice 19 alone, 50 acks' p99 still rose 37 -> 46-58 ms while it
    investigated), else nice 19. Either only orders the two inside the pod's own cgroup:
    investigations get every cycle the server leaves, and the pod's share of the node is
    unchanged. Linux sets both per thread: the threads started from here on (the
    investigations) inherit them; the inbox's writer, started before, keeps its priority on
    purpose: it holds the SQLite write lock that the server's acks wait for."""
    os.nice(WORKER_NICE)
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError) as e:  # not Linux, or a seccomp profile that refuses it
        log.info("worker stays at nice %d (SCHED_IDLE: %s)", WORKER_NICE, e)


def worker_argv() -> list[str]:
    """The command line this process was started with, as a worker (`--role worker`): the
    same entry point and options, so the worker builds the same product."""
    return [*sys.orig_argv, "--role", "worker"]


class WorkerProcess:
    """The investigations' process, started, kicked, restarted and stopped by the server."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self.proc: asyncio.subprocess.Process | None = None
        self.restarts = 0
        self._stopping = False
        self._supervisor: asyncio.Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def start(self) -> None:
        await self._spawn()
        self._supervisor = asyncio.create_task(self._supervise())

    async def _spawn(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(*self.argv, stdin=asyncio.subprocess.PIPE)
        log.info("investigations run in process %d", self.proc.pid)

    async def _supervise(self) -> None:
        while not self._stopping:
            assert self.proc is not None
            code = await self.proc.wait()
            if self._stopping:
                return
            pause = RESTART_PAUSE_S[min(self.restarts, len(RESTART_PAUSE_S) - 1)]
            self.restarts += 1
            log.error("the worker process exited (%s); starting it again in %g s", code, pause)
            await asyncio.sleep(pause)
            if not self._stopping:
                await self._spawn()

    def kick(self) -> None:
        """A request is in the inbox: tell the worker (never blocks; a full pipe is a kick
        already pending)."""
        if self.proc is None or self.proc.stdin is None or not self.alive:
            return
        with contextlib.suppress(ConnectionError, RuntimeError):
            self.proc.stdin.write(b"k")

    async def stop(self) -> None:
        self._stopping = True
        if self._supervisor is not None:
            self._supervisor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._supervisor
        if self.proc is None or not self.alive:
            return
        self.proc.terminate()
        try:
            await asyncio.wait_for(self.proc.wait(), STOP_WAIT_S)
        except TimeoutError:
            log.warning("the worker process did not stop within %g s; killed", STOP_WAIT_S)
            self.proc.kill()
            await self.proc.wait()


async def run_worker(
    start: Callable[[], Awaitable[None]],
    stop: Callable[[], Awaitable[None]],
    kick: Callable[[], None],
) -> None:
    """The worker's side: `start`, then `kick` on every byte from stdin, until stdin closes or
    SIGTERM/SIGINT arrives; then `stop`."""
    yield_to_acks()
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, done.set)
    fd = sys.stdin.fileno()
    os.set_blocking(fd, False)

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except BlockingIOError:
            return
        if not data:  # the server is gone
            loop.remove_reader(fd)
            done.set()
            return
        kick()

    loop.add_reader(fd, readable)
    await start()
    try:
        await done.wait()
    finally:
        await stop()
