"""What the rules planner takes out of a message it did not write: the 5xx a client quotes a
server answering with, the ConfigMap key the kubelet could not find, the cloud resource an SDK
says it was refused, what a Kubernetes warning means, and how a percentage in a rolling update
or a disruption budget scales.

The wordings are the ones the clients, the kubelet and the clouds' SDKs print, as their
documentation and source show them — not lines taken from our scenarios.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judge.symptoms import _REPORTS, Reported
from tools.read import shapes_kinds
from triage.agent.planners.rules import meanings, text
from triage.agent.planners.rules.analyzers.metrics import _UNROUTED
from triage.agent.planners.rules.analyzers.readiness import _LOOPBACK
from triage.agent.planners.rules.analyzers.scheduling import _EXCEEDED, _LIMIT, _amount, _scaled
from triage.agent.planners.rules.analyzers.workloads import duration_words
from triage.agent.planners.rules.reads import METRICS_API

SERVER_ERRORS: list[tuple[str, int | None]] = [
    # Vault's Go client, as a JSON log field with escaped newlines
    (r"vault login: Error making API request.\n\nURL: PUT http://vault:8200/v1\nCode: 503.", 503),
    ("upstream returned 502 while fetching /prices", 502),
    ("HTTP/1.1 503 Service Unavailable", 503),
    ("requests.exceptions.HTTPError: 500 Internal Server Error for url: http://x/y", 500),
    ("status code: 504, request id: 1f2e", 504),
    # counts and durations are not statuses
    ("served 500 requests in the last minute", None),
    ("GET /healthz 200 503ms", None),
    ("status code: 404", None),
]


@pytest.mark.parametrize(("line", "status"), SERVER_ERRORS)
def test_a_server_error_is_read_from_the_clients_words(line: str, status: int | None) -> None:
    assert text.server_error(line) == status


@given(st.integers(min_value=500, max_value=599), st.sampled_from(["Code: ", "status ", "HTTP/2 "]))
def test_every_5xx_status_is_read(status: int, prefix: str) -> None:
    assert text.server_error(f"call failed; {prefix}{status}") == status


@given(st.integers(min_value=100, max_value=499))
def test_no_other_status_is_a_server_error(status: int) -> None:
    assert text.server_error(f"call failed; status code: {status}") is None


def test_the_kubelets_missing_key_messages_name_the_key() -> None:
    volume = (
        'MountVolume.SetUp failed for volume "rules" : configmap references non-existent '
        "config key: promo-rules.yml"
    )
    env = "couldn't find key LOG_LEVEL in ConfigMap shop/app-config"
    assert text.missing_config_key(volume) == ("promo-rules.yml", None)
    assert text.missing_config_key(env) == ("LOG_LEVEL", "app-config")
    assert text.missing_config_key('configmap "app-config" not found') is None


@pytest.mark.parametrize(
    ("log", "resource"),
    [
        (
            [
                "AccessDenied: User: arn:aws:sts::123456789012:assumed-role/exporter/x is not "
                "authorized to perform: s3:PutObject on resource: "
                "arn:aws:s3:::invoices-prod/2026/12/02.csv"
            ],
            "arn:aws:s3:::invoices-prod/2026/12/02.csv",
        ),
        (
            [
                "Status: 403 (Forbidden) ErrorCode: Forbidden",
                "Resource: '/subscriptions/9d3e61b2-47c0-4a8f-b1d5-6e2c08f7a394/resourcegroups/"
                "rg-prod/providers/microsoft.keyvault/vaults/kv-prod'",
            ],
            "vaults/kv-prod (providers/microsoft.keyvault)",
        ),
        (
            ["Permission 'secretmanager.versions.access' denied on projects/acme/secrets/db"],
            "projects/acme/secrets/db",
        ),
        (["403 Forbidden: gs://media-raw/in/clip.mp4"], "gs://media-raw/in/clip.mp4"),
        (
            ["AuthorizationFailed for stmediaprod.blob.core.windows.net"],
            "stmediaprod.blob.core.windows.net",
        ),
        (["permission denied"], None),
    ],
)
def test_the_refused_cloud_resource_is_named(log: list[str], resource: str | None) -> None:
    assert text.cloud_resource(log) == resource


def test_a_warning_means_what_its_reason_and_message_say() -> None:
    multi = meanings.meaning(
        "FailedAttachVolume",
        'Multi-Attach error for volume "pvc-1" Volume is already exclusively attached to one '
        "node and can't be attached to another",
    )
    assert multi is not None
    assert "previous node" in multi
    assert meanings.meaning("FailedAttachVolume", "rpc error: timeout") is None  # another cause
    assert meanings.meaning("Unhealthy", "Liveness probe failed: HTTP 500") is None
    assert meanings.meaning("NoSuchReason", "x") is None


@given(st.integers(min_value=1, max_value=100), st.integers(min_value=1, max_value=500))
def test_a_percentage_scales_as_the_deployment_controller_rounds(pct: int, replicas: int) -> None:
    up = _scaled(f"{pct}%", replicas, "25%", up=True)
    down = _scaled(f"{pct}%", replicas, "25%", up=False)
    assert down <= pct * replicas / 100 <= up
    assert up - down in (0, 1)
    assert _scaled(None, replicas, "25%", up=False) == replicas * 25 // 100
    assert _scaled(3, replicas, "25%", up=True) == 3


@pytest.mark.parametrize(
    ("words", "kind"),
    [
        ("I see a postgres connect timeout in its logs", Reported.UNREACHABLE),
        ("connection timeout to redis since 10:00", Reported.UNREACHABLE),
        ("checkout requests time out", Reported.SLOW),
    ],
)
def test_a_connect_timeout_is_a_failed_connection_not_slowness(words: str, kind: Reported) -> None:
    found = {k for k, rx in _REPORTS.items() if rx.search(words)}
    assert kind in found
    if kind is Reported.UNREACHABLE:
        assert Reported.SLOW not in found


# How servers announce where they listen (uvicorn, gunicorn, Node's http, Go's net/http
# wrappers, Spring Boot, Rails' puma, nginx) — loopback ones, and ones that are not.
LISTENS: list[tuple[str, bool]] = [
    ("INFO:     Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)", True),
    ("Listening on localhost:3000", True),
    ("* Listening on http://127.0.0.1:9292", True),
    ("server started, bound to [::1]:8080", True),
    ("[INFO] Listening at: http://0.0.0.0:8000 (1)", False),
    ("Tomcat started on port 8080 (http) with context path ''", False),
    ("Listening on :8080", False),
    ("connection to 127.0.0.1:5432 refused", False),  # a client's words, not a listener's
    ("Listening on 10.127.0.1:80", False),
]


@pytest.mark.parametrize(("line", "loopback"), LISTENS)
def test_a_loopback_listen_address_is_read_from_the_servers_words(
    line: str, loopback: bool
) -> None:
    assert (_LOOPBACK.search(line) is not None) is loopback


@given(st.integers(min_value=1, max_value=200_000))
def test_a_deadline_is_said_in_the_unit_it_is_a_whole_number_of(seconds: int) -> None:
    n, unit = duration_words(seconds).split()
    size = {"second": 1, "minute": 60, "hour": 3600}[unit.removesuffix("s")]
    assert int(n) * size == seconds
    assert unit.endswith("s") is (int(n) != 1)


MISSING: list[tuple[str, str | None]] = [
    ('Error: secret "dunning-smtp" not found', "dunning-smtp"),
    ('configmaps "app-config" not found', "app-config"),
    (r"couldn\'t start: secret \"tls-cert\" not found", "tls-cert"),
    ('secret "db" found, key "password" missing', None),
]


@pytest.mark.parametrize(("message", "name"), MISSING)
def test_the_missing_object_is_read_from_the_kubelets_words(message: str, name: str | None) -> None:
    found = text.MISSING_OBJECT.search(message)
    assert (found.group(2) if found else None) == name


def test_what_a_secrets_maker_records_is_explained() -> None:
    said = meanings.meaning("ErrUnsealFailed", "Failed to unseal: no key could decrypt secret")
    assert said is not None
    assert "re-sealed" in said


@pytest.mark.parametrize(
    ("value", "resource", "amount"),
    [
        ("1", "nvidia.com/gpu", 1.0),
        ("1+1", "nvidia.com/gpu", 2.0),
        ("500m+1", "cpu", 1.5),
        ("1Gi+512Mi", "memory", 1.5 * 2**30),
    ],
)
def test_what_a_pod_holds_is_summed_in_its_resources_unit(
    value: str, resource: str, amount: float
) -> None:
    assert _amount(value, resource) == pytest.approx(amount)


@pytest.mark.parametrize(
    ("message", "pinned"),
    [
        ("0/3 nodes are available: 3 node(s) had volume node affinity conflict.", True),
        ("0/5 nodes are available: 2 node(s) didn't match PersistentVolume's node affinity", True),
        ("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.", False),
    ],
)
def test_a_volume_pinned_elsewhere_is_read_in_both_wordings(message: str, pinned: bool) -> None:
    assert (text.VOLUME_PINNED.search(message) is not None) is pinned


def test_a_volumes_node_affinity_is_kept_as_requirements() -> None:
    pv = shapes_kinds.persistent_volume(
        {
            "metadata": {"name": "pv-1"},
            "spec": {
                "claimRef": {"namespace": "kafka", "name": "data-kafka-0"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": ["eu-west-1a"],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
        }
    )
    assert pv["claim"] == "kafka/data-kafka-0"
    assert pv.get("node_affinity") == [[("topology.kubernetes.io/zone", "In", ["eu-west-1a"])]]


@pytest.mark.parametrize(
    ("message", "api_down"),
    [
        (
            "the HPA was unable to compute the replica count: failed to get cpu utilization: "
            "unable to get metrics for resource cpu: unable to fetch metrics from resource "
            "metrics API: the server is currently unable to handle the request "
            "(get pods.metrics.k8s.io)",
            True,
        ),
        ("failed to get cpu utilization: missing request for cpu in container app", False),
        ("unable to get metric http_requests: no metrics returned from custom metrics API", False),
    ],
)
def test_an_unreachable_resource_metrics_api_is_told_from_a_missing_request(
    message: str, api_down: bool
) -> None:
    assert (METRICS_API.search(message) is not None) is api_down


@pytest.mark.parametrize(
    ("line", "hosts"),
    [
        ("dial tcp: lookup redis on 10.96.0.10:53: no such host", {"redis"}),
        ("dial tcp: lookup orders-db: i/o timeout", {"orders-db"}),
        ("price lookup failed, rendering without live price", set()),
        ("cache lookup took 12ms", set()),
    ],
)
def test_a_looked_up_host_is_read_in_the_resolvers_shape_only(line: str, hosts: set[str]) -> None:
    assert {e.host for e in text.endpoints_in(line)} == hosts


@pytest.mark.parametrize(
    ("line", "path"),
    [
        (
            "Resolved [org.springframework.web.servlet.resource.NoResourceFoundException: "
            "No static resource api/v1/shipments/1Z8V45/.]",
            "api/v1/shipments/1Z8V45/",
        ),
        ('ActionController::RoutingError (No route matches [GET] "/wp-login.php")', None),
        ("GET /v1/orders/42 404 3ms", None),
        ("cache miss for key user:42", None),
    ],
)
def test_a_request_no_route_matched_is_read_with_its_path(line: str, path: str | None) -> None:
    found = _UNROUTED.search(line)
    got = found.group("path").rstrip(".]'\\\")") if found else None
    if path is None:
        assert got is None or not got.endswith("/")
    else:
        assert got == path


# A resource's name is a qualified name: cpu, ephemeral-storage, hugepages-2Mi, nvidia.com/gpu,
# example.com/foo-bar. The LimitRanger and the quota admission plugin print it as it is.
_label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
resource = st.one_of(
    st.sampled_from(["cpu", "memory", "ephemeral-storage", "storage", "hugepages-2Mi"]),
    st.builds(lambda d, n: f"{d}.com/{n}", _label, _label),
)


@given(
    what=resource,
    per=st.sampled_from(["Container", "Pod"]),
    bound=st.sampled_from(["minimum", "maximum"]),
)
def test_a_limit_ranges_bound_is_read_for_any_resource(what: str, per: str, bound: str) -> None:
    message = f'pods "x-1" is forbidden: {bound} {what} usage per {per} is 1Gi, but limit is 2Gi'
    m = _LIMIT.search(message)
    assert m is not None
    assert (m.group("what"), m.group("max"), m.group("got")) == (what, "1Gi", "2Gi")
    ratio = _LIMIT.search(f"{what} max limit to request ratio per {per} is 4, but provided")
    assert ratio is not None
    assert (ratio.group("rwhat"), ratio.group("ratio")) == (what, "4")


@given(what=resource, field=st.sampled_from(["requests.", "limits.", ""]))
def test_the_quota_a_refusal_names_is_read_for_any_resource(what: str, field: str) -> None:
    message = (
        f"exceeded quota: q, requested: {field}{what}=2, used: {field}{what}=3, "
        f"limited: {field}{what}=4"
    )
    m = _EXCEEDED.search(message)
    assert m is not None
    assert m.group("what") == f"{field}{what}"
