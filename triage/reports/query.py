"""The review list's query: filters, sort order and page, parsed from a URL's parameters.

Parsing never fails: a value that is not one of the known ones is dropped (and the page says
which filters are in force), so a hand-edited URL shows a list rather than an error. Filtering
is over `Summary` rows the reader may see (authorisation happens before, per namespace); the
text search matches every word, case-insensitively, against the name, namespace, request,
title, symptom, root cause, class and reviewer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from triage.reports.views import Summary

OUTCOMES = ("verified", "rejected", "budget_exhausted", "evaluator_unavailable", "unchecked")
REVIEWS = ("confirmed", "disputed", "unreviewed")
AGES = {
    "1h": timedelta(hours=1),
    "24h": timedelta(days=1),
    "7d": timedelta(days=7),
    "30d": timedelta(days=30),
}
SORTS = ("created", "namespace", "name", "outcome", "review", "cause")
MAX_TEXT = 200


@dataclass(frozen=True)
class Query:
    namespace: str = ""
    outcome: str = ""
    review: str = ""
    age: str = ""
    text: str = ""
    sort: str = "created"
    order: str = "desc"
    page: int = 1

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> Query:
        def pick(key: str, allowed: Sequence[str], default: str = "") -> str:
            value = str(params.get(key) or "").strip()
            return value if value in allowed else default

        try:
            page = max(1, min(int(str(params.get("page") or "1")), 100_000))
        except ValueError:
            page = 1
        return cls(
            namespace=str(params.get("namespace") or "").strip()[:63],
            outcome=pick("outcome", (*OUTCOMES, "pending")),
            review=pick("review", REVIEWS),
            age=pick("age", tuple(AGES)),
            text=" ".join(str(params.get("q") or "").split())[:MAX_TEXT],
            sort=pick("sort", SORTS, "created"),
            order=pick("order", ("asc", "desc"), "desc"),
            page=page,
        )

    def params(self, **change: str | int) -> str:
        """This query as URL parameters, with `change` applied (defaults left out)."""
        q = replace(self, **change)  # type: ignore[arg-type]
        pairs = {
            "namespace": q.namespace,
            "outcome": q.outcome,
            "review": q.review,
            "age": q.age,
            "q": q.text,
            "sort": "" if q.sort == "created" else q.sort,
            "order": "" if q.order == "desc" else q.order,
            "page": "" if q.page == 1 else str(q.page),
        }
        return urlencode({k: v for k, v in pairs.items() if v})

    def sort_link(self, key: str) -> str:
        """Parameters that sort by `key`: newest first for time, A to Z for the rest; the
        current key's link flips the order."""
        if self.sort == key:
            order = "asc" if self.order == "desc" else "desc"
        else:
            order = "desc" if key == "created" else "asc"
        return self.params(sort=key, order=order, page=1)

    @property
    def filtered(self) -> bool:
        return any((self.namespace, self.outcome, self.review, self.age, self.text))


@dataclass(frozen=True)
class Page:
    items: list[Summary]
    total: int  # rows matching the filters
    page: int
    pages: int
    namespaces: list[str]  # every namespace the reader can see (the namespace filter's options)


def _created(row: Summary) -> datetime | None:
    try:
        when = datetime.fromisoformat(row.created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _haystack(row: Summary) -> str:
    return " ".join(
        (
            row.namespace,
            row.name,
            row.request,
            row.title,
            row.symptom,
            row.root_cause,
            row.root_cause_class,
            row.reviewed_by,
        )
    ).lower()


def matches(row: Summary, query: Query, now: datetime) -> bool:
    if query.namespace and row.namespace != query.namespace:
        return False
    if query.outcome and row.outcome != query.outcome:
        return False
    if query.review and row.review != query.review:
        return False
    if query.age:
        created = _created(row)
        if created is None or now - created > AGES[query.age]:
            return False
    if query.text:
        hay = _haystack(row)
        return all(word in hay for word in query.text.lower().split())
    return True


def _key(sort: str, row: Summary) -> tuple[str, str]:
    value = {
        "created": row.created,
        "namespace": row.namespace,
        "name": row.name,
        "outcome": row.outcome,
        "review": row.review,
        "cause": row.root_cause.lower(),
    }[sort]
    return (value, row.created)


def select(
    rows: Sequence[Summary], query: Query, *, page_size: int, now: datetime | None = None
) -> Page:
    """Filter, sort and cut one page out of `rows`."""
    now = now or datetime.now(UTC)
    hits = [r for r in rows if matches(r, query, now)]
    hits.sort(key=lambda r: _key(query.sort, r), reverse=query.order == "desc")
    pages = max(1, math.ceil(len(hits) / page_size))
    page = min(query.page, pages)
    start = (page - 1) * page_size
    return Page(
        items=hits[start : start + page_size],
        total=len(hits),
        page=page,
        pages=pages,
        namespaces=sorted({r.namespace for r in rows}),
    )
