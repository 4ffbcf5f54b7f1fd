"""Every outcome of a run reads plainly on the ticket; only `verified` reads as done."""

from __future__ import annotations

import json

import pytest

from triage.slack.blocks import TicketView
from triage.verification.loop import Outcome


@pytest.mark.parametrize("outcome", list(Outcome))
def test_each_outcome_is_named_and_explained(outcome):
    view = TicketView(title="checkout-api 503", owner="U1", status="Answered")
    view.outcome = outcome.value
    view.report = ("shop", "rca-0123456789abcdef")

    text = view.text()
    blocks = json.dumps(view.blocks())

    assert outcome.value in text
    assert outcome.value in blocks
    assert "kubectl get rcareport rca-0123456789abcdef -n shop" in text
    done = outcome is Outcome.VERIFIED
    assert ("Verified:" in text) is done
    assert ("Not verified" in text or "Not checked" in text) is not done


def test_before_the_verdict_there_is_no_outcome():
    view = TicketView(title="checkout-api 503", owner="U1")

    assert "Outcome" not in view.text()
    assert "Outcome" not in json.dumps(view.blocks())
    assert "Investigating" in view.text()
