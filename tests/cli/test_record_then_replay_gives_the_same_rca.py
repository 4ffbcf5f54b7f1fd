"""`triage record` writes what a live investigation read; `triage replay FILE` runs the same
planner over it offline and reaches the same RCA and the same outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.judge.support import install_reports
from tests.support.scenario_format import SCENARIO_DIR
from tests.support.scenarios import apply_scenario, load_scenario

TRIAGE = str(Path(sys.executable).with_name("triage"))


def _triage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [TRIAGE, *args], env=env, capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.cluster
@pytest.mark.parametrize("scenario", ["crashloop-bad-env", "oomkilled"])
def test_a_recorded_investigation_replays_to_the_same_rca(
    control_plane, tmp_path, scenario: str
) -> None:
    install_reports(control_plane)
    sc = load_scenario(SCENARIO_DIR / f"{scenario}.yaml")
    apply_scenario(control_plane, sc)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "KUBECONFIG": str(control_plane.reader_kubeconfig),
        "TRIAGE_STATE__DIR": str(tmp_path / "state"),
    }
    bundle = tmp_path / "incident.json"
    question = f"{sc.rendered_question} Write the RCA."
    recorded = _triage(
        "record", question, "-n", sc.namespace, "--out", str(bundle), "-o", "json", "-q", env=env
    )
    assert recorded.returncode in (0, 1, 5), recorded.stderr
    live = json.loads(recorded.stdout)

    offline_env = {k: v for k, v in env.items() if k != "KUBECONFIG"}  # no cluster at all
    replayed = _triage("replay", str(bundle), "-o", "json", "-q", env=offline_env)
    assert replayed.returncode == recorded.returncode, replayed.stderr
    again = json.loads(replayed.stdout)

    assert again["replay_misses"] == []
    assert again["draft"] == live["draft"]
    assert again["verification"]["outcome"] == live["verification"]["outcome"]
    # The judge's lists name the report, whose name comes from the run id (a new run here).
    names = (live["verification"]["report"]["name"], again["verification"]["report"]["name"])
    for key in ("met", "missing", "nonexistent"):
        assert [i.replace(*names) for i in live["verification"][key]] == again["verification"][key]
    assert [e["id"] for e in again["evidence"]] == [e["id"] for e in live["evidence"]]


def test_replay_says_what_to_do_with_a_file_that_is_not_a_bundle(tmp_path) -> None:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    junk = tmp_path / "junk.json"
    junk.write_text('{"not": "a bundle"}')
    out = _triage("replay", str(junk), env=env)
    assert out.returncode == 2
    assert "not a bundle written by `triage record`" in out.stderr
    missing = _triage("replay", str(tmp_path / "nope.json"), env=env)
    assert missing.returncode == 2
    assert "triage record" in missing.stderr
    demo = _triage("demo", str(junk), env=env)
    assert demo.returncode == 2
    assert "triage replay" in demo.stderr
