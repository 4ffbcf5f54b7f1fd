"""Workloads whose controller cannot do its job: a Job that gave up (its pods say why), a
CronJob that schedules nothing (suspended, missed deadlines, a run that never ends under
`Forbid`, a schedule that fires less often than the question says the work should), a
StatefulSet without its governing Service, a PodDisruptionBudget that allows no disruption
while a drain waits on it."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from tools.read import payloads as p
from triage.agent.planners.rules import text
from triage.agent.planners.rules.analyzers.common import fatal
from triage.agent.planners.rules.chain import Finding, Strength, chain, fact, link, short
from triage.agent.planners.rules.context import Ctx
from triage.agent.planners.rules.facts import budget_selects, series_values
from triage.agent.planners.rules.reads import epoch
from triage.core import cron as cron_
from triage.core.causes import CauseClass
from triage.core.models import Claim, Fact, LinkRole

S, M, C = LinkRole.SYMPTOM, LinkRole.MECHANISM, LinkRole.CAUSE


_ts = epoch  # the one ISO timestamp parser (reads.py)


def _ago(ctx: Ctx, value: str | None) -> str:
    ts = _ts(value)
    if ts is None:
        return "never"
    minutes = (ctx.now - ts) / 60
    if minutes > 48 * 60:
        return f"{minutes / 1440:.0f} days ago ({minutes / 60:.0f} h)"
    return f"{minutes / 60:.1f} h ago" if minutes > 90 else f"{minutes:.0f} min ago"


def _noted(annotations: dict[str, str]) -> str:
    return "; ".join(f"{k}: {v!r}" for k, v in list(annotations.items())[:3])


def duration_words(seconds: object) -> str:
    """'1 hour', '90 minutes', '45 seconds': a whole number of seconds in its largest unit."""
    try:
        s = int(str(seconds))
    except ValueError:
        return "?"

    def plural(n: int, unit: str) -> str:
        return f"{n} {unit}" + ("" if n == 1 else "s")

    if s % 3600 == 0 and s >= 3600:
        return plural(s // 3600, "hour")
    return plural(s // 60, "minute") if s % 60 == 0 and s >= 60 else plural(s, "second")


def jobs(ctx: Ctx) -> list[Finding]:
    """A failed Job: the symptom link for the chain its pods' analysis completes (see
    `attach_job`), or a deadline that ended it."""
    jobs_, jid = ctx.facts.jobs(ctx.ns)
    out = []
    for job in jobs_:
        cond = next(
            (
                c
                for c in job["conditions"]
                if c.get("type") == "Failed" and c.get("status") == "True"
            ),
            None,
        )
        if cond is None or cond.get("reason") != "DeadlineExceeded":
            continue
        ref = ctx.ref("Job", job["name"])
        takes, tid = _run_takes(ctx, job["active_deadline_s"])
        # The Job controller, not the program, ended it: the deadline is a setting of the Job,
        # and the number to look at first (seconds, not minutes, is a common slip).
        out.append(
            Finding(
                cls=CauseClass.BAD_CONFIG,
                cause=f"Job {job['name']} was stopped by its own activeDeadlineSeconds "
                f"({job['active_deadline_s']}s = {duration_words(job['active_deadline_s'])}): "
                f"{short(str(cond.get('message') or ''), 160)}; the Job controller ends the "
                "run at that deadline whatever the program is doing, so the deadline is too "
                "short for the work unless the work hangs" + takes,
                summary=f"Job {job['name']} failed: DeadlineExceeded",
                impact=f"Job {job['name']} did not complete.",
                chain=chain(
                    link(
                        C,
                        f"Job {job['name']}: Failed/DeadlineExceeded after "
                        f"{job['active_deadline_s']}s{takes}.",
                        jid,
                        tid,
                        about=ref,
                    )
                ),
                strength=Strength.STATED,
                explains={str(ref)},
            )
        )
    return out


def _run_takes(ctx: Ctx, deadline: int | None) -> tuple[str, str | None]:
    """'; its own duration series says a run takes 1190 to 1262 s (about 20 minutes)': what the
    deadline must leave room for, from the series the work pushes about itself."""
    for ev in ctx.facts.evidence:
        if not ev.ok or not (ev.purpose or "").startswith("run_duration:"):
            continue
        values = [v for series in ev.data or [] for v in series_values(series) if v > 0]
        if not values:
            continue
        low, high = min(values), max(values)
        if deadline is None or low <= deadline:
            continue  # runs have fit in it: the deadline is not what is short
        name = (ev.purpose or "").split(":", 1)[1]
        return (
            f"; its own duration series {name} says a run takes {low:.0f} to {high:.0f} s "
            f"(about {duration_words(int(high))}), more than the {deadline}s it is allowed",
            ev.id,
        )
    return "", None


def job_symptom(ctx: Ctx, job_name: str) -> tuple[str, str | None] | None:
    jobs_, jid = ctx.facts.jobs(ctx.ns)
    job = next((j for j in jobs_ if j["name"] == job_name), None)
    if job is None:
        return None
    cond = next(
        (c for c in job["conditions"] if c.get("type") == "Failed" and c.get("status") == "True"),
        None,
    )
    if cond is None:
        return None
    return (
        f"Job {job['name']} failed ({cond.get('reason')}): {job['failed']} pod(s) failed, "
        f"backoffLimit {job['backoff_limit']}.",
        jid,
    )


def _missed(ctx: Ctx, cron: p.CronJob) -> str | None:
    """The controller's word that runs were missed or could not start (events on the
    CronJob: too many missed start times, a missed schedule, a failed create)."""
    events, _ = ctx.facts.events_about(ctx.ns, cron["name"])
    hit = next(
        (
            e
            for e in events
            if re.search(
                r"miss|deadline|FailedCreate|FailedNeedsStart",
                f"{e['reason']} {e['message']}",
                re.I,
            )
        ),
        None,
    )
    return f"{hit['reason']}: {hit['message']}" if hit else None


_SUSPENDS = re.compile(r"(?<!un)suspend(?:ing|ed)?\b", re.I)
_RESUMES = re.compile(r"\b(unsuspend(?:ing|ed)?|resum(?:e|ing|ed))\b", re.I)


def _suspended_in_turns(ctx: Ctx, cron: p.CronJob) -> str | None:
    """Something else suspends the CronJob and resumes it again and again (its Normal events:
    "Suspending CronJob" and "Unsuspending CronJob", by a downscaler or an operator), and its
    last scheduled time fell while it was suspended: the run is never made — and when it is
    resumed later than startingDeadlineSeconds after that time, the controller skips it
    rather than run it late. It looks fine by day; only the events say so."""
    # every event about it (Normal ones too: a suspension is no warning)
    said, _ = ctx.facts.listed(
        "k8s.events", p.Event, namespace=ctx.ns, object_name=cron["name"], object_kind="CronJob"
    )
    stop = next((e for e in said if _SUSPENDS.search(f"{e['message']}")), None)
    go = next((e for e in said if _RESUMES.search(f"{e['message']}")), None)
    parsed = cron_.parse(cron["schedule"])
    if stop is None or go is None or parsed is None:
        return None
    fired = cron_.previous_run(parsed, ctx.now, cron.get("time_zone"))
    late = None if fired is None else _suspended_for(stop, go, fired)
    if fired is None or late is None:
        return None  # the last run's time fell while it ran: not why
    who = stop["source"] or go["source"] or "another component"
    deadline = cron["starting_deadline_s"]
    skipped = (
        f"; it was resumed {late / 60:.0f} min after that time, later than its "
        f"startingDeadlineSeconds {deadline}, so the controller skipped the run instead of "
        "starting it late"
        if deadline is not None and late > deadline
        else "; the run starts late, when it is resumed"
    )
    zone = f" ({cron.get('time_zone')})" if cron.get("time_zone") else ""
    return (
        f"{who} suspends CronJob {cron['name']} and resumes it again and again (events "
        f'"{short(str(stop["message"]), 60)}" x{stop["count"]}, last {_ago(ctx, stop["last_seen"])}'
        f'; "{short(str(go["message"]), 60)}" x{go["count"]}, last '
        f"{_ago(ctx, go['last_seen'])}): its schedule '{cron['schedule']}'{zone} last fell at "
        f"{_when(fired)}, while it was suspended{skipped}"
    )


def _recurrence(ev: p.Event) -> float | None:
    """How often a repeated event recurs: (last - first) / (count - 1), when it has repeated."""
    first, last = epoch(ev.get("first_seen")), epoch(ev["last_seen"])
    if first is None or last is None or ev["count"] < 2 or last <= first:
        return None
    return (last - first) / (ev["count"] - 1)


def _suspended_for(stop: p.Event, go: p.Event, fired: float) -> float | None:
    """How long after a schedule time the CronJob was resumed, when that time fell inside a
    suspension (None when it did not). A suspension and a resumption that recur (a
    downscaler's nightly window) are a cycle: the time is suspended when it lies after a
    suspension's place in the cycle and before the next resumption's, whichever turn of the
    cycle it fell in — the last events alone tell only the latest turn. Events that have not
    recurred say only that: suspended at one time, resumed at a later one."""
    stopped, resumed = epoch(stop["last_seen"]), epoch(go["last_seen"])
    if stopped is None or resumed is None:
        return None
    period = _recurrence(stop) or _recurrence(go)
    first = epoch(stop.get("first_seen")) or stopped
    if period is None or fired < first:
        return resumed - fired if stopped < fired < resumed else None
    into = (fired - stopped) % period  # how far into its turn of the cycle the time fell
    window = (resumed - stopped) % period  # how long each suspension lasts
    return window - into if 0 < into < window else None


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M UTC")


def _off_cadence(ctx: Ctx, cron: p.CronJob) -> str | None:
    """The schedule, read field by field, when it fires less often than the question says the
    work should run ("the weekly digest", "every 15 minutes"), or never at all."""
    parsed = cron_.parse(cron["schedule"])
    if parsed is None:
        return None
    runs = cron_.next_runs(parsed, ctx.now, 2)
    meaning = f"its schedule '{cron['schedule']}' fires {cron_.describe(parsed)}"
    if not runs:
        return f"{meaning}, a time that never comes: it will never run"
    expected = cron_.stated_cadence(ctx.goal.words)
    period = cron_.period_s(parsed, ctx.now)
    if expected is None or (period is not None and period <= expected * 1.5):
        return None
    every = cron_.cadence_words(period) if period is not None else "at most once in years"
    return (
        f"{meaning} ({every}; next run {_when(runs[0])}), not {cron_.cadence_words(expected)} "
        "as the work is expected to run (the fields are minute, hour, day-of-month, month, "
        "day-of-week)"
    )


def _replaced(ctx: Ctx, cron: p.CronJob) -> str | None:
    """concurrencyPolicy Replace, runs started on time, and none finished for several periods:
    each run is still active at the next schedule time, and the controller deletes it and
    starts a fresh one, so a run that needs longer than the period never completes."""
    parsed = cron_.parse(cron["schedule"])
    scheduled, succeeded = epoch(cron["last_schedule"]), epoch(cron["last_success"])
    if cron["concurrency_policy"] != "Replace" or parsed is None or scheduled is None:
        return None
    period = cron_.period_s(parsed, ctx.now)
    if not period or ctx.now - scheduled > 2 * period:
        return None  # not running on time: another chain
    if succeeded is not None and scheduled - succeeded < 3 * period:
        return None
    deleted = [
        e
        for e in ctx.facts.listed(
            "k8s.events", p.Event, namespace=ctx.ns, object_name=cron["name"], object_kind="CronJob"
        )[0]
        if e["reason"] == "SuccessfulDelete" or "Deleted job" in str(e["message"])
    ]
    if not deleted and not cron["active"]:
        return None
    since = (
        f"its last success was {_ago(ctx, cron['last_success'])}"
        if succeeded
        else ("no run has ever succeeded")
    )
    return (
        f"CronJob {cron['name']} has concurrencyPolicy Replace and runs "
        f"{cron_.cadence_words(period)} ('{cron['schedule']}'), but a run now takes longer "
        "than that: each run still active at the next schedule time is deleted and replaced "
        f"by a new one, so none finishes ({since}, while it was last scheduled "
        f"{_ago(ctx, cron['last_schedule'])})"
        + (
            f'; the controller says: "{short(str(deleted[0]["message"]), 120)}" '
            f"({sum(e['count'] or 1 for e in deleted)} such deletions)"
            if deleted
            else ""
        )
    )


def cronjobs(ctx: Ctx) -> list[Finding]:
    crons, cid = ctx.facts.cronjobs(ctx.ns)
    jobs_, jid = ctx.facts.jobs(ctx.ns)
    out = []
    for cron in crons:
        ref = ctx.ref("CronJob", cron["name"])
        if not ctx.in_focus(ref):
            continue
        last = (
            f"last scheduled {_ago(ctx, cron['last_schedule'])}"
            if cron["last_schedule"]
            else "never scheduled"
        )
        if cron["suspend"]:
            cause = (
                f"CronJob {cron['name']} is suspended (spec.suspend: true), so it creates no "
                f"Jobs ({last})"
            )
            facts: tuple[Fact, ...] = (
                fact(
                    "k8s.cronjobs", f"[name={cron['name']}].suspend", "eq", True, namespace=ctx.ns
                ),
            )
        elif cron["active"] and cron["concurrency_policy"] == "Forbid":
            running = next((j for j in jobs_ if j["name"] in cron["active"]), None)
            since = _ago(ctx, running["start_time"]) if running else "?"
            skipped = next(
                (
                    e
                    for e in ctx.facts.events_about(ctx.ns, cron["name"])[0]
                    if e["reason"] == "JobAlreadyActive"
                ),
                None,
            )
            unbounded = running is not None and running["active_deadline_s"] is None
            cause = (
                f"CronJob {cron['name']} has concurrencyPolicy Forbid and its Job "
                f"{cron['active'][0]} is still running (started {since}) without finishing, so "
                "every new run is skipped"
                + (
                    f' (event JobAlreadyActive: "{short(str(skipped["message"]), 140)}")'
                    if skipped
                    else ""
                )
                + (
                    "; the Job has no activeDeadlineSeconds, so a run that hangs is never stopped"
                    if unbounded
                    else ""
                )
                + f" ({last})"
            )
            facts = ()
        elif turned := _suspended_in_turns(ctx, cron):
            cause, facts = turned, ()
        elif replaced := _replaced(ctx, cron):
            cause, facts = replaced, ()
        elif missed := _missed(ctx, cron):
            cause = (
                f"CronJob {cron['name']} misses its runs: {short(missed, 200)}"
                + (
                    f" (startingDeadlineSeconds {cron['starting_deadline_s']}: a run that cannot "
                    "start within it is skipped)"
                    if cron["starting_deadline_s"] is not None
                    else ""
                )
                + f" ({last})"
            )
            facts = ()
        elif off := _off_cadence(ctx, cron):
            cause = f"CronJob {cron['name']}: {off} ({last})"
            facts = (
                fact(
                    "k8s.cronjobs",
                    f"[name={cron['name']}].schedule",
                    "eq",
                    cron["schedule"],
                    namespace=ctx.ns,
                ),
            )
        else:
            continue
        out.append(
            Finding(
                cls=CauseClass.CRONJOB_NOT_SCHEDULED,
                cause=cause,
                summary=f"CronJob {cron['name']}'s runs are replaced before they finish"
                if "concurrencyPolicy Replace" in cause
                else f"CronJob {cron['name']} runs no new Jobs ({last})",
                impact=f"The work of {cron['name']} ('{cron['schedule']}') is not done.",
                chain=chain(
                    link(
                        S,
                        f"CronJob {cron['name']} ('{cron['schedule']}') was {last}.",
                        cid,
                        about=ref,
                    ),
                    link(
                        C,
                        cause[0].upper()
                        + cause[1:]
                        + (
                            f"; it is annotated {_noted(cron['annotations'])}"
                            if cron["annotations"]
                            else ""
                        )
                        + ".",
                        cid,
                        jid,
                        about=ref,
                        facts=facts,
                    ),
                ),
                explains={str(ref)},
                follow_ups=[
                    "Resume it (suspend: false)"
                    if cron["suspend"]
                    else "Set concurrencyPolicy Forbid so a long run can finish (or drain the "
                    "backlog with a one-off Job), and let the work commit its progress per batch."
                    if "concurrencyPolicy Replace" in cause
                    else "Correct spec.schedule to the cadence the work needs."
                    if "schedule '" in cause
                    else "Stop the hung Job and add activeDeadlineSeconds to the template."
                ],
            )
        )
    return out


def statefulsets(ctx: Ctx) -> list[Finding]:
    sets, sid = ctx.facts.statefulsets(ctx.ns)
    services, svc_id = ctx.facts.services(ctx.ns)
    names = {s["name"] for s in services}
    out = []
    for sts in sets:
        ref = ctx.ref("StatefulSet", sts["name"])
        if ctx.in_focus(ref) and (stuck := _ordered_deadlock(ctx, sts, sid)) is not None:
            out.append(stuck)
            continue
        if ctx.in_focus(ref) and (forced := _stale_pod_kept(ctx, sts, sid)) is not None:
            out.append(forced)
            continue
        if ctx.in_focus(ref) and (held := _held_back(ctx, sts, sid)) is not None:
            out.append(held)
            continue
        if not ctx.in_focus(ref) or not sts["service_name"] or not svc_id:
            continue
        governing = next((s for s in services if s["name"] == sts["service_name"]), None)
        if governing is not None:
            # a recording from before the field: as was. One replica that is ready has no
            # peer to find by name: a cluster IP does it no harm.
            lone = (sts["replicas"] or 0) <= 1 and sts["ready"] >= (sts["replicas"] or 0)
            if not governing.get("headless", True) and not lone:
                out.append(_not_headless(ctx, sts, governing, sid, svc_id))
            continue
        out.append(
            Finding(
                cls=CauseClass.STATEFULSET_MISCONFIGURED,
                cause=f"StatefulSet {sts['name']} names serviceName {sts['service_name']}, but no "
                f"such (headless) Service exists in {ctx.ns}: its pods get no stable DNS names",
                summary=f"StatefulSet {sts['name']}'s governing Service {sts['service_name']} is "
                f"missing",
                impact=_sts_impact(sts),
                chain=chain(
                    _sts_symptom(ctx, sts, sid),
                    link(
                        C,
                        f"spec.serviceName is {sts['service_name']}; Services in {ctx.ns}: "
                        f"{', '.join(sorted(names)) or 'none'}.",
                        sid,
                        svc_id,
                        about=ref,
                        facts=(
                            fact(
                                "k8s.services",
                                f"[name={sts['service_name']}]",
                                "absent",
                                None,
                                namespace=ctx.ns,
                            ),
                        ),
                    ),
                ),
                strength=Strength.INFERRED,
                explains={str(ref), str(ctx.ref("Service", sts["service_name"]))},
                follow_ups=[
                    f"Create the headless Service {sts['service_name']} "
                    "(clusterIP: None) selecting "
                    f"the StatefulSet's pods."
                ],
            )
        )
    return out


_WAITS_FOR_PEERS = re.compile(r"no leader|quorum|\bpeers?\b|\bmembers?\b|election|cluster", re.I)


def _ordered_deadlock(ctx: Ctx, sts: p.StatefulSet, sid: str | None) -> Finding | None:
    """podManagementPolicy OrderedReady: the controller creates ordinal k+1 only once k is
    Running and Ready. A member that is Ready only when its peers answer (etcd, ZooKeeper,
    a Raft or Galera cluster) then never gets them: fewer pods than replicas, the last one
    not Ready, its log waiting for the peers (by name, or for a leader or quorum)."""
    if sts["pod_management"] != "OrderedReady" or not sts["replicas"]:
        return None
    pods = ctx.facts.pods_of(ctx.ns, "StatefulSet", sts["name"])
    if not pods or len(pods) >= sts["replicas"]:
        return None

    def ordinal(pod: p.Pod) -> int:
        tail = pod["name"].rsplit("-", 1)[-1]
        return int(tail) if tail.isdigit() else -1

    last = max(pods, key=ordinal)
    if last["ready"] or last["phase"] != "Running":
        return None
    missing = [f"{sts['name']}-{i}" for i in range(len(pods), sts["replicas"])]
    said: tuple[str, str | None] | None = None
    for c in last["containers"]:
        log, lid = ctx.facts.logs(ctx.ns, last["name"], c["name"], False)
        hit = next(
            (
                ln
                for ln in reversed(log)
                if text.severity(ln) >= 1
                and (any(m in ln for m in missing) or _WAITS_FOR_PEERS.search(ln))
            ),
            None,
        )
        if hit is not None and lid:
            said = (hit, lid)
            break
    if said is None:
        return None
    ref = ctx.ref("StatefulSet", sts["name"])
    pods_id = ctx.facts.pods(ctx.ns)[1]
    cause = (
        f"StatefulSet {sts['name']} uses podManagementPolicy OrderedReady, so the controller "
        f"creates {missing[0]} only once {last['name']} is Ready — but {last['name']} is Ready "
        f"only when its peers ({', '.join(missing)}) answer: a deadlock; members that need "
        "each other to become Ready need podManagementPolicy Parallel"
    )
    return Finding(
        cls=CauseClass.STATEFULSET_MISCONFIGURED,
        cause=cause,
        summary=f"StatefulSet {sts['name']} never forms: only {len(pods)} of {sts['replicas']} "
        "pods exist and they wait for the rest",
        impact=_sts_impact(sts),
        chain=chain(
            _sts_symptom(ctx, sts, sid),
            link(
                M,
                f"{last['name']} is Running but not Ready; its log waits for its peers: "
                f"{short(said[0], 200)}",
                pods_id,
                said[1],
                about=ctx.pod_ref(last),
            ),
            link(
                C,
                cause[0].upper() + cause[1:] + ".",
                sid,
                about=ref,
                facts=(
                    fact(
                        "k8s.statefulsets",
                        f"[name={sts['name']}].pod_management",
                        "eq",
                        "OrderedReady",
                        namespace=ctx.ns,
                    ),
                ),
            ),
        ),
        explains={str(ref), str(ctx.pod_ref(last)), *(str(ctx.pod_ref(x)) for x in pods)},
        follow_ups=[
            f"Set podManagementPolicy: Parallel on {sts['name']} (it cannot be changed in "
            "place: recreate the StatefulSet with --cascade=orphan to keep the pods)."
        ],
    )


def _stale_pod_kept(ctx: Ctx, sts: p.StatefulSet, sid: str | None) -> Finding | None:
    """The documented forced-rollback case: under RollingUpdate with podManagementPolicy
    OrderedReady the controller replaces a pod only once every pod is Running and Ready, so a
    pod of a broken revision that never becomes Ready is never replaced — not by a fixed
    template, not by a rollback. Seen as a pod whose controller-revision-hash is not the
    StatefulSet's update revision, not Ready, while the others run the update revision."""
    update = sts.get("update_revision")
    if (
        not update
        or sts["pod_management"] != "OrderedReady"
        or sts.get("update_strategy") not in (None, "", "RollingUpdate")
    ):
        return None
    pods = ctx.facts.pods_of(ctx.ns, "StatefulSet", sts["name"])
    stale = [
        x
        for x in pods
        if x["labels"].get("controller-revision-hash") not in (None, update) and not x["ready"]
    ]
    if len(stale) != 1 or not any(x["ready"] for x in pods if x not in stale):
        return None
    pod, name = stale[0], sts["name"]
    stale_rev = pod["labels"]["controller-revision-hash"]
    pods_id = ctx.facts.pods(ctx.ns)[1]
    said = next(
        (
            (line.text, lid)
            for c in pod["containers"]
            for line, lid, _ in [fatal(ctx, pod, c["name"])]
            if line is not None and lid
        ),
        None,
    )
    cause = (
        f"pod {pod['name']} still runs revision {stale_rev} while StatefulSet {name}'s update "
        f"revision is {update} (the template was fixed or rolled back), and it is not Ready; "
        "under RollingUpdate with podManagementPolicy OrderedReady the controller waits for "
        "every pod to be Running and Ready before it replaces any, so it never replaces "
        f"{pod['name']} (the forced-rollback case): delete {pod['name']} so the controller "
        "recreates it from the current template"
    )
    ref = ctx.ref("StatefulSet", name)
    return Finding(
        cls=CauseClass.STATEFULSET_MISCONFIGURED,
        cause=cause,
        summary=f"StatefulSet {name} cannot finish its rollback: {pod['name']} is never replaced",
        impact=f"{pod['name']} stays down on the broken revision; {name} runs "
        f"{sts['ready']}/{sts['replicas']} ready.",
        chain=chain(
            link(
                S,
                f"Pod {pod['name']} is not Ready (revision {stale_rev}); the other pods run "
                f"revision {update} and are Ready.",
                pods_id,
                about=ctx.pod_ref(pod),
            ),
            link(
                M,
                f"{pod['name']} fails as the broken revision did: {short(said[0], 200)}",
                said[1],
                about=ctx.pod_ref(pod),
            )
            if said
            else None,
            link(
                M,
                f"StatefulSet {name}: update revision {update}, current revision "
                f"{sts.get('current_revision')}, podManagementPolicy OrderedReady, "
                "updateStrategy RollingUpdate.",
                sid,
                about=ref,
                facts=(
                    fact(
                        "k8s.statefulsets",
                        f"[name={name}].update_revision",
                        "eq",
                        update,
                        namespace=ctx.ns,
                    ),
                ),
            ),
            link(C, cause[0].upper() + cause[1:] + ".", sid, pods_id, about=ref),
        ),
        strength=Strength.STATED,
        explains={str(ref), str(ctx.pod_ref(pod))},
        follow_ups=[
            f"Delete pod {pod['name']} (kubectl delete pod {pod['name']} -n {ctx.ns}): the "
            "controller recreates it from the current template."
        ],
    )


def _held_back(ctx: Ctx, sts: p.StatefulSet, sid: str | None) -> Finding | None:
    """A rollout the update strategy itself stops: `rollingUpdate.partition: N` updates only
    the pods whose ordinal is N or more, and `OnDelete` only pods someone deletes; the rest
    keep the old revision, Ready, while tools that look at health say all is well."""
    replicas = sts["replicas"] or 0
    current, update = sts.get("current_revision"), sts.get("update_revision")
    if not (current and update and current != update and sts["updated"] < replicas):
        return None
    partition = int(sts.get("partition") or 0)
    on_delete = sts.get("update_strategy") == "OnDelete"
    if partition <= 0 and not on_delete:
        return None  # a rolling update still under way: not held by its strategy
    name = sts["name"]
    pods = ctx.facts.pods_of(ctx.ns, "StatefulSet", name)
    old = sorted(x["name"] for x in pods if x["labels"].get("controller-revision-hash") == current)
    if on_delete:
        rule = "spec.updateStrategy.type is OnDelete: the controller updates a pod only when it "
        rule += "is deleted"
        held = fact(
            "k8s.statefulsets", f"[name={name}].update_strategy", "eq", "OnDelete", namespace=ctx.ns
        )
    else:
        last = min(partition, replicas) - 1
        rule = (
            f"spec.updateStrategy.rollingUpdate.partition is {partition} (partition: {partition}):"
            f" the controller updates only pods with an ordinal of {partition} or more, so "
            f"{name}-0" + (f"…{name}-{last}" if last > 0 else "") + " keep the old revision"
        )
        held = fact(
            "k8s.statefulsets", f"[name={name}].partition", "eq", partition, namespace=ctx.ns
        )
    cause = (
        f"StatefulSet {name}'s rollout stops by its own update strategy: {rule}; "
        f"{sts['updated']}/{replicas} pods run revision {update}, the rest {current}"
        + (f" ({', '.join(old[:4])})" if old else "")
    )
    return Finding(
        cls=CauseClass.STATEFULSET_MISCONFIGURED,
        cause=cause,
        summary=f"StatefulSet {name} is only partly updated: {sts['updated']}/{replicas} pods "
        f"on the new revision, held by its update strategy",
        impact=f"{replicas - sts['updated']} of {replicas} pods of {name} still run the old "
        "revision (its image and settings).",
        chain=chain(
            link(
                S,
                f"StatefulSet {name}: {sts['updated']}/{replicas} pods updated to {update}; "
                f"current revision {current}; {sts['ready']}/{replicas} ready.",
                sid,
                about=ctx.ref("StatefulSet", name),
                facts=(
                    fact(
                        "k8s.statefulsets",
                        f"[name={name}].updated",
                        "le",
                        replicas - 1,
                        namespace=ctx.ns,
                    ),
                ),
            ),
            link(
                C,
                cause[0].upper() + cause[1:] + ".",
                sid,
                about=ctx.ref("StatefulSet", name),
                facts=(held,),
            ),
        ),
        strength=Strength.STATED,
        explains={str(ctx.ref("StatefulSet", name))},
        follow_ups=[
            f"Set partition to 0 on StatefulSet {name} (or delete its old pods, for OnDelete) "
            "to finish the rollout."
        ],
    )


def _sts_impact(sts: p.StatefulSet) -> str:
    return (
        f"Peers of {sts['name']} cannot find each other by name; "
        f"{sts['ready']}/{sts['replicas']} ready."
    )


def _sts_symptom(ctx: Ctx, sts: p.StatefulSet, sid: str | None) -> Claim | None:
    pods = ctx.facts.pods_of(ctx.ns, "StatefulSet", sts["name"])
    return link(
        S,
        f"StatefulSet {sts['name']}: {sts['ready']}/{sts['replicas']} ready ({len(pods)} pods).",
        sid,
        about=ctx.ref("StatefulSet", sts["name"]),
    )


def _not_headless(
    ctx: Ctx, sts: p.StatefulSet, svc: p.Service, sid: str | None, svc_id: str | None
) -> Finding:
    """The governing Service exists but has a cluster IP: DNS gives its virtual IP, not a
    record per pod, so `<pod>.<service>` names (how peers find each other) do not resolve."""
    ref = ctx.ref("StatefulSet", sts["name"])
    example = f"{sts['name']}-0.{svc['name']}.{ctx.ns}.svc"
    cause = (
        f"StatefulSet {sts['name']}'s governing Service {svc['name']} is not headless (it has a "
        f"cluster IP; spec.clusterIP is not None), so DNS has no per-pod records: names like "
        f"{example} do not resolve and its pods cannot find each other"
    )
    return Finding(
        cls=CauseClass.STATEFULSET_MISCONFIGURED,
        cause=cause,
        summary=f"StatefulSet {sts['name']}'s governing Service {svc['name']} is not headless",
        impact=_sts_impact(sts),
        chain=chain(
            _sts_symptom(ctx, sts, sid),
            link(
                C,
                cause[0].upper() + cause[1:] + ".",
                sid,
                svc_id,
                about=ctx.ref("Service", svc["name"]),
                facts=(
                    fact(
                        "k8s.services",
                        f"[name={svc['name']}].headless",
                        "eq",
                        False,
                        namespace=ctx.ns,
                    ),
                ),
            ),
        ),
        explains={str(ref), str(ctx.ref("Service", svc["name"]))},
        follow_ups=[
            f"Make {svc['name']} headless again (clusterIP: None; a Service's cluster IP cannot "
            "be changed in place: delete and re-create it)."
        ],
    )


def _if_healthy(pdb: p.PDB, pods: list[p.Pod]) -> str:
    """Why even the pods that serve nothing are not evicted: under unhealthyPodEvictionPolicy
    IfHealthyBudget (the default when unset) a Running pod that is not Ready may be evicted
    only while the budget is met (currentHealthy >= desiredHealthy); AlwaysAllow lets such a
    pod go whatever the budget says."""
    policy = pdb.get("unhealthy_policy")
    unready = [x for x in pods if x["phase"] == "Running" and not x["ready"]]
    if policy == "AlwaysAllow" or not unready or pdb["current_healthy"] >= pdb["desired_healthy"]:
        return ""
    said = (
        f"unhealthyPodEvictionPolicy {policy}"
        if policy
        else ("no unhealthyPodEvictionPolicy, so IfHealthyBudget (the default) applies")
    )
    return (
        f"; the budget sets {said}: a Running pod that is not Ready ({len(unready)} of them "
        f"here) may be evicted only while the budget is met (currentHealthy "
        f"{pdb['current_healthy']} >= desiredHealthy {pdb['desired_healthy']}), which it is "
        "not, so even the pods that serve nothing are refused — AlwaysAllow would let them go"
    )


def _unhealthy(pods: list[p.Pod], healthy: int, count: int) -> str:
    """'; seat-map-api-7f-x is not healthy (api: CrashLoopBackOff, 14 restarts, image …:2.8.0)':
    the pods the budget does not count as healthy, and why, when some are not — that, not the
    budget, is what leaves no disruption to allow."""
    if healthy >= count:
        return ""
    sick = [x for x in pods if not x["ready"]][:2]
    said = []
    for pod in sick:
        c = next((c for c in pod["containers"] if not c["ready"]), None)
        state = (c["state"] or {}) if c else {}
        why = ", ".join(
            x
            for x in (
                f"{c['name']}: {state.get('reason') or state.get('kind') or 'not ready'}"
                if c
                else pod["phase"] or "",
                f"{c['restarts']} restarts" if c and c["restarts"] else "",
                f"image {c['image']}" if c and c["image"] else "",
            )
            if x
        )
        said.append(f"{pod['name']} is not healthy ({why})")
    return "; " + "; ".join(said) if said else ""


def pdbs(ctx: Ctx) -> list[Finding]:
    budgets, bid = ctx.facts.pdbs(ctx.ns)
    events, eid = ctx.facts.warnings(ctx.ns)
    blocked = [
        e
        for e in events
        if "disruption budget" in str(e["message"]).lower()
        or e["reason"] in ("EvictionBlocked", "DisruptionBlocked")
    ]
    nodes, nid = ctx.facts.nodes()
    cordoned = [n["name"] for n in nodes if n["unschedulable"]]
    out = []
    for pdb in budgets:
        if pdb["allowed_disruptions"] > 0 or not (blocked or cordoned):
            continue
        pods = [x for x in ctx.facts.pods(ctx.ns)[0] if budget_selects(pdb, x["labels"])]
        if not pods:
            continue
        ref = ctx.workload_ref(pods[0])
        rule = _rule(pdb)
        # the cordoned nodes this budget holds up: those its pods run on (others may be
        # cordoned for reasons of their own)
        on = [n for n in cordoned if any(x["node"] == n for x in pods)] or cordoned
        count = pdb["expected_pods"]
        lone = ", a single replica: a budget that keeps it up forbids every eviction,"
        bare = [x["name"] for x in pods if x["owner"] is None]
        scaled = pdb["min_available"] is None or str(pdb["min_available"]).endswith("%")
        cause_text = (
            # maxUnavailable and a percentage are counted against the controller's scale:
            # pods with no controller give the disruption controller no count to use
            f"PodDisruptionBudget {pdb['name']} ({rule}) allows 0 disruptions: its pods "
            f"{', '.join(bare[:3])}{' …' if len(bare) > 3 else ''} are bare Pods with no "
            "controller (no ownerReference to a Deployment, ReplicaSet or StatefulSet), and "
            f"to turn {rule} into a number the disruption controller needs their controller's "
            f"scale, so it counts {count} expected pods and allows no disruption; evicting "
            f"any of them is refused and the drain of {', '.join(on) or 'the node'} cannot "
            "finish. An integer minAvailable needs no controller"
            if bare and scaled and count == 0
            else f"PodDisruptionBudget {pdb['name']} ({rule}) allows 0 disruptions: "
            f"{ref.name} has {count} pod{'s' if count != 1 else ''} "
            f"({pdb['current_healthy']} healthy)"
            + (lone if count == 1 else "")
            + _unhealthy(pods, pdb["current_healthy"], count)
            + _if_healthy(pdb, pods)
            + " and the budget needs them all, so "
            f"evicting any of {ref.name}'s pods is refused and the drain of "
            f"{', '.join(on) or 'the node'} cannot finish" + _spans(ctx, pdb, ctx.ns)
        )
        out.append(
            Finding(
                cls=CauseClass.PDB_BLOCKING,
                cause=cause_text,
                summary=f"A node drain is blocked by PodDisruptionBudget {pdb['name']}",
                impact="The node cannot be drained (maintenance, upgrade) until a pod may go.",
                chain=chain(
                    link(
                        S,
                        (f"Node(s) {', '.join(on)} cordoned; " if on else "")
                        + (
                            f"event: {short(str(blocked[0]['message']))}"
                            if blocked
                            else "the drain waits."
                        ),
                        eid,
                        nid,
                        about=ctx.ref("Node", on[0], "") if on else ref,
                    ),
                    link(
                        C,
                        f"PodDisruptionBudget {pdb['name']}: {rule}, disruptionsAllowed 0, healthy "
                        f"{pdb['current_healthy']}/{pdb['desired_healthy']}.",
                        bid,
                        about=ctx.ref("PodDisruptionBudget", pdb["name"]),
                        facts=(
                            fact(
                                "k8s.pdbs",
                                f"[name={pdb['name']}].allowed_disruptions",
                                "eq",
                                0,
                                namespace=ctx.ns,
                            ),
                        ),
                    ),
                ),
                explains={str(ref)},
                follow_ups=[
                    f"Set unhealthyPodEvictionPolicy: AlwaysAllow on {pdb['name']}, so pods "
                    "that are Running but not Ready may be evicted."
                    if _if_healthy(pdb, pods)
                    else f"Scale {ref.name} up first, or relax {pdb['name']} for the drain."
                ],
            )
        )
    overlap = _overlapping_budgets(ctx, budgets, bid, events, eid, cordoned, nid)
    if overlap is not None:
        out.append(overlap)
    for node in [n for n in cordoned if str(ctx.ref("Node", n, "")) in ctx.focus]:
        out += _drain_held(ctx, node, nid)
    return out


def _overlapping_budgets(
    ctx: Ctx,
    budgets: list[p.PDB],
    bid: str | None,
    events: list[p.Event],
    eid: str | None,
    cordoned: list[str],
    nid: str | None,
) -> Finding | None:
    """Pods selected by more than one PodDisruptionBudget: the eviction API refuses to evict
    such a pod at all ("This pod has more than one PodDisruptionBudget, which the eviction
    subresource does not support"), whatever each budget allows, so a drain never finishes.
    The disruption controller warns MultiplePodDisruptionBudgets on them."""
    pods, _ = ctx.facts.pods(ctx.ns)
    for pod in ctx.focus_pods or pods:
        over = [b for b in budgets if budget_selects(b, pod["labels"])]
        if len(over) < 2:
            continue
        warned = next((e for e in events if e["reason"] == "MultiplePodDisruptionBudgets"), None)
        draining = re.search(r"\bevict|\bdrain", ctx.goal.words, re.I)
        if warned is None and not cordoned and not draining:
            continue  # overlapping budgets block evictions only when something evicts
        ref = ctx.workload_ref(pod)
        on = [n for n in cordoned if pod["node"] == n] or cordoned
        each = "; ".join(
            f"{b['name']} ({_rule(b)}, selector "
            + (",".join(f"{k}={v}" for k, v in b["selector"].items()) or "{} (every pod)")
            + f", {b['allowed_disruptions']} allowed)"
            for b in over[:3]
        )
        cause = (
            f"{ref.name}'s pods are each selected by {len(over)} PodDisruptionBudgets — {each} "
            "— and the eviction API refuses to evict a pod that more than one budget covers "
            "(it does not support that), whatever each allows, so "
            + (f"the drain of {', '.join(on)}" if on else "a drain")
            + " retries forever; keep one budget per pod (narrow one selector, or drop the "
            "duplicate)"
        )
        return Finding(
            cls=CauseClass.PDB_BLOCKING,
            cause=cause,
            summary=f"{ref.name}'s pods cannot be evicted: two PodDisruptionBudgets select them",
            impact="Nodes running these pods cannot be drained (maintenance, upgrade).",
            chain=chain(
                link(
                    S,
                    (f"Node(s) {', '.join(on)} cordoned; " if on else "")
                    + (
                        f"event {warned['reason']}: {short(str(warned['message']))}"
                        if warned
                        else f"pod {pod['name']} is matched by {len(over)} budgets."
                    ),
                    eid if warned else bid,
                    nid if on else None,
                    about=ctx.pod_ref(pod),
                ),
                link(C, cause[0].upper() + cause[1:] + ".", bid, about=ref),
            ),
            explains={str(ref), *(str(ctx.ref("PodDisruptionBudget", b["name"])) for b in over)},
            follow_ups=["Leave one PodDisruptionBudget per pod, then let the drain retry."],
        )
    return None


def _spans(ctx: Ctx, pdb: p.PDB, ns: str) -> str:
    """'; its selector part-of=menu matches the pods of menu-api (2) and of menu-worker (1,
    1 unhealthy: …)': a budget counts every pod its selector matches, so another workload's
    unhealthy pod (a chart-wide label) uses up the disruption the other was meant to have."""
    owners: dict[str, list[p.Pod]] = {}
    for x in ctx.facts.pods(ns)[0]:
        if budget_selects(pdb, x["labels"]):
            owners.setdefault(ctx.workload_ref(x, ns).name, []).append(x)
    if len(owners) < 2:
        return ""
    sel = ", ".join(f"{k}={v}" for k, v in sorted(pdb["selector"].items()))
    if pdb.get("selects_all"):
        sel = "{} (empty: in policy/v1 it selects every pod in the namespace)"
    parts = []
    for owner, xs in sorted(owners.items()):
        sick = [x["name"] for x in xs if not x["ready"]]
        parts.append(
            f"{owner} ({len(xs)}"
            + (f", {len(sick)} unhealthy: {', '.join(sick[:2])})" if sick else ")")
        )
    return (
        f"; its selector {sel} matches the pods of {' and of '.join(parts)}, and the budget "
        "counts them all, so an unhealthy pod of one workload uses up the disruption another's "
        "eviction needs"
    )


def _rule(pdb: p.PDB) -> str:
    """'minAvailable 60% (of 2 pods, rounded up: 2 must stay)': a percentage is rounded up
    by the disruption controller, so on few pods it can leave none to evict."""
    value: int | str | None = pdb["min_available"]
    rule = "minAvailable"
    if value is None:
        rule, value = "maxUnavailable", pdb["max_unavailable"]
    text = f"{rule} {value}"
    expected = pdb.get("expected_pods") or 0
    if isinstance(value, str) and value.endswith("%") and expected:
        pct = value.rstrip("%")
        if pct.isdigit():
            scaled = math.ceil(int(pct) * expected / 100)
            said = "must stay" if rule == "minAvailable" else "may be down"
            text += f" (of {expected} pods, rounded up: {scaled} {said})"
    return text


def _drain_held(ctx: Ctx, node: str, nid: str | None) -> list[Finding]:
    """A cordoned node the question names, and the budgets of the pods on it in other
    namespaces: one that allows no disruption holds the drain, wherever it lives."""
    on, oid = ctx.facts.pods_on_node(node)
    out = []
    for ns in sorted({x["namespace"] for x in on} - {ctx.ns}):
        budgets, bid = ctx.facts.pdbs(ns)
        for pdb in budgets:
            held = [x for x in on if x["namespace"] == ns and budget_selects(pdb, x["labels"])]
            if pdb["allowed_disruptions"] > 0 or not held:
                continue
            names = ", ".join(x["name"] for x in held[:3])
            cause = (
                f"PodDisruptionBudget {pdb['name']} in {ns} ({_rule(pdb)}) allows 0 disruptions "
                f"({pdb['current_healthy']}/{pdb['desired_healthy']} healthy), and pods it guards "
                f"run on {node} ({names}): every eviction of them is refused (429 Too Many "
                f"Requests), so the drain of {node} cannot finish" + _spans(ctx, pdb, ns)
            )
            node_ref = ctx.ref("Node", node, "")
            out.append(
                Finding(
                    cls=CauseClass.PDB_BLOCKING,
                    cause=cause,
                    summary=f"The drain of {node} is held by PodDisruptionBudget {pdb['name']}",
                    impact=f"{node} cannot be drained or replaced until a guarded pod may go.",
                    chain=chain(
                        link(
                            S,
                            f"Node {node} is cordoned; it still runs {len(on)} pod(s), "
                            f"{len(held)} of them guarded by {pdb['name']} ({names}).",
                            nid,
                            oid,
                            about=node_ref,
                        ),
                        link(
                            C,
                            cause[0].upper() + cause[1:] + ".",
                            bid,
                            about=ctx.ref("PodDisruptionBudget", pdb["name"], ns),
                            facts=(
                                fact(
                                    "k8s.pdbs",
                                    f"[name={pdb['name']}].allowed_disruptions",
                                    "eq",
                                    0,
                                    namespace=ns,
                                ),
                            ),
                        ),
                    ),
                    explains={str(node_ref)},
                    follow_ups=[
                        f"Relax {pdb['name']} (maxUnavailable 1) for the drain, or scale what it "
                        "guards up first so one pod may go."
                    ],
                )
            )
    return out


def _unused(_: p.Pod) -> None:
    return None
