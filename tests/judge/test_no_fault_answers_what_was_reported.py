""" "No fault" is verified only when the judge, on its own reads, finds absent what the user
reports: failing requests, slowness, failed connections (judge/symptoms.py). Where it cannot
measure the report (no request counter, no latency series, no log), the answer is not
confirmed; a chronic error ratio that did not rise in the window still counts.

The phrasings below are written from how on-call engineers and alert names say it (Slack
threads, Alertmanager's common rule names), not from our scenarios."""

from __future__ import annotations

from typing import Any

import pytest

from judge import Judge, JudgeInput
from judge.symptoms import Reported, reported
from tools.redact import Redactor
from tools.results import ToolResult, ToolStatus
from triage.agent import intake
from triage.core.models import Claim, Evidence, RCADraft

NS = "shop"
NOW = 1_000_000_000.0
POD = {
    "name": "api-1",
    "phase": "Running",
    "ready": True,
    "labels": {"app": "api"},
    "owner": {"kind": "ReplicaSet", "name": "api-5d8f"},
    "containers": [{"name": "api", "restarts": 0, "ready": True, "state": {"kind": "running"}}],
}

REPORTS = [
    ("checkout is returning 503s since 20:59", {Reported.ERRORS}),
    ("api throws 500 errors on every call", {Reported.ERRORS}),
    ("error rate on payments went through the roof", {Reported.ERRORS}),
    ("requests are failing for half the users", {Reported.ERRORS}),
    ("is the api down?", {Reported.ERRORS}),
    ("getting 502 from the gateway on every checkout", {Reported.ERRORS}),
    ("HTTP 500 on the orders endpoint", {Reported.ERRORS}),
    ("orders page is super slow today", {Reported.SLOW}),
    ("p99 latency doubled after lunch", {Reported.SLOW}),
    ("search keeps timing out", {Reported.SLOW}),
    ("uploads take forever and then hang", {Reported.SLOW}),
    ("frontend can't reach the cart service", {Reported.UNREACHABLE}),
    ("worker cannot connect to redis", {Reported.UNREACHABLE}),
    ("getting connection refused from the db", {Reported.UNREACHABLE}),
    ("pods fail to resolve the kafka hostname, DNS?", {Reported.UNREACHABLE}),
    ("hubble shows a steady stream of dropped packets to the db", {Reported.UNREACHABLE}),
    ("cilium drops SYNs from the analytics namespace", {Reported.UNREACHABLE}),
    ("the nightly export hasn't run since tuesday", {Reported.NOT_RUN}),
    ("the weekly digest emails haven't gone out since the migration", {Reported.NOT_RUN}),
    ("our backup cronjob stopped running after the upgrade", {Reported.NOT_RUN}),
    ("the report job never fires anymore", {Reported.NOT_RUN}),
    ("invoices were not sent this morning, the cron is fine?", {Reported.NOT_RUN}),
    ("partners say tracking lookups come back as 'not found' since noon", {Reported.NOT_FOUND}),
    ("getting 404s on /api/v1/orders after the deploy", {Reported.NOT_FOUND}),
]
NOT_REPORTS = [
    "is anything wrong with inventory-service?",
    "the backup pod shows Completed, not Running. did the job fail?",
    "CPU spikes every hour like clockwork, is something wrong?",
    "memory goes up and down all day, is it leaking?",
    "we see a lot of WARN lines in the logs, anything to do?",
    "the dashboard shows a restart, should we be worried? users haven't complained",
    "why won't the autoscaler scale up search? stuck on 2 pods",
    "scale down the batch workers please",
    "we run 500 pods in there, is anything wrong?",
    "the job wrote 503 rows instead of 600, did it fail?",
    "no timeouts and no 5xx so far, but the pods restarted twice. why?",
    "it isn't slow and users can reach it, but memory climbs",
    "we dropped the old index last night, is search ok?",
    "the pod says configmap app-config not found, is that bad?",
    "the export wrote 404 rows, is it done?",
    "is anything wrong in scn-storefront-404-spike?",  # a name, not a status
    "is anything wrong in scn-helpdesk-portal-503s?",
    "is product-finder-5xx-burn healthy?",
]


