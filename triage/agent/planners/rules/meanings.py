"""What a Kubernetes warning means, in a reviewer's words, when it has stopped.

A "no fault" answer to "describe shows FailedAttachVolume warnings" must say why such a
warning happens and why it is over, not only that the pod is Ready now. The table is
Kubernetes' own vocabulary (the reasons the kubelet, the attach/detach controller, the
scheduler and the HPA controller emit, with the wording of their messages), each with the
mechanism behind it; an entry is one row, matched on the reason and, where one reason covers
several mechanisms, on the message.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Meaning:
    reason: str
    message: re.Pattern[str] | None
    text: str


_ANY = None
MEANINGS: tuple[Meaning, ...] = (
    Meaning(
        "FailedAttachVolume",
        re.compile(r"Multi-Attach", re.I),
        "a ReadWriteOnce volume attaches to one node at a time: it was still attached to the "
        "previous node, where the pod ran before it moved, until the attach/detach controller "
        "detached it there",
    ),
    Meaning(
        "FailedMount",
        re.compile(r"timed out waiting for the condition|unmounted volumes|attach", re.I),
        "the kubelet waits to mount a volume until it is attached to its node; while it is "
        "attached elsewhere the mount times out and is retried",
    ),
    Meaning(
        "FailedScheduling",
        re.compile(r"didn't match|node affinity|selector|untolerated taint|Insufficient", re.I),
        "no node fitted the pod when it was created; the scheduler retries as nodes come "
        "and go, and a cluster autoscaler adds one for a pod that fits a node group",
    ),
    Meaning(
        "FailedGetResourceMetric",
        _ANY,
        "the HPA reads usage from the metrics API, which has no sample for a pod until it has "
        "run for a scrape interval: new pods of a rollout make it fail for a while",
    ),
    Meaning(
        "FailedComputeMetricsReplicas",
        _ANY,
        "it follows a failed metric read in the same HPA sync, and stops with it",
    ),
    Meaning(
        "Unhealthy",
        re.compile(r"Readiness probe", re.I),
        "a readiness probe that fails takes the pod out of its Services' endpoints until it "
        "passes again; it does not restart the container",
    ),
    # what the controllers that make Secrets record when they cannot (their own reasons)
    Meaning(
        "ErrUnsealFailed",
        re.compile(r"no key could decrypt", re.I),
        "the sealed-secrets controller holds no private key that opens this SealedSecret: it "
        "was sealed with another controller's public certificate (another cluster's, or a key "
        "since lost), so it must be re-sealed with kubeseal against this cluster's certificate",
    ),
    Meaning(
        "NodeNotReady",
        _ANY,
        "the node controller marks the pods of a node whose kubelet stopped reporting (a "
        "node restart or upgrade) and clears it when the kubelet reports again",
    ),
)


def meaning(reason: str | None, message: str | None) -> str | None:
    """The mechanism behind a warning with this reason and message, or None."""
    for m in MEANINGS:
        if m.reason == reason and (m.message is None or m.message.search(message or "")):
            return m.text
    return None
