"""The review page in a real headless Chromium: the list filters, sorts and pages; a cited
claim's evidence opens beside it; a phone-sized screen lays out without sideways scrolling; a
review from the page lands on the report. Screenshots go to $REVIEW_SCREENSHOTS_DIR (or a
temp dir) for people to look at."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.web.support import ReviewServer, local_parts
from triage.core import metrics
from triage.reports.store import MemoryReportStore

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}  # an iPhone 14's CSS pixels


@pytest.fixture(scope="module")
def server(review_store: MemoryReportStore) -> Iterator[ReviewServer]:
    with ReviewServer(local_parts(review_store, page_size=25)) as srv:
        yield srv


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    context = chromium.new_context(viewport=DESKTOP)
    tab = context.new_page()
    yield tab
    context.close()


def _rows(page: Any) -> list[dict[str, str]]:
    return page.eval_on_selector_all(
        "table.reports tbody tr[data-report]",
        """rows => rows.map(r => ({
            report: r.dataset.report,
            namespace: r.querySelector('[data-label=Namespace]').innerText.trim(),
            outcome: r.querySelector('[data-label=Outcome]').innerText.trim(),
            review: r.querySelector('[data-label=Review]').innerText.trim(),
            created: r.querySelector('time').getAttribute('datetime'),
        }))""",
    )


def _accessible(page: Any) -> None:
    """What a screen reader needs: a language, one h1, labelled controls, named buttons."""
    assert page.get_attribute("html", "lang") == "en"
    assert page.locator("h1").count() == 1
    unlabelled = page.eval_on_selector_all(
        "input:not([type=hidden]), select, textarea",
        "els => els.filter(e => !(e.labels && e.labels.length)).map(e => e.name)",
    )
    assert unlabelled == []
    nameless = page.eval_on_selector_all(
        "button, a", "els => els.filter(e => !e.innerText.trim()).length"
    )
    assert nameless == 0


def _no_sideways_scroll(page: Any) -> None:
    width = page.evaluate("document.documentElement.clientWidth")
    assert page.evaluate("document.documentElement.scrollWidth") <= width


def test_the_list_filters_sorts_and_pages(
    server: ReviewServer, page: Any, review_store: MemoryReportStore, screenshots: Path
) -> None:
    page.goto(f"{server.url}/reports")
    total = len(review_store.reports)
    assert page.inner_text("#count").startswith(f"{total} reports")
    assert len(_rows(page)) == 25
    _accessible(page)
    page.screenshot(path=screenshots / "list-desktop.png", full_page=True)

    page.select_option("select[name=outcome]", "rejected")
    page.click("form.filters button[type=submit]")
    rows = _rows(page)
    rejected = [r for r in review_store.reports.values() if r["status"]["outcome"] == "rejected"]
    assert rows
    assert {r["outcome"] for r in rows} == {"rejected"}
    assert page.inner_text("#count").startswith(f"{len(rejected)} report")

    page.select_option("select[name=outcome]", "verified")
    page.select_option("select[name=review]", "disputed")
    page.click("form.filters button[type=submit]")
    rows = _rows(page)
    assert rows  # verified but disputed: the judge's false "done"
    assert {(r["outcome"], r["review"]) for r in rows} == {("verified", "disputed")}
    page.screenshot(path=screenshots / "list-verified-but-disputed.png", full_page=True)

    page.goto(f"{server.url}/reports")
    page.select_option("select[name=namespace]", "payments")
    page.select_option("select[name=age]", "24h")
    page.click("form.filters button[type=submit]")
    rows = _rows(page)
    assert rows
    assert {r["namespace"] for r in rows} == {"payments"}

    page.goto(f"{server.url}/reports")
    page.fill("input[name=q]", "svc-0012")
    page.press("input[name=q]", "Enter")
    assert [r["report"].split("/")[0] for r in _rows(page)] == ["search"]

    page.goto(f"{server.url}/reports")
    page.click("th >> text=Namespace")
    namespaces = [r["namespace"] for r in _rows(page)]
    assert namespaces == sorted(namespaces)
    assert page.get_attribute("th[aria-sort]", "aria-sort") == "ascending"
    page.click("th >> text=Namespace")
    flipped = [r["namespace"] for r in _rows(page)]
    assert flipped == sorted(flipped, reverse=True)
    assert flipped != namespaces
    assert page.get_attribute("th[aria-sort]", "aria-sort") == "descending"

    page.goto(f"{server.url}/reports")
    first = {r["report"] for r in _rows(page)}
    page.click("a[rel=next]")
    second = {r["report"] for r in _rows(page)}
    assert "page 2 of" in page.inner_text("#count")
    assert second
    assert not first & second


def test_a_cited_claims_evidence_opens_beside_it(
    server: ReviewServer, page: Any, review_store: MemoryReportStore, screenshots: Path
) -> None:
    ((ns, name), obj) = next(
        (k, r) for k, r in review_store.reports.items() if k[0] == "scn-crashloop-bad-env"
    )
    records = {r["id"]: r for r in obj["spec"]["evidence"]}
    page.goto(f"{server.url}/reports/{ns}/{name}")
    _accessible(page)
    assert "Verified" in page.inner_text("section.banner")
    claim = page.locator("li.claim", has_text="DATABASE_URL").first
    cited = claim.locator("details.evidence").first
    evidence_id = cited.get_attribute("data-evidence")
    excerpt = cited.locator("pre.excerpt")
    assert not excerpt.is_visible()  # folded until asked for
    cited.locator("summary").click()
    assert excerpt.is_visible()
    assert excerpt.inner_text().strip() == records[evidence_id]["excerpt"]
    assert "DATABASE_URL" in excerpt.inner_text()
    # Beside the claim on a wide screen: to its right, on the same row.
    text_box = claim.locator(".claim-text").bounding_box()
    evidence_box = cited.bounding_box()
    assert evidence_box["x"] > text_box["x"] + text_box["width"] - 1
    assert abs(evidence_box["y"] - text_box["y"]) < 40
    for title in ("Met", "Missing", "Does not exist"):
        assert page.locator(".lists h3", has_text=title).count() == 1
    assert "The run" in page.inner_text("#run-h")
    page.screenshot(path=screenshots / "report-desktop.png", full_page=True)


def test_a_phone_sized_screen_lays_out(
    server: ReviewServer, chromium: Any, review_store: MemoryReportStore, screenshots: Path
) -> None:
    context = chromium.new_context(
        viewport=PHONE, device_scale_factor=2, is_mobile=True, has_touch=True
    )
    phone = context.new_page()
    try:
        phone.goto(f"{server.url}/reports")
        _no_sideways_scroll(phone)
        # Rows become cards: the header row is moved off screen, each cell says what it is.
        assert (
            phone.evaluate(
                "getComputedStyle(document.querySelector('table.reports thead')).position"
            )
            == "absolute"
        )
        card = phone.locator("table.reports tbody tr").first.bounding_box()
        assert card["width"] <= PHONE["width"]
        assert phone.locator("form.filters button[type=submit]").is_visible()
        phone.screenshot(path=screenshots / "list-phone.png")

        ns, name = next(k for k in review_store.reports if k[0] == "scn-oomkilled")
        phone.goto(f"{server.url}/reports/{ns}/{name}")
        _no_sideways_scroll(phone)
        claim = phone.locator("li.claim").first
        claim.locator("details.evidence summary").first.click()
        _no_sideways_scroll(phone)
        text_box = claim.locator(".claim-text").bounding_box()
        evidence_box = claim.locator("details.evidence").first.bounding_box()
        assert evidence_box["y"] >= text_box["y"] + text_box["height"] - 1  # below, not beside
        phone.screenshot(path=screenshots / "report-phone.png", full_page=True)
    finally:
        context.close()


def test_a_review_from_the_page_lands_on_the_report(
    server: ReviewServer, page: Any, review_store: MemoryReportStore, screenshots: Path
) -> None:
    ns, name = next(k for k in review_store.reports if k[0] == "scn-hpa-maxed")
    counter = metrics.REVIEWS.labels(outcome="verified", review="disputed")
    before = counter._value.get()
    page.goto(f"{server.url}/reports/{ns}/{name}")
    page.fill("textarea[name=note]", "The HPA was capped on purpose; the cause is the DB.")
    page.click("button.dispute")
    assert "Your review was recorded." in page.inner_text("main")
    assert "disputed" in page.inner_text("section.banner")
    review = review_store.reports[(ns, name)]["status"]["review"]
    assert review["verdict"] == "disputed"
    assert review["by"] == "kube:local"
    assert review["via"] == "page"
    assert review["note"] == "The HPA was capped on purpose; the cause is the DB."
    assert counter._value.get() == before + 1
    page.screenshot(path=screenshots / "report-disputed.png", full_page=True)
    page.goto(f"{server.url}/reports?review=disputed&q={name}")
    assert [r["report"] for r in _rows(page)] == [f"{ns}/{name}"]
