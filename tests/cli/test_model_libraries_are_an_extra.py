"""The model libraries are the optional extra `triage[llm]`: a plain install works without
them (the default rules planner never imports them), and a configured model without them
stops before any work with one line naming the extra (exit 2).

"Not installed" is real to the interpreter: the CLI runs in a fresh process whose first
import finder refuses `langchain` and `langchain_openai` (as an environment without the extra
would: ModuleNotFoundError), not a stand-in for our code."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from triage.core.errors import EXIT_USAGE

ROOT = Path(__file__).resolve().parents[2]
REFUSED = ("langchain", "langchain_openai")
WITHOUT_THE_EXTRA = f"""
import sys

class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {REFUSED!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
from triage.cli import main
sys.argv = ["triage", *sys.argv[1:]]
try:
    main()
finally:
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in {REFUSED!r})
    assert not loaded, loaded
"""
HINT = "pip install 'triage[llm]'"


def _triage(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TRIAGE_", "KUBECONFIG"))}
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_THE_EXTRA, *args],
        env={
            **clean,
            "XDG_STATE_HOME": str(tmp_path),
            "TRIAGE_STATE__DIR": str(tmp_path / "state"),
            # a kubeconfig that is never read: the check comes first
            "KUBECONFIG": str(tmp_path / "no-such-kubeconfig"),
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=ROOT,
    )


def test_the_extra_holds_the_model_libraries() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    names = {d.split(">")[0].split("[")[0].strip() for d in project["dependencies"]}
    extra = {d.split(">")[0].strip() for d in project["optional-dependencies"]["llm"]}
    dev = {d.split(">")[0].strip() for d in project["optional-dependencies"]["dev"]}

    assert {"langchain", "langchain-openai"} <= extra
    assert not names & extra  # a plain install leaves them out
    assert extra <= dev  # CI installs '.[dev]' and tests the LLM path


def test_the_default_planner_runs_without_them(tmp_path: Path) -> None:
    done = _triage(tmp_path, "demo", "-q", "-o", "json")

    assert done.returncode == 0, done.stderr
    assert '"kind": "Investigation"' in done.stdout or '"kind":"Investigation"' in done.stdout


@pytest.mark.parametrize(
    ("args", "env"),
    [
        (
            ["investigate", "why is checkout-api down", "-n", "shop", "--planner", "llm"],
            {"TRIAGE_WORKER_MODEL__NAME": "openai:gpt-4.1-mini"},
        ),
        (
            ["investigate", "why is checkout-api down", "-n", "shop"],
            {"TRIAGE_PLANNER__KIND": "llm", "TRIAGE_WORKER_MODEL__NAME": "gpt-4.1-mini"},
        ),
        (["demo"], {"TRIAGE_JUDGE_MODEL__NAME": "openai:gpt-4.1-mini"}),
        (["investigate", "why", "-n", "shop"], {"TRIAGE_JUDGE_MODEL__NAME": "openai:o4-mini"}),
    ],
    ids=["llm-planner-option", "llm-planner-setting", "judge-model-demo", "judge-model-live"],
)
def test_a_configured_model_without_them_stops_with_one_line(
    tmp_path: Path, args: list[str], env: dict[str, str]
) -> None:
    done = _triage(tmp_path, *args, **env)

    assert done.returncode == EXIT_USAGE
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: model ")
    assert HINT in lines[0]
    assert "no module 'langchain'" in lines[0]
    assert done.stdout == ""
