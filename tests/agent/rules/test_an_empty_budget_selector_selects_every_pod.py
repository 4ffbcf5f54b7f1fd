"""In policy/v1 a PodDisruptionBudget whose selector is empty ({}) selects every pod of its
namespace (policy/v1beta1 read the same {} as no pod, so a template carried over unchanged
starts to cover everything); an absent selector selects none. The budget is weighed over the
pods it really covers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from tools.read.shapes_kinds import pdb as shaped_pdb
from triage.agent.planners.rules.facts import budget_selects

labels = st.dictionaries(
    st.from_regex(r"[a-z]{1,8}", fullmatch=True), st.from_regex(r"[a-z0-9]{1,8}", fullmatch=True)
)


def _budget(spec_selector: object) -> dict[str, object]:
    spec: dict[str, object] = {"maxUnavailable": 1}
    if spec_selector is not None:
        spec["selector"] = spec_selector
    return {"metadata": {"name": "baseline"}, "spec": spec, "status": {}}


@given(pod=labels)
def test_an_empty_selector_covers_every_pod_and_an_absent_one_none(pod: dict[str, str]) -> None:
    assert budget_selects(shaped_pdb(_budget({})), pod)
    assert not budget_selects(shaped_pdb(_budget(None)), pod)


@given(pod=labels)
def test_match_labels_cover_only_the_pods_that_carry_them(pod: dict[str, str]) -> None:
    budget = shaped_pdb(_budget({"matchLabels": {"app": "api"}}))
    assert budget_selects(budget, pod) == (pod.get("app") == "api")
