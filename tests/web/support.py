"""The review page served for real in this process, and reports to review.

`ReviewServer` serves the page exactly as `triage serve` does (`triage.web.review.asgi`) with
uvicorn on a free port, in a thread. Reports come from the product's own checked runs over the
recorded incidents (triage/demo, `App.replay`: the real graph, judge and report store), plus
`synthetic()` ones written through the same store (submit, publish, review) to give the list a
spread of namespaces, outcomes, reviews and ages.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import uvicorn

from tests.slack.support import free_port
from tools.redact import Redactor
from tools.results import ToolStatus
from triage.agent.intake import parse
from triage.app import App, Request
from triage.core.bundles import Bundle, demo_dir, demo_names
from triage.core.models import Claim, Evidence, LinkRole, RCADraft
from triage.core.settings import ReviewSettings, Settings, StateSettings
from triage.reports.review import Review, Verdict, Via, record
from triage.reports.store import MemoryReportStore, ReportRef
from triage.reports.views import MemoryReports
from triage.web.auth import Access, LocalAccess
from triage.web.review import ReviewParts, asgi, server_config

NAMESPACES = ("shop", "payments", "search", "identity", "media")
OUTCOMES = ("verified", "verified", "rejected", "budget_exhausted", "unchecked")


def demo_reports(
    store: MemoryReportStore, state_dir: Path, names: list[str] | None = None
) -> list[ReportRef]:
    """Every recorded incident run through the product's checked run, asking for the RCA, its
    report copied into `store`."""
    settings = Settings(state=StateSettings(dir=state_dir, checkpointer="memory"))
    refs = []
    for name in names or demo_names():
        bundle = Bundle.read(demo_dir() / f"{name}.json")
        product, _ = App.replay(settings, bundle)
        request = Request(
            words=f"{bundle.question} Write the RCA.",
            default_namespace=bundle.namespace,
            now=bundle.now,
            planner="rules",
            run_id=f"cli:demo-{name}",
        )
        run = product.checked_run(request)
        assert run.report is not None, f"{name}: no report written"
        own = product.store
        assert isinstance(own, MemoryReportStore)
        store.reports[(run.report.namespace, run.report.name)] = own.reports[
            (run.report.namespace, run.report.name)
        ]
        refs.append(run.report)
    return refs


def _draft(i: int, ns: str) -> tuple[RCADraft, list[Evidence]]:
    service = f"svc-{i:04d}"
    evidence = [
        Evidence(
            id=f"E{k}",
            tool=tool,
            args={"namespace": ns, "name": service},
            status=ToolStatus.OK,
            excerpt=f"{service}: {text}",
            digest=f"sha256:{k:064x}",
        )
        for k, (tool, text) in enumerate(
            [
                ("k8s.pods", "1 pod CrashLoopBackOff x7, last exit 1"),
                ("k8s.logs", "FATAL env DATABASE_URL is not a valid URL: missing protocol scheme"),
                ("k8s.events", "Back-off restarting failed container app"),
            ],
            start=1,
        )
    ]
    draft = RCADraft(
        title=f"RCA: {service} in {ns} crash-loops",
        summary=f"{service} is in CrashLoopBackOff and serves nothing.",
        root_cause_class="bad_config",
        cause=f"DATABASE_URL of {service} lacks the scheme separator; the container exits at start",
        impact="Requests to the service fail with 503.",
        root_cause=(
            Claim(
                text=f"{service} restarts in a loop", evidence=("E1", "E3"), role=LinkRole.SYMPTOM
            ),
            Claim(
                text="The log names **DATABASE_URL** as invalid",
                evidence=("E2",),
                role=LinkRole.CAUSE,
            ),
        ),
    )
    return draft, evidence


def synthetic(
    store: MemoryReportStore, count: int, *, now: datetime | None = None
) -> list[ReportRef]:
    """`count` reports over NAMESPACES with a spread of outcomes, reviews and ages (report i is
    i hours old), written through the store like a run's."""
    now = now or datetime.now(UTC)
    refs = []
    for i in range(count):
        ns = NAMESPACES[i % len(NAMESPACES)]
        draft, evidence = _draft(i, ns)
        goal = parse(f"svc-{i:04d} in {ns} returns 503, write the RCA", now=0)
        ref = store.submit(
            ns, goal, draft, attempt=1, run_id=f"cli:synthetic-{i}", evidence=evidence
        )
        outcome = OUTCOMES[i % len(OUTCOMES)]
        store.publish(
            ref,
            {
                "outcome": outcome,
                "attempts": 1,
                "met": ["report exists"],
                "missing": [] if outcome == "verified" else ["the cause is not explained"],
                "planner": "rules",
                "spend": {"tokens": 0, "cost_usd": 0, "priced": True, "by_role": []},
            },
        )
        store.reports[(ns, ref.name)]["metadata"]["creationTimestamp"] = (
            now - timedelta(hours=i)
        ).strftime("%Y-%m-%dT%H:%M:%SZ")
        if i % 7 == 3:
            review = Review.new(Verdict.DISPUTED, "kube:carol", Via.PAGE, "It was the DB.")
            record(store, ns, ref.name, review)
        elif i % 7 == 5:
            record(store, ns, ref.name, Review.new(Verdict.CONFIRMED, "slack:T1/U2", Via.SLACK, ""))
        refs.append(ref)
    return refs


def local_parts(
    store: MemoryReportStore, access: Access | None = None, **review: Any
) -> ReviewParts:
    settings = ReviewSettings(**({"auth": "none", "host": "127.0.0.1", "list_cache_s": 0} | review))
    return ReviewParts(
        settings=settings,
        reports=MemoryReports(store),
        store=store,
        access=access or LocalAccess(),
        redactor=Redactor(),
    )


class ReviewServer:
    """The review page in this process: uvicorn on a free port, in a thread."""

    def __init__(self, parts: ReviewParts) -> None:
        self.parts = parts
        self.port = free_port()
        config = server_config(asgi(parts), "127.0.0.1", self.port, log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ReviewServer:
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the review page did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
