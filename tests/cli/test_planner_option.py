"""`--planner llm` without a model is a plain usage error naming the setting; the rules
planner stays the default."""

from __future__ import annotations

from typer.testing import CliRunner

from triage.cli.main import app
from triage.core.errors import EXIT_USAGE


def test_llm_planner_without_a_model_is_a_usage_error(tmp_path) -> None:
    result = CliRunner().invoke(
        app,
        ["investigate", "why is checkout-api down in namespace shop", "--planner", "llm", "-q"],
        env={"TRIAGE_STATE__DIR": str(tmp_path)},
    )
    assert result.exit_code == EXIT_USAGE
    assert "TRIAGE_WORKER_MODEL__NAME" in result.output


def test_unknown_planner_is_refused(tmp_path) -> None:
    result = CliRunner().invoke(
        app,
        ["investigate", "why is checkout-api down in namespace shop", "--planner", "magic"],
        env={"TRIAGE_STATE__DIR": str(tmp_path)},
    )
    assert result.exit_code == 2
