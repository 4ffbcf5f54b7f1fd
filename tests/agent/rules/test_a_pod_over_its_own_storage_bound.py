"""A pod the kubelet evicts for outgrowing a local-storage bound of its own — an emptyDir's
sizeLimit, a container's ephemeral-storage limit, their sum over the pod — is told from a node
short of disk: the RCA names the bound and what the pod's log says it wrote there. The three
messages are the kubelet eviction manager's own wordings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.agent.rules.edited import recorded as recorded_bundle
from tests.agent.rules.edited import rules_draft
from triage.agent.planners.rules.analyzers.storage import _OWN_LIMIT
from triage.core.causes import CauseClass
from triage.core.models import RCADraft

_NAME = st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True)
_QTY = st.builds(
    lambda n, u: f"{n}{u}", st.integers(1, 4096), st.sampled_from(["Mi", "Gi", "M", "G", "Ki"])
)


@given(_NAME, _QTY)
def test_an_emptydir_over_its_size_limit_is_read(volume: str, limit: str) -> None:
    m = _OWN_LIMIT.search(f'Usage of EmptyDir volume "{volume}" exceeds the limit "{limit}". ')
    assert m is not None
    assert (m.group("volume"), m.group("vlimit")) == (volume, limit)


@given(_NAME, _QTY)
def test_a_container_over_its_ephemeral_limit_is_read(container: str, limit: str) -> None:
    m = _OWN_LIMIT.search(
        f'Container {container} exceeded its local ephemeral storage limit "{limit}". '
    )
    assert m is not None
    assert (m.group("container"), m.group("climit")) == (container, limit)


@given(_QTY)
def test_a_pod_over_its_summed_limit_is_read(limit: str) -> None:
    m = _OWN_LIMIT.search(
        f"Pod ephemeral local storage usage exceeds the total limit of containers {limit}. "
    )
    assert m is not None
    assert m.group("plimit") == limit


def test_a_node_short_of_disk_is_not_read_as_the_pods_own_bound() -> None:
    assert _OWN_LIMIT.search("The node was low on resource: ephemeral-storage. ") is None


def _answer(tmp_path: Path, change: Any) -> RCADraft:
    recorded = recorded_bundle("healthy.json")
    for call in recorded["calls"]:
        change(call["tool"], call["args"], call["result"])
    return rules_draft(tmp_path, recorded)


def _evicted() -> str:
    """The recorded bundle's first pod, whatever name the recording gave it."""
    recorded = recorded_bundle("healthy.json")
    pods = next(c for c in recorded["calls"] if c["tool"] == "k8s.pods")
    return str(pods["result"]["data"][0]["name"])


_EVICTED = _evicted()


def _scratch_outgrown(tool: str, args: dict[str, Any], result: dict[str, Any]) -> None:
    if tool == "k8s.pods":
        for pod in result["data"]:
            if pod["name"] != _EVICTED:
                continue
            pod.update(
                phase="Failed",
                ready=False,
                reason="Evicted",
                message='Usage of EmptyDir volume "scratch" exceeds the limit "1Gi". ',
            )
            pod["volumes"].append({"name": "scratch", "kind": "emptyDir"})
            pod["containers"][0]["spec"]["mounts"].append("scratch -> /var/cache/stock")
    elif tool == "k8s.logs" and args.get("pod") == _EVICTED:
        result["data"].append("INFO  snapshot of 2.4 GiB written to /var/cache/stock/full.db")


def test_an_evicted_pod_names_its_emptydir_bound_and_what_it_wrote(tmp_path: Path) -> None:
    draft = _answer(tmp_path, _scratch_outgrown)
    assert draft.root_cause_class is CauseClass.VOLUME_FULL
    said = " ".join([draft.title, *(c.text for c in draft.root_cause)])
    for part in ("scratch", "sizeLimit 1Gi", "/var/cache/stock", "2.4 GiB"):
        assert part in said, (part, said)
    assert "DiskPressure" not in said
