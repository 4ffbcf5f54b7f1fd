"""Secrets the user pastes into Slack are stored nowhere: 40+ planted secrets from the corpus
(tests/corpus/secrets/planted.yaml: questions, and log lines, split keys, PEM bodies, base64
and bare high-entropy tokens pasted as questions) are mentioned to the real bot, which
investigates and writes the RCA; then every artefact is grepped: both SQLite files (inbox and
checkpoints, raw bytes, WAL included), the RCAReports, every call to Slack, and the log.

The places Triage reads itself (logs, events, annotations, metrics) are covered by the
redactor's corpus test (tests/tools/test_redaction_meets_the_secret_corpus.py) and end to end
on the real control plane by tests/agent/llm/test_cluster_run_keeps_secrets_and_obeys_nothing.py.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from tests.slack.support import BotServer, demo_app, mention, settings_for, user_message
from tests.support.fake_slack import FakeSlack
from tests.tools.corpus import entries, input_of, secrets_of

ASK = "checkout-api in scn-crashloop-bad-env is returning 503 since 20:59, write the RCA. "
FORMS = {"split_key", "pem_private_key", "base64_credential", "generic_token_bare"}


def _planted() -> list[dict[str, Any]]:
    chosen = [e for e in entries("planted.yaml") if e["place"] == "question" or e["form"] in FORMS]
    return [e for e in chosen if len(input_of(e)) < 3500]


def test_no_pasted_secret_is_stored_or_said(slack_api: FakeSlack, tmp_path, caplog) -> None:
    planted = _planted()
    secrets = sorted({s for e in planted for s in secrets_of(e)})
    assert len(secrets) >= 40
    caplog.set_level(logging.DEBUG)
    settings = settings_for(slack_api, tmp_path)
    product = demo_app(settings)
    with BotServer(settings, product) as server:
        ids = []
        for i, entry in enumerate(planted):
            text = ASK + input_of(entry)
            ts = user_message(slack_api, "a question")
            ids.append(f"Ev{i:03d}SECRET")
            assert server.deliver(mention(ids[-1], text, ts=ts)).status_code == 200
        rows = [server.wait_done(i, timeout=120) for i in ids]
    assert all(r["state"] == "done" for r in rows)

    artefacts: dict[str, str] = {}
    for path in tmp_path.glob("*.sqlite*"):
        artefacts[path.name] = path.read_bytes().decode("latin-1")
    store = product.store
    artefacts["rcareports"] = json.dumps(
        getattr(store, "reports", {}) and list(store.reports.values())
    )
    artefacts["slack"] = "\n".join(json.dumps(c.params) for c in slack_api.log)
    artefacts["log"] = caplog.text
    assert "checkpoints.sqlite" in artefacts
    assert "slack-inbox.sqlite" in artefacts
    assert len(json.loads(artefacts["rcareports"])) >= len(planted)
    found = [(s[:12], where) for s in secrets for where, text in artefacts.items() if s in text]
    print(
        f"{len(secrets)} planted secrets from {len(planted)} entries, "
        f"{len(artefacts)} artefacts: {len(found)} found"
    )
    assert found == []
