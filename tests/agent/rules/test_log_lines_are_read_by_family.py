"""The rules planner reads log lines by failure *family* (triage/agent/planners/rules/text.py).

The wordings below are the ones runtimes and clients print, as their documentation and
source show them (Go's net package, libpq, the JVM, Node, CPython, client-go, the AWS SDK,
runc, Redis) — not lines taken from our scenarios. A family that misreads one of them sends
the planner to the wrong next read.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from triage.agent.planners.rules import text
from triage.agent.planners.rules.analyzers.containers import last_before_shutdown
from triage.agent.planners.rules.quantities import memory_settings, quantity_bytes
from triage.agent.planners.rules.reads import PULL_DENIED
from triage.agent.planners.rules.text import (
    Endpoint,
    Family,
    endpoints_in,
    env_names_in,
    family,
    forbidden,
    frame,
    growing,
    heaviest_request,
    repeated,
    service_of,
    telling,
)

WORDINGS: list[tuple[str, Family | None]] = [
    ("dial tcp 10.0.0.5:5432: connect: connection refused", Family.CONNECTION),
    ("Error: connect ECONNREFUSED 10.96.12.4:6379", Family.CONNECTION),
    (
        "HikariPool-1 - Connection is not available, request timed out after 30000ms.",
        Family.CONNECTION,
    ),
    ("java.net.ConnectException: Connection refused (Connection refused)", Family.CONNECTION),
    (
        "context deadline exceeded (Client.Timeout exceeded while awaiting headers)",
        Family.CONNECTION,
    ),
    (
        "dial tcp: lookup orders-db.shop.svc.cluster.local on 10.96.0.10:53: no such host",
        Family.DNS,
    ),
    ("java.net.UnknownHostException: kafka-0.kafka-headless", Family.DNS),
    # grpc-go's transport failing under a call, here a server that does not speak HTTP/2
    (
        'err="rpc error: code = Unavailable desc = connection error: desc = \\"error reading '
        'server preface: http2: frame too large\\""',
        Family.CONNECTION,
    ),
    ("socket.gaierror: [Errno -3] Temporary failure in name resolution", Family.DNS),
    ('FATAL:  password authentication failed for user "app"', Family.CREDENTIALS),
    ("WRONGPASS invalid username-password pair or user is disabled.", Family.CREDENTIALS),
    # a server that closed the connection under its client, or refused it for want of slots
    ("pymemcache.exceptions.MemcacheUnexpectedCloseError", Family.CONNECTION),
    ("ERROR Too many open connections", Family.CONNECTION),
    (
        "psycopg2.OperationalError: server closed the connection unexpectedly",
        Family.CONNECTION,
    ),
    ("write tcp 10.1.2.3:5555->10.96.0.7:6379: write: broken pipe", Family.CONNECTION),
    ("java.lang.OutOfMemoryError: Java heap space", Family.RUNTIME_OOM),
    ("MemoryError", Family.RUNTIME_OOM),
    # the JVM echoing its options names flags about memory errors, not one that happened
    ("Picked up JAVA_TOOL_OPTIONS: -XX:+ExitOnOutOfMemoryError -XX:MaxRAMPercentage=75", None),
    ("JAVA_OPTS=-XX:+HeapDumpOnOutOfMemoryError -XX:HeapDumpPath=/dumps", None),
    (
        "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
        Family.RUNTIME_OOM,
    ),
    ("fatal error: runtime: out of memory", Family.RUNTIME_OOM),
    ("Error: ENOSPC: no space left on device, write", Family.DISK_FULL),
    ('could not write to file "pg_wal/xlogtemp.31": No space left on device', Family.DISK_FULL),
    # a server that reserves room before it writes, quoted by its Go driver
    (
        "batch flush failed: code: 243, message: Cannot reserve 1.00 MiB, not enough space",
        Family.DISK_FULL,
    ),
    (
        'pods is forbidden: User "system:serviceaccount:shop:api" cannot list resource "pods" '
        'in API group "" in the namespace "shop"',
        Family.K8S_FORBIDDEN,
    ),
    (
        "An error occurred (AccessDenied) when calling the PutObject operation: Access Denied",
        Family.ACCESS_DENIED,
    ),
    ('exec: "server": executable file not found in $PATH', Family.COMMAND),
    ("flag provided but not defined: -listen-addr", Family.COMMAND),
    ('ERROR:  relation "orders" does not exist at character 15', Family.SCHEMA),
    # Flyway's validate and repair wordings, golang-migrate's dirty version, Liquibase's lock
    ("ERROR: Validate failed: Migrations have failed validation", Family.SCHEMA),
    ("Migration checksum mismatch for migration version 3", Family.SCHEMA),
    ("error: Dirty database version 17. Fix and force version.", Family.SCHEMA),
    ("Waiting for changelog lock.... Database has migration lock", Family.SCHEMA),
    ("Error: DATABASE_URL is required", Family.CONFIG),
    ("FATAL: DATABASE_URL is invalid: missing host", Family.CONFIG),
    ("config: LISTEN_ADDR malformed, expected host:port", Family.CONFIG),
    ('parse "postgres//db:5432": missing protocol scheme', Family.CONFIG),
    ("panic: runtime error: invalid memory address or nil pointer dereference", Family.CRASH),
    ("Traceback (most recent call last):", Family.CRASH),
    ('Exception in thread "main" java.lang.NullPointerException', Family.CRASH),
    # Everyday lines are in no family: a planner that quotes them has misread the log.
    ('10.1.2.3 - - "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.31"', None),
    ("connected to postgres at orders-db:5432", None),
    # a migration tool's banner and its success lines say nothing failed
    ("Flyway OSS Edition 10.17.3 by Redgate", None),
    ('Successfully applied 2 migrations to schema "public", now at version v9', None),
    ("Liquibase: Update has been successful. Rows affected: 4", None),
    ("Started ServerConnector@3c1a{HTTP/1.1}{0.0.0.0:8080}", None),
    ('level=info msg="cache warmed" items=10000', None),
    # a setting named for a timeout is not a timeout (Hazelcast's discovery properties)
    ("Kubernetes Discovery properties: { service-dns: null, service-dns-timeout: 5 }", None),
    ("starting pool read_timeout=30 max_size=10", None),
]


@pytest.mark.parametrize(("line", "expected"), WORDINGS, ids=[w[0][:48] for w in WORDINGS])
def test_a_runtime_wording_reads_as_its_family(line: str, expected: Family | None) -> None:
    assert family(line) == expected


def test_the_telling_line_is_the_cause_not_its_consequence() -> None:
    log = [
        "2026-11-30T02:59:58Z level=info msg=starting",
        '2026-11-30T03:00:01Z level=error msg="upload failed" err="AccessDenied: Access Denied"',
        '2026-11-30T03:00:01Z level=error msg="export failed"',
        '2026-11-30T03:00:01Z level=fatal msg="exiting"',
    ]
    line = telling(log)
    assert line is not None
    assert line.family is Family.ACCESS_DENIED
    assert "upload failed" in line.text
    assert not line.text.startswith("2026"), "the timestamp is not part of what is quoted"


def test_a_quiet_log_has_no_telling_line() -> None:
    assert telling(["GET / 200", "GET /healthz 200", "cache warmed"]) is None
    assert telling([]) is None


@given(st.lists(st.text(max_size=300), max_size=80))
def test_any_log_is_read_without_error_and_quotes_one_of_its_lines(log: list[str]) -> None:
    line = telling(log)
    if line is not None:
        assert any(line.text in raw for raw in log)


def test_endpoints_are_read_from_urls_host_ports_and_service_names() -> None:
    text = (
        "could not connect to postgres://app@orders-db.shop.svc:5433/orders; "
        "falling back to cache redis-main:6379 and billing.payments.svc.cluster.local"
    )
    found = {str(e) for e in endpoints_in(text)}
    assert {"orders-db.shop.svc:5433", "redis-main:6379"} <= found
    assert any(e.startswith("billing.payments.svc") for e in found)
    assert Endpoint("10.0.0.5", 5432) not in endpoints_in("dial tcp 10.0.0.5:5432"), (
        "a bare IP is not a name the planner can follow to a Service"
    )


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("orders-db", ("orders-db", "shop")),
        ("orders-db.data", ("orders-db", "data")),
        ("orders-db.data.svc.cluster.local", ("orders-db", "data")),
        ("api.example.com", None),
        ("s3.eu-west-1.amazonaws.com", None),
        # a StatefulSet pod under its governing Service, by the search path
        ("orders-db-0.orders-db", ("orders-db", "shop")),
        ("kafka-2.kafka-headless.data", ("kafka-headless", "data")),
        ("kafka-2.kafka-headless.data.svc", ("kafka-headless", "data")),
        ("web-1.example.com", None),
        ("db-0.db.internal", None),
    ],
)
def test_a_host_name_points_at_a_service_only_in_the_clusters_own_forms(
    host: str, expected: tuple[str, str] | None
) -> None:
    assert service_of(host, "shop") == expected


def test_a_forbidden_line_names_who_was_refused_what() -> None:
    got = forbidden(
        'configmaps "leader" is forbidden: User "system:serviceaccount:shop:worker" cannot get '
        'resource "configmaps" in API group "" in the namespace "kube-system"'
    )
    assert got == {
        "ns": "shop",
        "sa": "worker",
        "verb": "get",
        "resource": "configmaps",
        "target": "kube-system",
    }


def test_setting_names_are_read_in_screaming_snake_case_or_quoted() -> None:
    assert env_names_in("Error: PAYMENT_API_KEY must be set") == ["PAYMENT_API_KEY"]
    assert "CACHE_MAX_ITEMS" in env_names_in("invalid value for 'CACHE_MAX_ITEMS'")
    assert env_names_in("GET /api 200") == []


@pytest.mark.parametrize(
    ("qty", "expected"),
    [("512Mi", 512 * 1024**2), ("1Gi", 1024**3), ("1.5G", 1.5e9), ("100m", 0.1), ("x", None)],
)
def test_kubernetes_quantities_in_bytes(qty: str, expected: float | None) -> None:
    assert quantity_bytes(qty) == expected


def _spec(env: dict[str, str], args: list[str]) -> p.ContainerSpec:
    return {
        "name": "app",
        "image": "app:1",
        "command": [],
        "args": args,
        "env": [{"name": k, "value": v} for k, v in env.items()],
        "env_from": [],
        "ports": [],
        "limits": {"memory": "1Gi"},
        "requests": {},
        "liveness": None,
        "readiness": None,
        "startup": None,
        "mounts": [],
    }


def test_the_memory_a_runtime_is_told_it_may_use() -> None:
    spec = _spec(
        {"JAVA_TOOL_OPTIONS": "-XX:+UseG1GC -Xmx1536m", "GOMEMLIMIT": "900MiB"},
        ["node", "--max-old-space-size=2048", "server.js"],
    )
    got = {(s.where, s.flag): s.bytes for s in memory_settings(spec)}
    assert got[("env JAVA_TOOL_OPTIONS", "-Xmx1536m")] == 1536 * 1024**2
    assert got[("args", "--max-old-space-size=2048")] == 2048 * 1024**2
    assert got[("env GOMEMLIMIT", "GOMEMLIMIT=900MiB")] == 900 * 1024**2


def test_a_servers_own_memory_setting_given_as_name_equals_value() -> None:
    spec = _spec(
        {},
        ["-c", "shared_buffers=1536MB", "-c", "effective_cache_size=4GB", "--maxmemory", "3gb"],
    )
    got = {s.flag: s.bytes for s in memory_settings(spec)}
    assert got["shared_buffers=1536MB"] == 1536 * 1024**2
    assert got["--maxmemory 3gb"] == 3 * 1024**3
    assert not any("effective" in flag for flag in got), "a planner hint allocates nothing"


def test_why_it_crashed_is_quoted_before_that_it_crashed() -> None:
    log = [
        "Traceback (most recent call last):",
        '  File "/app/cache.py", line 88, in write',
        "OSError: [Errno 28] No space left on device: '/cache/report-2026.parquet'",
    ]
    line = telling(log)
    assert line is not None
    assert line.family is Family.DISK_FULL


def test_a_timestamp_is_not_a_host() -> None:
    assert endpoints_in("2026-12-01T10:15:02Z could not write WAL") == []


def test_a_forbidden_message_quoted_inside_a_logfmt_field_is_read_the_same() -> None:
    line = (
        'level=error msg="backup failed" error="listing volumes: persistentvolumeclaims is '
        'forbidden: User \\"system:serviceaccount:shop:backup-agent\\" cannot list resource '
        '\\"persistentvolumeclaims\\" in API group \\"\\" at the cluster scope"'
    )
    assert family(line) is Family.K8S_FORBIDDEN
    assert forbidden(line) == {
        "ns": "shop",
        "sa": "backup-agent",
        "verb": "list",
        "resource": "persistentvolumeclaims",
    }


@pytest.mark.parametrize(
    "line",
    [
        "dial tcp: lookup orders-db on 10.96.0.10:53: read udp 10.244.0.17:43012->10.96.0.10:53: "
        "i/o timeout",
        "Error: getaddrinfo ENOTFOUND orders-db",
        "java.net.UnknownHostException: orders-db",
        'could not translate host name "orders-db" to address: Name or service not known',
        # nginx resolves every proxy_pass host when it loads its config; HAProxy every server's
        'nginx: [emerg] host not found in upstream "orders-db:8080" in /etc/nginx/conf.d/a.conf:22',
        "[ALERT] (1) : config : parsing [/usr/local/etc/haproxy/haproxy.cfg:40] : 'server db1' : "
        "could not resolve address 'orders-db'.",
    ],
)
def test_a_failed_lookup_names_the_host_it_looked_up(line: str) -> None:
    assert family(line) is Family.DNS
    assert "orders-db" in {e.host for e in endpoints_in(line)}


def test_what_a_leak_holds_on_to_is_read_from_repeated_lines() -> None:
    log = [
        'time=1 level=info msg="store stats" entries=402117 evicted=0',
        "GET /healthz 200",
        'time=2 level=info msg="store stats" entries=811904 evicted=0',
        '{"level":30,"msg":"connections","open":5120,"listeners":48211}',
        '{"level":30,"msg":"connections","open":5090,"listeners":97310}',
    ]
    found = {(g.what, g.key): g for g in growing(log)}
    assert found[("store stats", "entries")].steady == {"evicted": 0}
    assert found[("connections", "listeners")].last == 97310
    assert ("connections", "open") not in found, "a field that moves both ways is not a leak"
    assert growing(["a=10", "a=11"]) == [], "too small a change to be a leak"


def test_one_query_per_item_and_the_slowest_request_are_read() -> None:
    log = [
        "INFO started",
        "DEBUG org.hibernate.SQL : select p.amount from price p where p.sku_id=?",
        "DEBUG org.hibernate.SQL : select p.amount from price p where p.sku_id=?",
        "DEBUG org.hibernate.SQL : select p.amount from price p where p.sku_id=?",
        "INFO GET /a status=200 duration=120ms",
        "INFO GET /b status=200 duration=1792ms sql_statements=241",
    ]
    assert repeated(log) == ("select p.amount from price p where p.sku_id=?", 3)
    assert heaviest_request(log) == "INFO GET /b status=200 duration=1792ms sql_statements=241"
    assert repeated(["a", "b", "a", "b"]) is None


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        (
            [
                "Traceback (most recent call last):",
                '  File "/usr/lib/python3.12/runpy.py", line 198, in _run_module_as_main',
                '  File "/app/billing/export.py", line 88, in upload',
                "KeyError: 'currency'",
            ],
            "/app/billing/export.py:88 in upload",
        ),
        (
            [
                "panic: runtime error: invalid memory address or nil pointer dereference",
                "goroutine 1 [running]:",
                "main.(*Server).handle(0x0)",
                "\t/usr/local/go/src/runtime/panic.go:770 +0x132",
                "\t/src/cmd/api/server.go:142 +0x1d",
            ],
            "/src/cmd/api/server.go:142",
        ),
        (
            [
                'Exception in thread "main" java.lang.NullPointerException',
                "\tat java.base/java.util.Objects.requireNonNull(Objects.java:209)",
                "\tat com.example.cart.PriceClient.parse(PriceClient.java:57)",
            ],
            "com.example.cart.PriceClient.parse (PriceClient.java:57)",
        ),
        (["all good"], None),
    ],
)
def test_where_it_failed_is_the_innermost_frame_of_the_application(
    log: list[str], expected: str | None
) -> None:
    assert frame(log) == expected


def test_a_load_balancers_health_checks_are_told_from_clients() -> None:
    # Google Cloud documents 35.191.0.0/16 and 130.211.0.0/22 as its health checkers' sources
    probes = [
        "http: TLS handshake error from 35.191.12.141:41876: EOF",
        "http: TLS handshake error from 130.211.3.70:50522: EOF",
    ]
    said = text.health_checkers(probes)
    assert said is not None
    assert "Google Cloud" in said
    assert "35.191.0.0/16" in said
    assert (
        text.health_checkers([*probes, "http: TLS handshake error from 81.2.69.1:443: EOF"]) is None
    )
    assert text.health_checkers(["http: TLS handshake error: EOF"]) is None  # no address: unknown
    assert text.health_checkers([]) is None


def test_a_statefulset_pods_own_name_leads_to_its_service() -> None:
    assert text.service_of("zk-1.zk-hs.data.svc.cluster.local", "app") == ("zk-hs", "data")
    assert text.service_of("orders-mongo.data.svc", "app") == ("orders-mongo", "data")
    assert text.service_of("api.example.com", "app") is None


def test_a_line_naming_an_optional_feature_it_runs_without_is_handled() -> None:
    warned = (
        "WARN c.hazelcast.kubernetes.KubernetesClient : Cannot fetch public IPs of Hazelcast "
        "Member PODs, you won't be able to use Hazelcast Smart Client from outside"
    )
    assert text.handled(warned) == "it runs without an optional feature it names"
    assert text.handled("Cannot fetch the current zone, ZONE_AWARE feature is disabled")
    assert text.handled("ERROR could not open /data/db: permission denied") is None
    assert text.severity("service-dns-timeout: 5, service-name: basket-session-hz") == 0


@pytest.mark.parametrize(
    ("message", "refused"),
    [
        (
            'failed to resolve reference "x.dkr.ecr.eu-central-1.amazonaws.com/a:1": unexpected '
            "status from HEAD request to https://x/v2/a/manifests/1: 403 Forbidden",
            True,
        ),
        ("pull access denied for registry.example.com/a, repository does not exist", True),
        ("no basic auth credentials", True),
        ("failed to fetch anonymous token: unexpected status: 401 Unauthorized", True),
        ('failed to pull and unpack image "docker.io/library/a:9": not found', False),
        ("429 Too Many Requests - Server message: toomanyrequests", False),
    ],
)
def test_a_pull_refused_for_its_credentials(message: str, refused: bool) -> None:
    assert (PULL_DENIED.search(message) is not None) == refused


@pytest.mark.parametrize(
    "shutdown",
    [
        ["INFO metabase.core :: Metabase Shutting Down ...", "INFO Shutdown COMPLETE"],
        ["Received SIGTERM, exiting", "INFO  Stopping service [Tomcat]"],
        ['{"level":"info","msg":"shutting down gracefully"}'],
        [],
    ],
)
def test_what_a_killed_instance_was_doing_is_read_before_its_shutdown(
    shutdown: list[str],
) -> None:
    doing = "WARN Database has migration lock; cannot run migrations"
    log = ["INFO starting", doing, *shutdown]
    assert last_before_shutdown(log) == doing


@pytest.mark.parametrize(
    "line",
    [
        "HTTPDriver for http://ch.olap.svc:8123 received ClickHouse error code 202",
        "Code: 202. DB::Exception: Too many simultaneous queries. Maximum: 100.",
        '{"error":"code: 243, message: Cannot reserve 1.00 MiB, not enough space"}',
    ],
)
def test_a_clickhouse_reply_names_the_server_it_came_from(line: str) -> None:
    assert text.server_in(line) == ("clickhouse", 9000)


@pytest.mark.parametrize(
    ("host", "pod"),
    [
        ("cass-0.cass", "cass-0"),
        ("cass-0.cass.db", "cass-0"),
        ("cass-0.cass.db.svc.cluster.local", "cass-0"),
        ("cass.db.svc.cluster.local", None),
        ("orders-db.shop", None),
        ("web-1.example.com", None),
    ],
)
def test_a_statefulset_pods_own_name_is_told_from_a_service(host: str, pod: str | None) -> None:
    assert text.pod_of(host) == pod


def test_a_seed_the_provider_cannot_look_up_is_a_lookup_failure_naming_its_host() -> None:
    line = (
        "WARN  [main] SimpleSeedProvider.java:81 - Seed provider couldn't lookup host "
        "cass-0.cass.db.svc.cluster.local"
    )
    assert family(line) is Family.DNS
    assert "cass-0.cass.db.svc.cluster.local" in {e.host for e in text.endpoints_in(line)}


def test_an_error_line_that_only_says_what_failed_is_quoted_by_its_exception() -> None:
    log = [
        "2026-12-07T07:00:00Z INFO  Application - 200 OK: GET - /v1/balance in 23ms",
        "2026-12-07T07:00:01Z ERROR Application - Unhandled: POST - /v1/redeem",
        "io.ktor.serialization.JsonConvertException: Illegal input: Encountered an unknown key "
        "'tierExpiry' at offset 61 at path: $",
        "\tat com.shop.tier.TierClient.tierOf(TierClient.kt:41)",
    ]
    line = telling(log)
    assert line is not None
    assert line.text.startswith("io.ktor.serialization.JsonConvertException"), line


def test_a_line_after_an_error_that_is_not_an_exception_is_not_quoted_for_it() -> None:
    line = telling(["ERROR request failed for order 881", "WARNING: slow query 900ms"])
    assert line is not None
    assert line.text == "ERROR request failed for order 881"
