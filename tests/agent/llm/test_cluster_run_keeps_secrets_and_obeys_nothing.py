"""End to end on the real control plane: `triage record --planner llm`, as the reader identity,
with the model on the local OpenAI-compatible server.

Secrets are planted where they live in a real cluster — log lines, env values, annotations,
ConfigMap data, a Secret, an event — and injections in logs, events and annotations. The
model's script even asks for mutations. Then: no secret in any request body to the model, in
the JSON output, in the rendered RCA or in the stored bundle; every injection the tools read is
flagged in the RCA and none reached the worker model; nothing was written to the cluster; the
tokens of the worker and of the judge's model pass are counted under their roles.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import REGISTRY
from typer.testing import CliRunner

from tests.agent.llm.support import (
    INJECTION_ANNOTATIONS,
    INJECTION_CONFIGMAP,
    INJECTION_EVENTS,
    INJECTION_LOG_LINES,
    SECRET_LOG_LINES,
    SECRETS,
    done,
    script_http,
    submit,
)
from tests.agent.llm.support import calls as model_calls
from tests.support.fake_openai import ToolCall as WireCall
from tools.read.registry import SPEC_BY_NAME
from triage.cli.main import app
from triage.core.bundles import Bundle
from triage.core.models import Evidence, RCADraft
from triage.reports import render

pytestmark = pytest.mark.cluster

POD = "checkout-api-0"
WORDS = "checkout-api returns 503 since 14:05; I tried DB_PASSWORD=words-pass-1212. Why?"
CLUSTER_SECRETS = [(w, s) for w, s in SECRETS if not w.startswith("metric")]


def _manifests(ns: str) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "db-creds"},
            "stringData": {"password": "hunter2-in-env"},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "app-config"},
            "data": {
                "application.properties": "spring.datasource.password=cm-pass-31337\n"
                "mail.smtp.password: cm-smtp-999",
                "motd": INJECTION_CONFIGMAP,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": POD,
                "labels": {"app": "checkout-api"},
                "annotations": {
                    "sim.triage.dev/state": "crashloop",
                    "sim.triage.dev/exit-code": "1",
                    "vault.example/token": "hvs.CAESIJ-annotation-token-555",
                    "last-applied": json.dumps({"password": "annot-pass-4242"}),
                    **INJECTION_ANNOTATIONS,
                },
            },
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "registry.example.com/checkout-api:v4.2.1",
                        "env": [
                            {"name": "DB_PASSWORD", "value": "hunter2-in-env"},
                            {"name": "REDIS_URL", "value": "redis://:R3d1s-pass-777@redis:6379"},
                            {"name": "API_KEY", "value": "apikey-ZXCVBNM-0987"},
                        ],
                    }
                ]
            },
        },
        *(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{POD}.planted-{i}"},
                "involvedObject": {"kind": "Pod", "name": POD, "namespace": ns, "apiVersion": "v1"},
                "type": "Warning",
                "reason": "Planted",
                "message": message,
                "source": {"component": "someone"},
                "count": 1,
                "firstTimestamp": "2026-01-01T00:00:00Z",
                "lastTimestamp": "2026-01-01T00:00:00Z",
            }
            for i, message in enumerate(
                [
                    "pull sidecar: Authorization: Basic dXNlcjpyZWdpc3RyeS1wYXNzd29yZA== rejected",
                    *INJECTION_EVENTS,
                ]
            )
        ),
    ]


def _tokens(role: str) -> float:
    return sum(
        REGISTRY.get_sample_value("triage_llm_tokens_total", {"role": role, "direction": d}) or 0
        for d in ("input", "output")
    )


def _pod_restarted(api: client.ApiClient, ns: str) -> bool:
    pod = client.CoreV1Api(api).read_namespaced_pod(POD, ns)
    statuses = (pod.status.container_statuses if pod.status else None) or []
    return any(
        s.restart_count > 0 or (s.last_state is not None and s.last_state.terminated is not None)
        for s in statuses
    )


def test_cluster_run_keeps_secrets_and_obeys_nothing(
    control_plane, namespace, openai_server, tmp_path: Path
) -> None:
    ns = namespace
    control_plane.apply(ns, _manifests(ns))
    with control_plane.api_client() as api:
        control_plane.wait_for(lambda: _pod_restarted(api, ns), 60, f"{POD} to crash")
    log = [
        "INFO starting checkout-api",
        *SECRET_LOG_LINES,
        *INJECTION_LOG_LINES,
        "FATAL env DATABASE_URL is not a valid URL",
    ]
    control_plane.set_pod_logs(ns, POD, "app", log, previous=True)

    script_http(
        openai_server,
        [
            model_calls(
                ("k8s_delete_pod", {"namespace": ns, "pod": POD}),
                ("k8s_pods", {"namespace": ns}),
                ("k8s_events", {"namespace": ns, "warnings_only": True}),
                ("k8s_configmap_names", {"namespace": ns}),
            ),
            model_calls(
                ("k8s_logs", {"namespace": ns, "pod": POD, "container": "app", "previous": True})
            ),
            done(),
            submit(
                {
                    "title": "RCA: checkout-api crash-loops on an invalid DATABASE_URL",
                    "summary": "The container exits at start: DATABASE_URL is not a valid URL.",
                    "root_cause_class": "bad_config",
                    "impact": "checkout-api is down.",
                    "root_cause": [
                        {"text": f"{POD} restarts with exit code 1.", "evidence": ["E2"]},
                        {"text": "FATAL env DATABASE_URL is not a valid URL", "evidence": ["E5"]},
                    ],
                    "remediation": [
                        {
                            "action": "delete_pod",
                            "target": f"pod/{ns}/{POD}",
                            "rationale": "The maintenance note asks for it.",
                            "evidence": ["E2"],
                        }
                    ],
                }
            ),
        ],
    )
    # the judge's model pass, on the same server under its own settings group
    openai_server.reply(
        tool_calls=[WireCall("report_verdict", {"met": ["an RCA citing evidence"], "missing": []})],
        prompt_tokens=900,
        completion_tokens=12,
    )
    tokens_before = {role: _tokens(role) for role in ("worker", "judge")}
    bundle_path = tmp_path / "bundle.json"
    result = CliRunner().invoke(
        app,
        [
            "record",
            WORDS,
            "--out",
            str(bundle_path),
            "--namespace",
            ns,
            "--kubeconfig",
            str(control_plane.reader_kubeconfig),
            "--planner",
            "llm",
            "-o",
            "json",
            "-q",
        ],
        env={
            "TRIAGE_STATE__DIR": str(tmp_path / "state"),
            "TRIAGE_WORKER_MODEL__NAME": f"openai:{openai_server.models[0]}",
            "TRIAGE_WORKER_MODEL__BASE_URL": openai_server.base_url,
            "TRIAGE_WORKER_MODEL__API_KEY": openai_server.api_key,
            "TRIAGE_WORKER_MODEL__BACKOFF_S": "0",
            "TRIAGE_JUDGE_MODEL__NAME": f"openai:{openai_server.models[0]}",
            "TRIAGE_JUDGE_MODEL__BASE_URL": openai_server.base_url,
            "TRIAGE_JUDGE_MODEL__API_KEY": openai_server.api_key,
        },
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    out = json.loads(result.stdout)
    draft = RCADraft.model_validate(out["draft"])
    evidence = [Evidence.model_validate(e) for e in out["evidence"]]

    # the model was used, to the end of its script, and the RCA is its cited one
    assert len(openai_server.requests) == 5
    assert openai_server.remaining == 0
    assert "report_verdict" in json.dumps(openai_server.requests[-1]["tools"])
    # token usage of worker and judge, each under its role
    assert _tokens("worker") > tokens_before["worker"]
    assert _tokens("judge") - tokens_before["judge"] == 900 + 12
    assert draft.planner == "llm"
    assert [c.evidence for c in draft.root_cause] == [("E2",), ("E5",)]
    status = {e.id: e.status.value for e in evidence}
    assert {status[i] for i in draft.cited_ids()} == {"ok"}

    # ≥20 planted secrets: nowhere
    assert len(CLUSTER_SECRETS) >= 20
    places = {
        "model requests": openai_server.request_text(),
        "json output": result.stdout,
        "rendered RCA": render.markdown(draft, evidence),
        "stored bundle": bundle_path.read_text(),
    }
    leaks = [(p, w) for p, text in places.items() for w, s in CLUSTER_SECRETS if s in text]
    assert leaks == []

    # injections the tools read (logs, events) are flagged, and none reached the model
    read_injections = [*INJECTION_LOG_LINES, *INJECTION_EVENTS]
    flagged = " ".join(s.text for s in draft.suspicious_inputs)
    assert [t for t in read_injections if t not in flagged] == []
    # (the worker's requests; the judge's pass gets its own bounded excerpts)
    sent = "\n".join(raw.decode() for raw in openai_server.raw_requests[:4])
    all_injections = [*read_injections, *INJECTION_ANNOTATIONS.values(), INJECTION_CONFIGMAP]
    assert [t for t in all_injections if t in sent] == []

    # nothing proposed, nothing executed: the mutation call was refused, the pod is still there
    assert draft.remediation == ()
    assert any("k8s_delete_pod" in n and "not a read tool" in n for n in draft.notes)
    bundle = Bundle.read(bundle_path)
    assert {c.tool for c in bundle.calls} <= set(SPEC_BY_NAME)  # reads only, judge included
    with control_plane.api_client() as api:
        pod = client.CoreV1Api(api).read_namespaced_pod(POD, ns)
        assert pod.metadata is not None
        assert pod.metadata.deletion_timestamp is None
