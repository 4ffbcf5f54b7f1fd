"""Read-only Prometheus access on prometheus-api-client.

Queries are bounded twice: range queries pick a step so no series exceeds `max_points`, and at
most `max_series` series come back. An outage (connection refused, timeout) is an `error` with
kind `unreachable`/`timeout`; a query that matched nothing is `no_data`; a bad query is
`error`/`invalid`. Callers can therefore tell "Prometheus is down" from "nothing to see".
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import requests
from prometheus_api_client import PrometheusConnect
from prometheus_api_client.exceptions import PrometheusApiClientException
from urllib3.util.retry import Retry

from tools.errors import Invalid, TimedOut, ToolError, Unreachable, error_for_status
from tools.redact import DEFAULT, Redactor
from tools.results import ToolResult, ToolStatus, clip, digest

Json = dict[str, Any]
_STATUS_RE = re.compile(r"HTTP Status Code (\d{3})")


class PrometheusReader:
    """The Prometheus half of the read registry."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        max_points: int = 240,
        max_series: int = 20,
        redactor: Redactor = DEFAULT,
    ) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.max_points = max_points
        self.max_series = max_series
        self.redactor = redactor
        # One quick retry for a blip, never the library's default of three with backoff:
        # an outage must surface within a few seconds, not stall the investigation.
        self._client = PrometheusConnect(
            url=self.url,
            disable_ssl=False,
            retry=Retry(total=1, backoff_factor=0.1, status_forcelist=[502, 503, 504]),
            timeout=math.ceil(timeout_s),
        )

    def _call(self, what: str, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except PrometheusApiClientException as e:
            m = _STATUS_RE.search(str(e))
            if m:
                raise error_for_status(int(m.group(1)), str(e), what=what) from e
            raise Invalid(f"{what}: {e}") from e
        except requests.exceptions.Timeout as e:
            raise TimedOut(f"{what}: Prometheus gave no answer within {self.timeout_s:g}s") from e
        except requests.exceptions.RequestException as e:
            raise Unreachable(f"{what}: Prometheus unreachable at {self.url}") from e
        except ValueError as e:  # a non-JSON answer (a proxy's error page)
            raise Invalid(f"{what}: unexpected answer from Prometheus: {e}") from e

    def _result(self, tool: str, args: Json, produce: Callable[[], tuple[Any, str]]) -> ToolResult:
        start = time.perf_counter()
        try:
            data, excerpt = produce()
        except ToolError as e:
            return ToolResult(
                tool=tool,
                args=args,
                status=e.status,
                excerpt=clip(str(e)),
                error_kind=e.kind,
                duration_ms=(time.perf_counter() - start) * 1000,
            )
        status = ToolStatus.OK if data else ToolStatus.NO_DATA
        return ToolResult(
            tool=tool,
            args=args,
            status=status,
            excerpt=clip(self.redactor.text(excerpt if data else "query matched no series")),
            data=self.redactor.data(data),
            raw_digest=digest(data),
            duration_ms=(time.perf_counter() - start) * 1000,
        )

    def query(self, query: str, at: float | None = None) -> ToolResult:
        """Instant query; `at` is a unix timestamp (default: now)."""
        args: Json = {"query": query}
        if at is not None:
            args["at"] = at

        def produce() -> tuple[Any, str]:
            params = {"time": str(at)} if at is not None else None
            raw = self._call(
                "instant query",
                lambda: self._client.custom_query(query, params=params, timeout=self.timeout_s),
            )
            series = [
                {"labels": s.get("metric", {}), "value": _num(s.get("value", [0, "nan"])[1])}
                for s in raw[: self.max_series]
            ]
            excerpt = "; ".join(f"{_label_str(s['labels'])} = {s['value']:.4g}" for s in series)
            return series, excerpt

        return self._result("prom.query", args, produce)

    def range(
        self, query: str, start: float, end: float, step_s: float | None = None
    ) -> ToolResult:
        """Range query between unix timestamps; the step keeps points per series bounded."""
        span = max(end - start, 1.0)
        # whole seconds: Prometheus refuses a fractional duration ("20.1195s" is bad_data)
        step = float(math.ceil(max(step_s or 0.0, span / self.max_points, 15.0)))
        args: Json = {"query": query, "start": round(start), "end": round(end), "step_s": step}

        def produce() -> tuple[Any, str]:
            raw = self._call(
                "range query",
                lambda: self._client.custom_query_range(
                    query,
                    start_time=datetime.fromtimestamp(start, UTC),
                    end_time=datetime.fromtimestamp(end, UTC),
                    step=f"{step:g}s",
                    timeout=self.timeout_s,
                ),
            )
            series = []
            for s in raw[: self.max_series]:
                values = [(float(t), _num(v)) for t, v in s.get("values", [])][-self.max_points :]
                series.append({"labels": s.get("metric", {}), "values": values})
            excerpt = "; ".join(_range_excerpt(s) for s in series[:5])
            return [s for s in series if s["values"]], excerpt

        return self._result("prom.range", args, produce)

    def metric_names(self, selector: str, start: float, end: float) -> ToolResult:
        """The metric names that have series matching `selector` in the window: what this
        Prometheus actually holds, so queries are built by what exists, not fixed names."""
        return _metric_names(self, selector, start, end)


MAX_NAMES = 500


def _metric_names(reader: PrometheusReader, selector: str, start: float, end: float) -> ToolResult:
    args: Json = {"selector": selector, "start": round(start), "end": round(end)}

    def produce() -> tuple[Any, str]:
        params = {"match[]": selector, "start": str(start), "end": str(end)}
        raw = reader._call(
            "metric names",
            lambda: reader._client.get_label_values("__name__", params=params),
        )
        names = sorted(str(n) for n in raw)[:MAX_NAMES]
        return names, f"{len(names)} metric names: " + ", ".join(names[:30])

    return reader._result("prom.metric_names", args, produce)


def _num(v: Any) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _label_str(labels: Json) -> str:
    keep = {k: v for k, v in labels.items() if k != "__name__"}
    return "{" + ",".join(f"{k}={v}" for k, v in sorted(keep.items())) + "}"


def _range_excerpt(series: Json) -> str:
    vals = [v for _, v in series["values"] if not math.isnan(v)]
    if not vals:
        return f"{_label_str(series['labels'])}: no numeric values"
    return (
        f"{_label_str(series['labels'])}: first {vals[0]:.4g}, last {vals[-1]:.4g}, "
        f"max {max(vals):.4g} over {len(vals)} points"
    )
