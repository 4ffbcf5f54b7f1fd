"""What the analyzers share: the goal, the facts, the namespace, and what the user asked about.

Names in the question are resolved against every kind the reader listed (Deployments,
StatefulSets, DaemonSets, Jobs, CronJobs, Services, Pods, Ingresses, HPAs, PVCs, nodes) and
by prefix ("bert-finetune" for the Job bert-finetune-0610) — never guessed from the shape of
a word. Only names the user gave *as objects* ("deployment ghost-api", `ghost-api`) that match
nothing are reported as nonexistent; a hyphenated word that matches nothing is just a word.
An alert's labels (namespace, pod, deployment, service, …) name the focus too.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from tools.read import payloads as p
from triage.agent.planners.rules.facts import Facts, Ref, selects, workload_of, workload_ref
from triage.core.models import Goal, Workload

_WORD = re.compile(r"(?<![\w./-])[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?![\w/-])")
_ALERT_KINDS = {
    "pod": "Pod",
    "deployment": "Deployment",
    "statefulset": "StatefulSet",
    "daemonset": "DaemonSet",
    "service": "Service",
    "job": "Job",
    "cronjob": "CronJob",
    "node": "Node",
}


@dataclass
class Ctx:
    goal: Goal
    facts: Facts
    ns: str
    now: float
    focus: set[str] = field(default_factory=set)  # Kind/ns/name of what was asked about
    focus_pods: list[p.Pod] = field(default_factory=list)
    unresolved: list[Workload] = field(default_factory=list)
    asked: list[Ref] = field(default_factory=list)  # what the question's names resolved to
    whole_namespace: bool = True  # nothing named: the whole namespace is the focus

    def ref(self, kind: str, name: str, ns: str | None = None) -> Ref:
        return Ref(kind, self.ns if ns is None else ns, name)

    def pod_ref(self, pod: p.Pod, ns: str | None = None) -> Ref:
        return Ref("Pod", ns or self.ns, pod["name"])

    def workload_ref(self, pod: p.Pod, ns: str | None = None) -> Ref:
        kind, name = workload_of(pod)
        return Ref(kind, self.ns if ns is None else ns, name)

    def in_focus(self, ref: Ref) -> bool:
        return self.whole_namespace or str(ref) in self.focus

    def ingress_asked(self, ing: p.Ingress) -> bool:
        """The Ingress is what was asked about: named, routing to an asked-about Service,
        serving a host the words name, or nothing was named."""
        words = self.goal.words.lower()
        return (
            self.in_focus(self.ref("Ingress", ing["name"]))
            or any(
                str(self.ref("Service", str(b.get("service")))) in self.focus
                for b in ing["backends"]
            )
            or any(b.get("host") and str(b["host"]).lower() in words for b in ing["backends"])
        )


Names = dict[str, list[tuple[str, str]]]  # a name -> (kind, namespace) of each object so named


def _candidates(facts: Facts, ns: str) -> Names:
    """Every object name the reader listed in `ns` (and the cluster's nodes) → the kinds and
    namespaces it names (a Ref is made only for a name the question uses: a thousand pods
    cost a thousand tuples)."""
    out: Names = {}

    def add(kind: str, name: str, where: str = ns) -> None:
        out.setdefault(name, []).append((kind, where))

    for kind, items in (
        ("Deployment", facts.deployments(ns)[0]),
        ("StatefulSet", facts.statefulsets(ns)[0]),
        ("DaemonSet", facts.daemonsets(ns)[0]),
        ("Job", facts.jobs(ns)[0]),
        ("CronJob", facts.cronjobs(ns)[0]),
        ("Service", facts.services(ns)[0]),
        ("Ingress", facts.ingresses(ns)[0]),
        ("HorizontalPodAutoscaler", facts.hpas(ns)[0]),
        ("PersistentVolumeClaim", facts.pvcs(ns)[0]),
    ):
        for item in items:
            add(kind, str(item["name"]))
    for pod in facts.pods(ns)[0]:
        add("Pod", pod["name"])
    for node in facts.nodes()[0]:
        add("Node", node["name"], "")
    return out


def resolve(goal: Goal, facts: Facts, ns: str) -> tuple[list[Ref], list[Workload]]:
    """(refs the question's names point at, explicit names that match nothing)."""
    names = _candidates(facts, ns)

    def named(name: str) -> list[Ref]:
        return [Ref(kind, where, name) for kind, where in names.get(name, ())]

    refs: list[Ref] = []
    unresolved: list[Workload] = []
    compounds = _compounds(goal.words.lower(), names)
    for compound in compounds:
        refs.extend(r for r in named(compound) if r.kind != "Pod")
    # a word that is part of a name the words spell out is not a name of its own: in
    # "the orders-pg backup failed", orders-pg (a StatefulSet) is not what was asked about
    within = {part for compound in compounds for part in _parts(compound)}
    for w in goal.scope.workloads:
        if w.name in within and not w.kind:
            continue
        found = named(w.name)
        if w.kind:
            found = [r for r in found if r.kind == w.kind] or found
        if not found:  # by prefix: bert-finetune -> Job bert-finetune-0610
            found = [
                Ref(kind, where, name)
                for name, kinds in names.items()
                if name.startswith(w.name + "-")
                for kind, where in kinds
                if kind != "Pod"
            ]
        if not found and w.kind is None:
            found = [
                r
                for pod in facts.pods(ns)[0]
                if pod["labels"].get("app") == w.name
                for r in [workload_ref(pod, ns)]
            ]
        if found:
            refs.extend(found)
        elif w.explicit:
            unresolved.append(w)
    # Every other word that is the exact name of something the reader listed ("gateway",
    # "checkout"): the cluster decides what is a name, not the shape of the word.
    asked = {w.name for w in goal.scope.workloads}
    for word in dict.fromkeys(_WORD.findall(goal.words.lower())):
        if word not in asked and word in names and word != ns and word not in within:
            refs.extend(r for r in named(word) if r.kind != "Node" or "-" in word)
    alert = goal.alert
    if alert is not None:
        for label, kind in _ALERT_KINDS.items():
            value = alert.labels.get(label)
            if not value:
                continue
            if kind in ("Node", "Pod"):
                refs.append(Ref(kind, "" if kind == "Node" else ns, value))
                continue
            # an alert's `service` label is often the app's name (the scrape job's), not a
            # Service object: whatever exists under that name, the label's kind first
            existing = named(value)
            refs.extend([r for r in existing if r.kind == kind] or existing)
    return list(dict.fromkeys(refs)), unresolved


MAX_COMPOUND = 4  # words of a name written with spaces for its hyphens


def _compounds(words: str, names: Names) -> list[str]:
    """Names the words spell with spaces where the name has hyphens ("the orders-pg backup"
    for the CronJob orders-pg-backup, "search delta indexer"): runs of words separated by
    blanks only, joined with hyphens, that are exactly the name of something listed — the
    longest run first, and a run inside a longer match is not a match of its own."""
    tokens = list(_WORD.finditer(words))
    out: list[str] = []
    taken: set[int] = set()
    for size in range(MAX_COMPOUND, 1, -1):
        for i in range(len(tokens) - size + 1):
            run = tokens[i : i + size]
            if taken.intersection(range(i, i + size)):
                continue
            if not all(words[a.end() : b.start()].isspace() for a, b in itertools.pairwise(run)):
                continue
            joined = "-".join(m.group(0) for m in run)
            if any(kind != "Pod" for kind, _ in names.get(joined, ())):
                out.append(joined)
                taken.update(range(i, i + size))
    return out


def _parts(compound: str) -> set[str]:
    """Every run of a compound name's hyphen-separated parts shorter than the whole:
    orders-pg-backup -> orders, pg, backup, orders-pg, pg-backup."""
    bits = compound.split("-")
    return {
        "-".join(bits[i:j])
        for i in range(len(bits))
        for j in range(i + 1, len(bits) + 1)
        if j - i < len(bits)
    }


def build(goal: Goal, facts: Facts, ns: str, now: float) -> Ctx:
    refs, unresolved = resolve(goal, facts, ns)
    ctx = Ctx(goal=goal, facts=facts, ns=ns, now=now, unresolved=unresolved, asked=refs)
    pods, _ = facts.pods(ns)
    services, _ = facts.services(ns)
    chosen: dict[str, p.Pod] = {}
    for ref in refs:
        ctx.focus.add(str(ref))
        if ref.kind == "Pod":
            chosen.update({x["name"]: x for x in pods if x["name"] == ref.name})
            continue
        if ref.kind == "PersistentVolumeClaim":  # the pods that mount the claim
            chosen.update({x["name"]: x for x in pods if ref.name in x["claims"]})
            continue
        if ref.kind == "Service":
            svc = next((s for s in services if s["name"] == ref.name), None)
            if svc is not None:
                chosen.update({x["name"]: x for x in pods if selects(svc["selector"], x["labels"])})
            continue
        chosen.update({x["name"]: x for x in facts.pods_of(ns, ref.kind, ref.name)})
    for pod in chosen.values():
        ctx.focus.add(str(ctx.pod_ref(pod)))
        ctx.focus.add(str(ctx.workload_ref(pod)))
        for svc in facts.services_selecting(ns, pod):
            ctx.focus.add(str(ctx.ref("Service", svc["name"])))
    ctx.whole_namespace = not refs
    ctx.focus_pods = list(chosen.values()) if refs else list(pods)
    return ctx
