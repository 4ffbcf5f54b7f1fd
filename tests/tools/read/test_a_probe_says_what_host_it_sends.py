"""An HTTP probe's payload says what host the kubelet sends (httpGet.host, or an httpHeaders
Host; none means the pod's IP) and which headers it sets, by name only: a header's value may be
a credential and never leaves the tool."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from tools.read.shapes import container_spec

hosts = st.from_regex(r"[a-z]{1,10}(\.[a-z]{2,8}){0,3}", fullmatch=True)
tokens = st.from_regex(r"[A-Za-z0-9]{24,40}", fullmatch=True)


def probe(http_get: dict[str, object]) -> dict[str, object]:
    return {"name": "web", "image": "x", "livenessProbe": {"httpGet": http_get}}


@given(host=hosts, token=tokens, in_field=st.booleans(), case=st.sampled_from(["Host", "host"]))
def test_the_host_is_read_and_header_values_are_not(
    host: str, token: str, in_field: bool, case: str
) -> None:
    headers = [{"name": "Authorization", "value": f"Bearer {token}"}]
    http_get: dict[str, object] = {"path": "/healthz", "port": 8080, "httpHeaders": headers}
    if in_field:
        http_get["host"] = host
    else:
        headers.append({"name": case, "value": host})
    spec = container_spec(probe(http_get))
    live = spec["liveness"]
    assert live is not None
    assert live["host"] == host
    assert "Authorization" in live["header_names"]
    assert token not in json.dumps(spec)


def test_a_probe_that_sets_no_host_says_none() -> None:
    live = container_spec(probe({"path": "/", "port": "http"}))["liveness"]
    assert live is not None
    assert "host" not in live
    assert "header_names" not in live
