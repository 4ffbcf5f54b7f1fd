"""Fixtures for tests that write or read RCAReports on the real control plane: the CRD and
the agent's report rights, and scenarios to report on (a pytest plugin, tests/conftest.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.judge.support import install_reports
from tests.support.scenario_format import SCENARIO_DIR
from tests.support.scenarios import apply_scenario, load_scenario


@pytest.fixture(scope="session")
def reports(control_plane: Any) -> Any:
    """The RCAReport CRD and the agent's report RBAC, installed once per session."""
    install_reports(control_plane)
    return control_plane


@pytest.fixture(scope="session")
def oom_namespace(control_plane: Any) -> str:
    """The oomkilled scenario, applied (or reused) on the real control plane."""
    scenario = load_scenario(SCENARIO_DIR / "oomkilled.yaml")
    apply_scenario(control_plane, scenario)
    return scenario.namespace


@pytest.fixture(scope="session")
def crashloop_namespace(control_plane: Any) -> str:
    scenario = load_scenario(SCENARIO_DIR / "crashloop-bad-env.yaml")
    apply_scenario(control_plane, scenario)
    return scenario.namespace
