"""Gate: every change the request commands was executed through the ledger and its own effect
shows in the cluster (a restart's stamp on the pod template, replicas as asked, a pod gone),
waiting a bounded time for the controllers to act on a write that just landed."""

from __future__ import annotations

import time

from judge.input import JudgeInput, PerformedMutation
from judge.reads import Findings, Json, Reads


def _deployment(reads: Reads, ns: str, name: str) -> Json | None:
    items = reads.items("k8s.deployments", namespace=ns)
    return next((d for d in items or [] if d.get("name") == name), None)


def _effect(m: PerformedMutation, reads: Reads) -> tuple[bool, str]:
    """Is the operation's own effect visible in the cluster (not merely "the call returned")?"""
    parts = m.target.split("/")
    if len(parts) != 3:
        return False, f"target {m.target!r} is not kind/namespace/name"
    _kind, ns, name = parts
    if m.action in ("scale", "rollout_restart", "rollback"):
        dep = _deployment(reads, ns, name)
        if dep is None:
            return False, f"Deployment {ns}/{name} not found"
        replicas = int(dep.get("replicas") or 0)
        observed = dep.get("observed_generation") == dep.get("generation")
        if m.action == "scale":
            if replicas != m.args.get("replicas"):
                return False, f"{name} has {replicas} replicas, {m.args.get('replicas')} were asked"
            return observed, f"{name} is set to {replicas} replicas" + (
                "" if observed else " (not yet observed by the controller)"
            )
        if m.action == "rollout_restart":
            stamped = dep.get("restart_stamp") == m.operation_id
            if not stamped:
                return False, f"{name}'s pod template does not carry the restart {m.operation_id}"
            rolled = int(dep.get("updated") or 0) == replicas
            return observed, (
                f"{name} restarted: a new revision carries {m.operation_id}"
                + ("" if rolled else f" ({dep.get('updated')}/{replicas} pods updated so far)")
            )
        done = observed and int(dep.get("updated") or 0) == replicas
        return done, f"{name} is at revision {dep.get('revision')}" + (
            "" if done else " (rollout in progress)"
        )
    if m.action == "delete_pod":
        pods = reads.items("k8s.pods", namespace=ns)
        if pods is None:
            return False, "could not list pods"
        gone = all(p.get("name") != name for p in pods)
        return gone, f"pod {ns}/{name} {'is gone' if gone else 'still exists'}"
    return m.status == "Succeeded", (
        f"the ledger records {m.operation_id} as {m.status}; the judge's read tools cannot see "
        f"the effect of {m.action} themselves"
    )


EFFECT_WAIT_S = 20.0
EFFECT_POLL_S = 0.5


def _settled_effect(m: PerformedMutation, reads: Reads) -> tuple[bool, str]:
    """The effect, waiting a bounded time for the controllers to act on a write that just
    landed (a Deployment's controller observes a new generation within seconds)."""
    deadline = time.monotonic() + EFFECT_WAIT_S
    ok, detail = _effect(m, reads)
    while not ok and time.monotonic() < deadline:
        time.sleep(EFFECT_POLL_S)
        ns = m.target.split("/")[1] if m.target.count("/") == 2 else ""
        reads.forget("k8s.deployments", namespace=ns)
        reads.forget("k8s.pods", namespace=ns)
        ok, detail = _effect(m, reads)
    return ok, detail


def mutations_took_effect(inp: JudgeInput, reads: Reads, out: Findings) -> None:
    """Every change the request commands was executed through the ledger and shows in the
    cluster; a refused, failed or superseded operation is not done, whatever else holds."""
    for command in inp.commands:
        action = command.action.value
        done = [
            m
            for m in inp.mutations
            if m.action == action and m.target.rpartition("/")[2] == command.target.name
        ]
        if not done:
            out.missing.append(f"requested {command.sentence()} was not performed")
            continue
        for m in done:
            op = f" (operation {m.operation_id})" if m.operation_id else ""
            if m.status != "Succeeded":
                why = f": {m.detail}" if m.detail else ""
                out.missing.append(
                    f"{m.action} {m.target}{op} was not applied: {m.status or 'refused'}{why}"
                )
                continue
            ok, detail = _settled_effect(m, reads)
            if ok:
                out.met.append(f"{m.action} {m.target}{op} took effect: {detail}")
            else:
                out.missing.append(f"{m.action} {m.target}{op} did not take effect: {detail}")