@pytest.mark.parametrize(("words", "kinds"), REPORTS)
def test_reports_are_typed_into_what_can_be_measured(words: str, kinds: set[Reported]) -> None:
    assert set(reported(words, None)) == kinds


@pytest.mark.parametrize("words", NOT_REPORTS)
def test_a_question_that_reports_no_outcome_asks_nothing_to_be_measured(words: str) -> None:
    assert reported(words, None) == []


def test_an_alert_name_is_read_at_its_capitals() -> None:
    assert reported("is anything still wrong?", "ApiHighLatency") == [Reported.SLOW]
    assert reported("is anything still wrong?", "HighErrorRate") == [Reported.ERRORS]
    assert reported("is anything still wrong?", "Watchdog") == []


class Cluster:
    """The judge's reads answered from fixed data: the pods above, one Service, and what
    Prometheus and the logs hold for the case at hand."""

    def __init__(
        self,
        ratio: list[float] | None,
        latency: list[float] | None,
        log: list[str],
        cronjobs: list[dict[str, Any]] | None = None,
        events: list[dict[str, Any]] | None = None,
        deployments: list[dict[str, Any]] | None = None,
        policies: list[dict[str, Any]] | None = None,
        not_found: list[float] | None = None,
        edge: list[float] | None = None,
    ):
        self.ratio, self.latency, self.log = ratio, latency, log
        self.edge = edge  # the 5xx share a proxy in another namespace counts for this one
        self.not_found = not_found
        self.cronjobs = cronjobs or []
        self.events, self.deployments = events or [], deployments or []
        self.policies = policies or []
        self.claims: list[dict[str, Any]] = []
        self.classes: list[dict[str, Any]] = []
        self.quotas: list[dict[str, Any]] = []

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        data: Any = []
        if name == "k8s.namespace":
            data = {"name": NS}
        elif name == "k8s.pods":
            data = [POD]
        elif name == "k8s.logs":
            data = self.log
        elif name == "k8s.cronjobs":
            data = self.cronjobs
        elif name == "k8s.events":
            data = self.events
        elif name == "k8s.deployments":
            data = self.deployments
        elif name == "k8s.network_policies":
            data = self.policies
        elif name == "k8s.pvcs":
            data = self.claims
        elif name == "k8s.storage_classes":
            data = self.classes
        elif name == "k8s.resource_quotas":
            data = self.quotas
        elif name == "prom.metric_names":
            data = ["http_request_duration_seconds_sum", "http_request_duration_seconds_count"]
            data = data if self.latency is not None else []
        elif name == "prom.range":
            query = str(args["query"])
            values = self.latency if "duration" in query else self.ratio
            if "duration" not in query and "5.." not in query and self.ratio is not None:
                values = [1.0] * len(self.ratio)  # the total rate: requests were counted
            if '"404"' in query:
                values = self.not_found
            if "exported_namespace" in query:
                values = self.edge
                if "5.." not in query and self.edge is not None:
                    values = [1.0] * len(self.edge)
            if values is not None:
                data = [
                    {"metric": {}, "values": [[NOW - 60 * i, str(v)] for i, v in enumerate(values)]}
                ]
        status = ToolStatus.OK if data else ToolStatus.NO_DATA
        return ToolResult(tool=name, args=args, status=status, excerpt="", data=data)


def _no_fault(words: str, cluster: Cluster) -> list[str]:
    ev = Evidence(id="E1", tool="k8s.pods", args={}, status=ToolStatus.OK, excerpt="ok", digest="")
    candidate = RCADraft(
        title="no fault",
        summary="api is healthy",
        root_cause_class="no_fault",
        impact="none",
        root_cause=(Claim(text="all pods of api are Running and Ready", evidence=("E1",)),),
    )
    goal = intake.parse(f"{words} (api in namespace {NS})", now=NOW)
    inp = JudgeInput.build(goal, candidate, [ev], redactor=Redactor())
    return list(Judge(cluster).judge(inp, record=False).missing)


