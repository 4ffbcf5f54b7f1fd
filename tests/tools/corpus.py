"""The planted-secrets corpus (tests/corpus/secrets) presented the way Triage meets each place."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tools.redact import Redactor

CORPUS = Path(__file__).resolve().parents[1] / "corpus" / "secrets"


def entries(name: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load((CORPUS / name).read_text()))


def redacted(redactor: Redactor, entry: dict[str, Any]) -> str:
    """What the redactor leaves of one entry: log lines together (as the log tool reads
    them), a keyed value under its key (annotations, labels), anything else as text."""
    if "lines" in entry:
        return "\n".join(redactor.lines(list(entry["lines"])))
    if "key" in entry:
        return str(redactor.data({entry["key"]: entry["text"]}))
    return redactor.text(entry["text"])


def secrets_of(entry: dict[str, Any]) -> list[str]:
    return [*entry.get("secrets", []), *entry.get("derived_secrets", [])]


def input_of(entry: dict[str, Any]) -> str:
    return "\n".join(entry["lines"]) if "lines" in entry else str(entry["text"])


@dataclass
class Score:
    secrets: int = 0
    leaked: int = 0
    keeps: int = 0
    lost: int = 0
    problems: list[str] | None = None

    def line(self, name: str) -> str:
        masked = self.secrets - self.leaked
        kept = self.keeps - self.lost
        return (
            f"{name}: {masked}/{self.secrets} secret substrings masked, "
            f"{kept}/{self.keeps} context substrings kept"
        )


def score(redactor: Redactor, name: str) -> Score:
    out = Score(problems=[])
    assert out.problems is not None
    for entry in entries(name):
        text = redacted(redactor, entry)
        wanted = secrets_of(entry)
        leaked = [s for s in wanted if s in text]
        lost = [k for k in entry.get("keep", []) if k not in text]
        out.secrets += len(wanted)
        out.leaked += len(leaked)
        out.keeps += len(entry.get("keep", []))
        out.lost += len(lost)
        if leaked or lost:
            out.problems.append(f"{entry['id']}: leaked {leaked} lost {lost}")
    return out
