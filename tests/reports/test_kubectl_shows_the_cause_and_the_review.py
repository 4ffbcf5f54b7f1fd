"""`kubectl get rcareports` shows the outcome, a person's review and the cause in one sentence
(not the symptom): the printer columns read `status.review.verdict` and `spec.rootCause`."""

from __future__ import annotations

import ssl

import httpx
import pytest

from tests.judge.support import install_reports
from tools.read.kube import RCAREPORT_GROUP, RCAREPORT_PLURAL, RCAREPORT_VERSION
from triage.agent.intake import parse
from triage.core.models import Claim, LinkRole, RCADraft
from triage.reports.review import Review, Verdict, Via
from triage.reports.store import ROOT_CAUSE_CHARS, KubeReportStore, manifest

CAUSE = "DATABASE_URL lacks the scheme separator; the container exits at start"
CHAIN = (
    Claim(text="checkout-api is in CrashLoopBackOff", evidence=("E2",), role=LinkRole.SYMPTOM),
    Claim(
        text="the log says DATABASE_URL is not a valid URL", evidence=("E9",), role=LinkRole.CAUSE
    ),
)


def _draft(cause: str = "") -> RCADraft:
    return RCADraft(
        title="RCA: checkout-api crash-loops",
        summary="checkout-api is in CrashLoopBackOff and serves 503s",
        root_cause_class="bad_config",
        cause=cause,
        impact="checkout fails",
        root_cause=CHAIN,
    )


def _root_cause(draft: RCADraft) -> str:
    goal = parse("checkout-api in shop returns 503, write the RCA", now=0)
    return str(
        manifest("rca-x", "shop", goal, draft, attempt=1, run_id="cli:x")["spec"]["rootCause"]
    )


def test_the_line_is_the_cause_not_the_symptom() -> None:
    assert _root_cause(_draft(CAUSE)) == CAUSE
    # Without a one-sentence cause, the chain's cause link, never its symptom.
    assert _root_cause(_draft()) == "the log says DATABASE_URL is not a valid URL"
    long = _root_cause(_draft("x " * 200))
    assert len(long) <= ROOT_CAUSE_CHARS <= 200  # the CRD's maxLength
    assert long.endswith("…")


@pytest.mark.cluster
def test_the_printer_columns_show_outcome_review_and_cause(control_plane, namespace) -> None:
    install_reports(control_plane)
    goal = parse(f"checkout-api in {namespace} returns 503, write the RCA", now=0)
    with control_plane.api_client(control_plane.reader_kubeconfig) as api:
        store = KubeReportStore(api)
        ref = store.submit(namespace, goal, _draft(CAUSE), attempt=1, run_id="cli:cols")
        store.publish(ref, {"outcome": "verified", "attempts": 1})
        store.review(namespace, ref.name, Review.new(Verdict.DISPUTED, "kube:alice", Via.CLI, ""))
        # What kubectl asks for: the server-side Table of the printer columns.
        cfg = api.configuration
        path = (
            f"/apis/{RCAREPORT_GROUP}/{RCAREPORT_VERSION}/namespaces/{namespace}/{RCAREPORT_PLURAL}"
        )
        response = httpx.get(
            cfg.host + path,
            headers={
                "Accept": "application/json;as=Table;v=v1;g=meta.k8s.io",
                "Authorization": cfg.get_api_key_with_prefix("authorization")
                or cfg.get_api_key_with_prefix("BearerToken"),
            },
            verify=ssl.create_default_context(cafile=cfg.ssl_ca_cert),
            timeout=10,
        )
        response.raise_for_status()
        table = response.json()
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns[:4] == ["Name", "Outcome", "Review", "Root cause"]
    (row,) = table["rows"]
    cells = dict(zip(columns, row["cells"], strict=False))
    assert cells["Outcome"] == "verified"
    assert cells["Review"] == "disputed"
    assert cells["Root cause"] == CAUSE
