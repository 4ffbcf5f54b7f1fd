"""The one error tree of triage/, and the one place errors and outcomes become exit statuses.

    TriageError
    ├── ConfigError            settings, the policy file, the kubeconfig or a model's settings
    │   │                      cannot be used: the operator fixes them (exit 2)
    │   └── ModelNotConfigured no model name, unknown provider, integration not installed
    ├── UsageError             the request cannot run as given (no namespace, no such demo) (2)
    ├── ClusterError           the apiserver cannot be used (exit 3)
    │   ├── ClusterUnreachable connection refused, DNS, timeout
    │   ├── CredentialsRejected 401: the token or client certificate was refused
    │   ├── AccessDenied       403: the identity may not read what the run needs
    │   └── TLSInvalid         the CA or the server certificate cannot be verified
    ├── NamespaceNotFound      the namespace named does not exist (exit 4)
    ├── ReportError            the RCAReport could not be written or its status published
    ├── StateUnavailable       the run state or the inbox (SQLite files, the shared Postgres)
    │                          could not be read or written: retried later, never half-done
    ├── ModelError             no usable answer from a model; the caller falls back
    │   ├── ModelUnavailable   transport, HTTP status or timeout on the last attempt
    │   └── ModelOutputInvalid the reply could not be used (garbage, malformed tool calls)
    └── Refusal                a person or the policy said no (exit 5 in `triage ops`)

tools/ has its own tree (tools/errors.py: what a backend answered); triage code turns a
ToolError into one of these with `raise ... from e` where the difference matters to a user.

Exit statuses (README, "Exit status"): every command maps its errors and the run's outcome
here, so `triage investigate`, `triage demo` and `triage ops` cannot disagree.
"""

from __future__ import annotations

from tools.errors import truncate
from tools.kube_call import TLS_FAILED
from tools.results import ErrorKind

EXIT_OK = 0
EXIT_INCONCLUSIVE = 1  # the honest "don't know", or nothing to investigate
EXIT_USAGE = 2  # usage or configuration
EXIT_CLUSTER = 3  # the apiserver is unreachable or refused us
EXIT_NOT_FOUND = 4  # the namespace, or something the request names, does not exist
EXIT_REJECTED = 5  # the judge found the answer wrong (ops: refused)
EXIT_BUDGET_EXHAUSTED = 6
EXIT_EVALUATOR_UNAVAILABLE = 7
EXIT_UNCHECKED = 8  # checking is switched off in the policy
EXIT_AWAITING_APPROVAL = 9  # a change waits for a person's approval


class TriageError(Exception):
    """Base of every error triage/ raises on purpose; `exit_status` is what a CLI returns."""

    exit_status = EXIT_USAGE

    def __init__(self, message: str) -> None:
        super().__init__(truncate(message, 600))


class ConfigError(TriageError):
    exit_status = EXIT_USAGE


class UsageError(TriageError):
    exit_status = EXIT_USAGE


class ClusterError(TriageError):
    exit_status = EXIT_CLUSTER


class ClusterUnreachable(ClusterError):
    pass


class CredentialsRejected(ClusterError):
    pass


class AccessDenied(ClusterError):
    pass


class TLSInvalid(ClusterError):
    pass


class NamespaceNotFound(TriageError):
    exit_status = EXIT_NOT_FOUND


class ReportError(TriageError):
    """The report could not be written or its status published; `kind` says how it failed."""

    def __init__(self, message: str, kind: ErrorKind) -> None:
        super().__init__(message)
        self.kind = kind


class StateUnavailable(TriageError):
    """The state store (checkpoints, the Slack inbox) failed; the operation had no effect."""


class ModelError(TriageError):
    """No usable answer from the model; the caller uses its deterministic path."""


class ModelNotConfigured(ModelError, ConfigError):
    exit_status = EXIT_USAGE


class ModelUnavailable(ModelError):
    pass


class ModelOutputInvalid(ModelError):
    pass


class Refusal(TriageError):
    exit_status = EXIT_REJECTED


def cluster_error(kind: ErrorKind | None, detail: str, server: str) -> ClusterError:
    """The error a user can act on for a failed read of the cluster, with the next step."""
    if kind is ErrorKind.DENIED and ("HTTP 401" in detail or "Unauthorized" in detail):
        return CredentialsRejected(
            f"the apiserver at {server} rejected the credentials ({detail}). Refresh the "
            "token or client certificate of the kubeconfig context (`kubectl auth whoami`)."
        )
    if kind is ErrorKind.DENIED:
        return AccessDenied(
            f"the apiserver at {server} refused the read ({detail}). Check what the identity "
            "may do: `kubectl auth can-i list pods -n NAMESPACE`."
        )
    if TLS_FAILED in detail:
        if "WRONG_VERSION_NUMBER" in detail or "record layer failure" in detail:
            return TLSInvalid(
                f"{server} does not answer TLS ({detail}). Check the server URL in the "
                "kubeconfig: its scheme (https) and port."
            )
        return TLSInvalid(
            f"the TLS certificate of {server} cannot be verified with the kubeconfig's CA "
            f"({detail}). Check the cluster's certificate-authority(-data) in the kubeconfig: "
            "it must be the PEM of the CA that signed the apiserver's certificate."
        )
    return ClusterUnreachable(
        f"cannot reach the apiserver at {server} ({detail}). Check the kubeconfig context and "
        "the network path to the cluster."
    )
