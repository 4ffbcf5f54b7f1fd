"""Which setting a release changed can explain a failure its pods log.

A release changes a pod template (triage/agent/planners/rules/diff.py names every changed path)
and the new pods fail with a line in their log. The line says what kind of thing failed — a
name did not resolve, a file could not be opened for writing, a port could not be bound — and
each kind of failure is governed by one family of pod settings, whatever the program or the
incident: name resolution by the pod's DNS settings, file access by its security context and
mounts, binding by its ports and host network, memory by its limits and memory-backed volumes.
A changed setting of the family that governs the failure is the cause a human acts on; the
image (the code) is blamed only when no such setting changed.

The table is by failure kind and Kubernetes field, not by incident: its coverage is the list
of kinds below, each worded as the common runtimes and libraries word it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from triage.agent.planners.rules.diff import Change


@dataclass(frozen=True)
class Family:
    failure: re.Pattern[str]  # a log line of this kind of failure
    settings: re.Pattern[str]  # the paths of the settings that govern it
    what: str  # what the settings decide, for the answer


FAMILIES = (
    Family(
        re.compile(
            r"ENOTFOUND|EAI_AGAIN|NXDOMAIN|no such host|Name or service not known"
            r"|Temporary failure in name resolution|could not resolve|UnknownHostException"
            r"|getaddrinfo|Could not resolve host|nodename nor servname|server misbehaving"
            r"|host not found in upstream",
            re.I,
        ),
        re.compile(r"^(dnsPolicy|dnsConfig\.|hostAliases|hostNetwork|hostname|subdomain)"),
        "names resolve through the pod's DNS settings",
    ),
    Family(
        re.compile(
            r"permission denied|EACCES|EPERM|operation not permitted|read-only file system"
            r"|EROFS|AccessDeniedException: /|not writable|unable to (open|create|write)",
            re.I,
        ),
        re.compile(
            r"securityContext\.|readOnly|fsGroup|runAsUser|runAsGroup|runAsNonRoot"
            r"|capabilities|allowPrivilegeEscalation|volumeMounts\[|^volumes\["
        ),
        "what the process may read and write is set by the security context and the mounts",
    ),
    Family(
        re.compile(
            r"address already in use|EADDRINUSE|bind: |failed to bind|cannot assign requested"
            r"|listen tcp .*: (bind|permission)",
            re.I,
        ),
        re.compile(r"\.ports\[|containerPort|hostPort|^hostNetwork"),
        "what listens where is set by the container's ports and the host network",
    ),
    Family(
        re.compile(
            r"No such file or directory|ENOENT|FileNotFoundException|no such file"
            r"|not a directory|is a directory",
            re.I,
        ),
        re.compile(r"volumeMounts\[|^volumes\[|workingDir|subPath|mountPath"),
        "which files the container sees is set by its volumes and mounts",
    ),
    Family(
        re.compile(
            r"No space left on device|ENOSPC|Cannot allocate memory|ENOMEM|out of memory"
            r"|OOMKilled|disk quota exceeded",
            re.I,
        ),
        re.compile(r"emptyDir\.(medium|sizeLimit)|shm|ephemeral"),
        "a memory-backed or size-limited volume counts against the container's limits",
    ),
)


def explaining(line: str, changes: list[Change]) -> tuple[Change, str] | None:
    """The first changed setting (not the image, an env var or a label: those have their own
    reasoning) of the family that governs the failure `line` describes, with what that
    family decides; None when the line is of no known kind or no such setting changed."""
    for family in FAMILIES:
        if not family.failure.search(line):
            continue
        for change in changes:
            if change.what == "setting" and family.settings.search(_path(change)):
                return change, family.what
    return None


def _path(change: Change) -> str:
    return change.text.split(" ", 1)[0]
