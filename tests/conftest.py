"""Shared test setup.

Hermetic by default: the autouse fixture below clears every environment variable the product
reads, so a developer's shell cannot change a test's outcome (httpx's `clean_environ`).
The real components (control plane, Prometheus, Alertmanager) and the wire-level stand-ins
(Slack Web API, OpenAI-compatible server) come from the plugins in tests/support/.
"""

from __future__ import annotations

import os

import pytest

# the class checks are plain asserts shared with tests.support.check_scenario: rewritten, a
# failure shows the values
pytest.register_assert_rewrite("tests.support.class_checks")

pytest_plugins: list[str] = [
    "tests.support.controlplane",
    "tests.support.observability",
    "tests.support.postgres",
    "tests.support.fake_slack",
    "tests.support.scenarios",
    "tests.support.fake_openai",
    "tests.support.reports",
    "tests.tools.mutate.cluster",
]

_PRODUCT_ENV_PREFIXES = ("TRIAGE_", "SLACK_", "OPENAI_", "KUBECONFIG", "PROMETHEUS_")


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(_PRODUCT_ENV_PREFIXES):
            monkeypatch.delenv(name, raising=False)
