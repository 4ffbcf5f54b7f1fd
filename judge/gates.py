"""The deterministic gates: what can be decided from fields, before any model is asked.

Each gate reads the candidate, the recorded tool outcomes and — through the read registry, the
only tools the judge holds — the cluster as it is now, and adds to the three lists. They gate on
fields (statuses, reasons, phases, digests), never on the wording of a claim:

1. `named_things_exist`: what the request names exists; what does not goes to `nonexistent`.
2. `deliverable_stored`: the RCAReport exists and holds exactly what was drafted (digest).
3. `sections_present`: summary, impact, and a root cause. An honest "inconclusive" is kept
   as the candidate but does not meet a request to find out why: it is missing a cause.
4. `claims_cite_ok_evidence`: every claim cites recorded evidence whose status is ok.
5. `root_cause_matches_cluster`: the root-cause class is not contradicted by the cluster (an
   "OOMKilled" root cause needs a container whose last termination says OOMKilled).
6. `mutations_took_effect`: a requested change is visible (replicas as asked, rollout
   complete, pod gone).

A read the judge cannot make is never taken as success: it goes to `missing`.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from judge.cause import (
    chain_is_a_cause,
    facts_hold,
    pod_names,
    release_does_it,
    root_cause_matches_cluster,
)
from judge.effects import mutations_took_effect
from judge.input import JudgeInput
from judge.no_fault import no_fault_explained
from judge.reads import Findings, Json, Reads, failed
from tools.results import ErrorKind, ToolStatus

__all__ = ["Findings", "Reads", "run_all"]

# -- 1. named things exist -------------------------------------------------------------------------

_LISTS_BY_KIND: dict[str, tuple[str, ...]] = {
    "Deployment": ("k8s.deployments",),
    "StatefulSet": ("k8s.statefulsets",),
    "DaemonSet": ("k8s.daemonsets",),
    "Service": ("k8s.services",),
    "Job": ("k8s.jobs",),
    "CronJob": ("k8s.cronjobs",),
    "Pod": ("k8s.pods",),
    "HorizontalPodAutoscaler": ("k8s.hpas",),
    "PersistentVolumeClaim": ("k8s.pvcs",),
    "Ingress": ("k8s.ingresses",),
}
# Every kind a name may belong to: resolved against all of them (and by prefix), never
# guessed from the shape of a word.
_ANY_KIND = tuple(dict.fromkeys(t for tools in _LISTS_BY_KIND.values() for t in tools))


def _names_in(tool: str, items: list[Json]) -> set[str]:
    if tool == "k8s.pods":
        return {n for p in items for n in pod_names(p)}
    return {str(x.get("name")) for x in items}


_WORD = re.compile(r"(?<![\w./-])[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?![\w/-])")


def _matches(name: str, names: set[str]) -> bool:
    return name in names or any(n.startswith(name + "-") for n in names)


def named_things_exist(inp: JudgeInput, reads: Reads, out: Findings) -> bool:
    """Adds to `nonexistent`; returns False when nothing the request is about exists.

    A name is looked up in every kind (its own kind first, when the request gave one), by
    exact name and by prefix ("bert-finetune" for the Job bert-finetune-0610), and among the
    nodes; only a name the request gave as an object ("deployment ghost-api") that matches
    nothing is reported as nonexistent — a hyphenated word that matches nothing is a word."""
    ns = inp.namespace
    if ns is None:
        out.missing.append("the request names no namespace, so nothing could be checked")
        return False
    ns_read = reads.get("k8s.namespace", namespace=ns)
    if ns_read.error_kind is ErrorKind.NOT_FOUND:
        out.nonexistent.append(f"namespace {ns}")
        return False
    if ns_read.status is not ToolStatus.OK:
        out.missing.append(f"could not confirm namespace {ns} exists ({failed(ns_read)})")
        return True
    _words_that_name(inp, reads, out)
    if not inp.named:
        return True
    found_any = False
    for workload in inp.named:
        own = _LISTS_BY_KIND.get(workload.kind or "", ())
        lists = (*own, *(x for x in _ANY_KIND if x not in own))
        exists, unknown = False, []
        for tool in lists:
            items = reads.items(tool, namespace=ns)
            if items is None:
                unknown.append(tool)
                continue
            if _matches(workload.name, _names_in(tool, items)):
                exists = True
                break
        if not exists:
            nodes = reads.items("k8s.nodes") or []
            exists = _matches(workload.name, {str(n.get("name")) for n in nodes})
        label = f"{workload.kind or 'workload'} {workload.name} in namespace {ns}"
        if exists:
            found_any = True
            out.met.append(f"{label} exists")
            if workload.name not in out.asked:
                out.asked.append(workload.name)
        elif not workload.explicit:
            continue  # a word, not an object: nothing to report
        elif unknown:
            out.missing.append(f"could not check that {label} exists ({', '.join(unknown)})")
            found_any = True
        else:
            out.nonexistent.append(label)
    return found_any or not any(w.explicit for w in inp.named)


def _words_that_name(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    """The request's words that are the exact name of a workload, Service or claim the reader
    lists in the namespace ("nexus", "gateway"): the cluster decides what is a name, not the
    shape of a word, so a hyphenated word that names nothing ("on-prem") is not asked about."""
    listed: set[str] = set()
    for tool in _ANY_KIND:
        if tool != "k8s.pods":
            listed |= _names_in(tool, reads.items(tool, namespace=inp.namespace) or [])
    named = {w.name for w in inp.named}
    for word in dict.fromkeys(_WORD.findall(inp.words.lower())):
        if word in listed and word not in named and word != inp.namespace:
            out.asked.append(word)


# -- 2. the deliverable is in the system of record -------------------------------------------------


def deliverable_stored(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    delivery = inp.delivery
    if delivery is None:
        out.missing.append("the RCA was not submitted to the cluster (no RCAReport written)")
        return
    where = f"RCAReport {delivery.namespace}/{delivery.name}"
    if delivery.error is not None:
        out.missing.append(f"{where} could not be written: {delivery.error}")
        return
    result = reads.get("k8s.rcareport", namespace=delivery.namespace, name=delivery.name)
    if result.error_kind is ErrorKind.NOT_FOUND:
        out.missing.append(f"{where} does not exist in the cluster (deleted, or never written)")
        return
    if result.status is not ToolStatus.OK or not isinstance(result.data, dict):
        out.missing.append(f"{where} could not be read back ({failed(result)})")
        return
    stored = result.data.get("draft_digest")
    declared = result.data.get("spec_digest")
    if stored != inp.digest or declared != inp.digest:
        out.missing.append(
            f"{where} does not hold the submitted draft (stored {str(stored)[:19]}…, "
            f"submitted {inp.digest[:19]}…): it was changed after submit"
        )
        return
    out.met.append(f"{where} exists and holds the submitted draft ({inp.digest[:19]}…)")


# -- 3. required sections --------------------------------------------------------------------------


def sections_present(inp: JudgeInput, out: Findings) -> None:
    draft = inp.candidate
    before = len(out.missing)
    for name, value in (("title", draft.title), ("summary", draft.summary)):
        if not value.strip():
            out.missing.append(f"required section missing: {name}")
    if not draft.impact.strip():
        out.missing.append("required section missing: impact")
    if draft.inconclusive:
        # Honest, but not what was asked: the request is met only by an established cause.
        out.missing.append(
            f"no root cause established (inconclusive: {draft.summary[:160]}); "
            f"{len(draft.checked)} calls checked"
            + (f", unavailable: {'; '.join(draft.unavailable)[:160]}" if draft.unavailable else "")
        )
    elif not draft.root_cause:
        out.missing.append("required section missing: root cause (no claim)")
    if len(out.missing) == before:
        out.met.append("required sections present (title, summary, impact, root cause)")


# -- 4. citations ----------------------------------------------------------------------------------


def claims_cite_ok_evidence(inp: JudgeInput, out: Findings) -> None:
    draft = inp.candidate
    sections = (
        ("root cause", draft.root_cause),
        ("contributing factor", draft.contributing_factors),
    )
    bad = 0
    for section, claims in sections:
        for claim in claims:
            for evidence_id in claim.evidence:
                outcome = inp.status_of(evidence_id)
                quoted = claim.text[:80] + ("…" if len(claim.text) > 80 else "")
                if outcome is None:
                    bad += 1
                    out.missing.append(
                        f"{section} '{quoted}' cites {evidence_id}, which was never recorded"
                    )
                elif outcome.status is not ToolStatus.OK:
                    bad += 1
                    out.missing.append(
                        f"{section} '{quoted}' cites {evidence_id} ({outcome.name}), whose "
                        f"result was {outcome.status.value}, not ok"
                    )
    for entry in draft.timeline:
        for evidence_id in entry.evidence:
            outcome = inp.status_of(evidence_id)
            if outcome is None or outcome.status is not ToolStatus.OK:
                bad += 1
                status = outcome.status.value if outcome else "never recorded"
                out.missing.append(
                    f"timeline entry '{entry.what[:60]}' cites {evidence_id} ({status})"
                )
    if not bad:
        count = len(draft.cited_ids())
        out.met.append(f"every claim cites evidence whose status is ok ({count} ids)")


def run_all(inp: JudgeInput, reads: Reads, *, record: bool) -> Findings:
    """Every gate, in order. `record`: also check the deliverable in the system of record."""
    out = Findings()

    def gate(name: str, check: Callable[[], object]) -> object:
        before = len(out.missing)
        result = check()
        if len(out.missing) > before:
            out.failed_gates.append(name)
        return result

    anything = gate("named_things_exist", lambda: named_things_exist(inp, reads, out))
    if not anything:
        return out  # nothing the request is about exists: nothing else can be checked
    if record:
        gate("deliverable_stored", lambda: deliverable_stored(inp, reads, out))
    gate("sections_present", lambda: sections_present(inp, out))
    gate("claims_cite_ok_evidence", lambda: claims_cite_ok_evidence(inp, out))
    gate("root_cause_matches_cluster", lambda: root_cause_matches_cluster(inp, reads, out))
    gate("facts_hold", lambda: facts_hold(inp, reads, out))
    gate("chain_is_a_cause", lambda: chain_is_a_cause(inp, out, out.asked))
    gate("release_does_it", lambda: release_does_it(inp, out))
    gate("no_fault_explained", lambda: no_fault_explained(inp, reads, out))
    gate("mutations_took_effect", lambda: mutations_took_effect(inp, reads, out))
    return out