FLAT = [0.001] * 12


def test_no_fault_to_failing_requests_needs_a_request_counter() -> None:
    missing = _no_fault("api is returning 503s", Cluster(ratio=None, latency=FLAT, log=[]))
    assert any("reports failing requests, and no request counter" in m for m in missing)


def test_no_fault_to_failing_requests_is_verified_when_they_succeed() -> None:
    assert _no_fault("api is returning 503s", Cluster(ratio=FLAT, latency=FLAT, log=[])) == []


def test_a_chronic_error_ratio_is_a_fault_though_it_never_rose() -> None:
    chronic = [0.3] * 12  # failing before the window opened: no rise, still 30 %
    missing = _no_fault("is anything wrong with api?", Cluster(ratio=chronic, latency=FLAT, log=[]))
    assert any("server-error ratio is 30.0%" in m for m in missing)


def test_a_404_share_that_stood_all_window_is_what_the_user_reports() -> None:
    """A third of the requests answered 404 since before the window opened never rose, yet
    it is exactly what the request reports; a share at the floor of scanners and typos is not."""
    words = "a third of POST /v2/quotes calls to api come back 404 since this morning"
    chronic = Cluster(ratio=FLAT, latency=FLAT, log=[], not_found=[0.33] * 12)
    missing = _no_fault(words, chronic)
    assert any("33.0% of requests are answered 404 now" in m for m in missing), missing
    assert _no_fault(words, Cluster(FLAT, FLAT, [], not_found=[0.01] * 12)) == []


@pytest.mark.parametrize(
    "words",
    [
        "the app gets random 503s through the gateway. api is Ready, 0 restarts, logs clean",
        "customers say api just times out, pods are up and it loads fine on the vpn",
        "api returns 500s on checkout but the pods look healthy",
        "we can't reach api from the jobs, its logs have zero errors",
    ],
)
def test_a_failure_reported_beside_the_pods_health_is_not_answered_by_it(words: str) -> None:
    """The requester looked at the pods and still sees the failure: a 'no fault' resting on
    the pods' health (the app's own counters flat too) repeats what they saw."""
    missing = _no_fault(words, Cluster(ratio=FLAT, latency=FLAT, log=[]))
    assert any("a 'no fault' from the health of what it names" in m for m in missing), missing


@pytest.mark.parametrize(
    "words",
    [
        "customers get 502s on the storefront while the api pods are all green",
        "api returns 500s on checkout but the pods look healthy",
    ],
)
def test_failing_requests_measured_absent_at_the_proxy_are_answered(words: str) -> None:
    """Where the requester sees the failure, the proxy in front (its counter scraped in its
    own namespace, this one kept as exported_namespace) counts no server error in the whole
    window: the 'no fault' was measured where they see it. A proxy that counts 5xx is not."""
    at_edge = Cluster(ratio=None, latency=FLAT, log=["GET /cart 200"], edge=FLAT)
    assert _no_fault(words, at_edge) == []
    failing = Cluster(ratio=None, latency=FLAT, log=["GET /cart 200"], edge=[0.001] * 6 + [0.3] * 6)
    assert any(
        "a 'no fault' from the health of what it names" in m for m in _no_fault(words, failing)
    )


@pytest.mark.parametrize(
    "words",
    [
        "api is returning 503s",  # no word about the pods: the counters measured it absent
        "pods are up, is anything wrong with api?",  # healthy, and no failure reported
        "are the pods of api up? is it slow?",  # a question about health, not a statement
    ],
)
def test_health_alone_or_a_bare_report_is_weighed_as_before(words: str) -> None:
    missing = _no_fault(words, Cluster(ratio=FLAT, latency=FLAT, log=[]))
    assert not any("a 'no fault' from the health" in m for m in missing), missing


