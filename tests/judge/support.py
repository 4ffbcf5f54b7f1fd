"""Shared setup for the judge tests and the ablation bench: the RCAReport CRD and the agent's
report RBAC installed on the real control plane, and a checked run wired the way the CLI does.

Faults are injected at the wire (the scripted OpenAI-compatible server) or in the cluster (an
identity without the right, an admission policy, a real edit or delete of the report), never by
replacing our own code.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from judge import Judge
from policies.verification import Price, VerificationPolicy
from tests.support.fake_openai import ToolCall as FakeToolCall
from tools.k8s_read import KubeReader
from tools.read import ReadRegistry
from tools.redact import Redactor
from triage.budget import Budget
from triage.graph import RunResult, run_investigation
from triage.llm import ModelClient
from triage.loop import CheckedRun, ProgressFn, run_checked
from triage.planner_llm import LLMPlanner
from triage.planner_rules import RulesPlanner
from triage.report import KubeReportStore, ReportStore
from triage.settings import GraphSettings, ModelSettings, StateSettings

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "helm" / "triage" / "crds" / "rcareport.yaml"
RBAC = Path(__file__).with_name("manifests") / "agent-reports-rbac.yaml"
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


def judge_model(base_url: str, api_key: str, model: str = "triage-test-model") -> ModelClient:
    settings = ModelSettings(
        name=f"openai:{model}",
        base_url=base_url,
        api_key=api_key,
        timeout_s=5,
        max_attempts=2,
        backoff_s=0,
    )
    return ModelClient.from_settings(settings, "judge", Redactor())


def rules_worker(
    words: str, tools: Any, state_dir: Path, namespace: str | None = None
) -> tuple[Callable[[int, tuple[str, ...]], RunResult], list[tuple[str, ...]]]:
    """The rules planner on the graph, one fresh investigation per attempt; also returns the
    feedback each attempt was given."""
    seen: list[tuple[str, ...]] = []

    def work(attempt: int, feedback: tuple[str, ...]) -> RunResult:
        seen.append(feedback)
        return run_investigation(
            words,
            planner=RulesPlanner(),
            tools=tools,
            graph_settings=GraphSettings(),
            state_settings=StateSettings(dir=state_dir, checkpointer="memory"),
            namespace=namespace,
        )

    return work, seen


def checked_run(
    words: str,
    *,
    control_plane: Any,
    state_dir: Path,
    store: ReportStore | None = None,
    verification: VerificationPolicy | None = None,
    model: ModelClient | None = None,
    model_name: str | None = None,
    worker_usage: Any = None,
    worker: Callable[[int, tuple[str, ...]], RunResult] | None = None,
    on_progress: ProgressFn | None = None,
    namespace: str | None = None,
) -> CheckedRun:
    tools = reader_tools(control_plane)
    verification = verification or policy()
    budget = Budget(verification.budget, verification.pricing)
    if worker_usage is not None:
        budget.track("worker", "openai:triage-test-model", worker_usage)
    if model is not None:
        budget.track("judge", model_name or "openai:triage-test-model", model.usage)
    if worker is None:
        worker, _ = rules_worker(words, tools, state_dir, namespace)
    if store is None:
        store = KubeReportStore(control_plane.api_client(control_plane.reader_kubeconfig))
    return run_checked(
        worker=worker,
        judge=Judge(tools, model, model_name=model_name) if verification.enabled else None,
        store=store,
        policy=verification,
        budget=budget,
        redactor=Redactor(),
        run_id=f"test:{uuid.uuid4()}",
        on_progress=on_progress,
    )


def worker_model(base_url: str, api_key: str) -> ModelClient:
    settings = ModelSettings(
        name="openai:triage-test-model",
        base_url=base_url,
        api_key=api_key,
        timeout_s=5,
        max_attempts=1,
        backoff_s=0,
    )
    return ModelClient.from_settings(settings, "worker", Redactor())


def llm_worker(
    words: str, tools: Any, state_dir: Path, client: ModelClient
) -> Callable[[int, tuple[str, ...]], RunResult]:
    """The LLM planner on the graph, talking to `client` (the scripted server): one planner per
    attempt, one client (and so one token count) for the whole run."""

    def work(attempt: int, feedback: tuple[str, ...]) -> RunResult:
        return run_investigation(
            words,
            planner=LLMPlanner(client, model_name="openai:triage-test-model"),
            tools=tools,
            graph_settings=GraphSettings(),
            state_settings=StateSettings(dir=state_dir, checkpointer="memory"),
        )

    return work


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
