"""Things the request names that do not exist are reported, never retried, never 'done'."""

from __future__ import annotations

import pytest

from tests.judge.support import checked_run, policy
from triage.verification.loop import Outcome

pytestmark = pytest.mark.cluster


def test_a_nonexistent_deployment_is_reported_and_causes_no_retry(
    reports, oom_namespace, tmp_path
) -> None:
    words = f"deployment ghost-api in {oom_namespace} keeps crashing, write the RCA"
    run = checked_run(words, control_plane=reports, state_dir=tmp_path)
    assert run.outcome is Outcome.REJECTED
    assert not run.done
    assert run.verdict is not None
    assert run.verdict.nonexistent == (f"Deployment ghost-api in namespace {oom_namespace}",)
    assert run.verdict.missing == ()
    assert len(run.attempts) == 1  # the worker was never sent back


def test_a_nonexistent_namespace_is_reported_and_causes_no_retry(reports, tmp_path) -> None:
    run = checked_run(
        "checkout-api in nowhere-ns-4242 is down, write the RCA",
        control_plane=reports,
        state_dir=tmp_path,
    )
    assert run.outcome is Outcome.REJECTED
    assert run.verdict is not None
    assert "namespace nowhere-ns-4242" in run.verdict.nonexistent
    assert len(run.attempts) == 1


def test_named_things_that_exist_are_met(reports, oom_namespace, tmp_path) -> None:
    words = f"image-resizer in {oom_namespace} keeps restarting, what's going on?"
    run = checked_run(words, control_plane=reports, state_dir=tmp_path)
    assert run.outcome is Outcome.VERIFIED
    assert run.verdict is not None
    assert any("image-resizer" in m and "exists" in m for m in run.verdict.met)
    assert run.report is None  # a find-or-tell request is judged by its answer: no report


def test_checking_switched_off_says_unchecked_and_still_delivers(
    reports, oom_namespace, tmp_path
) -> None:
    run = checked_run(
        f"image-resizer in {oom_namespace} keeps restarting, write the RCA",
        control_plane=reports,
        state_dir=tmp_path,
        verification=policy(enabled=False),
    )
    assert run.outcome is Outcome.UNCHECKED
    assert not run.done
    assert run.activation.value == "off"
    assert run.report is not None  # the deliverable is still written


def test_casual_chat_runs_no_check(reports, tmp_path) -> None:
    run = checked_run("thanks!", control_plane=reports, state_dir=tmp_path)
    assert run.outcome is Outcome.UNCHECKED
    assert run.activation.value == "none"
    assert run.report is None