def test_no_fault_to_slowness_needs_a_latency_series() -> None:
    missing = _no_fault("api feels slow", Cluster(ratio=FLAT, latency=None, log=[]))
    assert any("reports slowness, and no latency series" in m for m in missing)


def test_failed_connections_in_the_log_contradict_no_fault() -> None:
    log = ["ERROR dial tcp 10.0.3.7:5432: connect: connection refused"]
    missing = _no_fault("api can't reach the database", Cluster(ratio=FLAT, latency=FLAT, log=log))
    assert any("reports failed connections: api-1 logs" in m for m in missing)
    clean = ["INFO GET /v1/items 200 12ms"]
    assert _no_fault("api can't reach the database", Cluster(FLAT, FLAT, clean)) == []


def test_no_fault_to_dropped_connections_must_say_what_the_policies_admit() -> None:
    """The pods' own log cannot show a connection a policy dropped before it reached them:
    each ingress policy selecting them must be named, with what it admits."""
    allow = {
        "name": "api-allow-frontend",
        "pod_selector": {},
        "types": ["Ingress"],
        "ingress": [[{"pods": {"app": "frontend"}}]],
        "ingress_ports": [["TCP/8080"]],
    }
    policed = Cluster(FLAT, FLAT, ["INFO GET /v1/items 200 12ms"], policies=[allow])
    missing = _no_fault("hubble shows dropped packets going to api", policed)
    assert any("NetworkPolicy api-allow-frontend selects the pods" in m for m in missing)
    other = dict(allow, pod_selector={"app": "someone-else"})
    unselected = Cluster(FLAT, FLAT, ["INFO GET /v1/items 200 12ms"], policies=[other])
    assert _no_fault("hubble shows dropped packets going to api", unselected) == []


def test_a_rollout_waiting_out_min_ready_seconds_is_by_design() -> None:
    baking = {
        "name": "api",
        "replicas": 2,
        "ready": 3,
        "updated": 1,
        "available": 2,
        "min_ready_s": 3600,
        "conditions": [{"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated"}],
    }
    assert (
        _no_fault("is the api rollout stuck?", Cluster(FLAT, FLAT, [], deployments=[baking])) == []
    )
    stuck = dict(baking, min_ready_s=0)
    missing = _no_fault("is the api rollout stuck?", Cluster(FLAT, FLAT, [], deployments=[stuck]))
    assert any("rollout that has not completed" in m for m in missing)
    late = dict(
        baking,
        conditions=[
            {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}
        ],
    )
    missing = _no_fault("is the api rollout stuck?", Cluster(FLAT, FLAT, [], deployments=[late]))
    assert any("rollout that has not completed" in m for m in missing)


def test_a_claim_waiting_for_its_first_consumer_is_no_fault_and_any_other_pending_is() -> None:
    cluster = Cluster(FLAT, FLAT, [])
    cluster.claims = [{"name": "scratch", "phase": "Pending", "storage_class": "gp3"}]
    cluster.classes = [{"name": "gp3", "binding_mode": "WaitForFirstConsumer"}]
    assert _no_fault("is anything wrong with api?", cluster) == []
    cluster.classes = [{"name": "gp3", "binding_mode": "Immediate"}]
    missing = _no_fault("is anything wrong with api?", cluster)
    assert any("PersistentVolumeClaim scratch is Pending" in m for m in missing)


def _quota(hard: dict[str, str], used: dict[str, str]) -> dict[str, Any]:
    return {"name": "guardrails", "hard": hard, "used": used, "scopes": []}


