"""An image named for something that contains a secret word ("boarding-pass-api") keeps its
tag: `name:4.12.1-hotfix1` is an image and its version. A name that ends in a secret word
(`db-pass:`, `token:`) still has what follows masked, whatever it looks like."""

from __future__ import annotations

import pytest

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
