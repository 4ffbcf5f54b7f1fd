"""Facts a program states about itself that explain a symptom: where its framework serves the
health checks a probe asks for elsewhere, the lifetime after which a worker ends itself, the
permission a cloud API refused, and the exception inside a structured line's stack trace."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from triage.agent.planners.rules.analyzers.common import (
    health_home,
    lifetime_setting,
    span_seconds,
)
from triage.agent.planners.rules.text import cloud_permission, migrations, telling

QUARKUS = (
    "INFO  [io.quarkus] (main) Installed features: [cdi, rest, smallrye-context-propagation, "
    "smallrye-health, vertx]"
)
SPRING = (
    "INFO o.s.b.a.e.web.EndpointLinksResolver : Exposing 3 endpoints beneath base path '/manage'"
)


@pytest.mark.parametrize(
    ("line", "kind", "asked", "served"),
    [
        (QUARKUS, "startup", "/actuator/health/startup", "/q/health/started"),
        (QUARKUS, "liveness", "/healthz", "/q/health/live"),
        (SPRING, "readiness", "/actuator/health/readiness", "/manage/health/readiness"),
        ("[GIN-debug] GET    /livez  --> main.live (3 handlers)", "liveness", "/health", "/livez"),
    ],
)
def test_a_framework_says_where_it_serves_its_checks(
    line: str, kind: str, asked: str, served: str
) -> None:
    home = health_home(["INFO starting", line], kind, asked)
    assert home is not None
    assert home[0] == served


def test_a_probe_already_on_the_served_path_gets_no_other_path() -> None:
    assert health_home([QUARKUS], "startup", "/q/health/started") is None
    assert health_home(["[GIN-debug] GET /health --> main.h"], "liveness", "/health") is None
    assert health_home(["INFO listening on :8080"], "liveness", "/health") is None


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("3600", 3600),
        ("60m", 3600),
        ("1h", 3600),
        ("1h30m", 5400),
        ("90min", 5400),
        ("2 hours", 7200),
    ],
)
def test_durations_are_read_as_settings_write_them(value: str, seconds: float) -> None:
    assert span_seconds(value) == seconds


@given(st.text(max_size=12))
def test_any_text_is_a_duration_or_none(value: str) -> None:
    got = span_seconds(value)
    assert got is None or got >= 0


def _container(args: list[str], env: dict[str, str]) -> p.Container:
    spec = {
        "name": "worker",
        "image": "x",
        "command": ["php", "artisan", "queue:work"],
        "args": args,
        "env": [{"name": k, "value": v} for k, v in env.items()],
    }
    return cast(p.Container, cast(Any, {"name": "worker", "spec": spec}))


@pytest.mark.parametrize(
    ("args", "env", "said"),
    [
        (["--max-time=3600"], {}, "--max-time=3600"),
        (["--max-time", "3600"], {}, "--max-time 3600"),
        ([], {"WORKER_MAX_LIFETIME": "1h"}, "WORKER_MAX_LIFETIME=1h"),
    ],
)
def test_a_lifetime_setting_matching_the_run_is_found(
    args: list[str], env: dict[str, str], said: str
) -> None:
    assert lifetime_setting(_container(args, env), 3590.0) == (said, 3600.0)


def test_a_lifetime_unlike_the_run_or_not_a_lifetime_is_not_found() -> None:
    assert lifetime_setting(_container(["--max-time=600"], {}), 3600.0) is None
    assert lifetime_setting(_container(["--port", "3600"], {}), 3600.0) is None


@pytest.mark.parametrize(
    ("line", "permission"),
    [
        (
            "User: arn:aws:sts::1:assumed-role/app is not authorized to perform: s3:PutObject on x",
            "s3:PutObject",
        ),
        ("Permission 'storage.objects.create' denied on resource", "storage.objects.create"),
        ("a@b does not have storage.objects.get access to the object.", "storage.objects.get"),
        (
            'metadata {\\n  key: \\"permission\\"\\n  value: \\"pubsub.topics.publish\\"\\n}',
            "pubsub.topics.publish",
        ),
        (
            "does not have authorization to perform action 'Microsoft.Storage/x/read' over scope",
            "Microsoft.Storage/x/read",
        ),
    ],
)
def test_the_permission_a_cloud_api_refused_is_named(line: str, permission: str) -> None:
    assert cloud_permission(["INFO ok", line]) == permission


def test_a_structured_line_is_quoted_by_the_exception_its_trace_ends_with() -> None:
    trace = (
        'Traceback (most recent call last):\\n  File \\"/app/pub.py\\", line 61, in publish\\n'
        "    future.result(timeout=30)\\n"
        "google.api_core.exceptions.PermissionDenied: 403 User not authorized. [reason: "
        '\\"IAM_PERMISSION_DENIED\\"\\ndomain: \\"pubsub.googleapis.com\\"\\nmetadata {\\n}'
    )
    log = [
        '{"level":"INFO","msg":"claimed outbox batch"}',
        '{"level":"ERROR","msg":"unhandled exception, exiting","exc_info":"' + trace + '"}',
    ]
    line = telling(log)
    assert line is not None
    assert line.text.startswith("google.api_core.exceptions.PermissionDenied: 403"), line.text


def test_a_kms_refusal_is_named_as_the_key_not_the_store() -> None:
    line = (
        "botocore.exceptions.ClientError: An error occurred (AccessDenied) when calling the "
        "GetObject operation: User: arn:aws:sts::1:assumed-role/r/x is not authorized to "
        "perform: kms:Decrypt on resource: arn:aws:kms:eu-west-1:1:key/k"
    )
    assert cloud_permission([line]) == "kms:Decrypt"


@pytest.mark.parametrize(
    ("line", "name"),
    [
        ("  Applying listings.0087_drop_unused_indexes... OK", "listings.0087_drop_unused_indexes"),
        (
            "INFO  [alembic.runtime.migration] Running upgrade 9c41 -> 3f7b, add x",
            "9c41 -> 3f7b, add x",
        ),
        ('Migrating schema "public" to version "42 - drop index"', "42 - drop index"),
        ("== 20240101120000 DropIndex: migrating ======", "20240101120000 DropIndex"),
        ("ChangeSet db/changelog.xml::7::ann ran successfully in 12ms", "db/changelog.xml::7::ann"),
        ("Applying migration `20240101_drop_index`", "20240101_drop_index"),
        ("42/u drop_index (12.1ms)", "42/u drop_index"),
    ],
)
def test_a_schema_migration_is_read_from_each_tools_words(line: str, name: str) -> None:
    assert [x for x, _ in migrations(["INFO starting", line])] == [name]


def test_lines_that_only_mention_migrations_are_not_migrations() -> None:
    assert (
        migrations(["GET /applying 200", "no migrations to apply", "Running upgrade check"]) == []
    )
