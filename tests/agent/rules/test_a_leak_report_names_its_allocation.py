"""A runtime that reports its own leak (Netty's ResourceLeakDetector, Node's listener
warning) is quoted with the frame that allocated what leaked: the outermost caller under
"Created at:", which is the code to fix — not the allocator the trace starts in."""

from __future__ import annotations

from triage.agent.planners.rules.analyzers.memory import leak_said

_NETTY = (
    '{"level":"ERROR","logger_name":"io.netty.util.ResourceLeakDetector","message":"LEAK: '
    "ByteBuf.release() was not called before it's garbage-collected.\\nRecent access records: "
    "\\n#1:\\n\\tio.netty.buffer.AdvancedLeakAwareByteBuf.nioBuffer(AdvancedLeakAwareByteBuf.java:712)"
    "\\nCreated at:\\n\\tio.netty.buffer.PooledByteBufAllocator.newDirectBuffer("
    "PooledByteBufAllocator.java:410)\\n\\torg.springframework.core.io.buffer.DataBufferUtils.join("
    "DataBufferUtils.java:781)\\n\\tcom.shop.edge.BodyLogFilter.filter(BodyLogFilter.java:61)"
    '"}'
)


def test_the_allocating_frame_is_the_outermost_under_created_at() -> None:
    said = leak_said(["INFO started", _NETTY, "INFO request done"])
    assert said is not None
    assert said.startswith("LEAK: ByteBuf.release() was not called")
    assert said.endswith("allocated by com.shop.edge.BodyLogFilter.filter"), said


def test_a_report_without_allocation_records_is_quoted_alone() -> None:
    line = (
        "(node:1) MaxListenersExceededWarning: Possible EventEmitter memory leak detected. "
        "11 close listeners added to [Socket]"
    )
    said = leak_said([line])
    assert said is not None
    assert "allocated by" not in said
    assert "MaxListenersExceededWarning" in said


def test_lines_that_do_not_report_a_leak_say_nothing() -> None:
    assert leak_said(["INFO cache warmed items=10000", "WARN slow request 1200ms"]) is None
