"""The Alertmanager receiver's group decisions, on both state backends (the SQLite file, the
real PostgreSQL that replicas share): one episode of a group starts once however many
notifications arrive and however many replicas decide at once; a resolved notification closes
it once; a storm starts at most `max_investigations` per channel and window, counted once
across replicas; and the receiver stores the decision and the request it names together.

Replicas are separate inbox objects over one store (on Postgres each with its own connection
pool, as separate processes have), deciding from many threads at once."""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.state import BACKENDS, Inboxes, state_settings
from tools.redact import Redactor
from triage.core.alertmanager import Notification
from triage.core.settings import AlertSettings
from triage.slack.alert_groups import AlertGroups, Decision, investigation_id
from triage.slack.inbox import Inbox, Kind
from triage.web.alerts import Receiver

WINDOW_S = 300.0
NOW = 1_000_000_200.0  # inside one window: [1_000_000_200 // 300 * 300, +300)


@pytest.fixture(params=BACKENDS)
def inboxes(request, tmp_path):
    opened = Inboxes(state_settings(request, request.param, tmp_path))
    yield opened
    opened.close()


def _groups(inbox: Inbox, max_investigations: int = 5) -> AlertGroups:
    return AlertGroups(inbox, max_investigations=max_investigations, window_s=WINDOW_S)


def _all_at_once(n: int, fn: Any) -> list[Any]:
    """`fn(i)` for i in range(n), from n threads released together."""
    barrier = threading.Barrier(n)

    def go(i: int) -> Any:
        barrier.wait(timeout=30)
        return fn(i)

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(go, range(n)))


def test_a_group_starts_once_and_resolves_once_then_a_new_episode_starts(inboxes):
    groups = _groups(inboxes.open())

    first = groups.firing("g1", "{}:{alertname=A}", "C1", "A", now=NOW)
    repeats = [groups.firing("g1", "{}:{alertname=A}", "C1", "A", now=NOW + i) for i in range(4)]
    closed = groups.resolved("g1", now=NOW + 10)
    again = groups.resolved("g1", now=NOW + 11)
    second = groups.firing("g1", "{}:{alertname=A}", "C1", "A", now=NOW + 20)

    assert first.decision is Decision.STARTED
    assert first.request_id == investigation_id("g1", 1)
    assert {r.decision for r in repeats} == {Decision.DUPLICATE}
    assert {r.request_id for r in repeats} == {first.request_id}
    assert closed.decision is Decision.RESOLVED
    assert closed.request_id == first.request_id
    assert again.decision is Decision.IGNORED
    assert second.decision is Decision.STARTED
    assert second.request_id == investigation_id("g1", 2)
    group = groups.get("g1")
    assert group is not None
    assert group.episode == 2
    assert group.resolved_at is None  # the new episode is open
    assert groups.counts() == {"open": 1, "notifications": 1, "started": 2, "suppressed": 0}


def test_a_resolved_notification_of_a_group_never_started_is_ignored(inboxes):
    groups = _groups(inboxes.open())

    assert groups.resolved("never", now=NOW).decision is Decision.IGNORED
    assert groups.get("never") is None


def test_a_storm_starts_the_limit_and_counts_the_rest_once_per_channel_and_window(inboxes):
    groups = _groups(inboxes.open(), max_investigations=5)

    decided = [groups.firing(f"g{i}", "k", "C1", f"Alert{i % 3}", now=NOW) for i in range(200)]
    other_channel = groups.firing("elsewhere", "k", "C2", "Other", now=NOW)
    window_start = NOW // WINDOW_S * WINDOW_S
    next_window = groups.firing("g199", "k", "C1", "Alert1", now=window_start + WINDOW_S)

    counted = Counter(d.decision for d in decided)
    assert counted == {Decision.STARTED: 5, Decision.SUPPRESSED: 195}
    assert other_channel.decision is Decision.STARTED  # a storm in C1 does not starve C2
    suppressed = next(d for d in decided if d.decision is Decision.SUPPRESSED)
    assert (suppressed.window_start, suppressed.window_end) == (window_start, window_start + 300)
    storm = groups.storm("C1", suppressed.window_start)
    assert storm is not None
    assert (storm.started, storm.suppressed) == (5, 195)
    assert sum(storm.names.values()) == 195
    assert set(storm.names) == {"Alert0", "Alert1", "Alert2"}
    # a suppressed group was not opened: after the storm's window it can start
    assert next_window.decision is Decision.STARTED
    assert next_window.request_id == investigation_id("g199", 1)


def test_two_replicas_deciding_the_same_group_at_once_start_it_once(inboxes):
    replicas = [_groups(inboxes.open()), _groups(inboxes.open())]

    decided = _all_at_once(
        24, lambda i: replicas[i % 2].firing("same", "k", "C1", "A", now=NOW + i / 100)
    )

    counted = Counter(d.decision for d in decided)
    assert counted == {Decision.STARTED: 1, Decision.DUPLICATE: 23}
    assert {d.request_id for d in decided} == {investigation_id("same", 1)}
    group = replicas[1].get("same")
    assert group is not None
    assert group.notifications == 24
    assert replicas[0].counts()["started"] == 1  # the slot of a replica that lost was given back


