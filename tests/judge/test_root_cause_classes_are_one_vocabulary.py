"""Root-cause classes are one enum (triage/core/causes.py): any other spelling is refused where
it enters — a draft, a model's reply, the RCAReport CRD in the real apiserver — so a wrong RCA
cannot pass the judge by a spelling, and every class the judge has no cluster signature for
says so in its verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml
from kubernetes import client

from judge import Judge
from judge.cause import SIGNATURES
from tests.agent.llm.support import (
    TURN_1,
    CannedTools,
    calls,
    investigate,
    scripted_planner,
    submit,
)
from tests.judge.test_the_judge_decides_on_fields import Cluster, draft, evidence, judge_input
from triage.agent.planners.llm import prompts
from triage.core.causes import CauseClass, UnknownCauseClass

ROOT = Path(__file__).resolve().parents[2]
CRD = ROOT / "helm" / "triage" / "crds" / "rcareport.yaml"
HEALTHY = {
    "name": "api-1",
    "phase": "Running",
    "ready": True,
    "labels": {"app": "api"},
    "owner": {"kind": "ReplicaSet", "name": "api-5d8f"},
    "containers": [{"name": "api", "restarts": 0, "state": {"kind": "running"}}],
}


@pytest.mark.parametrize("spelling", ["crashloop_bad_config", "bad_config_crashloop", "OOMKilled"])
def test_a_draft_with_another_spelling_cannot_be_built(spelling: str) -> None:
    with pytest.raises(pydantic.ValidationError, match="unknown root-cause class"):
        draft(root_cause_class=spelling)
    with pytest.raises(UnknownCauseClass):
        CauseClass.parse(spelling)


def test_a_healthy_pod_rejects_a_crash_loop_cause_whatever_it_is_called() -> None:
    verdict = Judge(Cluster(pods=[HEALTHY])).judge(
        judge_input(draft(root_cause_class="bad_config"), [evidence("E1")]), record=False
    )
    assert not verdict.verified
    assert any("contradicts the cluster" in m for m in verdict.missing)


def test_a_class_without_a_signature_says_it_was_checked_by_citation_only() -> None:
    unsigned = next(c for c in CauseClass if c.is_cause and c not in SIGNATURES)
    verdict = Judge(Cluster(pods=[HEALTHY])).judge(
        judge_input(draft(root_cause_class=unsigned.value), [evidence("E1")]), record=False
    )
    assert any("checked by citation only" in m for m in verdict.met)


def test_the_model_is_told_every_class_and_its_reply_is_held_to_them() -> None:
    listed = prompts.cause_classes()
    assert all(f"- {c.value}: {c.description}" in listed for c in CauseClass)
    bad: dict[str, Any] = {
        "title": "RCA",
        "summary": "crash loop",
        "root_cause_class": "crashloop_bad_config",
        "impact": "down",
        "root_cause": [{"text": "pods crash-loop", "evidence": ["E2"]}],
    }
    planner, _ = scripted_planner([calls(*TURN_1), calls(), submit(bad), submit(bad), submit(bad)])
    result = investigate(planner, CannedTools(secrets=False, injections=False))
    assert result.draft is not None
    assert result.draft.planner == "rules (llm fallback)"  # refused: the rules RCA stands
    assert any("fell back to the rules planner" in n for n in result.draft.notes)


@pytest.mark.cluster
def test_the_report_crd_refuses_another_spelling(control_plane: Any, namespace: str) -> None:
    crd = yaml.safe_load(CRD.read_text())
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["properties"]["rootCauseClass"]["enum"] == [c.value for c in CauseClass]
    control_plane.apply("default", [crd])
    body = {
        "apiVersion": "triage.dev/v1alpha1",
        "kind": "RCAReport",
        "metadata": {"name": "rca-spelling"},
        "spec": {
            "request": "why",
            "digest": "sha256:" + "0" * 64,
            "draft": {},
            "rootCauseClass": "crashloop_bad_config",
        },
    }
    with control_plane.api_client() as api:
        objects = client.CustomObjectsApi(api)
        control_plane.wait_for(
            lambda: (
                objects.list_namespaced_custom_object(
                    "triage.dev", "v1alpha1", namespace, "rcareports"
                )
                is not None
            ),
            30,
            "rcareports to be served",
        )
        with pytest.raises(client.ApiException) as refused:
            objects.create_namespaced_custom_object(
                "triage.dev", "v1alpha1", namespace, "rcareports", body
            )
    assert refused.value.status == 422
    assert "rootCauseClass" in str(refused.value.body)
