"""An image named for something that contains a secret word ("boarding-pass-api") keeps its
tag: `name:4.12.1-hotfix1` is an image and its version. A name that ends in a secret word
(`db-pass:`, `token:`) still has what follows masked, whatever it looks like."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.redact import Redactor


@pytest.mark.parametrize(
    "text",
    [
        "registry.example.com/airline/boarding-pass-api:4.12.1-hotfix1",
        "image passport-svc:v1.2.0 is not pinned",
        "boarding-pass-api:1.27-alpine",
    ],
)
def test_an_image_tag_stays(text: str) -> None:
    assert Redactor().text(text) == text


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("db-pass:4.12.1-rc1", "db-pass:"),
        ("my-token:1.2.3-abc", "my-token:"),
        ("boarding-pass-api: s3cr3tHunter2", "boarding-pass-api: "),
    ],
)
def test_a_secret_name_still_masks_a_tag_shaped_value(text: str, kept: str) -> None:
    assert Redactor().text(text) == kept + "[REDACTED]"


_WORD = st.sampled_from(["boarding", "db", "api", "svc", "cache", "orders", "my", "app"])
_SECRET_END = st.sampled_from(["pass", "password", "token", "secret", "pwd", "auth"])
_TAGS = st.from_regex(r"v?[0-9]{1,3}(\.[0-9]{1,3}){1,3}(-[a-z0-9]{1,8})?", fullmatch=True)


@given(st.lists(_WORD, min_size=0, max_size=3), _SECRET_END, _TAGS)
def test_a_name_ending_in_a_secret_word_masks_any_tag(words: list[str], end: str, tag: str) -> None:
    name = "-".join([*words, end])
    said = Redactor().text(f"{name}:{tag}")
    assert tag not in said or not any(c.isalpha() for c in tag), said
