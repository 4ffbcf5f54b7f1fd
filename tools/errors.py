"""The one error tree for tools/, and the one place HTTP statuses become error classes.

    ToolError
    ├── Unreachable        connection refused/reset, DNS, TLS: the backend is down or not there
    ├── TimedOut           no answer within the call's timeout
    ├── Denied             401/403: the identity may not do this
    ├── NotFound           404: the thing named does not exist (report it, never retry it)
    ├── Conflict           409: AlreadyExists or a stale resourceVersion
    ├── Invalid            400/422: our request was wrong (bad selector, bad PromQL)
    ├── Throttled          429: overloaded (or, for evictions, a PodDisruptionBudget refusal)
    ├── BackendError       5xx and anything else the server answered that we cannot use
    └── Refused            a rule of ours said no before anything was sent: not an approver,
        │                  nothing waiting for approval, no such operation
        ├── NotAnApprover
        └── NotAwaitingApproval

Each class carries the `ToolStatus` it maps to, so callers gate on fields, never on strings.
Payloads are truncated before they reach a message, so a 2 MB error body never hits the logs.
"""

from __future__ import annotations

from tools.results import ErrorKind, ToolStatus

MAX_DETAIL_CHARS = 300


def truncate(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """Cut `text` to `limit` characters, saying how much was cut."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [{len(text) - limit} more chars]"


class ToolError(Exception):
    """Base of every error a tool raises; `status` and `kind` are what callers look at."""

    status: ToolStatus = ToolStatus.ERROR
    kind: ErrorKind = ErrorKind.BACKEND

    def __init__(self, message: str, *, http_status: int | None = None) -> None:
        super().__init__(truncate(message))
        self.http_status = http_status


class Unreachable(ToolError):
    kind = ErrorKind.UNREACHABLE


class TimedOut(ToolError):
    kind = ErrorKind.TIMEOUT


class Denied(ToolError):
    status = ToolStatus.DENIED
    kind = ErrorKind.DENIED


class NotFound(ToolError):
    kind = ErrorKind.NOT_FOUND


class Conflict(ToolError):
    kind = ErrorKind.CONFLICT


class Invalid(ToolError):
    kind = ErrorKind.INVALID


class Throttled(ToolError):
    kind = ErrorKind.THROTTLED


class BackendError(ToolError):
    kind = ErrorKind.BACKEND


class Refused(ToolError):
    """A rule said no (the ledger's approval rules); the message says who may, or what next."""

    status = ToolStatus.DENIED
    kind = ErrorKind.REFUSED


class NotAnApprover(Refused):
    pass


class NotAwaitingApproval(Refused):
    pass


_BY_STATUS: dict[int, type[ToolError]] = {
    400: Invalid,
    401: Denied,
    403: Denied,
    404: NotFound,
    409: Conflict,
    410: Conflict,
    422: Invalid,
    429: Throttled,
}


def error_for_status(http_status: int, body: str | bytes | None, *, what: str) -> ToolError:
    """Map an HTTP status from any backend to the error class callers can act on."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    cls = _BY_STATUS.get(http_status, BackendError)
    detail = truncate(body or "", 200)
    message = f"{what}: HTTP {http_status}" + (f": {detail}" if detail else "")
    return cls(message, http_status=http_status)
