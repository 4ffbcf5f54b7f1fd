"""Prometheus metrics of the Slack bot (served on `/metrics` by `triage serve`)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

KINDS = ("mention", "action", "alert")

REQUESTS_ACCEPTED = Counter(
    "triage_slack_requests_accepted", "Requests written to the inbox (first delivery).", ["kind"]
)
REQUESTS_DUPLICATE = Counter(
    "triage_slack_requests_duplicate",
    "Deliveries of a request already in the inbox (Slack retries, other replicas).",
    ["kind"],
)
REQUESTS_DONE = Counter("triage_slack_requests_done", "Requests answered.", ["kind"])
REQUESTS_FAILED = Counter(
    "triage_slack_request_failures", "Failed attempts at a request (it is retried).", ["kind"]
)
REQUESTS_GAVE_UP = Counter(
    "triage_slack_requests_given_up",
    "Requests ended after the attempt limit (crashes included); the user was told.",
    ["kind"],
)
REQUESTS_IGNORED = Counter(
    "triage_slack_requests_ignored",
    "Mentions dropped unread: written by a bot or app the operator did not allow.",
    ["reason"],
)
ACK_SECONDS = Histogram(
    "triage_slack_ack_seconds",
    "From the request's arrival to its ack (persisted first); Slack allows 3 s.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0),
)

ALERTS = Counter(
    "triage_alerts",
    "Alertmanager notifications by what they did: started (an investigation), duplicate (of "
    "an open group), suppressed (a storm), resolved, ignored, unrouted, refused.",
    ["result"],
)
ALERT_RESULTS = ("started", "duplicate", "suppressed", "resolved", "ignored", "unrouted", "refused")

REQUESTS_IGNORED.labels(reason="bot")
for _result in ALERT_RESULTS:
    ALERTS.labels(result=_result)
for _kind in KINDS:
    for _c in (
        REQUESTS_ACCEPTED,
        REQUESTS_DUPLICATE,
        REQUESTS_DONE,
        REQUESTS_FAILED,
        REQUESTS_GAVE_UP,
    ):
        _c.labels(kind=_kind)
