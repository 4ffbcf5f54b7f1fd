"""One Kubernetes API request, read raw, with its failures mapped onto the one error tree.

Shared by the read and the mutate side so both tell a refusal, a timeout and an unreachable
apiserver apart the same way — which is what lets the ledger treat a lost answer (timeout,
reset) as "outcome unknown" rather than "failed".
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import urllib3
from kubernetes.client.exceptions import ApiException

from tools.errors import TimedOut, Unreachable, error_for_status

TLS_FAILED = "TLS handshake with the apiserver failed"


def call_raw(fn: Callable[..., Any], *args: Any, timeout_s: float, **kwargs: Any) -> bytes:
    """Call a generated client method with `_preload_content=False`; return the body bytes."""
    what = getattr(fn, "__name__", "kubernetes call")
    try:
        resp = fn(*args, _preload_content=False, _request_timeout=timeout_s, **kwargs)
        body: bytes = resp.data
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
    return body
