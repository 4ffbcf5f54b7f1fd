"""`triage investigate` prints the outcome and exits with its status; only 0 means done."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.cli.contract import valid
from triage.cli.main import app
from triage.core.errors import EXIT_EVALUATOR_UNAVAILABLE, EXIT_OK, EXIT_UNCHECKED

pytestmark = pytest.mark.cluster


def investigate(
    question: str, kubeconfig: Path, state_dir: Path, env: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    args = ["investigate", question, "--kubeconfig", str(kubeconfig), "-o", "json", "-q"]
    result = CliRunner().invoke(app, args, env={"TRIAGE_STATE__DIR": str(state_dir), **(env or {})})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, valid(result.stdout, kind="Investigation")


def test_a_verified_rca_exits_0_and_says_where_it_is(reports, oom_namespace, tmp_path) -> None:
    code, out = investigate(
        f"image-resizer in {oom_namespace} keeps restarting, write the RCA",
        reports.reader_kubeconfig,
        tmp_path,
    )
    assert code == EXIT_OK
    assert out["verification"]["outcome"] == "verified"
    assert out["verification"]["done"] is True
    assert out["verification"]["report"]["namespace"] == oom_namespace


def test_checking_switched_off_exits_unchecked(reports, oom_namespace, tmp_path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({"version": 1, "verification": {"enabled": False}}))
    code, out = investigate(
        f"image-resizer in {oom_namespace} keeps restarting, write the RCA",
        reports.reader_kubeconfig,
        tmp_path,
        {"TRIAGE_POLICY_FILE": str(policy)},
    )
    assert code == EXIT_UNCHECKED
    assert out["verification"]["outcome"] == "unchecked"
    assert out["draft"]["root_cause_class"] == "oom_killed"  # the candidate is still printed


def test_judge_model_down_exits_evaluator_unavailable(
    reports, oom_namespace, openai_server, tmp_path
) -> None:
    openai_server.fail(503, times=10)
    env = {
        "TRIAGE_JUDGE_MODEL__NAME": "openai:triage-test-model",
        "TRIAGE_JUDGE_MODEL__BASE_URL": openai_server.base_url,
        "TRIAGE_JUDGE_MODEL__API_KEY": openai_server.api_key,
        "TRIAGE_JUDGE_MODEL__TIMEOUT_S": "5",
        "TRIAGE_JUDGE_MODEL__MAX_ATTEMPTS": "2",
        "TRIAGE_JUDGE_MODEL__BACKOFF_S": "0",
    }
    code, out = investigate(
        f"image-resizer in {oom_namespace} keeps restarting, what is wrong?",
        reports.reader_kubeconfig,
        tmp_path,
        env,
    )
    assert code == EXIT_EVALUATOR_UNAVAILABLE
    assert out["verification"]["outcome"] == "evaluator_unavailable"
    assert out["draft"] is not None
