"""The line quoted as a failure is the one that says why: a stack trace's own exception (not its
header), the step the program was in, the application's frame (not a library's), and an error
chain clipped so that its innermost error stays."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from triage.agent.planners.rules.chain import short
from triage.agent.planners.rules.text import frame, last_step, telling

MIGRATION = [
    "INFO  [alembic.runtime.migration] Running upgrade 9c41 -> 3f7b, add orders.discount_code",
    "Traceback (most recent call last):",
    '  File "/app/migrate.py", line 12, in main',
    '  File "/usr/local/lib/python3.12/site-packages/sqlalchemy/engine/base.py", line 1967, in x',
    "    self.dialect.do_execute(",
    'psycopg2.errors.DuplicateColumn: column "discount_code" already exists',
    "",
    'sqlalchemy.exc.ProgrammingError: (psycopg2.errors.DuplicateColumn) column "discount_code" '
    "already exists",
    "[SQL: ALTER TABLE orders ADD COLUMN discount_code VARCHAR(32)]",
]


def test_a_python_traceback_is_quoted_by_the_exception_it_ends_with() -> None:
    line = telling(MIGRATION)
    assert line is not None
    assert line.text.startswith(
        "sqlalchemy.exc.ProgrammingError: (psycopg2.errors.DuplicateColumn)"
    )
    assert last_step(MIGRATION, line) == MIGRATION[0]
    assert frame(MIGRATION) == "/app/migrate.py:12 in main"  # not sqlalchemy's frame


def test_a_jvm_trace_is_quoted_by_its_deepest_cause() -> None:
    log = [
        "2026-12-01 10:00:00 INFO loading ledger snapshot",
        'Exception in thread "main" java.lang.IllegalStateException: snapshot unreadable',
        "\tat com.acme.ledger.Snapshot.load(Snapshot.java:88)",
        "Caused by: java.util.zip.ZipException: invalid block type",
        "\tat java.util.zip.InflaterInputStream.read(InflaterInputStream.java:165)",
    ]
    line = telling(log)
    assert line is not None
    assert line.text == "Caused by: java.util.zip.ZipException: invalid block type"
    assert last_step(log, line) == "INFO loading ledger snapshot"


def test_a_step_is_not_an_earlier_error() -> None:
    log = ["ERROR cache unavailable", "Traceback (most recent call last):", "KeyError: 'x'"]
    line = telling(log)
    assert line is not None
    assert last_step(log, line) is None


def test_an_error_chain_keeps_its_innermost_error() -> None:
    msg = (
        'Failed to pull image "ghcr.io/acme/exporter:3.4.1": failed to pull and unpack image '
        '"ghcr.io/acme/exporter:3.4.1": failed to resolve reference "ghcr.io/acme/exporter:3.4.1":'
        " failed to authorize: failed to fetch anonymous token: 401 Unauthorized"
    )
    out = short(msg, 160)
    assert len(out) <= 160
    assert out.startswith('Failed to pull image "ghcr.io/acme/exporter:3.4.1"')
    assert out.endswith("401 Unauthorized")


def test_an_innermost_error_too_long_to_quote_whole_keeps_its_start() -> None:
    """The Secrets Store CSI driver's mount error wraps Azure's reply in three rpc errors; the
    reply says what is missing, its help sentences say nothing."""
    msg = (
        'MountVolume.SetUp failed for volume "secrets-store" : rpc error: code = Unknown desc = '
        "failed to mount secrets store objects for pod ns/kc-1, err: rpc error: code = Unknown "
        "desc = failed to mount objects, error: failed to get objectType:secret, objectName:"
        "kc-db-password, objectVersion:: keyvault.BaseClient#GetSecret: Failure responding to "
        "request: StatusCode=404 -- Original Error: autorest/azure: Service returned an error. "
        'Status=404 Code="SecretNotFound" Message="A secret with (name/id) kc-db-password was not '
        "found in this key vault. If you recently deleted this secret you may be able to recover "
        'it. For help resolving this issue, please see https://go.microsoft.com/fwlink/?linkid=1"'
    )
    out = short(msg, 220)
    assert len(out) <= 220
    assert out.startswith('MountVolume.SetUp failed for volume "secrets-store"')
    assert 'Code="SecretNotFound"' in out


@given(st.text(max_size=600), st.integers(min_value=20, max_value=300))
def test_short_never_exceeds_its_limit(text: str, limit: int) -> None:
    out = short(text, limit)
    assert len(out) <= limit
    if len(" ".join(text.split())) <= limit:
        assert out == " ".join(text.split())
