"""Fixtures for the review page's tests: reports to review, and Debian's headless Chromium
driven by Playwright through its executable path (never a browser Playwright downloads)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.support import demo_reports, synthetic
from triage.reports.store import MemoryReportStore

CHROMIUM = Path("/usr/bin/chromium")
# What works on a machine without outside network: no background fetches, no component
# updates, no QUIC (tests/support/install_debs.sh installs the package).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS_ENV = "REVIEW_SCREENSHOTS_DIR"


@pytest.fixture(scope="session")
def review_store(tmp_path_factory: pytest.TempPathFactory) -> MemoryReportStore:
    """Every recorded incident's report (the product's own runs) and 60 more with a spread of
    namespaces, outcomes, reviews and ages."""
    store = MemoryReportStore()
    demo_reports(store, tmp_path_factory.mktemp("demo-state"))
    synthetic(store, 60)
    return store


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the browser tests write their screenshots: $REVIEW_SCREENSHOTS_DIR when set (to
    keep a set), else a directory under pytest's base temp."""
    chosen = os.environ.get(SCREENSHOTS_ENV)
    path = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """One headless Chromium for the session (Playwright's sync API)."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: run `bash tests/support/install_debs.sh` (installs Debian's "
            "chromium), or deselect with -m 'not browser'"
        )
    from playwright.sync_api import sync_playwright  # noqa: PLC0415 (browser tests only)

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()
