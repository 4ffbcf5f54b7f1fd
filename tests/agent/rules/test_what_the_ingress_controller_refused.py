"""What the ingress controller's error log says about an Ingress's requests is read for what
a human fixes: a body over the limit the Ingress's annotations set (an annotation under a
prefix the controller does not read is ignored, and the controller's default applies), TLS
spoken to a backend that answers plain HTTP, a connection to Ready pods never answered (a
NetworkPolicy's business, not the Ingress's). Sizes are nginx's (k, m, g: binary units); the
oracle for "over the limit" is arithmetic on bytes."""

from __future__ import annotations

from typing import Any, cast

from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from triage.agent.planners.rules.analyzers.dependencies import _CONNECT_UNANSWERED
from triage.agent.planners.rules.analyzers.network import (
    _LIMITS,
    _NGINX_ERROR,
    _NOW_AND_THEN,
    _TLS_TO_PLAIN,
    _limit_cause,
    _program,
    annotation_prefix,
)

BODY = _LIMITS[0]
PREFIX = "nginx.ingress.kubernetes.io"
UNIT = {"k": 1024, "m": 1024**2, "g": 1024**3}


def ingress(annotations: dict[str, str]) -> p.Ingress:
    raw: dict[str, Any] = {
        "name": "uploads",
        "ingress_class": "public",
        "tls_secrets": [],
        "backends": [{"host": "up.example.com", "path": "/", "service": "up", "port": 80}],
        "load_balancer": [],
        "canary": {},
        "annotations": annotations,
    }
    return cast(p.Ingress, raw)


@given(n=st.integers(1, 4096), unit=st.sampled_from("kmg"), body=st.integers(1, 2 * 1024**3))
def test_a_body_is_refused_by_the_ingress_only_over_the_limit_it_sets(
    n: int, unit: str, body: int
) -> None:
    said = _limit_cause(
        ingress({f"{PREFIX}/proxy-body-size": f"{n}{unit}"}), BODY, str(body), PREFIX
    )
    assert (said is None) == (body <= n * UNIT[unit])
    if said is not None:
        assert f"{PREFIX}/proxy-body-size: {n}{unit}" in said
        assert "413" in said


def test_an_annotation_under_another_prefix_is_ignored_and_the_default_applies() -> None:
    said = _limit_cause(
        ingress({"ingress.kubernetes.io/proxy-body-size": "25m"}), BODY, "6815744", PREFIX
    )
    assert said is not None
    for part in (
        "ingress.kubernetes.io/proxy-body-size: 25m",
        "ignored",
        "1m",
        f"{PREFIX}/proxy-body-size",
    ):
        assert part in said, (part, said)


def test_no_annotation_means_the_default() -> None:
    said = _limit_cause(ingress({}), BODY, "3211264", PREFIX)
    assert said is not None
    assert "default of 1m" in said
    assert "ignored" not in said


def test_the_controllers_own_prefix_is_read_from_its_arguments() -> None:
    ref = cast(
        p.PodRef, {"args": "/nginx-ingress-controller --annotations-prefix=corp.example.com"}
    )
    assert annotation_prefix(ref) == "corp.example.com"
    assert annotation_prefix(cast(p.PodRef, {"args": "/nginx-ingress-controller"})) == PREFIX
    said = _limit_cause(
        ingress({f"{PREFIX}/proxy-body-size": "50m"}), BODY, "3211264", "corp.example.com"
    )
    assert said is not None
    assert "ignored" in said


def _msg(line: str) -> str:
    m = _NGINX_ERROR.search(line)
    assert m is not None, line
    return m.group("msg")


def test_nginx_error_lines_are_read_for_what_failed() -> None:
    tls = (
        "2026/12/06 03:21:56 [error] 39#39: *58812 SSL_do_handshake() failed (SSL: "
        "error:0A00010B:SSL routines::wrong version number) while SSL handshaking to upstream, "
        'client: 10.2.0.9, server: a.example.com, request: "GET / HTTP/2.0", upstream: '
        '"https://10.244.1.33:8080/", host: "a.example.com"'
    )
    assert _TLS_TO_PLAIN.search(_msg(tls))
    for errno in ("110: Connection timed out", "113: No route to host"):
        line = (
            f"2026/12/06 03:25:55 [error] 45#45: *1 upstream timed out ({errno}) while connecting "
            'to upstream, client: 192.0.2.58, server: b.example.com, request: "GET / HTTP/2.0"'
            if errno.startswith("110")
            else f"2026/12/06 03:25:55 [error] 45#45: *1 connect() failed ({errno}) while "
            "connecting to upstream, client: 192.0.2.58, server: b.example.com"
        )
        assert _CONNECT_UNANSWERED.search(_msg(line)), line
    # a refusal is answered (nothing listens on the port): not a dropped packet
    refused = (
        "2026/12/06 03:25:55 [error] 45#45: *1 connect() failed (111: Connection refused) while "
        "connecting to upstream, client: 192.0.2.58, server: b.example.com"
    )
    assert not _CONNECT_UNANSWERED.search(_msg(refused))
    # a read timeout is a slow answer, not an unanswered connection
    slow = (
        "2026/12/06 03:25:55 [error] 45#45: *1 upstream timed out (110: Connection timed out) "
        "while reading response header from upstream, client: 192.0.2.58"
    )
    assert not _CONNECT_UNANSWERED.search(_msg(slow))


def _pod(image: str, args: list[str]) -> p.Pod:
    spec = {"command": [], "args": args}
    return cast(p.Pod, {"containers": [{"image": image, "spec": spec}]})


def test_a_canary_runs_the_same_program_and_a_sidecar_mode_does_not() -> None:
    serve = _program(_pod("registry.example.com/search:3.0.2", ["serve"]))
    assert _program(_pod("registry.example.com/search:3.1.0-rc1", ["serve"])) == serve
    assert _program(_pod("registry.example.com/search@sha256:ab12", ["serve"])) == serve
    assert _program(_pod("registry.example.com/search:3.0.2", ["reindex"])) != serve
    assert _program(_pod("registry.example.com:5000/other:3.0.2", ["serve"])) != serve


def test_words_that_say_part_of_the_requests_fail() -> None:
    for words in (
        "roughly every second search comes back 404, refresh usually works",
        "intermittent 502s on checkout",
        "some requests fail with 500",
        "half of the calls time out",
    ):
        assert _NOW_AND_THEN.search(words), words
    for words in ("every request fails with 404", "checkout is down since the release"):
        assert not _NOW_AND_THEN.search(words), words
