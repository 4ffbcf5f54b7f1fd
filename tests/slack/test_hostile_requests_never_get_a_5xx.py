"""Hostile traffic at the real `triage serve` process: property-based fuzz of signed and
unsigned requests (raw bytes, JSON of any shape and depth, Events API envelopes and
interactivity payloads with fields of the wrong type, broken headers), then huge, slow and
never-finished requests. 0 responses >= 500, 0 tracebacks in the log, RSS bounded.

TRIAGE_FUZZ_EXAMPLES sets the number of fuzz examples per strategy (default 800 each, 2,400 in
all; try 20000 locally).
"""

from __future__ import annotations

import json
import os
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.slack.serve_process import Serve
from tests.slack.support import sign
from tests.support.fake_slack import FakeSlack

EXAMPLES = int(os.environ.get("TRIAGE_FUZZ_EXAMPLES", "800"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=30)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
# what bolt and our listeners read, each given a value of any type
ENVELOPE_KEYS = [
    "type",
    "token",
    "team_id",
    "api_app_id",
    "event",
    "event_id",
    "event_time",
    "authorizations",
    "enterprise_id",
    "is_ext_shared_channel",
    "challenge",
]
EVENT_KEYS = ["type", "text", "user", "channel", "ts", "thread_ts", "bot_id", "subtype", "blocks"]
ACTION_KEYS = [
    "type",
    "user",
    "team",
    "channel",
    "container",
    "message",
    "actions",
    "trigger_id",
    "enterprise",
    "is_enterprise_install",
    "view",
]


def _mixed(keys: list[str], good: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """A dict with the known keys: each is its good value, absent or anything at all."""
    return st.fixed_dictionaries(
        {}, optional={k: st.one_of(st.just(good.get(k)), json_values) for k in keys}
    )


GOOD_EVENT = {
    "type": "app_mention",
    "text": "<@U0TRIAGEBOT> hi",
    "user": "U1",
    "channel": "C1",
    "ts": "1.000001",
}
events = _mixed(EVENT_KEYS, GOOD_EVENT)
envelopes = _mixed(
    ENVELOPE_KEYS,
    {
        "type": "event_callback",
        "team_id": "T1",
        "event_id": "Ev1",
        "event": GOOD_EVENT,
        "authorizations": [{"team_id": "T1", "user_id": "U1", "is_bot": True}],
    },
).flatmap(lambda d: st.just(d) | events.map(lambda e: d | {"event": e}))
actions = _mixed(
    ACTION_KEYS,
    {
        "type": "block_actions",
        "user": {"id": "U1"},
        "team": {"id": "T1"},
        "channel": {"id": "C1"},
        "container": {"message_ts": "1.1"},
        "actions": [{"action_id": "triage_approve", "value": "{}"}],
    },
)


def _nested(depth: int, opener: str) -> bytes:
    closer = {"[": "]", "{": "}"}[opener]
    inner = '{"a":' * depth + "1" + "}" * depth if opener == "{" else "[" * depth + "]" * depth
    return (inner if depth % 2 else inner.replace(closer, "", 1)).encode()


bodies = st.one_of(
    st.binary(max_size=400),
    json_values.map(lambda v: json.dumps(v).encode()),
    envelopes.map(lambda d: json.dumps(d).encode()),
    actions.map(lambda d: urlencode({"payload": json.dumps(d)}).encode()),
    st.tuples(st.integers(1, 3000), st.sampled_from("[{")).map(lambda t: _nested(*t)),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
)
header_sets = st.sampled_from(["signed", "unsigned", "bad-ts", "stale", "form", "no-type"])


def _headers(kind: str, body: bytes) -> dict[str, str]:
    if kind == "unsigned":
        return {"Content-Type": "application/json"}
    if kind == "stale":
        return sign(body, ts=int(time.time()) - 600)
    headers = sign(body)
    if kind == "bad-ts":
        headers["X-Slack-Request-Timestamp"] = "abc"
    if kind == "form":
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    if kind == "no-type":
        del headers["Content-Type"]
    return headers


@pytest.fixture(scope="module")
def serve(slack_api_module, tmp_path_factory):
    server = Serve(slack_api_module, tmp_path_factory.mktemp("fuzz")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def slack_api_module():
    api = FakeSlack().start()
    yield api
    api.stop()


@pytest.fixture(scope="module")
def client(serve):
    # A fresh connection per request: the server closes a connection idle for 5 s
    # (timeout_keep_alive), and a request that races that close is dropped by the transport
    # ("Server disconnected without sending a response") before the server ever reads it.
    limits = httpx.Limits(max_keepalive_connections=0)
    with httpx.Client(base_url=serve.url, timeout=15, limits=limits) as c:
        yield c


statuses: dict[int, int] = {}


def _post(client: httpx.Client, body: bytes, headers: dict[str, str]) -> int:
    status = client.post("/slack/events", content=body, headers=headers).status_code
    statuses[status] = statuses.get(status, 0) + 1
    assert status < 500, (status, body[:200], headers)
    return status


@FUZZ
@given(body=bodies, kind=header_sets)
def test_fuzzed_bodies_never_get_a_5xx(client, body, kind) -> None:
    _post(client, body, _headers(kind, body))


@FUZZ
@given(envelope=envelopes)
def test_fuzzed_signed_envelopes_never_get_a_5xx(client, envelope) -> None:
    body = json.dumps(envelope).encode()
    _post(client, body, sign(body))


@FUZZ
@given(payload=actions)
def test_fuzzed_signed_clicks_never_get_a_5xx(client, payload) -> None:
    body = urlencode({"payload": json.dumps(payload)}).encode()
    _post(client, body, sign(body) | {"Content-Type": "application/x-www-form-urlencoded"})


def test_huge_bodies_are_refused_before_they_are_read(serve, client) -> None:
    before = serve.rss_mb()
    big = b'{"type":"event_callback","pad":"' + b"x" * (20 * 1024 * 1024) + b'"}'

    def post(_: int) -> int:
        with httpx.Client(base_url=serve.url, timeout=30) as c:
            try:
                return c.post("/slack/events", content=big, headers=sign(big)).status_code
            except httpx.TransportError:
                return 413  # refused and closed before the client finished sending

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(post, range(8)))

    # chunked (no Content-Length): counted as it streams
    def chunks():
        for _ in range(40):
            yield b"x" * 65536

    try:
        chunked = client.post("/slack/events", content=chunks(), headers=sign(b"")).status_code
    except httpx.TransportError:
        chunked = 413
    assert set(codes) == {413}
    assert chunked == 413
    assert serve.rss_mb() - before < 60, (before, serve.rss_mb())


def test_slow_clients_are_cut_off(serve) -> None:
    """Slowloris (headers never finished) and a body that trickles: both closed within the
    deadlines (10 s each by default), and /healthz answers meanwhile."""
    conns = []
    for _ in range(100):
        s = socket.create_connection(("127.0.0.1", serve.port), timeout=5)
        s.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        conns.append(s)
    body_conn = socket.create_connection(("127.0.0.1", serve.port), timeout=5)
    body_conn.sendall(
        b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 1000\r\n\r\n{"
    )
    start = time.monotonic()
    assert httpx.get(f"{serve.url}/healthz", timeout=2).status_code == 200
    time.sleep(11.5)
    closed = 0
    for s in conns:
        s.settimeout(0.5)
        try:
            closed += s.recv(1) == b""
        except OSError:
            closed += 1
        s.close()
    body_conn.settimeout(2)
    answer = body_conn.recv(200)
    body_conn.close()
    waited = time.monotonic() - start
    assert closed == len(conns), f"{closed}/{len(conns)} closed after {waited:.0f} s"
    assert answer.startswith(b"HTTP/1.1 408"), answer


def test_nothing_in_the_log_is_a_traceback(serve) -> None:
    """Runs last in this module: everything above went through this process."""
    text = serve.log_text()
    print("statuses", dict(sorted(statuses.items())), "rss", round(serve.rss_mb()), "MB")
    assert "Traceback" not in text, text[-3000:]
    assert sum(statuses.values()) >= EXAMPLES
    assert serve.rss_mb() < 400
