"""Fixtures for the chart tests: the pinned helm CLI (built on demand), unbound or bound to the
test control plane, and a fresh namespace per install (tests.support.controlplane)."""

from __future__ import annotations

import pytest

from tests.helm.support import Helm, build
from tests.support.controlplane import ControlPlane


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build helm before the first chart test, so a cold build (minutes) is not charged to a
    test's timeout; a no-op when bin/helm is already the pinned version."""
    if session.config.option.collectonly:
        return
    if any(
        {"helm", "helm_cluster"} & set(getattr(item, "fixturenames", ())) for item in session.items
    ):
        build()


@pytest.fixture(scope="session")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Helm:
    """helm with private state dirs and no cluster: lint and template only."""
    build()
    return Helm(tmp_path_factory.mktemp("helm-home"))


@pytest.fixture(scope="session")
def helm_cluster(helm: Helm, control_plane: ControlPlane) -> Helm:
    """helm talking to the test control plane as its admin."""
    return Helm(helm.home, control_plane.admin_kubeconfig)
