"""Secrets in tool output are masked before anything leaves a tool; the shape stays readable."""

from __future__ import annotations

import pytest

from tools.redact import MASK, Redactor

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
