"""The review page renders what a report quotes as text, never as markup: a report quotes tool
output and planner prose, and either may hold HTML, script, Markdown links or images."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from html.parser import HTMLParser
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tools.results import ToolStatus
from triage.agent.intake import parse
from triage.core.models import Claim, Evidence, RCADraft
from triage.reports import query as q
from triage.reports import views
from triage.reports.review import Review, Verdict, Via
from triage.reports.store import MemoryReportStore
from triage.web import pages

SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):")
SAFE_SCHEMES = {"http", "https", "mailto"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def _report(text: str, excerpt: str, note: str) -> dict[str, Any]:
    store = MemoryReportStore()
    draft = RCADraft(
        title=f"RCA {text}",
        summary=text,
        root_cause_class="bad_config",
        cause=text,
        impact=text,
        root_cause=(Claim(text=text, evidence=("E1",)),),
        follow_ups=(text,),
    )
    evidence = [
        Evidence(
            id="E1",
            tool="k8s.logs",
            args={"name": text},
            status=ToolStatus.OK,
            excerpt=excerpt,
            digest="sha256:" + "0" * 64,
        )
    ]
    ref = store.submit(
        "shop",
        parse(f"{text} write the RCA", now=0),
        draft,
        attempt=1,
        run_id="cli:x",
        evidence=evidence,
    )
    store.publish(ref, {"outcome": "rejected", "missing": [text], "notes": [text]})
    obj = store.review(
        "shop", ref.name, Review.new(Verdict.DISPUTED, "kube:" + text, Via.PAGE, note)
    )
    return obj


def _assert_inert(html: str) -> None:
    for tag, attrs in _tags(html):
        assert tag not in ("script", "img", "iframe", "object", "embed", "svg", "base"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src", "action", "formaction"):
                scheme = SCHEME.match(str(value))
                assert scheme is None or scheme.group(1).lower() in SAFE_SCHEMES, (tag, value)


HOSTILE = (
    "<script>alert(1)</script> [click](javascript:alert(2)) ![x](https://evil.example/p.png) "
    '<img src=x onerror=alert(3)> "><svg onload=alert(4)> **bold**'
)


def test_a_hostile_report_renders_inert() -> None:
    obj = _report(HOSTILE, "</pre><script>alert(5)</script>", "<b onmouseover=x>hi</b>")
    page = pages.render_report(obj, user="<i>u</i>", can_review=True, csrf="c")
    listing = pages.render_list([views.summary(obj)], q.Query(), user="u", page_size=10)
    for html in (page, listing):
        _assert_inert(html)
        assert "&lt;script&gt;" in html
    assert "<strong>bold</strong>" in page  # Markdown still works where it is meant to
    assert 'href="javascript' not in page
    assert "UNVERIFIED" in page


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    text=st.text(min_size=1, max_size=200),
    excerpt=st.text(max_size=200),
    note=st.text(max_size=100),
)
def test_any_text_renders_inert(text: str, excerpt: str, note: str) -> None:
    obj = _report(text, excerpt, note)
    _assert_inert(pages.render_report(obj, user="u", can_review=True, csrf="c"))
    _assert_inert(pages.render_list([views.summary(obj)], q.Query(), user="u", page_size=5))


@given(
    params=st.dictionaries(
        st.sampled_from(
            ["namespace", "outcome", "review", "age", "q", "sort", "order", "page", "x"]
        ),
        st.text(max_size=30),
    )
)
def test_any_query_string_gives_a_list(params: dict[str, str]) -> None:
    query = q.Query.parse(params)
    assert query.outcome in ("", "pending", *q.OUTCOMES)
    assert query.sort in q.SORTS
    rows = [
        views.Summary(
            "ns",
            f"r{i}",
            "verified",
            "unreviewed",
            "c",
            "bad_config",
            (datetime.now(UTC) - timedelta(hours=i)).isoformat(),
            "",
            1,
        )
        for i in range(30)
    ]
    page = q.select(rows, query, page_size=7)
    assert len(page.items) <= 7
    assert 1 <= page.page <= page.pages
    assert q.Query.parse(dict(_pairs(query.params()))) == query  # links round-trip


def _pairs(encoded: str) -> list[tuple[str, str]]:
    from urllib.parse import parse_qsl  # noqa: PLC0415

    return parse_qsl(encoded)


def test_filters_and_sorting_select_the_right_rows() -> None:
    now = datetime.now(UTC)
    rows = [
        views.Summary(
            "shop",
            "a",
            "verified",
            "disputed",
            "DATABASE_URL lacks the scheme",
            "bad_config",
            (now - timedelta(minutes=5)).isoformat(),
            "why 503",
            1,
        ),
        views.Summary(
            "shop",
            "b",
            "rejected",
            "unreviewed",
            "OOMKilled at 256Mi",
            "oom_killed",
            (now - timedelta(days=2)).isoformat(),
            "restarts",
            2,
        ),
        views.Summary(
            "pay",
            "c",
            "verified",
            "confirmed",
            "image tag not found",
            "image_pull",
            (now - timedelta(days=20)).isoformat(),
            "pull errors",
            1,
        ),
    ]

    def names(**params: str) -> list[str]:
        return [r.name for r in q.select(rows, q.Query.parse(params), page_size=10).items]

    assert names() == ["a", "b", "c"]  # newest first
    assert names(outcome="rejected") == ["b"]
    assert names(outcome="verified", review="disputed") == ["a"]  # verified but disputed
    assert names(namespace="pay") == ["c"]
    assert names(age="24h") == ["a"]
    assert names(age="7d") == ["a", "b"]
    assert names(q="database scheme") == ["a"]
    assert names(q="oom") == ["b"]
    assert names(sort="cause", order="asc") == ["a", "c", "b"]
    assert names(sort="created", order="asc") == ["c", "b", "a"]
    assert names(outcome="nonsense") == ["a", "b", "c"]  # an unknown value is dropped
