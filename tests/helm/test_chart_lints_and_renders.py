"""The chart as the real helm CLI sees it, without a cluster: lint is clean, every ci values file
renders, names fit in 63 characters, selectors are the release's own, a policy change rolls the
pods, the policy it mounts is one the product accepts, and the schema documents every value."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from policies import DEFAULT_POLICY, SCHEMA_PATH, load_policy
from tests.helm.support import CHART, CI_VALUES, Helm, HelmError
from tests.helm.sync_policy_schema import embedded
from triage.core.settings import Settings

# helm is built from source (Go), like the control plane: `-m "not cluster"` skips it.
pytestmark = pytest.mark.cluster


def _kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def _one(docs: list[dict[str, Any]], kind: str, name_suffix: str = "") -> dict[str, Any]:
    found = [d for d in _kind(docs, kind) if d["metadata"]["name"].endswith(name_suffix)]
    assert len(found) == 1, [d["metadata"]["name"] for d in found]
    return found[0]


@pytest.mark.parametrize("values", [None, *CI_VALUES], ids=lambda v: v.name if v else "defaults")
def test_helm_lint_is_clean(helm: Helm, values: Path | None) -> None:
    args = ["lint", str(CHART), "--strict"] + (["--values", str(values)] if values else [])
    out = helm.run(*args)
    assert "0 chart(s) failed" in out
    assert not [line for line in out.splitlines() if line.startswith("[")], out


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda v: v.name)
def test_every_ci_values_file_renders_a_hardened_agent(helm: Helm, values: Path) -> None:
    docs = helm.template(values, namespace="triage-system")
    dep = _one(docs, "Deployment")
    pod = dep["spec"]["template"]["spec"]
    container = next(c for c in pod["containers"] if c["name"] == "triage")  # sidecars aside
    assert container["args"] == ["serve"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = container["securityContext"]
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"]["drop"] == ["ALL"]
    assert container["resources"]["limits"]["memory"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}
    # ready only while the state store (SQLite inbox, or the shared Postgres) answers
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}
    assert pod["serviceAccountName"] == "triage"
    # Credentials come from an existing Secret by reference, never as literal values.
    for env in container["env"]:
        assert "value" in env or "valueFrom" in env
        if env["name"].endswith(("_TOKEN", "_SECRET", "_DSN", "_API_KEY")):
            assert "secretKeyRef" in env["valueFrom"]
    # Objects other than the mutator's per-namespace bindings stay in the release namespace.
    for doc in docs:
        ns = doc["metadata"].get("namespace")
        if (doc["kind"], doc["metadata"]["name"]) != ("RoleBinding", "triage-mutator"):
            assert ns in (None, "triage-system"), doc["metadata"]
    # The CRDs ship unchanged from crds/.
    assert {d["metadata"]["name"] for d in _kind(docs, "CustomResourceDefinition")} == {
        "approvals.triage.dev",
        "operations.triage.dev",
        "rcareports.triage.dev",
    }


def test_names_fit_in_63_characters_even_for_long_release_names(helm: Helm) -> None:
    release = "r" * 53  # helm's own limit on release names
    namespace = "n" * 63
    docs = helm.template(release=release, namespace=namespace, sets=["nameOverride=" + "x" * 40])
    names: dict[str, set[str]] = {}
    for doc in docs:
        name = doc["metadata"]["name"]
        assert len(name) <= 63, name
        names.setdefault(doc["kind"], set()).add(name)
        for key, value in (doc["metadata"].get("labels") or {}).items():
            assert len(str(value)) <= 63, (key, value)
    # Truncation never makes two objects of one kind collide.
    for kind, found in names.items():
        assert len(found) == len(_kind(docs, kind)), kind


def test_selectors_are_scoped_to_the_release(helm: Helm) -> None:
    a = helm.template(release="blue")
    b = helm.template(release="green")
    sel_a = _one(a, "Deployment")["spec"]["selector"]["matchLabels"]
    sel_b = _one(b, "Deployment")["spec"]["selector"]["matchLabels"]
    assert sel_a["app.kubernetes.io/instance"] == "blue"
    assert sel_a != sel_b
    assert _one(a, "Service", "-triage")["spec"]["selector"] == sel_a
    assert _one(a, "Service", "-review")["spec"]["selector"] == sel_a
    assert _one(a, "Deployment")["spec"]["template"]["metadata"]["labels"].items() >= sel_a.items()


def test_a_policy_change_rolls_the_pods_and_nothing_else_does(helm: Helm) -> None:
    def checksum(*sets: str) -> str:
        dep = _one(helm.template(sets=list(sets)), "Deployment")
        return str(dep["spec"]["template"]["metadata"]["annotations"]["checksum/policy"])

    base = checksum()
    assert checksum("policy.mutations.max_replicas=5") != base
    assert checksum("service.port=9090") == base


def test_the_mounted_policy_is_one_the_product_accepts(helm: Helm, tmp_path: Path) -> None:
    docs = helm.template()
    cm = _one(docs, "ConfigMap", "-policy")
    path = tmp_path / "policy.yaml"
    path.write_text(cm["data"]["policy.yaml"])
    assert load_policy(path) == load_policy(DEFAULT_POLICY)
    dep = _one(docs, "Deployment")
    env = {
        e["name"]: e.get("value") for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["TRIAGE_POLICY_FILE"] == "/etc/triage/policy/policy.yaml"
    assert env["TRIAGE_MUTATIONS__MUTATOR_SERVICE_ACCOUNT"] == "triage-system/triage-mutator"
    assert env["TRIAGE_MUTATIONS__LEDGER_NAMESPACE"] == "triage-system"


def test_the_values_schema_embeds_the_policy_schema_unchanged() -> None:
    values_schema = json.loads((CHART / "values.schema.json").read_text())
    assert values_schema == embedded(values_schema), (
        "policies/policy.schema.json changed: run `python -m tests.helm.sync_policy_schema`"
    )
    assert values_schema["properties"]["policy"]["$ref"] == "#/$defs/Policy"
    assert set(json.loads(SCHEMA_PATH.read_text())["$defs"]) < set(values_schema["$defs"])


def _documented(values: Any, schema: dict[str, Any], defs: dict[str, Any], path: str) -> list[str]:
    if "$ref" in schema:
        return []  # the policy: documented by its own schema (policies/policy.schema.json)
    missing = [] if schema.get("description") else [path or "(top)"]
    props = schema.get("properties")
    if isinstance(values, dict) and props is not None:
        for key, value in values.items():
            if key not in props:
                if schema.get("additionalProperties") is False:  # else: free-form, e.g. k8s types
                    missing.append(f"{path}.{key} (not in the schema)")
            else:
                missing += _documented(value, props[key], defs, f"{path}.{key}")
    return missing


def test_every_value_is_in_the_schema_with_a_description_and_a_comment() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert _documented(values, schema, schema["$defs"], "") == []
    # values.yaml itself: every value the schema defines (outside the policy, which has its own
    # schema) has a comment line right above it; sections need none, free-form maps' keys neither.
    lines = (CHART / "values.yaml").read_text().splitlines()
    stack: list[tuple[int, dict[str, Any] | None]] = [(-1, schema)]
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "- ")) or ":" not in stripped:
            continue
        indent = len(line) - len(line.lstrip())
        while stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        key, _, rest = stripped.partition(":")
        node = ((parent or {}).get("properties") or {}).get(key)
        if node is not None and "$ref" in node:
            node = None  # the policy
        stack.append((indent, node))
        if node is not None and rest.strip():
            assert lines[i - 1].strip().startswith("#"), f"values.yaml:{i + 1} {key} has no comment"


@pytest.mark.parametrize(
    ("sets", "complaint"),
    [
        (["replicaCount=3"], "'/replicaCount': maximum: got 3, want 1"),
        (["rbac.readr.create=true"], "additional properties 'readr' not allowed"),
        (["securityContext.allowPrivilegeEscalation=true"], "allowPrivilegeEscalation"),
        (["podSecurityContext.runAsNonRoot=false"], "runAsNonRoot"),
        (["policy.mutations.actions.reboot_node.approval=false"], "rollout_restart"),
        (["policy.mutations.max_replicas=-1"], "'/policy/mutations/max_replicas'"),
        (["checkpointer.kind=postgres"], "existingSecret"),
        (["planner.kind=llm"], "'/workerModel/name'"),
        (["image.digest=latest"], "'/image/digest'"),
    ],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_values_that_break_the_schema_are_refused_with_the_path(
    helm: Helm, tmp_path: Path, sets: list[str], complaint: str
) -> None:
    with pytest.raises(HelmError) as refused:
        helm.template(sets=sets)
    assert "values don't meet the specifications of the schema" in refused.value.stderr
    assert complaint in refused.value.stderr, refused.value.stderr


def test_a_values_file_that_breaks_the_schema_is_refused(helm: Helm, tmp_path: Path) -> None:
    bad = tmp_path / "bad-values.yaml"
    bad.write_text("replicas: 2\npolicy:\n  mutations:\n    namespaces: ['*']\n")
    with pytest.raises(HelmError) as refused:
        helm.template(bad)
    err = refused.value.stderr
    assert "additional properties 'replicas' not allowed" in err
    assert "'/policy/mutations/namespaces/0'" in err  # no wildcards: the mutator is bound per name
    assert refused.value.rc != 0


# What the mutator needs for each action, from the calls tools/k8s_mutate.py makes.
_RIGHTS: dict[str, set[tuple[str, str, str]]] = {
    "rollout_restart": {("apps", "deployments", "get"), ("apps", "deployments", "patch")},
    "scale": {
        ("apps", "deployments", "get"),
        ("apps", "deployments", "patch"),
        ("apps", "deployments/scale", "patch"),
    },
    "rollback": {
        ("apps", "deployments", "get"),
        ("apps", "deployments", "patch"),
        ("apps", "replicasets", "list"),
    },
    "delete_pod": {("", "pods", "get"), ("", "pods", "delete"), ("", "pods/eviction", "create")},
    "silence_create": set(),
    "silence_expire": set(),
}


def _rules(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {
        (g, r, v)
        for rule in role.get("rules") or []
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }


@pytest.mark.parametrize(
    "allowed",
    [(), ("rollout_restart",), ("scale",), ("rollback",), ("delete_pod",), ("silence_create",)],
    ids=lambda a: "+".join(a) or "nothing",
)
def test_the_mutator_role_holds_only_what_the_policy_allows(
    helm: Helm, tmp_path: Path, allowed: tuple[str, ...]
) -> None:
    values = tmp_path / "v.yaml"
    all_actions = list(_RIGHTS)
    actions = {a: ({"approval": False} if a in allowed else None) for a in all_actions}
    values.write_text(
        yaml.safe_dump(
            {
                "rbac": {"mutator": {"create": True}},
                "policy": {"mutations": {"namespaces": ["shop", "web"], "actions": actions}},
            }
        )
    )
    docs = helm.template(values)
    role = _one(docs, "ClusterRole", "triage-system-triage-mutator")
    expected = set().union(*(_RIGHTS[a] for a in allowed)) if allowed else set()
    assert _rules(role) == expected
    bindings = [d for d in _kind(docs, "RoleBinding") if d["metadata"]["name"] == "triage-mutator"]
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["shop", "web"]
    assert {b["roleRef"]["name"] for b in bindings} == {role["metadata"]["name"]}


def test_mutations_are_off_by_default(helm: Helm) -> None:
    docs = helm.template(sets=["policy.mutations.namespaces={shop}"])
    names = [d["metadata"]["name"] for d in docs if "Role" in d["kind"]]
    assert "triage-mutator" not in names
    assert "triage-system-triage-mutator" not in names


def test_the_reader_role_reads_only_and_never_secrets(helm: Helm) -> None:
    docs = helm.template()
    rules = _rules(_one(docs, "ClusterRole", "-reader"))
    assert {v for _, _, v in rules} == {"get", "list", "watch"}
    resources = {r for _, r, _ in rules}
    assert "secrets" not in resources
    assert "*" not in resources
    assert {"pods", "pods/log", "events", "nodes", "endpointslices", "configmaps"} <= resources
    for doc in docs:
        for rule in doc.get("rules") or []:
            assert "*" not in rule["verbs"] + rule["resources"] + rule["apiGroups"], doc


def test_the_agent_may_impersonate_the_mutator_and_the_recorder_by_name_only(helm: Helm) -> None:
    docs = helm.template()
    roles = []
    for suffix, sa in (
        ("-impersonate-mutator", "triage-mutator"),
        ("-impersonate-approval-recorder", "triage-approval-recorder"),
    ):
        role = _one(docs, "Role", suffix)
        assert role["rules"] == [
            {
                "apiGroups": [""],
                "resources": ["serviceaccounts"],
                "verbs": ["impersonate"],
                "resourceNames": [sa],
            }
        ]
        roles.append(role)
    other = [d for d in docs if d not in roles and "impersonate" in json.dumps(d.get("rules"))]
    assert other == []


def test_approvals_are_guarded_by_an_admission_policy_naming_the_release_identities(
    helm: Helm,
) -> None:
    docs = helm.template()
    (vap,) = _kind(docs, "ValidatingAdmissionPolicy")
    text = json.dumps(vap["spec"])
    assert "system:serviceaccount:triage-system:triage-mutator" in text
    assert "system:serviceaccount:triage-system:triage-approval-recorder" in text
    (binding,) = _kind(docs, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["policyName"] == vap["metadata"]["name"]
    assert binding["spec"]["validationActions"] == ["Deny"]
    writer = _one(docs, "Role", "-ledger-writer")
    approvals = [r for r in writer["rules"] if "approvals" in r["resources"]]
    assert approvals == [
        {"apiGroups": ["triage.dev"], "resources": ["approvals"], "verbs": ["get", "list", "watch"]}
    ]


# Set by the chart for settings that do not exist yet (the Postgres checkpointer).
_NOT_YET_SETTINGS = {"TRIAGE_STATE__POSTGRES_DSN"}


def _setting_exists(model: type[BaseModel], parts: list[str]) -> bool:
    field = model.model_fields.get(parts[0])
    if field is None:
        return False
    if len(parts) == 1:
        return True
    inner = field.annotation
    return (
        isinstance(inner, type)
        and issubclass(inner, BaseModel)
        and _setting_exists(inner, parts[1:])
    )


@pytest.mark.parametrize("values", CI_VALUES, ids=lambda v: v.name)
def test_every_triage_variable_the_deployment_sets_is_a_setting(helm: Helm, values: Path) -> None:
    dep = _one(helm.template(values), "Deployment")
    names = [e["name"] for e in dep["spec"]["template"]["spec"]["containers"][0]["env"]]
    unknown = [
        n
        for n in names
        if n.startswith("TRIAGE_")
        and n not in _NOT_YET_SETTINGS
        and not _setting_exists(Settings, n.removeprefix("TRIAGE_").lower().split("__"))
    ]
    assert unknown == []
