"""One contract, two backends: the Kubernetes report store (the product) and the in-memory one
(unit tests, the offline demo) pass the same tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.judge.support import install_reports
from tools.redact import Redactor
from tools.results import ErrorKind
from triage.agent import intake
from triage.core.errors import ReportError
from triage.core.models import Claim, RCADraft, draft_digest
from triage.reports.review import MAX_HISTORY, Review, Verdict, Via, review_status
from triage.reports.store import KubeReportStore, MemoryReportStore, ReportRef, ReportStore

DRAFT = RCADraft(
    title="api OOMKilled",
    summary="api is killed at its memory limit.",
    root_cause_class="oom_killed",
    impact="Requests fail.",
    root_cause=(Claim(text="api's container was OOMKilled at 256Mi", evidence=("E2",)),),
)


@pytest.fixture(params=["memory", pytest.param("kubernetes", marks=pytest.mark.cluster)])
def store_ns(request: pytest.FixtureRequest) -> Iterator[tuple[ReportStore, str]]:
    if request.param == "memory":
        yield MemoryReportStore(), "shop"
        return
    cp = request.getfixturevalue("control_plane")
    install_reports(cp)
    ns = request.getfixturevalue("namespace")
    with cp.api_client(cp.reader_kubeconfig) as api:
        yield KubeReportStore(api), ns


def goal(ns: str) -> Any:
    return intake.parse(f"api in {ns} is down, write the RCA", now=1e9)


def test_submit_stores_the_draft_with_its_digest(store_ns) -> None:
    store, ns = store_ns
    ref = store.submit(ns, goal(ns), DRAFT, attempt=1, run_id="cli:one")
    assert ref.digest == draft_digest(DRAFT)
    obj = store.get(ns, ref.name)
    assert obj is not None
    assert obj["spec"]["digest"] == ref.digest
    assert obj["spec"]["rootCause"] == "api's container was OOMKilled at 256Mi"
    assert RCADraft.model_validate(obj["spec"]["draft"]) == DRAFT


def test_a_later_attempt_replaces_the_same_report(store_ns) -> None:
    store, ns = store_ns
    first = store.submit(ns, goal(ns), DRAFT, attempt=1, run_id="cli:two")
    second_draft = DRAFT.model_copy(update={"impact": "Checkout fails."})
    second = store.submit(ns, goal(ns), second_draft, attempt=2, run_id="cli:two")
    assert first.name == second.name
    obj = store.get(ns, second.name)
    assert obj is not None
    assert obj["spec"]["attempt"] == 2
    assert obj["spec"]["digest"] == draft_digest(second_draft)


def test_the_outcome_is_published_on_the_status(store_ns) -> None:
    store, ns = store_ns
    ref = store.submit(ns, goal(ns), DRAFT, attempt=1, run_id="cli:three")
    store.publish(ref, {"outcome": "verified", "attempts": 1, "missing": []})
    obj = store.get(ns, ref.name)
    assert obj is not None
    assert obj["status"]["outcome"] == "verified"


def test_publishing_on_a_missing_report_fails_as_not_found(store_ns) -> None:
    store, ns = store_ns
    with pytest.raises(ReportError) as info:
        store.publish(ReportRef(ns, "rca-0000000000000000", "sha256:0"), {"outcome": "rejected"})
    assert info.value.kind is ErrorKind.NOT_FOUND
    assert store.get(ns, "rca-0000000000000000") is None


def test_a_review_is_stored_with_who_when_and_the_outcome_it_reviewed(store_ns) -> None:
    store, ns = store_ns
    ref = store.submit(ns, goal(ns), DRAFT, attempt=1, run_id="cli:four")
    store.publish(ref, {"outcome": "verified", "attempts": 1})
    first = Review.new(Verdict.DISPUTED, "kube:alice", Via.CLI, "it was  the\nDB", Redactor())
    store.review(ns, ref.name, first)
    second = Review.new(Verdict.CONFIRMED, "slack:T1/U2", Via.SLACK, "")
    obj = store.review(ns, ref.name, second)
    assert obj["status"]["review"]["verdict"] == "confirmed"
    assert obj["status"]["review"]["by"] == "slack:T1/U2"
    assert obj["status"]["review"]["outcome"] == "verified"
    (earlier,) = obj["status"]["reviews"]
    assert earlier["by"] == "kube:alice"
    assert earlier["note"] == "it was the DB"  # whitespace folded: one line
    assert obj["status"]["outcome"] == "verified"  # a review never changes the outcome
    stored = store.get(ns, ref.name)
    assert stored is not None
    assert review_status(stored) == "confirmed"


def test_a_later_publish_keeps_the_review(store_ns) -> None:
    store, ns = store_ns
    ref = store.submit(ns, goal(ns), DRAFT, attempt=1, run_id="cli:five")
    store.publish(ref, {"outcome": "rejected"})
    store.review(ns, ref.name, Review.new(Verdict.DISPUTED, "kube:bob", Via.PAGE, "no"))
    store.publish(ref, {"outcome": "verified", "attempts": 2})
    obj = store.get(ns, ref.name)
    assert obj is not None
    assert obj["status"]["outcome"] == "verified"
    assert obj["status"]["review"]["by"] == "kube:bob"
    assert obj["status"]["review"]["outcome"] == "rejected"


def test_reviewing_a_missing_report_fails_as_not_found(store_ns) -> None:
    store, ns = store_ns
    with pytest.raises(ReportError) as info:
        store.review(
            ns, "rca-0000000000000001", Review.new(Verdict.CONFIRMED, "kube:x", Via.CLI, "")
        )
    assert info.value.kind is ErrorKind.NOT_FOUND


def test_history_is_capped(store_ns) -> None:
    store, ns = store_ns
    ref = store.submit(ns, goal(ns), DRAFT, attempt=1, run_id="cli:six")
    for i in range(MAX_HISTORY + 3):
        verdict = Verdict.CONFIRMED if i % 2 else Verdict.DISPUTED
        store.review(ns, ref.name, Review.new(verdict, f"kube:u{i}", Via.CLI, ""))
    obj = store.get(ns, ref.name)
    assert obj is not None
    assert len(obj["status"]["reviews"]) == MAX_HISTORY
    assert obj["status"]["review"]["by"] == f"kube:u{MAX_HISTORY + 2}"
    assert obj["status"]["reviews"][-1]["by"] == f"kube:u{MAX_HISTORY + 1}"
