"""Shared setup for the judge tests and the ablation bench: the RCAReport CRD and the agent's
report RBAC installed on the real control plane, and the product's own checked run
(`App.checked_run`) over it.

Faults are injected at the wire (the scripted OpenAI-compatible server) or in the cluster (an
identity without the right, an admission policy, a real edit or delete of the report), never by
replacing our own code.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from policies import Policy
from policies.verification import Price, VerificationPolicy
from tests.support.fake_openai import ToolCall as FakeToolCall
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from tools.redact import Redactor
from triage.app import App, Request
from triage.core.settings import ModelSettings, Settings, StateSettings
from triage.reports.store import KubeReportStore, ReportStore
from triage.verification.loop import CheckedRun, ProgressFn

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "helm" / "triage" / "crds" / "rcareport.yaml"
RBAC = ROOT / "tests" / "support" / "manifests" / "agent-reports-rbac.yaml"
REJECT_LABEL = "triage.dev/test-reject-reports"


def install_reports(control_plane: Any) -> None:
    """Apply the CRD and the agent's RBAC (idempotent) and wait until the reader can create
    RCAReports: CRD established, RBAC and admission policy caches caught up."""
    docs = [d for p in (CRD, RBAC) for d in yaml.safe_load_all(p.read_text()) if d]
    control_plane.apply("default", docs)
    with control_plane.api_client(control_plane.reader_kubeconfig) as api:
        authz = client.AuthorizationV1Api(api)

        def allowed() -> bool:
            review = client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(
                    resource_attributes=client.V1ResourceAttributes(
                        group="triage.dev", resource="rcareports", verb="create", namespace="x"
                    )
                )
            )
            status = authz.create_self_subject_access_review(review).status
            return bool(status is not None and status.allowed)

        control_plane.wait_for(allowed, 30, "the reader may create rcareports")
    with control_plane.api_client() as api:
        ext = client.ApiextensionsV1Api(api)

        def established() -> bool:
            crd = ext.read_custom_resource_definition("rcareports.triage.dev")
            conditions = (crd.status.conditions if crd.status else None) or []
            return any(c.type == "Established" and c.status == "True" for c in conditions)

        control_plane.wait_for(established, 30, "the RCAReport CRD to be established")
    time.sleep(0.2)


def reader_tools(control_plane: Any) -> ReadRegistry:
    api = control_plane.api_client(control_plane.reader_kubeconfig)
    return ReadRegistry(KubeReader(api, timeout_s=10))


def policy(
    *,
    enabled: bool = True,
    max_attempts: int = 3,
    max_tokens: int | None = 200_000,
    max_cost_usd: float | None = 1.0,
    pricing: dict[str, Price] | None = None,
    find_tell: str = "answer",
) -> VerificationPolicy:
    return VerificationPolicy.model_validate(
        {
            "enabled": enabled,
            "max_attempts": max_attempts,
            "budget": {"max_tokens": max_tokens, "max_cost_usd": max_cost_usd},
            "pricing": {k: v.model_dump() for k, v in (pricing or {}).items()},
            "activation": {"find_tell": find_tell},
        }
    )


def model_settings(base_url: str, api_key: str, *, attempts: int = 2) -> ModelSettings:
    """A model at the scripted OpenAI-compatible server (the wire-level stand-in)."""
    return ModelSettings(
        name="openai:triage-test-model",
        base_url=base_url,
        api_key=api_key,
        timeout_s=5,
        max_attempts=attempts,
        backoff_s=0,
    )


def app_for(
    control_plane: Any,
    state_dir: Path,
    *,
    store: ReportStore | None = None,
    verification: VerificationPolicy | None = None,
    judge: ModelSettings | None = None,
    worker: ModelSettings | None = None,
) -> App:
    """The product's composition root over the test control plane, as the reader identity."""
    settings = Settings(
        state=StateSettings(dir=state_dir, checkpointer="memory"),
        judge_model=judge or ModelSettings(),
        worker_model=worker or ModelSettings(),
    )
    return App(
        settings=settings,
        tools=reader_tools(control_plane),
        store=store or KubeReportStore(control_plane.api_client(control_plane.reader_kubeconfig)),
        policy=Policy(verification=verification or policy()),
        redactor=Redactor(),
    )


def checked_run(
    words: str,
    *,
    control_plane: Any,
    state_dir: Path,
    store: ReportStore | None = None,
    verification: VerificationPolicy | None = None,
    judge: ModelSettings | None = None,
    worker: ModelSettings | None = None,
    on_progress: ProgressFn | None = None,
    namespace: str | None = None,
) -> CheckedRun:
    """`App.checked_run`, the one every surface calls; the LLM planner when `worker` is set."""
    app = app_for(
        control_plane,
        state_dir,
        store=store,
        verification=verification,
        judge=judge,
        worker=worker,
    )
    request = Request(
        words=words,
        namespace=namespace,
        run_id=f"test:{uuid.uuid4()}",
        planner="llm" if worker is not None else "rules",
    )
    return app.checked_run(request, on_progress=on_progress)


def script_llm_attempt(server: Any, rca: dict[str, Any], *, tokens: int = 500) -> None:
    """Queue what the worker model says in one attempt: no more reads, then this RCA."""
    server.reply("The evidence is enough.", prompt_tokens=tokens, completion_tokens=10)
    server.reply(
        tool_calls=[FakeToolCall("submit_rca", rca)], prompt_tokens=tokens, completion_tokens=100
    )


def script_judge_agrees(server: Any, *, tokens: int = 400) -> None:
    server.reply(
        tool_calls=[FakeToolCall("report_verdict", {"met": ["the RCA answers"], "missing": []})],
        prompt_tokens=tokens,
        completion_tokens=20,
    )
