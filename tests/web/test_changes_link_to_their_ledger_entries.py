"""A report lists the changes its run made, each linked to its ledger entry, which the page
shows as the ledger holds it (intent, approval, before and after)."""

from __future__ import annotations

import re

import httpx

from policies import Policy
from policies.model import MutationPolicy
from tests.web.support import ReviewServer
from tools.mutate.ledger import MemoryLedger, Operation, Phase, Target, args_digest, operation_id
from tools.mutate.registry import MutateRegistry
from tools.redact import Redactor
from triage.agent.intake import parse
from triage.app import App
from triage.core.bundles import Bundle, ReplayTools
from triage.core.models import Claim, RCADraft
from triage.core.settings import ReviewSettings, Settings, StateSettings
from triage.reports.store import MemoryReportStore
from triage.web.review import build_review


def test_a_change_links_to_its_ledger_entry(tmp_path) -> None:
    target = Target(kind="Deployment", namespace="shop", name="api")
    op = Operation(
        id=operation_id("cli:1", "0", "rollout_restart", target, {}),
        run="cli:1",
        step="0",
        action="rollout_restart",
        target=target,
        args={},
        args_digest=args_digest("rollout_restart", target, {}),
        requested_by="slack:T1/U2 via slack:T1/C3/1.2",
        phase=Phase.SUCCEEDED,
        before={"generation": 4},
        after={"generation": 5},
    )
    ledger = MemoryLedger()
    ledger.claim(op)
    store = MemoryReportStore()
    draft = RCADraft(
        title="api restarted",
        summary="api was stuck",
        root_cause_class="application_error",
        impact="none now",
        root_cause=(Claim(text="api deadlocked", evidence=("E1",)),),
    )
    ref = store.submit(
        "shop",
        parse("restart deployment api in shop and write the RCA", now=0),
        draft,
        attempt=1,
        run_id="cli:1",
        operations=[
            {
                "operation": op.id,
                "action": op.action,
                "target": str(target),
                "phase": "Succeeded",
                "excerpt": "restarted",
                "args": {},
            }
        ],
    )
    settings = Settings(
        state=StateSettings(dir=tmp_path), review=ReviewSettings(auth="none", host="127.0.0.1")
    )
    product = App(
        settings=settings,
        tools=ReplayTools(
            Bundle(
                name="none",
                question="",
                namespace="shop",
                now=0,
                recorded_at="",
                source="",
                calls=[],
            )
        ),
        store=store,
        policy=Policy(),
        redactor=Redactor(),
        registry=MutateRegistry(MutationPolicy(), ledger),
    )
    parts = build_review(settings, product)
    assert parts is not None
    with ReviewServer(parts) as server:
        page = httpx.get(f"{server.url}/reports/shop/{ref.name}", timeout=10)
        (link,) = re.findall(r'href="(/operations/[^"]+)"', page.text)
        entry = httpx.get(f"{server.url}{link}", timeout=10)
        absent = httpx.get(f"{server.url}/operations/rollout-restart-0000000000000000", timeout=10)
    assert link == f"/operations/{op.id}"
    assert entry.status_code == 200
    assert "Deployment/shop/api" in entry.text
    assert "Succeeded" in entry.text
    assert "slack:T1/U2" in entry.text
    assert '"generation": 5' in entry.text
    assert absent.status_code == 404