def test_two_replicas_resolving_at_once_close_the_episode_once(inboxes):
    replicas = [_groups(inboxes.open()), _groups(inboxes.open())]
    replicas[0].firing("g", "k", "C1", "A", now=NOW)

    decided = _all_at_once(12, lambda i: replicas[i % 2].resolved("g", now=NOW + 1))

    assert Counter(d.decision for d in decided) == {Decision.RESOLVED: 1, Decision.IGNORED: 11}


def test_a_storm_across_replicas_is_counted_once(inboxes):
    replicas = [_groups(inboxes.open(), 5), _groups(inboxes.open(), 5)]

    decided = _all_at_once(
        40, lambda i: replicas[i % 2].firing(f"g{i}", "k", "C1", "Storm", now=NOW)
    )

    assert Counter(d.decision for d in decided) == {Decision.STARTED: 5, Decision.SUPPRESSED: 35}
    storm = replicas[1].storm("C1", NOW // WINDOW_S * WINDOW_S)
    assert storm is not None
    assert (storm.started, storm.suppressed, storm.names) == (5, 35, {"Storm": 35})


def _notification(status: str = "firing") -> Notification:
    return Notification.model_validate(
        {
            "groupKey": '{}:{alertname="KubePodCrashLooping", namespace="shop"}',
            "status": status,
            "receiver": "triage",
            "groupLabels": {"alertname": "KubePodCrashLooping", "namespace": "shop"},
            "commonLabels": {"alertname": "KubePodCrashLooping", "namespace": "shop"},
            "alerts": [
                {
                    "status": status,
                    "labels": {"alertname": "KubePodCrashLooping", "namespace": "shop"},
                    "annotations": {"summary": "checkout-api restarts"},
                    "fingerprint": "abc",
                }
            ],
        }
    )


def _receiver(inbox: Inbox) -> Receiver:
    alerts = AlertSettings(bearer_token="t" * 24, channel="C1", window_s=WINDOW_S)
    groups = AlertGroups(inbox, max_investigations=5, window_s=WINDOW_S)
    return Receiver(alerts, inbox, groups, Redactor(), kick=lambda: None)


def test_replicas_receiving_one_notification_store_one_request_with_its_decision(inboxes):
    replicas = [_receiver(inboxes.open()), _receiver(inboxes.open())]
    firing = _notification()

    results = _all_at_once(16, lambda i: replicas[i % 2].take(firing, NOW))

    assert Counter(r["result"] for r in results) == {"started": 1, "duplicate": 15}
    inbox = inboxes.open()
    request = investigation_id(firing.key, 1)
    assert inbox.ids(Kind.ALERT) == [request]
    row = inbox.get(request)
    assert row is not None
    assert row["deliveries"] == 1  # stored once: the duplicates did not even try

    resolved = _all_at_once(8, lambda i: replicas[i % 2].take(_notification("resolved"), NOW + 5))

    assert Counter(r["result"] for r in resolved) == {"resolved": 1, "ignored": 7}
    assert inbox.ids(Kind.ALERT) == [request, f"{request}:resolved"]


_EXAMPLES = itertools.count()
Event = tuple[str, int]  # ("firing" | "resolved", group number)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    events=st.lists(
        st.tuples(st.sampled_from(["firing", "resolved"]), st.integers(0, 5)), max_size=40
    ),
    limit=st.integers(1, 4),
)
def test_decisions_follow_the_model_of_episodes_and_slots(inboxes, events: list[Event], limit):
    """Any sequence of notifications, decided by alternating replicas, against a plain model:
    a group is open from a started firing to its resolve; a firing of a closed group starts
    one only while the window has a slot."""
    run = next(_EXAMPLES)  # fresh groups and a fresh channel for every example
    channel = f"C-{run}"
    if not hasattr(inboxes, "pair"):  # two replicas for all examples (pools are not free)
        inboxes.pair = (inboxes.open(), inboxes.open())
    replicas = [_groups(inbox, limit) for inbox in inboxes.pair]
    open_: dict[int, int] = {}  # group -> open episode
    episodes: Counter[int] = Counter()
    started = 0
    for i, (kind, g) in enumerate(events):
        group_id = f"{run}-{g}"
        groups = replicas[i % 2]
        if kind == "resolved":
            got = groups.resolved(group_id, now=NOW)
            if g in open_:
                assert got.decision is Decision.RESOLVED
                assert got.request_id == investigation_id(group_id, open_.pop(g))
            else:
                assert got.decision is Decision.IGNORED
            continue
        got = groups.firing(group_id, "k", channel, "A", now=NOW)
        if g in open_:
            assert got.decision is Decision.DUPLICATE
            assert got.request_id == investigation_id(group_id, open_[g])
        elif started < limit:
            started += 1
            episodes[g] += 1
            open_[g] = episodes[g]
            assert got.decision is Decision.STARTED
            assert got.request_id == investigation_id(group_id, episodes[g])
        else:
            assert got.decision is Decision.SUPPRESSED
    storm = replicas[0].storm(channel, NOW // WINDOW_S * WINDOW_S)
    assert (storm.started if storm else 0) == started
