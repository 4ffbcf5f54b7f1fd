"""The status a server's access-log line says it answered with, in the shapes servers write
it (JSON of any nesting and key order, logfmt, the common log format), and nothing from the
other numbers a line carries (durations, sizes, ids, ports)."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from triage.agent.planners.rules.text import answered

codes = st.integers(100, 599)
paths = st.from_regex(r"/[a-z0-9]{1,8}(/[a-z0-9]{1,8}){0,3}", fullmatch=True)
other = st.integers(0, 99999)
KEYS = ("status", "statusCode", "status_code", "response_code", "code")


@given(code=codes, key=st.sampled_from(KEYS), path=paths, ms=other, nested=st.booleans())
def test_json_lines_in_any_shape(code: int, key: str, path: str, ms: int, nested: bool) -> None:
    doc: dict[str, object] = {"duration_ms": ms, "path": path, "bytes": ms * 3}
    doc["res" if nested else key] = {key: code} if nested else code
    assert answered(json.dumps(doc)) == code


@given(code=codes, path=paths, ms=other, size=other)
def test_logfmt_and_common_log_format(code: int, path: str, ms: int, size: int) -> None:
    assert answered(f"level=info method=GET path={path} duration_ms={ms} status={code}") == code
    clf = f'10.1.2.3 - - [03/Dec/2026:10:00:00 +0000] "POST {path} HTTP/1.1" {code} {size}'
    assert answered(clf) == code


@given(n=other, path=paths)
def test_other_numbers_are_not_an_answer(n: int, path: str) -> None:
    for line in (
        f"took {n} ms on {path}",
        f'{{"duration_ms": {n}, "bytes": {n}, "port": 8080}}',
        f"listening on :{n}",
        f"code={n * 10 + 10000}",  # an application's own five-digit error code
    ):
        assert answered(line) is None, line


methods = st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"])


@given(code=codes, method=methods, path=paths, ms=other, prefix=st.sampled_from(["", "INFO  "]))
def test_method_path_status_in_a_row(
    code: int, method: str, path: str, ms: int, prefix: str
) -> None:
    # Next.js, morgan's dev format, and the many servers that print the three in a row
    for line in (
        f"{prefix}{method} {path} {code} in {ms}ms",
        f"{prefix}{method} {path} {code} {ms}.5 ms - {ms}",
        f"{prefix}{method} {path} {code} {ms}ms",
    ):
        assert answered(line) == code, line


@given(method=methods, path=paths, n=st.integers(1000, 99999))
def test_a_number_after_a_path_that_is_no_status(method: str, path: str, n: int) -> None:
    assert answered(f"{method} {path} {n} rows") is None
    assert answered(f"{method} {path} {n // 100}.html") is None