@pytest.mark.parametrize(
    ("hard", "used", "full"),
    [
        # an object count at its limit: the next Job, ConfigMap, ... is refused
        ({"count/jobs.batch": "20", "pods": "40"}, {"count/jobs.batch": "20", "pods": "3"}, True),
        # the apiserver writes used and hard in their own units
        ({"requests.cpu": "2"}, {"requests.cpu": "2000m"}, True),
        ({"requests.memory": "8Gi"}, {"requests.memory": "9Gi"}, True),  # lowered under use
        ({"requests.cpu": "4", "pods": "10"}, {"requests.cpu": "3500m", "pods": "9"}, False),
        # a hard limit of 0 forbids by policy (no LoadBalancer Services here): nothing used up
        ({"services.loadbalancers": "0"}, {"services.loadbalancers": "0"}, False),
    ],
)
def test_a_quota_used_up_is_a_fault_no_fault_must_explain(
    hard: dict[str, str], used: dict[str, str], full: bool
) -> None:
    cluster = Cluster(FLAT, FLAT, [])
    cluster.quotas = [_quota(hard, used)]
    missing = _no_fault("exports are stuck on queued, api looks fine", cluster)
    assert any("ResourceQuota guardrails is used up" in m for m in missing) == full


def _cron(schedule: str, last: str | None) -> dict[str, Any]:
    return {"name": "digest", "schedule": schedule, "suspend": False, "last_schedule": last}


def test_no_fault_to_work_that_did_not_run_needs_the_cronjob_to_have_run() -> None:
    # 1_000_000_000 is 2001-09-09T01:46:40Z, a Sunday
    never = Cluster(FLAT, FLAT, [], [_cron("0 7 1 * *", None)])
    missing = _no_fault("the weekly digest hasn't gone out, why?", never)
    assert any("CronJob digest has never been scheduled" in m for m in missing)
    # monthly, last run 15 days ago: on time by its schedule, overdue by the stated cadence
    late = Cluster(FLAT, FLAT, [], [_cron("0 7 1 * *", "2001-08-25T07:00:00Z")])
    missing = _no_fault("the weekly digest hasn't gone out, why?", late)
    assert any("CronJob digest has not run when due" in m for m in missing)
    on_time = Cluster(FLAT, FLAT, [], [_cron("0 7 * * 1", "2001-09-03T07:00:00Z")])
    assert _no_fault("the weekly digest hasn't gone out, why?", on_time) == []


def _refused(rs: str) -> dict[str, Any]:
    return {
        "type": "Warning",
        "reason": "FailedCreate",
        "message": 'pods "x" is forbidden: minimum cpu usage per Container is 50m',
        "object": {"kind": "ReplicaSet", "name": rs},
    }


def _deployment(updated: int) -> dict[str, Any]:
    return {"name": "api", "replicas": 1, "available": 1, "updated": updated, "conditions": []}


def test_a_warning_on_what_was_asked_is_settled_by_the_judges_read_not_the_answer() -> None:
    # the answer may say the ReplicaSet "is healthy": the judge reads its Deployment again
    stuck = Cluster(FLAT, FLAT, [], events=[_refused("api-7c9f")], deployments=[_deployment(0)])
    missing = _no_fault("is anything wrong with api?", stuck)
    assert any("FailedCreate on ReplicaSet api-7c9f, which has not recovered" in m for m in missing)
    assert any("a rollout that has not completed" in m for m in missing)
    done = Cluster(FLAT, FLAT, [], events=[_refused("api-7c9f")], deployments=[_deployment(1)])
    assert _no_fault("is anything wrong with api?", done) == []


OUTSIDE_REPORTS = [  # phrasings an outside review tried, each a measurable report
    ("api is erroring", Reported.ERRORS),
    ("api unresponsive", Reported.ERRORS),
    ("getting 503's from checkout", Reported.ERRORS),
    ("checkout doesnt respond", Reported.ERRORS),
    ("checkout down?", Reported.ERRORS),
    ("api p99 is through the roof", Reported.SLOW),
    ("why is checkout sooo sloooow", Reported.SLOW),
    ("requests timing-out on api", Reported.SLOW),
    ("api can\u2019t reach the database", Reported.UNREACHABLE),  # Slack's curly apostrophe
    ("api conn refused to the db", Reported.UNREACHABLE),
    ("db connections failing", Reported.UNREACHABLE),
]
OUTSIDE_NOT_REPORTS = [
    "checkout went down to 2 replicas after the HPA",
    "memory is down after the fix",
    "I was told to slow down deploys; is checkout ok",
    "checkout is not down",
    "nothing is down, just a health check",
    "the timeout setting is 30s, is it ok",
    "serving 500 rps, healthy?",
]


