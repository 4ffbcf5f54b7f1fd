"""Benchmark: how long the review page takes with 1,000 RCA reports.

The reports are the product's own: every recorded incident run through the checked run
(triage/demo, `App.replay`: real graph, judge, report store, 16-18 evidence records each),
cloned across five namespaces with a spread of outcomes, reviews and ages. Measured:
- in process: building the rows from the stored objects (what one list refresh costs),
  rendering a list page (filter, sort, paginate, template) for several queries, rendering one
  report page;
- over HTTP, through uvicorn and the page's own app (no login: `auth: none` on loopback, so
  the figure is the page's, not the apiserver's): GET /reports with the list cached (the
  default `list_cache_s`) and with no cache (every view rebuilds the 1,000 rows), and GET of
  one report.
Prints p50 / p95 / max in milliseconds.

    .venv/bin/python -m bench.review_page [--reports 1000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from tests.web.support import NAMESPACES, ReviewServer, demo_reports, local_parts
from triage.reports import query as q
from triage.reports import views
from triage.reports.store import MemoryReportStore
from triage.web import pages

OUTCOMES = ("verified", "verified", "verified", "rejected", "budget_exhausted", "unchecked")
REVIEWS: tuple[dict[str, Any] | None, ...] = (
    None,
    None,
    {
        "verdict": "confirmed",
        "by": "slack:T1/U2",
        "via": "slack",
        "at": "2026-11-30T10:00:00Z",
        "note": "",
        "outcome": "verified",
    },
    {
        "verdict": "disputed",
        "by": "kube:carol",
        "via": "page",
        "at": "2026-11-30T11:00:00Z",
        "note": "it was the DB failover",
        "outcome": "verified",
    },
)


def corpus(count: int, state: Path) -> MemoryReportStore:
    seed = MemoryReportStore()
    demo_reports(seed, state)
    originals = list(seed.reports.values())
    store = MemoryReportStore()
    now = datetime.now(UTC)
    for i in range(count):
        obj = copy.deepcopy(originals[i % len(originals)])
        ns = NAMESPACES[i % len(NAMESPACES)]
        obj["metadata"]["namespace"] = ns
        obj["metadata"]["name"] = f"rca-{i:016x}"
        obj["metadata"]["creationTimestamp"] = (now - timedelta(minutes=37 * i)).strftime(
            "%Y-%m-%dT%H:%M:%SZ"
        )
        obj["status"]["outcome"] = OUTCOMES[i % len(OUTCOMES)]
        review = REVIEWS[i % len(REVIEWS)]
        if review:
            obj["status"]["review"] = review
        store.reports[(ns, obj["metadata"]["name"])] = obj
    return store


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    fn()  # warm (templates compiled, caches filled)
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append((time.perf_counter() - started) * 1000)
    return out


def _line(label: str, ms: list[float]) -> str:
    ordered = sorted(ms)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"  {label:<46} p50 {statistics.median(ms):7.2f} ms   p95 {p95:7.2f} ms   "
        f"max {max(ms):7.2f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reports", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = corpus(args.reports, Path(tmp))
    objects = list(store.reports.values())
    rows = [views.summary(o) for o in objects]
    one = objects[0]
    size = sum(len(views.as_json(o)) for o in objects) / len(objects)
    print(f"{len(objects)} reports, {size / 1024:.1f} KiB each on average (as stored)")
    print("in process:")
    print(
        _line(
            "rows from 1,000 stored reports",
            timed(lambda: [views.summary(o) for o in objects], args.repeat),
        )
    )
    for label, params in (
        ("list page 1, newest first", {}),
        ("list: verified but disputed", {"outcome": "verified", "review": "disputed"}),
        ("list: text search 'database url'", {"q": "database url"}),
        ("list: sorted by cause, page 7", {"sort": "cause", "order": "asc", "page": "7"}),
    ):
        query = q.Query.parse(params)
        render = lambda query=query: pages.render_list(rows, query, user="bench", page_size=50)  # noqa: E731
        print(_line(label, timed(render, args.repeat)))
    page = lambda: pages.render_report(one, user="bench", can_review=True, csrf="x")  # noqa: E731
    print(_line("one report page (18 evidence records)", timed(page, args.repeat)))

    print("over HTTP (uvicorn, the page's app):")
    ns, name = one["metadata"]["namespace"], one["metadata"]["name"]
    for label, cache_s in (("cached list", 10.0), ("no list cache", 0.0)):
        with (
            ReviewServer(local_parts(store, list_cache_s=cache_s)) as server,
            httpx.Client(base_url=server.url, timeout=30) as web,
        ):

            def get(path: str, web: httpx.Client = web) -> None:
                response = web.get(path)
                if response.status_code != 200:
                    raise RuntimeError(f"{path}: HTTP {response.status_code}")

            print(_line(f"GET /reports ({label})", timed(lambda: get("/reports"), args.repeat)))
            print(
                _line(
                    f"GET /reports?q=database ({label})",
                    timed(lambda: get("/reports?q=database&outcome=verified"), args.repeat),
                )
            )
            if cache_s:
                print(
                    _line(
                        "GET /reports/NS/NAME",
                        timed(lambda: get(f"/reports/{ns}/{name}"), args.repeat),
                    )
                )


if __name__ == "__main__":
    main()
