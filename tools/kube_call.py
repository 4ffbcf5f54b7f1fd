"""One Kubernetes API request, read raw, with its failures mapped onto the one error tree.

Shared by the read and the mutate side so both tell a refusal, a timeout and an unreachable
apiserver apart the same way — which is what lets the ledger treat a lost answer (timeout,
reset) as "outcome unknown" rather than "failed".

Reads go by path (`get_raw`): the client's `ApiClient` signs and sends them, but none of its
generated API classes is built. Those classes are what made `KubeReader` slow to construct —
kubernetes 37 builds a pydantic validator per method and imports every model a class names
(4 s of CPU for the eleven groups we read) — and the reader never used their typed models
anyway. Reads ask for gzip: the apiserver compresses a response over its threshold (128 KiB),
so a page of 250 pods travels at about a tenth of its size; `Fetched.wire_bytes` counts what
came over the wire, `len(body)` what it decoded to.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from tools.errors import TimedOut, Unreachable, error_for_status

TLS_FAILED = "TLS handshake with the apiserver failed"
JSON = "application/json"
# Names and labels only (ConfigMap names): the apiserver sends no data at all.
METADATA_ONLY = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
# How a custom object is patched: keys not written are kept (no strategic merge for CRDs).
MERGE_PATCH = "application/merge-patch+json"


@dataclass(frozen=True)
class Fetched:
    """A response body as decoded, and how many bytes of it crossed the wire."""

    body: bytes
    wire_bytes: int


def call_raw(fn: Callable[..., Any], *args: Any, timeout_s: float, **kwargs: Any) -> bytes:
    """Call a generated client method with `_preload_content=False`; return the body bytes."""
    with mapped_errors(getattr(fn, "__name__", "kubernetes call"), timeout_s):
        resp = fn(*args, _preload_content=False, _request_timeout=timeout_s, **kwargs)
        body: bytes = resp.data
    return body


def get_raw(
    api_client: Any,
    path: str,
    *,
    path_params: Mapping[str, str] | None = None,
    query: Mapping[str, Any] | None = None,
    timeout_s: float,
    accept: str = JSON,
) -> Fetched:
    """GET `path` (a template such as `/api/v1/namespaces/{namespace}/pods`; each path
    parameter is percent-quoted, so a name cannot climb out of its segment) with `query`, as
    the client's identity, asking for gzip. Non-2xx answers raise the error tree's class."""
    with mapped_errors(path, timeout_s):
        return send_raw(
            api_client,
            "GET",
            path,
            path_params=path_params,
            query=query,
            timeout_s=timeout_s,
            accept=accept,
        )


def send_raw(
    api_client: Any,
    method: str,
    path: str,
    *,
    path_params: Mapping[str, str] | None = None,
    query: Mapping[str, Any] | None = None,
    body: Mapping[str, Any] | None = None,
    content_type: str = JSON,
    timeout_s: float,
    accept: str = JSON,
) -> Fetched:
    """One request by path, sent once (the client's retries are off); its failures are left
    as the client raises them (`ApiException` for a non-2xx answer, urllib3's for transport),
    for a caller with its own mapping — `get_raw` and the report store. A write's `body` is a
    JSON object; a PATCH says its kind in `content_type` (a merge patch for custom objects)."""
    headers = {"Accept": accept, "Accept-Encoding": "gzip"}
    if body is not None:
        headers["Content-Type"] = content_type
    method, url, headers, payload, _ = api_client.param_serialize(
        method,
        path,
        path_params=dict(path_params or {}),
        query_params=[(k, v) for k, v in (query or {}).items() if v is not None],
        header_params=headers,
        body=dict(body) if body is not None else None,
        auth_settings=["BearerToken"],
    )
    resp = api_client.call_api(
        method, url, header_params=headers, body=payload, _request_timeout=timeout_s
    )
    if not 200 <= resp.status <= 299:
        resp.read()
        raise ApiException.from_response(http_resp=resp, body=None, data=None)
    raw = resp.response  # the urllib3 response: `.data` decodes, `.tell()` counts the wire
    data: bytes = raw.data
    return Fetched(data, int(raw.tell()) or len(data))


@contextmanager
def mapped_errors(what: str, timeout_s: float) -> Iterator[None]:
    """Map the client's and urllib3's failures of one request onto the error tree."""
    try:
        yield
    except ApiException as e:
        if not e.status:  # the client's own wrapping of a transport failure (an SSLError)
            reason = str(e.reason or e)
            if "SSL" in reason or "certificate" in reason.lower():
                raise Unreachable(f"{what}: {TLS_FAILED} ({reason})") from e
            raise Unreachable(f"{what}: apiserver unreachable ({reason})") from e
        raise error_for_status(e.status, e.body, what=what) from e
    except (urllib3.exceptions.TimeoutError, TimeoutError) as e:
        raise TimedOut(f"{what}: no answer within {timeout_s:g}s") from e
    except urllib3.exceptions.MaxRetryError as e:
        if isinstance(e.reason, urllib3.exceptions.TimeoutError):
            raise TimedOut(f"{what}: no answer within {timeout_s:g}s") from e
        if isinstance(e.reason, urllib3.exceptions.SSLError | ssl.SSLError):
            # reached, but TLS failed: a CA that is not a certificate, one that did not sign
            # the server's, or a server that does not speak TLS there at all
            raise Unreachable(f"{what}: {TLS_FAILED} ({e.reason})") from e
        raise Unreachable(f"{what}: apiserver unreachable ({e.reason})") from e
    except (urllib3.exceptions.SSLError, ssl.SSLError) as e:  # retries off: not wrapped
        raise Unreachable(f"{what}: {TLS_FAILED} ({e})") from e
    except (urllib3.exceptions.HTTPError, OSError) as e:
        raise Unreachable(f"{what}: apiserver unreachable ({e})") from e
