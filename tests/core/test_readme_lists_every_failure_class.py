"""The README's "Failure classes" table is the user's list of what Triage recognises: every
cause class is in it, under its area, and nothing else is."""

from __future__ import annotations

import re
from pathlib import Path

from triage.core.causes import CauseClass

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_lists_every_cause_class_once() -> None:
    text = README.read_text()
    table = text.split("### Failure classes", 1)[1].split("\n\n", 2)[1]
    listed = re.findall(r"`([a-z_]+)`", table)
    causes = [c.value for c in CauseClass if c.is_cause]
    assert sorted(listed) == sorted(causes)
