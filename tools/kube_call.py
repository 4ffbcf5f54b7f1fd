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
        method, url, headers, _, _ = api_client.param_serialize(
            "GET",
            path,
            path_params=dict(path_params or {}),
            query_params=[(k, v) for k, v in (query or {}).items() if v is not None],
            header_params={"Accept": accept, "Accept-Encoding": "gzip"},
            auth_settings=["BearerToken"],
        )
        resp = api_client.call_api(method, url, header_params=headers, _request_timeout=timeout_s)
        if not 200 <= resp.status <= 299:
            resp.read()
            raise ApiException.from_response(http_resp=resp, body=None, data=None)
        raw = resp.response  # the urllib3 response: `.data` decodes, `.tell()` counts the wire
        body: bytes = raw.data
        wire = int(raw.tell()) or len(body)
    return Fetched(body, wire)


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
