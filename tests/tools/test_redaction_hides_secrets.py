"""Secrets in tool output are masked before anything leaves a tool; the shape stays readable."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tools.redact import DEFAULT, MASK, TIMED_OUT, Redactor

SECRETS = [
    ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "abcdefghijklmnopqrstuvwxyz012345"),
    ("aws key AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"),
    ("DATABASE_URL=postgres://app:hunter2hunter2@db:5432/shop", "hunter2hunter2"),
    ("DB_PASSWORD=s3cr3t-value", "s3cr3t-value"),
    ("slack xoxb-1234567890-abcdefghijkl", "xoxb-1234567890-abcdefghijkl"),
    (
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
    ),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow"),
    ('api_key: "0123456789abcdef"', "0123456789abcdef"),
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_known_formats_are_masked(text: str, secret: str) -> None:
    out = Redactor().text(text)
    assert secret not in out
    assert MASK in out


def test_the_shape_of_a_url_survives() -> None:
    out = Redactor().text("FATAL: DATABASE_URL=postgres://app:pw123456@db:5432/shop is invalid")
    assert out == f"FATAL: DATABASE_URL=postgres://app:{MASK}@db:5432/shop is invalid"


def test_operator_patterns_apply_and_nested_data_is_walked() -> None:
    r = Redactor([r"cust-\d{6}"])
    out = r.data({"lines": ["order for cust-123456 failed"], "n": 3})
    assert out == {"lines": [f"order for {MASK} failed"], "n": 3}


def test_ordinary_text_is_untouched() -> None:
    line = "GET /healthz 200 12ms; readiness probe failed: connection refused"
    assert Redactor().text(line) == line


def test_counts_named_like_secrets_are_not_masked() -> None:
    """Every answer used to end "tokens: [REDACTED]"."""
    for line in (
        "tokens: 0",
        "worker tokens: 1532 in, 211 out",
        "max_tokens=4096 prompt_tokens=1532",
        "TOKEN_TTL=3600 PASSWORD_MIN_LENGTH=12",
        "secret db-creds was updated 20m ago",
    ):
        assert Redactor().text(line) == line


def test_a_settings_path_is_judged_by_its_field_not_by_an_item_a_user_named() -> None:
    """A pod template's settings are flattened by path; a volume named aws-token does not make
    its source spec a secret (the token's audience is what a reader needs), while a field
    that holds one is still masked wherever its item is, and a secret value by its format."""
    settings = {
        "volumes[aws-token].projected.sources": "{serviceAccountToken: {audience: sts}}",
        "containers[app].lifecycle.postStart.exec.token": "hunter2-but-longer",
        "volumes[cfg].configMap.name": "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    }
    out = Redactor().data(settings)
    assert (
        out["volumes[aws-token].projected.sources"]
        == settings["volumes[aws-token].projected.sources"]
    )
    assert out["containers[app].lifecycle.postStart.exec.token"] == MASK
    assert "a1B2c3D4" not in out["volumes[cfg].configMap.name"]


def test_a_million_char_token_is_redacted_in_linear_time() -> None:
    """The URL-password pattern used to take 50 s on 100,000 chars of [A-Za-z0-9+.-]."""
    timings = {}
    for n in (100_000, 1_000_000):
        text = ("aB3+.-" * (n // 6 + 1))[:n]
        start = time.perf_counter()
        Redactor().text(text)
        timings[n] = time.perf_counter() - start
    assert timings[1_000_000] < 2.0  # ~0.2 s on the CI machine; bench/redaction.py prints it
    assert timings[1_000_000] < 30 * max(timings[100_000], 0.005)  # linear: ~10x


def test_secrets_wrapped_over_two_lines_and_pem_bodies_are_masked() -> None:
    lines = [
        "ERROR payments: charge failed, client config api_key=sk_live_nONwxfuDpfIN",
        "U0Zmqfhu7rYKzEu99ByC retries=2 timeout=30s",
        "-----BEGIN PRIVATE KEY-----",
        "MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDfpju/D/a3ZgYZ",
        "-----END PRIVATE KEY-----",
    ]
    out = Redactor().lines(lines)
    assert len(out) == len(lines)
    joined = "\n".join(out)
    for secret in ("nONwxfuDpfIN", "U0Zmqfhu7rYKzEu99ByC", "MIIEvgIBADANBgkqhkiG9w0"):
        assert secret not in joined
    assert "retries=2 timeout=30s" in joined


def test_an_operator_pattern_that_backtracks_fails_closed() -> None:
    out = Redactor([r"(a|aa)+c"]).text("secret-free text " + "a" * 40)
    assert out == TIMED_OUT


def test_a_line_ending_in_a_host_and_a_traceback_after_it_stay_readable() -> None:
    """Two ordinary pieces either side of a line break are not the halves of a wrapped key
    (found on a Python job's log: the host:port it dials, then its traceback)."""
    lines = [
        "INFO billing.reconcile: reconciling window=24h db=billing-db:5433/billing",
        "Traceback (most recent call last):",
    ]
    assert DEFAULT.lines(lines) == lines


def test_a_key_block_cut_before_its_end_line_masks_the_key_not_the_rest_of_the_log() -> None:
    lines = [
        "-----BEGIN PRIVATE KEY-----",
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7",
        "FATAL env DATABASE_URL is not a valid URL",
    ]
    out = DEFAULT.lines(lines)
    assert out[1] != lines[1]
    assert out[2] == lines[2]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from(["DB_PASSWORD=hunter2hunter2", "ok", "ghp_" + "a1B2" * 9]), max_size=6)
)
def test_a_string_seen_before_is_redacted_as_the_first_time(parts: list[str]) -> None:
    """The memo of short strings (tools/redact.py) returns what redaction computes, and a
    redactor with extra literals has a memo of its own: nothing one masks leaks to another."""
    plain = Redactor()
    text = " ".join(parts)
    first = plain.text(text)
    assert plain.text(text) == first == Redactor().text(text)
    with_literal = plain.with_literals(["ok ok ok"])
    assert with_literal.text("ok ok ok") == MASK
    assert plain.text("ok ok ok") == "ok ok ok"
