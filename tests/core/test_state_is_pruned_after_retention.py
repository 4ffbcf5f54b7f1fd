"""Old state is pruned: a run's checkpoints and a finished request older than the retention
setting are deleted, a queued or waiting request is kept whatever its age, and the size of
the state directory is a metric."""

from __future__ import annotations

import time

from prometheus_client import REGISTRY

from tests.slack.support import demo_app, settings_for
from tests.support.fake_slack import FakeSlack
from triage.app import Request
from triage.core import retention
from triage.slack.inbox import Inbound, Kind, State
from triage.slack.inbox_sqlite import SqliteInbox as Inbox


def _inbound(n: int) -> Inbound:
    return Inbound(
        id=f"Ev{n}",
        kind=Kind.MENTION,
        team="T",
        channel="C",
        thread_ts="1.1",
        ts="1.1",
        user="U",
        text="hello",
    )


def test_old_runs_and_finished_requests_are_pruned(slack_api: FakeSlack, tmp_path) -> None:
    settings = settings_for(slack_api, tmp_path)
    product = demo_app(settings)
    words = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, find out why"
    for run in ("old", "new"):
        product.checked_run(Request(words=words, run_id=f"slack:T:C:{run}"))
    inbox = Inbox(tmp_path / retention.INBOX)
    for n in range(3):
        inbox.accept(_inbound(n), now=time.time() - 30 * 86400)
    done = inbox.claim("me", lease_s=60, request_id="Ev0")
    assert done is not None
    inbox.finish(done, State.DONE)
    inbox.close()
    month_later = time.time() + 20 * 86400  # both runs are 20 days old by then
    before = retention.state_bytes(tmp_path)

    inbox = Inbox(tmp_path / retention.INBOX)
    kept_all = retention.prune(
        settings.state.model_copy(update={"retention_days": 30}), inbox=inbox, now=time.time()
    )
    pruned = retention.prune(
        settings.state.model_copy(update={"retention_days": 14}), inbox=inbox, now=month_later
    )
    inbox.close()

    assert (kept_all.threads, kept_all.requests) == (0, 0)
    assert pruned.threads == 2  # both runs untouched for 20 days > 14
    assert pruned.requests == 1  # the finished one; the two still queued are kept
    inbox = Inbox(tmp_path / retention.INBOX)
    assert inbox.get("Ev0") is None
    assert inbox.get("Ev1") is not None
    inbox.close()
    assert pruned.bytes_after < before
    assert REGISTRY.get_sample_value("triage_state_bytes") == pruned.bytes_after
