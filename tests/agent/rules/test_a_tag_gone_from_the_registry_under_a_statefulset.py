"""A StatefulSet's image that no one changed and that its registry no longer serves: the pod
recreated on a fresh node (a node pool upgrade) must pull it, the nodes that had it cached kept
it running. A StatefulSet keeps no rollout history the reader can date, so this is said when
no rollout is under way (current revision = update revision, which the pod runs) and the user
says nothing was deployed — and not when a rollout is under way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass
from triage.core.models import RCADraft

QUESTION = (
    "payments in scn-imagepull-tag-not-found is down since the node pool upgrade this morning, "
    "pod stuck in ImagePullBackOff. we haven't touched its image in months"
)


def _statefulset(update_revision: str) -> dict[str, Any]:
    return {
        "name": "payments",
        "service_name": "payments",
        "pod_management": "OrderedReady",
        "replicas": 2,
        "ready": 0,
        "current": 2,
        "updated": 2,
        "update_strategy": "RollingUpdate",
        "partition": 0,
        "current_revision": "payments-7f9c6d",
        "update_revision": update_revision,
        "selector": {"app": "payments"},
        "claim_templates": [],
        "template": {"settings": {}},
        "conditions": [],
        "annotations": {},
    }


def _answer(tmp_path: Path, update_revision: str) -> RCADraft:
    recorded = recorded_bundle("imagepull-tag-not-found.json")
    recorded["question"] = QUESTION
    for c in recorded["calls"]:
        result = c["result"]
        if c["tool"] == "k8s.pods":
            for pod in result["data"]:
                pod["owner"] = {"kind": "StatefulSet", "name": "payments"}
                pod["labels"] = {"app": "payments", "controller-revision-hash": "payments-7f9c6d"}
        elif c["tool"] == "k8s.statefulsets":
            sts = _statefulset(update_revision)
            result.update(status="ok", excerpt="1 item(s): payments", data=[sts])
        elif c["tool"] in ("k8s.deployments", "k8s.rollout_history"):
            result.update(status="no_data", excerpt="nothing found", data=[])
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join([draft.cause or "", *(c.text for c in draft.root_cause)])


def test_a_tag_that_ran_from_a_nodes_cache_is_said_to_be_gone_from_the_registry(
    tmp_path: Path,
) -> None:
    draft = _answer(tmp_path, "payments-7f9c6d")
    assert draft.root_cause_class is CauseClass.IMAGE_PULL
    said = _said(draft)
    for part in ("no rollout is under way", "cached", "no longer serves that tag"):
        assert part in said, (part, said)


def test_a_rollout_under_way_is_not_read_as_a_vanished_tag(tmp_path: Path) -> None:
    draft = _answer(tmp_path, "payments-5d8e1a")
    assert draft.root_cause_class is CauseClass.IMAGE_PULL
    assert "no longer serves that tag" not in _said(draft)
