"""A caller that cannot decode a dependency's answers is followed to the dependency its line
names by a field of its own ("upstream":"price-engine"), and a release of that dependency
just before the failures began is the cause. Decoders' words on a line about a response are
a response failure; the same words about a configuration file stay a configuration one."""

from __future__ import annotations

import json

import pytest

from triage.agent.planners.rules import text
from triage.agent.planners.rules.analyzers.dependencies import _line_time
from triage.agent.planners.rules.reads import _scheme_says


def line(msg: str, **more: str) -> str:
    return json.dumps({"time": "2026-12-06T03:04:05Z", "level": "ERROR", "msg": msg, **more})


@pytest.mark.parametrize(
    "said",
    [
        line(
            "failed to decode pricing response",
            upstream="price-engine",
            error="json: cannot unmarshal string into Go struct field Quote.amount of type int64",
        ),
        "ERROR c.a.PriceClient - reply from price-engine: com.fasterxml.jackson.databind.exc."
        "MismatchedInputException: Cannot deserialize value of type `long` from String",
        'upstream=geo error="json.decoder.JSONDecodeError: Expecting value: line 1 column 1" '
        'msg="bad response"',
        "SyntaxError: Unexpected token < in JSON at position 0 (response of GET /v1/rates)",
    ],
)
def test_a_decoder_failing_on_a_response_is_a_response_failure(said: str) -> None:
    assert text.family(said) is text.Family.RESPONSE, said


@pytest.mark.parametrize(
    "said",
    [
        "error: yaml: unmarshal errors: line 3: cannot unmarshal !!str `ten` into int",
        line("failed to load config", error="json: cannot unmarshal string into Go value"),
    ],
)
def test_the_same_words_about_a_configuration_stay_configuration(said: str) -> None:
    assert text.family(said) is text.Family.CONFIG, said


def test_the_peer_a_field_names() -> None:
    assert text.peer_named(line("failed", upstream="price-engine")) == "price-engine"
    assert text.peer_named('level=error service=ledger-api msg="decode failed"') == "ledger-api"
    assert text.peer_named(line("failed to decode response")) is None


def test_a_lines_own_time() -> None:
    assert _line_time(line("x")) == 1796526245.0
    assert _line_time("2026-12-06T03:04:05Z ERROR boom") == 1796526245.0
    assert _line_time("ERROR boom") is None


def test_a_pooler_takes_the_servers_url_scheme() -> None:
    url = "postgresql+psycopg2://timeline@shared-pgbouncer.db.svc.cluster.local:6432/timeline"
    host = "shared-pgbouncer.db.svc.cluster.local"
    assert _scheme_says(url, host, "postgres")
    assert not _scheme_says(url, host, "redis")
    assert not _scheme_says(f"http://{host}:8080/", host, "postgres")
