"""One output contract: every document names its apiVersion and kind, and validates against
the JSON Schema shipped in the package; the shipped schemas are the models' (regenerate with
`python -m triage.cli.documents`)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from tests.cli.contract import valid
from triage.cli import documents
from triage.cli.main import app


def _cli(*args: str, state: Path):
    return CliRunner().invoke(app, list(args), env={"TRIAGE_STATE__DIR": str(state)})


def test_the_shipped_schemas_are_the_models() -> None:
    generated = documents.schemas()
    shipped = {p.name.removesuffix(".schema.json") for p in documents.SCHEMA_DIR.glob("*.json")}
    assert shipped == set(generated), "run `python -m triage.cli.documents`"
    for kind, schema in generated.items():
        assert documents.shipped(kind) == json.loads(documents.schema_text(schema)), (
            f"{kind}: the shipped schema is stale; run `python -m triage.cli.documents`"
        )
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("output", ["json", "yaml"])
def test_offline_commands_print_valid_documents(tmp_path: Path, output: str) -> None:
    as_yaml = output == "yaml"
    version = _cli("version", "-o", output, state=tmp_path)
    assert version.exit_code == 0
    assert valid(version.stdout, kind="Version", as_yaml=as_yaml)["version"]
    listed = _cli("demo", "--list", "-o", output, state=tmp_path)
    assert "crashloop-bad-env" in valid(listed.stdout, kind="DemoList", as_yaml=as_yaml)["items"]
    run = _cli("demo", "crashloop-bad-env", "-o", output, state=tmp_path)
    doc = valid(run.stdout, kind="Investigation", as_yaml=as_yaml)
    assert doc["demo"] == "crashloop-bad-env"
    assert doc["verification"]["outcome"] == "verified"
    assert run.exit_code == 0
    bundle = Path(documents.__file__).parents[1] / "demo" / "crashloop-bad-env.json"
    replayed = _cli("replay", str(bundle), "-o", output, "-q", state=tmp_path)
    doc = valid(replayed.stdout, kind="Investigation", as_yaml=as_yaml)
    assert doc["verification"]["outcome"] == "verified"


def test_a_document_that_breaks_the_contract_is_caught(tmp_path: Path) -> None:
    run = _cli("demo", "-o", "json", "-q", state=tmp_path)
    doc = json.loads(run.stdout)
    doc["verification"]["outcome"] = "probably fine"
    with pytest.raises(jsonschema.ValidationError):
        valid(json.dumps(doc))
    del doc["apiVersion"]
    with pytest.raises(AssertionError):
        valid(json.dumps(doc))


def test_the_trail_goes_to_stderr_and_stdout_stays_the_document(tmp_path: Path) -> None:
    run = _cli("demo", "-o", "json", "-v", state=tmp_path)
    valid(run.stdout, kind="Investigation")
    lines = run.stderr.splitlines()
    assert any("k8s.pods" in line and "→ ok" in line for line in lines)  # -v: the tool calls
    assert any("outcome: verified" in line for line in lines)
    steps = _cli("demo", "-o", "json", state=tmp_path).stderr.splitlines()
    assert not any("k8s.pods" in line for line in steps)  # without -v: the steps only
    assert any("judge: verified" in line for line in steps)
    assert _cli("demo", "-o", "json", "-q", state=tmp_path).stderr == ""


def test_piped_lines_are_never_wrapped(tmp_path: Path) -> None:
    long_name = "x" * 300
    run = _cli("demo", long_name, state=tmp_path)
    assert run.exit_code == 2
    (line,) = run.stderr.strip().splitlines()
    assert long_name in line
