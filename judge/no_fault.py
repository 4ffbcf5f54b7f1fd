"""Gate on "no fault": verified only when nothing the judge can read says otherwise.

The pods asked about, the warning events and the conditions of every kind read are healthy or
explained by a claim about that object (a Deployment short of replicas or mid-rollout, a
DaemonSet short of nodes, a Service routing to no ready pod, an HPA at its maximum that wants
more); a warning about a Pod or a ReplicaSet is settled by the judge's own read alone (the Pod
Ready now or gone, the Deployment rolled out since), never by a sentence of the answer; the
reads are complete (not capped); the symptom measured again in Prometheus did not rise; what
the user reports (failing requests, slowness, failed connections, scheduled work that did not
run) was measured and found absent (judge/symptoms.py); and what the user asked to be checked
(logs, a pasted alert) was read and explained.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from judge import symptoms
from judge.cause import (
    asked_pods,
    hpa_at_max,
    not_ready,
    recovered,
    unhealthy,
)
from judge.input import JudgeInput
from judge.reads import Findings, Json, Reads, selects_any
from tools.results import ToolStatus
from triage.core.causes import CauseClass
from triage.core.signals import ERROR_RATIO_FLOOR


def _bad_conditions(reads: Reads, ns: str) -> list[tuple[str, str]]:
    """(Kind/ns/name, what is wrong) for unhealthy states of every kind the judge reads."""
    bad: list[tuple[str, str]] = []
    pods = reads.items("k8s.pods", namespace=ns) or []
    for d in reads.items("k8s.deployments", namespace=ns) or []:
        if baking(d, pods):
            continue  # waiting out minReadySeconds with every pod Ready: by design
        if int(d.get("available") or 0) < int(d.get("replicas") or 0):
            bad.append((f"Deployment/{ns}/{d['name']}", "fewer available replicas than asked"))
        elif not _rolled_out(d):
            bad.append((f"Deployment/{ns}/{d['name']}", "a rollout that has not completed"))
    for s in reads.items("k8s.statefulsets", namespace=ns) or []:
        if int(s.get("ready") or 0) < int(s.get("replicas") or 0):
            bad.append((f"StatefulSet/{ns}/{s['name']}", "fewer ready replicas than asked"))
    for j in reads.items("k8s.jobs", namespace=ns) or []:
        if any(
            c.get("type") == "Failed" and c.get("status") == "True"
            for c in j.get("conditions") or []
        ):
            bad.append((f"Job/{ns}/{j['name']}", "failed"))
    for h in reads.items("k8s.hpas", namespace=ns) or []:
        for c in h.get("conditions") or []:
            if c.get("type") in ("ScalingActive", "AbleToScale") and c.get("status") == "False":
                bad.append((f"HorizontalPodAutoscaler/{ns}/{h['name']}", f"{c.get('type')}=False"))
    for c in reads.items("k8s.cronjobs", namespace=ns) or []:
        if c.get("suspend"):
            bad.append((f"CronJob/{ns}/{c['name']}", "suspended"))
    claims = reads.items("k8s.pvcs", namespace=ns) or []
    waiting = _waiting_for_consumer(reads, ns, claims)
    for claim in claims:
        if claim.get("phase") == "Pending" and claim.get("name") not in waiting:
            bad.append((f"PersistentVolumeClaim/{ns}/{claim['name']}", "Pending"))
    for d in reads.items("k8s.daemonsets", namespace=ns) or []:
        if int(d.get("ready") or 0) < int(d.get("desired") or 0):
            bad.append(
                (f"DaemonSet/{ns}/{d['name']}", "fewer ready pods than nodes it should run on")
            )
    for h in reads.items("k8s.hpas", namespace=ns) or []:
        if hpa_at_max([h]) and int(h.get("desired_replicas") or 0) > int(h["max_replicas"]):
            bad.append(
                (f"HorizontalPodAutoscaler/{ns}/{h['name']}", "at its maximum, wanting more")
            )
    for q in reads.items("k8s.resource_quotas", namespace=ns) or []:
        full = _used_up(q)
        if full:
            what = f"used up ({full}): the next create is refused"
            bad.append((f"ResourceQuota/{ns}/{q['name']}", what))
    return bad


_QUANTITY = re.compile(r"^(?P<n>\d+(?:\.\d+)?)(?P<u>m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
_SCALE = {"m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_SCALE |= {f"{u}i": 1024.0 ** (i + 1) for i, u in enumerate("KMGTPE")}


def _amount(quantity: object) -> float | None:
    """A Kubernetes quantity as the apiserver writes it in a quota's status ("20", "500m",
    "8Gi"), as a number."""
    m = _QUANTITY.match(str(quantity).strip())
    return float(m["n"]) * _SCALE.get(m["u"] or "", 1.0) if m else None


def _used_up(quota: Json) -> str:
    """'count/jobs.batch 20/20' for the first resource whose use has reached its hard limit:
    the quota admission refuses whatever asks for more of it (an object-count at its limit
    refuses the next object). A hard limit of 0 forbids the thing by policy: not used up."""
    used = quota.get("used") or {}
    for resource, hard in (quota.get("hard") or {}).items():
        h, u = _amount(hard), _amount(used.get(resource))
        if h and u is not None and u >= h:
            return f"{resource} {used[resource]}/{hard}"
    return ""


def _waiting_for_consumer(reads: Reads, ns: str, claims: list[Json]) -> set[str]:
    """Pending claims that Kubernetes holds Pending by design, on the judge's own reads: their
    StorageClass binds on first consumer (volumeBindingMode WaitForFirstConsumer) and no pod
    of the namespace mounts them, so nothing has asked for the volume yet."""
    pending = [c for c in claims if c.get("phase") == "Pending" and c.get("storage_class")]
    if not pending:
        return set()
    classes = {
        str(sc.get("name")): sc for sc in reads.items("k8s.storage_classes") or [] if sc.get("name")
    }
    pods = reads.items("k8s.pods", namespace=ns)
    if pods is None:
        return set()
    mounted = {str(c) for p in pods for c in p.get("claims") or []}
    return {
        str(c["name"])
        for c in pending
        if (classes.get(str(c["storage_class"])) or {}).get("binding_mode")
        == "WaitForFirstConsumer"
        and str(c["name"]) not in mounted
    }


def _ingress_policies(reads: Reads, ns: str, pods: list[Json]) -> list[str]:
    """Names of the ingress NetworkPolicies selecting any of `pods` (a policy with an empty
    selector selects the whole namespace): each drops what none of its rules admits."""
    out = []
    for pol in reads.items("k8s.network_policies", namespace=ns) or []:
        selector = pol.get("pod_selector") or {}
        if "Ingress" not in (pol.get("types") or []):
            continue
        if not selector or selects_any(selector, pods):
            out.append(str(pol.get("name")))
    return out


def baking(d: Json, pods: list[Json]) -> bool:
    """A rollout that waits, by design, for its new pods to stay Ready for minReadySeconds:
    the controller still reports it progressing (no ProgressDeadlineExceeded, no
    ReplicaFailure), every pod of the namespace it may own is Ready, and only availability
    lags readiness."""
    if not int(d.get("min_ready_s") or 0):
        return False
    conditions = [c for c in d.get("conditions") or [] if isinstance(c, dict)]
    progressing = any(
        c.get("type") == "Progressing"
        and c.get("status") == "True"
        and c.get("reason") != "ProgressDeadlineExceeded"
        for c in conditions
    )
    failing = any(
        c.get("type") == "ReplicaFailure" and c.get("status") == "True" for c in conditions
    )
    mine = [p for p in pods if str(p.get("name", "")).startswith(f"{d.get('name')}-")]
    return (
        progressing
        and not failing
        and bool(mine)
        and all(p.get("ready") for p in mine)
        and int(d.get("ready") or 0) >= int(d.get("replicas") or 0)
    )


def _rolled_out(d: Json) -> bool:
    """Every replica runs the newest revision and the controller reports no failure."""
    failing = any(
        (c.get("type") == "ReplicaFailure" and c.get("status") == "True")
        or (c.get("type") == "Progressing" and c.get("status") == "False")
        for c in d.get("conditions") or []
        if isinstance(c, dict)
    )
    return not failing and int(d.get("updated") or 0) >= int(d.get("replicas") or 0)


def _over(
    reads: Reads, ns: str, kind: str, name: str, pods: list[Json], asked: list[Json], words: str
) -> bool | None:
    """Whether the judge's own reads show a warning's object recovered: a Pod Ready now or
    gone, a ReplicaSet whose Deployment has rolled out (or was replaced by a newer revision
    that has), a Node without trouble. For what the request asks about; None otherwise and
    for a kind it cannot check this way: the answer must explain those (another workload
    broken beside the one asked about is reported as such, not as the answer's fault)."""
    if kind == "Pod":
        pod = next((p for p in pods if p.get("name") == name), None)
        if pod is None:
            return True
        if not any(p.get("name") == name for p in asked):
            return None
        return bool(pod.get("ready")) and not unhealthy([pod])
    if kind == "Node":
        node = next((n for n in reads.items("k8s.nodes") or [] if n.get("name") == name), None)
        return node is None or not _node_trouble(node)
    if kind == "ReplicaSet":
        owners = [
            d
            for d in reads.items("k8s.deployments", namespace=ns) or []
            if name.startswith(f"{d.get('name')}-")
        ]
        ours = any(
            str(d.get("name")) in words
            or any(str(p.get("name", "")).startswith(f"{d.get('name')}-") for p in asked)
            for d in owners
        )
        if not ours:
            return None
        return all(_rolled_out(d) for d in owners)
    return None


PRESSURE = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")


def _node_trouble(node: Json) -> str | None:
    """What is wrong with a node as its conditions and spec say, or None."""
    conditions = {str(c.get("type")): c.get("status") for c in node.get("conditions") or []}
    if conditions.get("Ready") != "True":
        return "not Ready"
    under = [t for t in PRESSURE if conditions.get(t) == "True"]
    if under:
        return f"under {', '.join(under)}"
    return "cordoned (unschedulable)" if node.get("unschedulable") else None


def _named_nodes(reads: Reads, words: str) -> list[tuple[str, str]]:
    """(subject, what is wrong) for each node the request names that is in trouble."""
    bad = []
    for node in reads.items("k8s.nodes") or []:
        name = str(node.get("name") or "")
        trouble = _node_trouble(node) if name and name in words else None
        if trouble:
            bad.append((f"Node//{name}", trouble))
    return bad


MAX_SERVICES = 5  # Services whose endpoints a 'no fault' reads


def _services_without_endpoints(reads: Reads, ns: str, pods: list[Json]) -> list[tuple[str, str]]:
    """Services that select some of `pods` and route to none of them: what a caller of the
    Service sees is a refused or timed-out connection, whatever the pods say."""
    bad = []
    selecting = [
        svc
        for svc in reads.items("k8s.services", namespace=ns) or []
        if (svc.get("selector") or {}) and selects_any(svc["selector"], pods)
    ]
    for svc in selecting[:MAX_SERVICES]:
        for ep in reads.items("k8s.endpoints", namespace=ns, service=svc["name"]) or []:
            if int(ep.get("ready") or 0) == 0:
                bad.append((f"Service/{ns}/{svc['name']}", "without a ready endpoint"))
    return bad


def no_fault_explained(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    draft = inp.candidate
    ns = inp.namespace
    if ns is None or draft.root_cause_class is not CauseClass.NO_FAULT or draft.inconclusive:
        return
    explained = {c.subject for c in (*draft.root_cause, *draft.contributing_factors) if c.subject}
    missing_before = len(out.missing)
    pods_read = reads.get("k8s.pods", namespace=ns)
    events_read = reads.get("k8s.events", namespace=ns, warnings_only=True)
    for result, what in ((pods_read, "pods"), (events_read, "warning events")):
        if result.status not in (ToolStatus.OK, ToolStatus.NO_DATA):
            out.missing.append(f"'no fault' needs the {what} of {ns}, which could not be read")
        elif result.truncated:
            out.missing.append(
                f"the {what} of {ns} were capped: 'no fault' cannot rest on a partial list"
            )
    if any(o.truncated for o in inp.outcomes if o.name in ("k8s.pods", "k8s.events")):
        out.missing.append("the investigation's own pod or event list was capped: incomplete")
    pods = reads.items("k8s.pods", namespace=ns) or []

    def history(p: Json) -> bool:
        """Its only trouble is a restart long ago, and the answer says so."""
        containers = [c for c in p.get("containers") or [] if isinstance(c, dict)]
        return (
            f"Pod/{ns}/{p.get('name')}" in explained
            and bool(p.get("ready"))
            and all(recovered(c, inp.now) or not c.get("restarts") for c in containers)
        )

    asked = asked_pods(inp, pods)
    failing = [p for p in asked if (unhealthy([p]) or not_ready([p])) and not history(p)]
    if failing:
        out.missing.append(
            f"the RCA says no fault, but {failing[0]['name']} is failing (crash, OOM, image, "
            "pending, failed or not ready)"
        )
    for e in reads.items("k8s.events", namespace=ns, warnings_only=True) or []:
        obj = e.get("object") or {}
        kind, name = str(obj.get("kind")), str(obj.get("name"))
        over = _over(reads, ns, kind, name, pods, asked, inp.words)
        if over is False:  # read again and still failing: no sentence of the answer outweighs it
            out.missing.append(
                f"warning event {e.get('reason')} on {kind} {name}, which has not recovered"
            )
        elif over is None and f"{kind}/{ns}/{name}" not in explained:
            out.missing.append(
                f"warning event {e.get('reason')} on {kind} {name} is not explained by the "
                "'no fault' answer"
            )
    for subject, what in (
        *_bad_conditions(reads, ns),
        *_services_without_endpoints(reads, ns, asked),
        *_named_nodes(reads, inp.words),
    ):
        if subject not in explained and subject.replace("//", f"/{ns}/") not in explained:
            shown = subject.replace(f"/{ns}/", " ").replace("//", " ")
            out.missing.append(f"{shown} is {what}, which 'no fault' does not explain")
    for rose in symptoms.rose(reads, ns, inp.now):
        out.missing.append(f"{rose} in {ns} in the last hours, which 'no fault' does not explain")
    failed = symptoms.failed_calls(reads, ns, asked)
    if failed is not None:
        out.missing.append(f"{failed}, a failed call 'no fault' does not explain")
    for why in symptoms.unconfirmed(inp.reported, reads, ns, asked, inp.now, inp.words):
        out.missing.append(f"{why}: 'no fault' does not answer it")
    seen = symptoms.says_healthy(inp.words)
    outcomes = [k for k in inp.reported if k is not symptoms.Reported.NOT_RUN]
    if seen is not None and outcomes and not _measured_at_edge(inp, reads, ns, outcomes):
        # they looked at the pods and still see the failure: the pods' health is no answer,
        # unless what they see was measured where they see it (the proxy in front counts no
        # server error for the namespace in the whole window)
        out.missing.append(
            f"the request reports {outcomes[0]} while saying \"{seen}\": a 'no fault' from the "
            "health of what it names tells the requester what they already saw, and the failure "
            "they see was not found where they see it (a proxy, a client, a dependency)"
        )
    if symptoms.Reported.UNREACHABLE in inp.reported:
        said = " ".join(c.text for c in (*draft.root_cause, *draft.contributing_factors))
        for pol in _ingress_policies(reads, ns, asked):
            if pol not in said:
                out.missing.append(
                    f"NetworkPolicy {pol} selects the pods asked about and drops what its rules "
                    "do not admit: 'no fault' to a report of failed or dropped connections must "
                    "say what it admits"
                )
    if "logs" in inp.checks and not any(
        o.name == "k8s.logs" and o.status is ToolStatus.OK for o in inp.outcomes
    ):
        out.missing.append("the request asked to check the logs, and no log was read")
    if inp.alert is not None and not any(
        (c.subject or "").startswith("Alert/") and (c.subject or "").endswith(f"/{inp.alert}")
        for c in draft.root_cause
    ):
        out.missing.append(
            f"the pasted alert {inp.alert} is not explained by the 'no fault' answer"
        )
    if len(out.missing) == missing_before:
        out.met.append(
            f"'no fault' is complete: the pods, warning events and conditions read in {ns} are "
            "healthy or explained"
        )


def _measured_at_edge(
    inp: JudgeInput, reads: Reads, ns: str, outcomes: Sequence[symptoms.Reported]
) -> bool:
    """Failing requests the user sees, measured where they see them: the proxy in front counts
    the namespace's requests, and no more than the floor of them were server errors at any
    time in the window."""
    at_edge = symptoms.edge_share(reads, ns, inp.now or time.time())
    return (
        list(outcomes) == [symptoms.Reported.ERRORS]
        and at_edge is not None
        and at_edge.peak <= ERROR_RATIO_FLOOR
    )