@pytest.mark.parametrize(("words", "kind"), OUTSIDE_REPORTS)
def test_everyday_phrasings_are_typed(words: str, kind: Reported) -> None:
    assert kind in reported(words, None)


@pytest.mark.parametrize("words", OUTSIDE_NOT_REPORTS)
def test_counts_phrasal_verbs_and_negations_are_not_reports(words: str) -> None:
    assert reported(words, None) == []


@pytest.mark.parametrize(
    ("alert", "kind"),
    [
        ("TargetDown", Reported.ERRORS),
        ("HTTP5xxRate", Reported.ERRORS),
        ("APILatencyHigh", Reported.SLOW),
        ("api_high_latency", Reported.SLOW),
        ("ErrorBudgetBurn", Reported.ERRORS),
        ("DNSLookupFailures", Reported.UNREACHABLE),
    ],
)
def test_alert_names_are_split_into_their_words(alert: str, kind: Reported) -> None:
    assert kind in reported("is anything wrong?", alert)
    assert reported("is anything wrong?", "ScaleDownStuck") == []


def test_a_report_after_a_long_paste_still_counts() -> None:
    """The judge's copy of the words is clipped; what they report is typed before that."""
    paste = "Labels: alertname=Something severity=page\n" * 150  # ~6 kB, longer than the clip
    words = f"{paste}Summary: api is returning 503s"
    missing = _no_fault(words, Cluster(ratio=None, latency=FLAT, log=[]))
    assert any("reports failing requests, and no request counter" in m for m in missing)


class RestartedCluster(Cluster):
    """api-1 restarted once: its current log is empty, its previous one says why."""

    def __init__(self, previous: list[str]) -> None:
        super().__init__(ratio=FLAT, latency=FLAT, log=[])
        self.previous = previous

    def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        if name == "k8s.pods":
            restarted = {**POD["containers"][0], "restarts": 1}
            pod = {**POD, "containers": [restarted]}
            return ToolResult(tool=name, args=args, status=ToolStatus.OK, excerpt="", data=[pod])
        if name == "k8s.logs" and args.get("previous"):
            status = ToolStatus.OK if self.previous else ToolStatus.NO_DATA
            return ToolResult(tool=name, args=args, status=status, excerpt="", data=self.previous)
        return super().call(name, args)


def test_an_empty_log_measures_nothing_and_the_previous_one_is_read() -> None:
    refused = ["FATAL dial tcp 10.0.3.7:5432: connect: connection refused"]
    missing = _no_fault("api can't reach the database", RestartedCluster(previous=refused))
    assert any("reports failed connections: api-1 logs" in m for m in missing)
    missing = _no_fault("api can't reach the database", RestartedCluster(previous=[]))
    assert any("no log of the pods asked about has a line" in m for m in missing)


@pytest.mark.parametrize(
    "line",
    [
        'E1201 reflector.go:147 pods is forbidden: User "system:serviceaccount:shop:api" cannot '
        'list resource "pods"',
        "botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling GetObject",
        "ERROR write /data/out.parquet: no space left on device",
        "dial tcp 10.96.0.10:53: i/o timeout",
    ],
)
def test_a_current_log_saying_a_call_failed_stands_against_no_fault(line: str) -> None:
    """Whatever the request reports (here: nothing measurable)."""
    log = ["INFO started", line]
    missing = _no_fault("is anything wrong with api?", Cluster(ratio=FLAT, latency=FLAT, log=log))
    assert any("a failed call 'no fault' does not explain" in m for m in missing)


def test_ordinary_warnings_do_not() -> None:
    log = ["WARN cache miss for key user:88213", "ERROR flag refresh slow; serving cached flags"]
    assert _no_fault("is anything wrong with api?", Cluster(FLAT, FLAT, log)) == []
