"""What counts as a failed request and as a timed series in Prometheus, whatever the exporter:
one definition for the planner (which looks for the symptom) and the judge (which measures it
again before it accepts 'no fault'), so the two cannot drift apart."""

from __future__ import annotations

import re

# How exporters label a server error: the HTTP status under the names the common client
# libraries, service meshes, ingress controllers and OpenTelemetry use, a status class, Spring's
# outcome, gRPC's code. One `or` of them catches whichever the series carries.
ERROR_MATCHERS = (
    'code=~"5.."',
    'status=~"5.."',
    'status_code=~"5.."',
    'response_code=~"5.."',
    'http_status=~"5.."',
    'http_status_code=~"5.."',
    'http_response_status_code=~"5.."',
    'status_class="5xx"',
    'outcome="SERVER_ERROR"',
    # gRPC: every status but OK is an error its caller receives (the label must be there:
    # `grpc_code!="OK"` alone would also match the HTTP series that have no such label)
    'grpc_code=~".+",grpc_code!="OK"',
)

# The same for a client error (4xx): a release that starts refusing what clients send (a
# changed schema, a stricter validator) answers 4xx, not 5xx. 404 and 429 are left out: a
# scanner's 404s and a rate limit's 429s say nothing about the server.
CLIENT_ERROR_MATCHERS = tuple(
    m.replace('"5.."', '"4(0[0-35-9]|1.|2[0-8]|xx)"').replace('"5xx"', '"4xx"')
    for m in ERROR_MATCHERS[:8]
)  # not Spring's outcome="CLIENT_ERROR": it counts 404s too

# A request answered "not found" (404), under the same label names: a route a release stopped
# matching answers 404, not 5xx, and the server-error ratio stays flat.
NOT_FOUND_MATCHERS = tuple(m.replace('"5.."', '"404"') for m in ERROR_MATCHERS[:7])

# A counter whose name says it counts requests, responses or handled calls
REQUEST_COUNTER = re.compile(r"request|response|handled")
# the status labels request counters use (the error matchers' labels)
STATUS_LABELS = ("code", "status", "status_code", "response_code", "http_status")
# above this share of server errors a workload is not "healthy" (the planner's and the judge's)
ERROR_RATIO_FLOOR = 0.05

# (ingress-nginx names its per-Ingress request counter without the _total suffix)
REQUEST_COUNTER_SELECTOR = (
    '__name__=~".*(request|response|handled).*_(total|count)|nginx_ingress_controller_requests"'
)

_TIMED = re.compile(r"duration|latency|seconds|_time")


def timed(names: set[str]) -> list[str]:
    """The bases of every histogram's or summary's `_sum`/`_count` pair whose name says time:
    their ratio is a mean latency whatever the buckets and whatever the library names it."""
    return sorted(
        n.removesuffix("_sum")
        for n in names
        if n.endswith("_sum") and f"{n.removesuffix('_sum')}_count" in names and _TIMED.search(n)
    )


def rate(selector: str) -> str:
    """`rate()` over 5 minutes, or over 30 where the samples are too sparse for 5 to hold two
    (a 10-minute scrape or a federated series): Grafana's `$__rate_interval` idea without
    knowing the scrape interval. Where 5 minutes has data, `or` keeps it."""
    return f"(rate({selector}[5m]) or rate({selector}[30m]))"


def timed_histograms(names: set[str]) -> list[str]:
    """The bases of every histogram whose `_bucket` series' name says time (its p99 is a
    latency), whether or not it also exports `_sum` and `_count`."""
    return sorted(
        n.removesuffix("_bucket") for n in names if n.endswith("_bucket") and _TIMED.search(n)
    )
