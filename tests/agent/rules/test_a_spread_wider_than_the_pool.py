"""A topology spread constraint asking for more domains (minDomains) than the nodes a pod may
use span: the scheduler takes the global minimum as 0, so each domain holds at most maxSkew
pods, and once each is full the next replica stays Pending on idle nodes. The RCA counts the
domains and the pods in each, as the scheduler does, and names minDomains; with as many
domains as minDomains asks for, the constraint is not what refuses the pod."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.core.causes import CauseClass
from triage.core.models import RCADraft

_POOL = {"pool": "claims"}
_TAINT = {"key": "dedicated", "value": "claims", "effect": "NoSchedule"}


def _answer(tmp_path: Path, zones: list[str], min_domains: int) -> RCADraft:
    recorded = recorded_bundle("pending-node-selector.json")
    spread = f"spread maxSkew 1 per topology.kubernetes.io/zone minDomains {min_domains}"
    for call in recorded["calls"]:
        result = call["result"]
        if call["tool"] == "k8s.nodes":
            model = result["data"][0]
            for zone in zones:
                node = copy.deepcopy(model)
                node["name"] = f"claims-{zone}"
                node["labels"] = {**_POOL, "topology.kubernetes.io/zone": zone}
                node["taints"] = [_TAINT]
                result["data"].append(node)
        elif call["tool"] == "k8s.pods":
            pending = result["data"][0]
            pending.update(node_selector=_POOL, tolerations=[_TAINT])
            pending["affinity"] = [f"{spread} of app=gpu-inference"]
            for zone in zones[:min_domains]:
                running = copy.deepcopy(pending)
                running.update(name=f"gpu-inference-78d8cfcf9-{zone}", phase="Running")
                running["node"] = f"claims-{zone}"
                result["data"].append(running)
        elif call["tool"] == "k8s.events":
            for event in result["data"]:
                if event["reason"] == "FailedScheduling":
                    event["message"] = (
                        f"0/{49 + len(zones)} nodes are available: {len(zones)} node(s) didn't "
                        "match pod topology spread constraints, 49 node(s) didn't match Pod's "
                        "node affinity/selector. preemption: not helpful."
                    )
    return rules_draft(tmp_path, recorded)


def _said(draft: RCADraft) -> str:
    return " ".join([draft.title, *(c.text for c in draft.root_cause)])


@pytest.mark.parametrize(("zones", "min_domains"), [(["eu-west-1a", "eu-west-1b"], 3), (["z1"], 2)])
def test_fewer_zones_than_min_domains_is_named(
    tmp_path: Path, zones: list[str], min_domains: int
) -> None:
    draft = _answer(tmp_path, zones, min_domains)
    assert draft.root_cause_class is CauseClass.UNSCHEDULABLE_PLACEMENT
    said = _said(draft)
    for part in (f"minDomains {min_domains}", f"only {len(zones)} zone", *zones):
        assert part in said, (part, said)


def test_as_many_zones_as_min_domains_is_not_blamed_on_min_domains(tmp_path: Path) -> None:
    said = _said(_answer(tmp_path, ["eu-west-1a", "eu-west-1b"], 2))
    assert "fewer than minDomains" not in said, said
