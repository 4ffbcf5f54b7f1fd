"""The CLI's one output contract: every machine-readable document it prints, and its schema.

As kubectl does, every JSON or YAML document names its `apiVersion` and `kind`, so a script
can tell what it holds and which shape to expect; the shape of each kind is a pydantic model
here (or, for the RCAReport custom resource, the CRD's own schema), and its JSON Schema is
shipped in the package (triage/cli/schemas/, written by `python -m triage.cli.schemas`; a test
fails when they drift, another validates each command's `-o json` against them).

`-o json` and `-o yaml` print the same document. A new field is additive (same apiVersion);
renaming or removing one is a new apiVersion.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.results import ErrorKind, ToolStatus
from triage.core.models import RCADraft

API_VERSION: Final = "cli.triage.dev/v1"
#: The RCAReport custom resource (`triage reports show`) is printed as the apiserver stores it.
REPORT_API_VERSION = "triage.dev/v1alpha1"


class Document(BaseModel):
    """What every document starts with."""

    model_config = ConfigDict(extra="forbid")
    api_version: Literal["cli.triage.dev/v1"] = Field(default=API_VERSION, alias="apiVersion")


class ReportRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    namespace: str
    name: str


class AttemptLine(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    number: int = Field(ge=1)
    planner: str | None
    tool_calls: int = Field(alias="toolCalls", ge=0)
    investigate_seconds: float = Field(alias="investigateSeconds")
    judge_seconds: float | None = Field(alias="judgeSeconds")
    decision: str | None
    missing: int = Field(ge=0)
    submitted: bool
    submit_error: str | None = Field(alias="submitError")


class Timings(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    started_at: str = Field(alias="startedAt")
    finished_at: str = Field(alias="finishedAt")
    seconds: float
    investigate_seconds: float = Field(alias="investigateSeconds")
    judge_seconds: float = Field(alias="judgeSeconds")


class Verification(BaseModel):
    """The checked run's outcome and the judge's three lists (`CheckedRun.summary()`)."""

    model_config = ConfigDict(extra="forbid")
    outcome: Literal[
        "verified",
        "rejected",
        "budget_exhausted",
        "evaluator_unavailable",
        "unchecked",
        "awaiting_approval",
    ]
    done: bool = Field(description="Only `verified` is done.")
    activation: str
    attempts: int = Field(ge=0)
    met: list[str]
    missing: list[str]
    nonexistent: list[str]
    model_pass: str | None
    report: ReportRef | None
    notes: list[str]
    spend: dict[str, Any]
    planner: str | None
    attempt_log: list[AttemptLine]
    timings: Timings


class EvidenceRecord(BaseModel):
    """One tool call as recorded (`triage.core.models.Evidence` without its raw data)."""

    model_config = ConfigDict(extra="forbid")
    id: str
    tool: str
    args: dict[str, Any]
    status: ToolStatus
    excerpt: str
    digest: str
    error_kind: ErrorKind | None = None
    truncated: bool = False
    purpose: str | None = None


class AlertSource(BaseModel):
    """The Alertmanager group an investigation started from (`--alert FILE`, the receiver)."""

    model_config = ConfigDict(extra="forbid")
    group_key: str = Field(alias="groupKey")
    status: Literal["firing", "resolved"]
    receiver: str
    alerts: int = Field(ge=0, description="Alerts in the notification.")
    labels: dict[str, str] = Field(description="The group's common labels (the scope).")


class Investigation(Document):
    """One checked run: `triage investigate`, `record`, `replay`, `demo`."""

    kind: Literal["Investigation"] = "Investigation"
    thread_id: str
    namespace: str | None = Field(
        description="Where it looked: -n, else the words, else the kubeconfig context's."
    )
    draft: RCADraft | None
    evidence: list[EvidenceRecord] = Field(description="Every tool call, without its data.")
    verification: Verification
    mutations: list[dict[str, Any]]
    awaiting: list[dict[str, Any]] = Field(description="Changes waiting for an approval.")
    offers: list[str] = Field(description="Changes mentioned, not commanded: never made.")
    demo: str | None = Field(default=None, description="The demo bundle replayed.")
    replayed: str | None = Field(default=None, description="The bundle file replayed.")
    replay_misses: list[str] | None = Field(
        default=None, description="Calls the bundle did not hold (answered as errors)."
    )
    alert: AlertSource | None = None


class DemoList(Document):
    """`triage demo --list`."""

    kind: Literal["DemoList"] = "DemoList"
    items: list[str]


class ReportSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    namespace: str
    name: str
    outcome: str
    review: str
    root_cause: str
    root_cause_class: str
    created: str
    request: str
    attempts: int | None
    title: str
    symptom: str
    planner: str
    reviewed_by: str


class ReportList(Document):
    """`triage reports list`: one summary per RCAReport, newest first."""

    kind: Literal["ReportList"] = "ReportList"
    items: list[ReportSummary]


class Version(Document):
    """`triage version`."""

    kind: Literal["Version"] = "Version"
    version: str = Field(description="The installed package's version.")
    python: str
    llm: bool = Field(description="Whether the model libraries (the `llm` extra) are installed.")


def dump(doc: BaseModel | dict[str, Any]) -> dict[str, Any]:
    """The document as plain JSON data, by its wire names (apiVersion, groupKey)."""
    if isinstance(doc, BaseModel):
        return doc.model_dump(mode="json", by_alias=True)
    return doc


def text(doc: BaseModel | dict[str, Any], output: str) -> str:
    """The document as `output` ("json" or "yaml"), ending with a newline."""
    data = dump(doc)
    if output == "yaml":
        import yaml  # noqa: PLC0415 (only -o yaml needs it)

        return str(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


#: Every kind this module defines, by name (the schema writer and the tests walk it).
MODELS: dict[str, type[BaseModel]] = {
    "Investigation": Investigation,
    "DemoList": DemoList,
    "ReportList": ReportList,
    "Version": Version,
}


# -- the shipped schemas (`python -m triage.cli.documents` writes them) ----------------------

SCHEMA_DIR = Path(__file__).parent / "schemas"
DRAFT = "https://json-schema.org/draft/2020-12/schema"
CRD = Path(__file__).parents[2] / "helm" / "triage" / "crds" / "rcareport.yaml"


def schema_path(kind: str) -> Path:
    return SCHEMA_DIR / f"{kind}.schema.json"


def _model_schema(kind: str, model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema(by_alias=True, mode="serialization")
    schema["$schema"] = DRAFT
    schema["$id"] = f"https://triage.dev/schemas/{API_VERSION}/{kind}.schema.json"
    schema.setdefault("required", [])
    for key in ("apiVersion", "kind"):
        if key not in schema["required"]:
            schema["required"].insert(0, key)
    return schema


def report_schema(crd_text: str) -> dict[str, Any]:
    """The RCAReport as `triage reports show -o json` prints it: the CRD's own schema."""
    import yaml  # noqa: PLC0415

    crd = yaml.safe_load(crd_text)
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    body = version["schema"]["openAPIV3Schema"]
    return {
        "$schema": DRAFT,
        "$id": f"https://triage.dev/schemas/{REPORT_API_VERSION}/RCAReport.schema.json",
        "title": "RCAReport",
        "type": "object",
        "required": ["apiVersion", "kind", "metadata", *body.get("required", [])],
        "properties": {
            "apiVersion": {"const": REPORT_API_VERSION},
            "kind": {"const": "RCAReport"},
            "metadata": {"type": "object"},
            **body.get("properties", {}),
        },
    }


def schemas(crd_text: str | None = None) -> dict[str, dict[str, Any]]:
    """Every kind's JSON Schema, from the models (and the RCAReport CRD)."""
    from triage.cli.ops import ledger  # noqa: PLC0415 (its models hold the ledger's records)

    out = {kind: _model_schema(kind, model) for kind, model in {**MODELS, **ledger.MODELS}.items()}
    out["RCAReport"] = report_schema(crd_text if crd_text is not None else CRD.read_text())
    return out


def schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def shipped(kind: str) -> dict[str, Any]:
    """The schema of `kind` as shipped in the package."""
    loaded: dict[str, Any] = json.loads(schema_path(kind).read_text())
    return loaded


def main() -> None:
    SCHEMA_DIR.mkdir(exist_ok=True)
    for kind, schema in schemas().items():
        schema_path(kind).write_text(schema_text(schema))
        print(f"wrote {schema_path(kind)}")  # noqa: T201


if __name__ == "__main__":
    main()
