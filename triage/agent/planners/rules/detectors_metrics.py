"""Detectors that rest on Prometheus series: the error ratio and what changed when it rose.

A deploy is placed in time by two independent sources: the newest ReplicaSet's creation in the
rollout history, and the moment `kube_deployment_metadata_generation` (kube-state-metrics)
last stepped up. Either one inside the window before the rise ties the errors to the deploy;
each claim cites the evidence it used.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from tools.results import ToolStatus
from triage.agent.planners.rules.findings import (
    DEPLOY_WINDOW_S,
    ERROR_RATIO_ALERT,
    Ctx,
    Finding,
    cite,
    fmt_time,
    parse_ts,
    present,
)
from triage.core.causes import CauseClass
from triage.core.models import Claim, MutationProposal, TimelineEntry


def ratio_series(ctx: Ctx) -> tuple[list[tuple[float, float]], str] | None:
    """The namespace's 5xx ratio over the window, and the evidence id it came from."""
    for ev in ctx.facts.all("prom.range"):
        q = ev.args.get("query", "")
        if ev.status is ToolStatus.OK and "http_requests_total" in q and "5.." in q and ev.data:
            points = [(t, v) for t, v in ev.data[0]["values"] if not math.isnan(v)]
            if points:
                return points, ev.id
    return None


def generation_changes(ctx: Ctx) -> tuple[dict[str, float], str | None]:
    """deployment name -> when its generation last stepped up, from kube-state-metrics."""
    changes: dict[str, float] = {}
    for ev in ctx.facts.all("prom.range"):
        if ev.status is not ToolStatus.OK or "kube_deployment_metadata_generation" not in str(
            ev.args.get("query")
        ):
            continue
        for series in ev.data:
            name = series["labels"].get("deployment")
            values = series["values"]
            for (_, before), (t, after) in itertools.pairwise(values):
                if name and after > before:
                    changes[name] = t
        return changes, ev.id
    return changes, None


def _in_window(rise: float, deployed: float | None) -> bool:
    return deployed is not None and DEPLOY_WINDOW_S[0] <= rise - deployed <= DEPLOY_WINDOW_S[1]


def error_rate(ctx: Ctx) -> Finding | None:
    found = ratio_series(ctx)
    if found is None:
        return None
    points, pid = found
    third = max(len(points) // 3, 1)
    baseline = sorted(v for _, v in points[:third])[third // 2]
    threshold = max(ERROR_RATIO_ALERT, baseline * 3)
    rise = next(((t, v) for t, v in points if v > threshold), None)
    if rise is None:
        return None
    peak = max(v for _, v in points)
    main = cite(
        f"The 5xx ratio rose from {baseline:.1%} to {rise[1]:.1%} at {fmt_time(rise[0])} and "
        f"peaked at {peak:.1%}.",
        pid,
    )
    generations, gen_id = generation_changes(ctx)
    for ev in ctx.facts.all("k8s.rollout_history"):
        if ev.status is not ToolStatus.OK or len(ev.data["revisions"]) < 2:
            continue
        dep: dict[str, Any] = ev.data["deployment"]
        newest, prev = ev.data["revisions"][-1], ev.data["revisions"][-2]
        created = parse_ts(newest["created"])
        gen_at = generations.get(dep["name"])
        claims: list[Claim | None] = []
        images = ", ".join(newest["images"])
        if _in_window(rise[0], created) and created is not None:
            deployed_at = created
            claims.append(
                cite(
                    f"Deployment {dep['name']} rolled out revision {newest['revision']} (image "
                    f"{images}, previously {', '.join(prev['images'])}) at "
                    f"{fmt_time(created)}, {(rise[0] - created) / 60:.0f} min before the rise.",
                    ev.id,
                )
            )
        elif _in_window(rise[0], gen_at) and gen_at is not None:
            deployed_at = gen_at
            claims.append(
                cite(
                    f"Deployment {dep['name']} is at revision {newest['revision']} (image "
                    f"{images}, previously {', '.join(prev['images'])}).",
                    ev.id,
                )
            )
            claims.append(
                cite(
                    f"Its generation changed (a deploy) at {fmt_time(gen_at)}, "
                    f"{(rise[0] - gen_at) / 60:.0f} min before the 5xx rise.",
                    gen_id,
                )
            )
        else:
            continue
        return Finding(
            cls=CauseClass.REGRESSION_AFTER_DEPLOY,
            score=84,
            summary=f"5xx errors rose to {peak:.1%} right after the deploy of {dep['name']} "
            f"revision {newest['revision']} ({images})",
            claims=present(*claims, main),
            impact=f"Up to {peak:.1%} of requests in {ctx.ns} fail with 5xx.",
            remediation=[
                MutationProposal(
                    action="rollback",
                    target=f"Deployment/{ctx.ns}/{dep['name']}",
                    args={"to_revision": int(prev["revision"] or 0)},
                    rationale="the errors started with this revision",
                )
            ],
            follow_ups=["Diff the revisions (image, config) and add a canary step."],
            timeline=[
                TimelineEntry(at=fmt_time(deployed_at), what="deploy", evidence=(ev.id,)),
                TimelineEntry(
                    at=fmt_time(rise[0]), what="5xx ratio above threshold", evidence=(pid,)
                ),
            ],
        )
    return Finding(
        cls=CauseClass.INCONCLUSIVE,
        score=50,
        summary=f"5xx ratio rose to {peak:.1%}; no deploy in the window explains it",
        claims=present(main),
        impact=f"Up to {peak:.1%} of requests fail.",
        follow_ups=["Look at dependencies (database, upstream APIs) for the same window."],
    )
