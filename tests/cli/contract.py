"""The output contract, checked: a command's `-o json|yaml` document against the JSON Schema
shipped in the package for its `kind` (triage/cli/schemas/), with the real jsonschema
validator."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import yaml

from triage.cli import documents


def valid(stdout: str, *, kind: str | None = None, as_yaml: bool = False) -> Any:
    """The document printed on stdout, after checking it against its kind's shipped schema."""
    doc = yaml.safe_load(stdout) if as_yaml else json.loads(stdout)
    assert isinstance(doc, dict), f"not one document: {stdout[:200]!r}"
    assert "apiVersion" in doc, "every document names its apiVersion"
    assert "kind" in doc, "every document names its kind"
    if kind is not None:
        assert doc["kind"] == kind
    schema = documents.shipped(doc["kind"])
    jsonschema.Draft202012Validator(schema).validate(doc)
    return doc
