"""A probe answered with a status code ("HTTP probe failed with statuscode: 400") is explained
by what the app logged for that request: the error it wrote just before its access line for the
probe's path, in whatever shape the app logs, and never a line of another request."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from triage.agent.planners.rules.analyzers.containers import _probe_answer

codes = st.sampled_from([400, 403, 404, 421, 500, 503])
paths = st.from_regex(r"/[a-z]{2,8}(/[a-z]{2,8})?/?", fullmatch=True)
words = st.from_regex(r"[A-Za-z][a-z]{2,10}( [a-z]{2,10}){1,5}", fullmatch=True)


def error_line(shape: str, level: str, said: str) -> str:
    if shape == "json":
        return json.dumps({"levelname": level, "name": "app", "message": said})
    if shape == "logfmt":
        return f'level={level.lower()} msg="{said}"'
    return f"2026-12-04 10:00:00,123 {level} [app] {said}"


def access_line(shape: str, path: str, code: int) -> str:
    if shape == "json":
        return json.dumps({"method": "GET", "path": path, "status": code, "ua": "kube-probe/1.36"})
    return f'10.244.2.1 - - [04/Dec/2026:10:00:00 +0000] "GET {path} HTTP/1.1" {code} 143 "-"'


@given(
    code=codes,
    path=paths,
    said=words,
    other=words,
    shape=st.sampled_from(["json", "logfmt", "plain"]),
    access=st.sampled_from(["json", "clf"]),
    repeats=st.integers(1, 3),
)
def test_the_error_logged_for_the_probe_request_is_quoted(
    code: int, path: str, said: str, other: str, shape: str, access: str, repeats: int
) -> None:
    log = ["Starting server", "Listening at: http://0.0.0.0:8000"]
    # an earlier, unrelated request that failed for another reason, and answered 200 after it
    log += [error_line(shape, "ERROR", f"x{other}"), access_line(access, "/orders", 500)]
    for _ in range(repeats):
        log += [
            error_line(shape, "ERROR", said),
            error_line(shape, "WARNING", f"Bad Request: {path}"),
            access_line(access, path, code),
        ]
    log.append("Handling signal: term")
    message = f"Liveness probe failed: HTTP probe failed with statuscode: {code}"
    answer = _probe_answer(log, path, message)
    assert answer is not None
    assert said in answer
    assert f"x{other}" not in answer


@given(code=codes, path=paths, said=words)
def test_no_answer_without_a_logged_error_for_that_request(code: int, path: str, said: str) -> None:
    message = f"Readiness probe failed: HTTP probe failed with statuscode: {code}"
    quiet = ["Listening on :8080", access_line("clf", path, code)]
    assert _probe_answer(quiet, path, message) is None
    # the error belongs to another path's request, or the probe timed out (no status at all)
    elsewhere = [error_line("plain", "ERROR", said), access_line("clf", "/elsewhere", code)]
    assert _probe_answer(elsewhere, path + "x", message) is None
    timed_out = [error_line("plain", "ERROR", said), access_line("clf", path, code)]
    assert _probe_answer(timed_out, path, "Get ...: context deadline exceeded") is None
