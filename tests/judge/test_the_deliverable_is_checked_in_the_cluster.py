"""The judge checks the RCAReport in the real cluster: written, stored as drafted, still there.

Faults are real: an identity without the right to write, an admission policy that refuses the
write, an admin deleting or editing the report between submit and the verdict.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.judge.support import REJECT_LABEL, checked_run
from triage.agent import intake
from triage.core.errors import ReportError
from triage.core.models import RCADraft
from triage.reports.store import KubeReportStore
from triage.verification.loop import CheckedRun, Outcome

pytestmark = pytest.mark.cluster

GROUP, VERSION, PLURAL = "triage.dev", "v1alpha1", "rcareports"


def rca_request(ns: str) -> str:
    return f"image-resizer in {ns} keeps restarting, write the RCA"


def missing_of(run: CheckedRun) -> tuple[str, ...]:
    assert run.verdict is not None
    return run.verdict.missing


def stored(k8s_admin: client.ApiClient, ns: str, name: str) -> dict[str, Any]:
    api = client.CustomObjectsApi(k8s_admin)
    return api.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)  # type: ignore[return-value]


def test_a_written_rca_is_verified_and_its_outcome_stored(
    reports, oom_namespace, k8s_admin, tmp_path
) -> None:
    run = checked_run(rca_request(oom_namespace), control_plane=reports, state_dir=tmp_path)
    assert run.outcome is Outcome.VERIFIED, run.summary()
    assert run.done
    assert len(run.attempts) == 1
    assert run.report is not None
    report = stored(k8s_admin, oom_namespace, run.report.name)
    assert report["status"]["outcome"] == "verified"
    assert report["spec"]["rootCauseClass"] == "oom_killed"
    assert report["spec"]["rootCause"]
    assert report["status"]["missing"] == []


def test_a_write_refused_by_rbac_is_never_verified(reports, oom_namespace, tmp_path) -> None:
    no_rights = KubeReportStore(reports.api_client(reports.mutator_kubeconfig))
    run = checked_run(
        rca_request(oom_namespace), control_plane=reports, state_dir=tmp_path, store=no_rights
    )
    assert run.outcome is Outcome.REJECTED
    assert not run.done
    assert len(run.attempts) == 3  # the attempt limit bounds the retries
    assert any("could not be written" in m and "denied" in m for m in missing_of(run))
    assert run.best.draft is not None  # the best candidate is still returned, unverified


def test_a_write_refused_by_admission_is_never_verified(
    reports, namespace, k8s_admin, tmp_path
) -> None:
    client.CoreV1Api(k8s_admin).patch_namespace(
        namespace, {"metadata": {"labels": {REJECT_LABEL: "true"}}}
    )
    words = f"write the RCA for namespace {namespace}, something is off"

    probe = KubeReportStore(reports.api_client(reports.reader_kubeconfig))
    goal = intake.parse(words, now=0)
    draft = RCADraft(title="probe", summary="probe", root_cause_class="no_fault", impact="-")

    def refused() -> bool:  # the policy's namespace selector catches up with the label
        try:
            probe.submit(namespace, goal, draft, attempt=1, run_id="probe")
        except ReportError:
            return True
        return False

    reports.wait_for(refused, 30, "the admission policy to refuse reports")
    run = checked_run(words, control_plane=reports, state_dir=tmp_path)
    assert run.outcome is Outcome.REJECTED
    assert any("not accepted in this namespace" in m for m in missing_of(run))


def test_a_report_deleted_after_submit_is_caught_and_rewritten(
    reports, oom_namespace, k8s_admin, tmp_path
) -> None:
    api = client.CustomObjectsApi(k8s_admin)
    deleted: list[str] = []

    def delete_once(event: dict[str, Any]) -> None:
        if "submitted" in event and not deleted:
            ns, name = event["submitted"].split("/")
            api.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)
            deleted.append(name)

    words = rca_request(oom_namespace)
    run = checked_run(words, control_plane=reports, state_dir=tmp_path, on_progress=delete_once)
    first = run.attempts[0].verdict
    assert first is not None
    assert not first.verified
    assert any("does not exist in the cluster" in m for m in first.missing)
    assert first.failed_gates == ("deliverable_stored",)
    assert run.outcome is Outcome.VERIFIED  # the retry wrote it again
    assert len(run.attempts) == 2
    # the rules planner cannot use feedback: the same draft was submitted again, no new reads
    assert run.attempts[1].result is run.attempts[0].result


def test_a_report_edited_after_submit_is_rejected(
    reports, oom_namespace, k8s_admin, tmp_path
) -> None:
    api = client.CustomObjectsApi(k8s_admin)

    def edit(event: dict[str, Any]) -> None:
        if "submitted" in event:
            ns, name = event["submitted"].split("/")
            patch = {"spec": {"draft": {"summary": "Nothing to see here."}}}
            api.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name, patch)

    run = checked_run(
        rca_request(oom_namespace), control_plane=reports, state_dir=tmp_path, on_progress=edit
    )
    assert run.outcome is Outcome.REJECTED
    assert any("changed after submit" in m for m in missing_of(run))
