"""`triage investigate` against the real control plane and Prometheus, on the scenarios that
ship as `triage demo` bundles and a few whose causal chains need links of their own, graded as
the corpus bench grades every scenario.

The CLI runs in-process as the reader identity (a real ServiceAccount token), exactly as a user
would run it; the assertions read its JSON output: the root-cause class is the scenario's (or
one it also accepts), every fact the scenario requires is in the root cause (its one-sentence
cause, summary and causal chain), the judge verified it, and every cited evidence id points at
an `ok` result. The whole corpus, held-out split included, is measured by
`python -m bench.rca_corpus` (see the README).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from tests.support.scenario_format import load_scenarios
from triage.cli.main import app
from triage.core.bundles import demo_names
from triage.core.errors import EXIT_OK

pytestmark = [pytest.mark.cluster, pytest.mark.prometheus]

DEV = {s.name for s in load_scenarios(split="dev")}
# Beyond the demo bundles, incidents whose cause needs a link of its own: a CronJob schedule
# read field by field against the cadence the question states, a LimitRanger bound and the
# container that breaks it, a governing Service that is not headless behind a dependency's
# UnknownHostException, an HPA held at its maximum by an External metric, a registry's 429, a
# NetworkPolicy's namespaceSelector in the dependency's namespace, a cordoned node's pods and
# their budget in another namespace, a NotReady node behind a Pending replica, a liveness
# timeout and the dependency its handler waits on, a worker pool sized from the node's CPUs,
# a cloud API refusing a Ready workload's identity (principal, permission, bucket), a shared
# dependency rejecting work for capacity and the new load started beside it;
# and three honest negatives (a load balancer's health checks, a probe failing at start-up,
# an informational alert on a workload its owners ranked low and whose log says it keeps up).
CHAINS = [
    "weekly-digest-missing",
    "replenishment-rollout-no-pods",
    "zk-ensemble-after-cleanup",
    "order-events-falling-behind",
    "docs-search-upgrade-stuck",
    "returns-api-db-timeouts",
    "drifted-node-stays",
    "image-proxy-half-failing",
    "claims-portal-exit-137",
    "geocoder-bigger-nodes",
    "asset-uploads-500",
    "product-finder-5xx-burn",
    "auth-edge-handshake-errors",
    "billing-ui-warning-events",
    "audit-archiver-alert",
    # the third held-out split's, opened: an egress policy after a failover, a namespace that
    # moved, a broker's memory alarm, a quota that needs limits, PID pressure, an adapter's
    # source series gone, the wrong ServiceAccount, a single-replica budget, an image without
    # the node's platform, a flood-stage watermark, a refused upload's target
    "settlement-worker-restarts",
    "email-worker-crashloop",
    "signup-requests-hanging",
    "booking-api-rollout-stalled",
    "statement-render-pending",
    "checkout-web-not-scaling",
    "tenant-provisioning-stalled",
    "drain-loops-on-pool-c",
    "avatar-service-rollout-hangs",
    "ops-logs-stopped",
    "transcoder-jobs-failing",
    # the fifth held-out split's, opened: a server that answers 503 with its reason, a
    # dependency's Service selecting no pod, a StatefulSet held by its partition, warnings
    # followed by what resolved them, a ConfigMap key renamed, an ingress rule open on another
    # port, default-deny beside allow rules, log lines a question describes
    "refund-service",
    "storefront-web",
    "session-store",
    "gitea-server",
    "promo-engine",
    "parcel-tracker",
    "ledger-core",
    "listing-api",
    # the tenth's, opened: what the ingress controller's error log says — a namespaceSelector
    # that matches no namespace, TLS spoken to a plain-HTTP backend, a body limit under a prefix
    # the controller does not read — and a Service whose selector also takes in a workload
    # that runs another program; a release that slows most requests past the histogram's
    # largest bucket (the median shows it) and whose pods warn about it in pino's levels
    "booking-site-504",
    "fleet-console-502",
    "lease-docs-uploads",
    "media-search-intermittent-404",
    "signin-api-slow-logins",
    # a dependency in another namespace whose release changed what it answers, named by a
    # field of the caller's line; a pooler at its client limit behind a database URL, and
    # who holds its connections by the label that tells its series apart
    "order-summary-500s",
    "timeline-api-db-errors",
    # a CronJob another component suspends every night, whose run falls in the suspension
    # and is resumed later than its starting deadline (its schedule read in its timeZone)
    "staging-db-refresh-stale",
    # who holds the GPUs a quota counts; the containers whose limits add up past a per-Pod
    # LimitRange bound (a sidecar the release added)
    "summarizer-eval-nightly",
    "parking-permits-rollout",
    # the pod a budget does not count as healthy, and why; an Object metric about an object
    # renamed away; an HPA standing aside by design for a target parked at zero; tmpfs volumes
    # on a node under memory pressure
    "seat-map-node-patching",
    "classifieds-web-peak",
    "campaign-preview-hpa-inactive",
    "dailies-render-job",
    # a provisioner the cloud refuses: who may not do what, past the clipped message
    "jenkins-new-cluster-pending",
    # a pull refused for its credentials while the Job that renews the pull Secret is
    # forbidden to (its Role lacks the verb)
    "dock-scheduler-release",
    # an adapter's source series that the series index still lists but that stopped a day
    # ago (renamed by a release); a blue/green standby that no Service selects by design
    "fare-quote-hpa-metric-renamed",
    "settle-gateway-no-traffic",
    # a node under PID pressure, and the pod beside the one asked about that cannot fork there
    "remit-matcher-rollout",
    # a proxy whose config names a Service deleted since its pods last started
    "brochure-gateway",
    # a volume Released from a replaced claim and kept by its reclaim policy (an honest
    # negative); what a probe-killed start-up waited on before its shutdown lines
    "orders-db-volume-check",
    "chartroom-metabase",
    # a JVM heap committed up front, flat near its limit under a memory alert
    "fraud-graph-api",
    # a pod rule no node with room meets, beside one full node; a dependency's Service whose
    # grpc port forwards to the admin listener (the caller's gRPC transport fails)
    "catalog-web",
    "stock-reservations-failing",
    # a ClickHouse reply followed to its server: its volume full; its query slots taken by a
    # new neighbour
    "clickstream-ingest-5xx",
    "fleet-usage-dashboards",
    # a StatefulSet pod's own name (db-0.db) in the same namespace; shared_buffers vs the limit
    "petcare-bookings-errors",
    # an ingress rule that copied the Service port, not the pod's
    "meal-planner-api-timeouts",
    # the JVM's direct buffer pool grows to each kill; Netty's leak report names the filter
    "wholesale-gateway-restarts",
    # "each quarter hour" against a schedule that fires hourly
    "partner-rates-stale",
    # a seed names an ordinal the StatefulSet does not make (ordinals.start 1)
    "sensor-cassandra-ring",
    # an error line that only says what failed, quoted by the exception logged after it
    "wallet-redeem-errors",
    # a kubectl-run curl pod that the Service's ingress policy drops by design
    "rostering-api-curl-hangs",
    # a maxUnavailable budget over bare Pods: no controller, no scale, 0 disruptions
    "fax-relay-node-patching",
    # a liveness check that failed fewer times in a row than its failureThreshold
    "customs-docs-api-probe-alert",
    # an Ingress left behind: its backend Service lives in another namespace now
    "ferry-booking-site-503",
    # a command its init container's image does not ship (envsubst in busybox)
    "hotel-channel-manager",
    # a dependency's Deployment at 0 replicas, with what the downscaler noted on it
    "parcel-lockers-api",
    # discovery warnings beside a cluster whose log counts every pod as a member
    "basket-session-discovery-warnings",
    # claims kept for the ordinals a StatefulSet scale-down removed (whenScaled Retain)
    "catalog-solr-two-pods-missing",
    # a CPU alert that fires at the program's own hourly rebuild
    "autocomplete-api-cpu-alert",
    # a Service left behind when its workload moved namespaces: the pods its selector names
    "appointment-slots-503",
    # a startup probe on the old framework's path: where the new one serves its checks
    "baggage-tracing-api",
    # a quota alert over a quota sized to its workload: used of hard, nothing refused
    "caption-workers-alert",
    # a worker that ends itself after its --max-time: restarts by design
    "court-booking-worker",
    # a Role in the target namespace granting jobs under the core API group
    "floorplan-renders-stuck",
    # a memory limit the LimitRange filled in breaks its own ratio
    "fx-rates-publisher-2-7-0",
    # a ServiceAccount's imagePullSecret that does not exist
    "kitchen-display-sync",
    # the permission a cloud API refused, in a JSON line's embedded traceback
    "refill-notifier",
    # a node the cluster autoscaler is scaling down: its taints say who and why
    "etl-node-scheduling-disabled",
    # an OOM kill where the last line before it gives the size being loaded
    "street-normalizer-restarts",
    # kms:Decrypt refused: the key, not the bucket
    "recs-ranker-rollout",
    # a release whose migration dropped an index: the database's slow plans since
    "listings-search-latency",
    # gunicorn recycling its workers by --max-requests: turnover inside a container by design
    "pricing-rules-api-worker-exits",
    # a budget's eviction refusals during a drain that finished (the node's own events)
    "claims-intake-upgrade-warnings",
    # a pasted ValidatingAdmissionPolicy warning: Warn mode admits
    "payslip-generator-apply-warning",
    # a volume held at the size its user preallocates
    "image-cache-disk-alert",
    # two PodDisruptionBudgets over one pod; the namespace found from the node named
    "fare-gate-sync-node-upgrade",
    # an image tag that the secret redactor once masked
    "boarding-pass-hotfix",
    # a dependency whose own workers overrun (gunicorn WORKER TIMEOUT) behind a caller's timeouts
    "card-payments-slow",
    # ingress-nginx rewrite-target without a capture group
    "billing-portal-blank-page",
    # an HPA pinned at a maxReplicas lowered two days ago (its spec series' history)
    "trivia-live-answer-lag",
]
SCENARIOS = sorted({n for n in demo_names() if n in DEV} | {n for n in CHAINS if n in DEV})


def investigate(
    question: str, kubeconfig: Path, prometheus_url: str | None, state_dir: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    runner = CliRunner()
    args = ["investigate", question, "--kubeconfig", str(kubeconfig), "-o", "json", "-q", *extra]
    if prometheus_url:
        args += ["--prometheus-url", prometheus_url]
    result = runner.invoke(app, args, env={"TRIAGE_STATE__DIR": str(state_dir)})
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result.exit_code, json.loads(result.stdout)


def root_cause_text(draft: dict[str, Any]) -> str:
    parts = [draft.get("cause") or "", draft["summary"], *(c["text"] for c in draft["root_cause"])]
    return " ".join(parts).lower()


def test_the_graded_scenarios_are_development_ones() -> None:
    assert len(SCENARIOS) >= 10


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_root_cause(
    name: str, loaded_scenarios, scenario_prometheus, control_plane, tmp_path: Path
) -> None:
    scenario = loaded_scenarios[name].scenario
    extra: list[str] = []
    payload = scenario.alert_payload()
    if payload is not None:
        # the alert the scenario fires comes with the question, as the bench sends it
        alert_file = tmp_path / "alert.json"
        alert_file.write_text(json.dumps(payload))
        extra = ["--alert", str(alert_file)]
    code, out = investigate(
        scenario.rendered_question,
        control_plane.reader_kubeconfig,
        scenario_prometheus.url,
        tmp_path,
        *extra,
    )
    draft = out["draft"]
    accepted = {scenario.expect.root_cause_class, *scenario.expect.also_accept}
    assert draft["root_cause_class"] in accepted, draft["summary"]
    assert out["verification"]["outcome"] == "verified", out["verification"]
    assert code == EXIT_OK
    text = root_cause_text(draft)
    missing = [f for f in scenario.rendered_facts() if not any(a.lower() in text for a in f)]
    assert not missing, f"facts {missing} not in: {text}"
    status = {e["id"]: e["status"] for e in out["evidence"]}
    cited = {i for c in draft["root_cause"] + draft["contributing_factors"] for i in c["evidence"]}
    assert cited, "a root cause must cite evidence"
    assert {status[i] for i in cited} == {"ok"}
    assert draft["nonexistent"] == [], "the scenario's workloads exist"
