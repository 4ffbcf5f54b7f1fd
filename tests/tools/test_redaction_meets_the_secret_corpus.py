"""The redactor against the planted-secrets corpus: every development secret masked, every
benign look-alike kept; the held-out set (written by others, never tuned against) is scored
and reported separately."""

from __future__ import annotations

from tests.tools.corpus import score
from tools.redact import Redactor


def test_every_development_secret_is_masked() -> None:
    result = score(Redactor(), "planted.yaml")
    print(result.line("dev"))
    assert result.secrets >= 385
    assert result.problems == []


def test_benign_look_alikes_stay_readable() -> None:
    result = score(Redactor(), "benign.yaml")
    print(result.line("benign"))
    assert result.keeps >= 137
    assert result.problems == []


def test_held_out_secrets_are_masked_too() -> None:
    """Read only here. The figure is reported in the closing note; the bar is what a redactor
    fitted to nothing but the development set should still clear."""
    result = score(Redactor(), "heldout.yaml")
    print(result.line("held-out"), *(result.problems or []), sep="\n")
    assert result.secrets >= 78
    assert result.leaked <= result.secrets * 0.1, result.problems
