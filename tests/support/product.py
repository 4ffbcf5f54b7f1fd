"""The product as the tests build it: `triage.app.App` over parts a test supplies at the wire.

A test gives the read tools (the reader identity's client of the real control plane, a
recorded bundle), where reports go, the policy and, for changes, the mutate registry of the
test control plane; everything else — the graph, the planners, the loop, the judge, the
budget — is the production code, wired by the production composition root.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from policies import Policy
from tools.read.registry import ReadTools
from tools.redact import Redactor
from triage.app import App
from triage.core.settings import Settings, StateSettings
from triage.reports.store import MemoryReportReads, MemoryReportStore, ReportStore


def app_over(
    tools: ReadTools,
    state_dir: Path,
    *,
    store: ReportStore | None = None,
    policy: Policy | None = None,
    registry: Any = None,
    settings: Settings | None = None,
    checkpointer: str = "sqlite",
    approvals: Any = None,
    api_client: Any = None,
) -> App:
    """An App over `tools`; reports in memory (read back through the tools) unless given."""
    if store is None:
        memory = MemoryReportStore()
        tools, store = MemoryReportReads(tools, memory), memory
    settings = settings or Settings()
    settings.state = StateSettings(dir=state_dir, checkpointer=checkpointer)  # type: ignore[arg-type]
    return App(
        settings=settings,
        tools=tools,
        store=store,
        policy=policy or Policy(),
        redactor=Redactor(settings.redaction_patterns),
        registry=registry,
        approvals=approvals,
        api_client=api_client,
    )
