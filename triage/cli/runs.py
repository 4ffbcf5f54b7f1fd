"""The bodies of `triage investigate`, `record`, `demo`, `replay` and `serve`.

Imported only when one of them runs (triage/cli/main.py holds their options), because this is
where the product is: the composition root, the graph, the judge and the clients.

The order of a run is the user's order of questions: which namespace (the flag, else the
words, else the kubeconfig context's — decided before any work), does it exist, then the run.
Its steps go to stderr as a trail (triage/cli/trail.py) and its answer to stdout in the one
output contract (triage/cli/documents.py).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from triage.app import App, Request, Requester, planner_for
from triage.cli import documents
from triage.cli.common import Output, Trail, console, settings_with
from triage.cli.trail import StepTrail
from triage.core.alertmanager import Notification, question
from triage.core.bundles import Bundle, RecordingTools, demo_dir, demo_names
from triage.core.errors import (
    EXIT_AWAITING_APPROVAL,
    EXIT_BUDGET_EXHAUSTED,
    EXIT_EVALUATOR_UNAVAILABLE,
    EXIT_INCONCLUSIVE,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REJECTED,
    EXIT_UNCHECKED,
    EXIT_USAGE,
    UsageError,
)
from triage.reports import render
from triage.verification.loop import CheckedRun, Outcome

OUTCOME_EXIT = {
    Outcome.VERIFIED: EXIT_OK,
    Outcome.REJECTED: EXIT_REJECTED,
    Outcome.BUDGET_EXHAUSTED: EXIT_BUDGET_EXHAUSTED,
    Outcome.EVALUATOR_UNAVAILABLE: EXIT_EVALUATOR_UNAVAILABLE,
    Outcome.UNCHECKED: EXIT_UNCHECKED,
    Outcome.AWAITING_APPROVAL: EXIT_AWAITING_APPROVAL,
}
ALERT_REQUESTER = Requester(who="", where="cli:alert", person=False)


def exit_for(run: CheckedRun) -> int:
    """The exit status of a checked run: 0 only when verified.

    An honest "inconclusive" is 1 whatever else the judge found missing; a rejection whose only
    findings are things the request names that do not exist is 4 ("you named something that is
    not there"), told apart from 5 ("the judge found the answer wrong")."""
    draft = run.best.draft
    if draft is None:
        return EXIT_INCONCLUSIVE
    if run.outcome is Outcome.REJECTED:
        verdict = run.verdict
        if draft.inconclusive:
            return EXIT_INCONCLUSIVE
        if verdict is not None and verdict.nonexistent and not verdict.missing:
            return EXIT_NOT_FOUND
    return OUTCOME_EXIT[run.outcome]


def _run(
    product: App, request: Request, *, trail: Trail, approval_wait_s: float = 0.0
) -> CheckedRun:
    """The checked run, its steps on stderr, waiting for approvals if asked."""
    goal = product.resolve_namespace(product.intake(request))
    product.preflight(goal)  # fail plainly before any work
    steps = StepTrail(trail, sys.stderr)
    err = console(stderr=True)

    def on_wait(awaiting: list[dict[str, Any]]) -> None:
        for op in awaiting:
            err.print(
                f"waiting for approval of {op['action']} {op['target']} "
                f"(operation {op['operation']}): an approver runs `triage ops approve "
                f"{op['operation']}`",
                highlight=False,
            )

    if trail is not Trail.quiet:
        err.print(f"namespace {goal.scope.namespace}; {product.source}", highlight=False)
    run = product.checked_run(request, goal, on_progress=steps)
    waits = run.outcome is Outcome.AWAITING_APPROVAL and approval_wait_s > 0
    if waits and product.wait_for_approval(run, timeout_s=approval_wait_s, on_wait=on_wait):
        run = product.checked_run(request, goal, on_progress=steps)
    return run


def investigation(run: CheckedRun, **extra: Any) -> documents.Investigation:
    """The run as the `Investigation` document (`-o json|yaml`)."""
    result = run.best
    return documents.Investigation(
        thread_id=result.thread_id,
        namespace=result.goal.scope.namespace,
        draft=result.draft,
        evidence=[e.model_dump(mode="json", exclude={"data"}) for e in result.evidence],
        verification=documents.Verification.model_validate(run.summary()),
        mutations=list(result.mutations),
        awaiting=list(result.awaiting),
        offers=[o.sentence() for o in result.goal.offers],
        **extra,
    )


def emit(run: CheckedRun, output: Output, **extra: Any) -> int:
    result = run.best
    draft = result.draft
    if output in (Output.json, Output.yaml):
        sys.stdout.write(documents.text(investigation(run, **extra), output.value))
    elif draft is None:
        sys.stdout.write("Nothing to investigate in that message.\n")
    elif output is Output.markdown:
        sys.stdout.write(render.markdown(draft, result.evidence))
        sys.stdout.write(render.verification_markdown(run.summary()))
    else:
        render.terminal(console(), draft, result.evidence)
        render.verification_terminal(console(), run.summary())
    if output not in (Output.json, Output.yaml):
        for offer in result.goal.offers:  # mentioned, not commanded: said, never done
            console(stderr=True).print(
                f"Not changed: you mentioned “{offer.sentence()}” without commanding it. To "
                f'do it, run: triage investigate "{offer.sentence()}"',
                highlight=False,
            )
    return exit_for(run)


def read_alert(path: Path) -> Notification:
    """A saved Alertmanager webhook notification; a plain UsageError when it is not one."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as e:
        raise UsageError(f"no file {path}: save a notification Alertmanager posted") from e
    except (OSError, ValueError) as e:
        raise UsageError(f"{path} is not JSON ({type(e).__name__})") from e
    try:
        return Notification.model_validate(raw)
    except ValidationError as e:
        where = "; ".join(".".join(str(p) for p in err["loc"]) for err in e.errors()[:3])
        raise UsageError(
            f"{path} is not an Alertmanager webhook notification (version 4): check {where}"
        ) from e


def investigate(
    words: str | None,
    *,
    namespace: str | None,
    context: str | None,
    kubeconfig: Path | None,
    prometheus_url: str | None,
    output: Output,
    trail: Trail,
    planner: str | None,
    approval_wait_s: float,
    alert_file: Path | None,
) -> int:
    notification = read_alert(alert_file) if alert_file is not None else None
    if notification is None and not (words or "").strip():
        raise UsageError('say what is wrong: triage investigate "QUESTION" (or --alert FILE)')
    settings = settings_with(kubeconfig)
    planner_for(settings, planner)  # a planner that cannot be built fails before any work
    product = App.live(settings, context=context, prometheus_url=prometheus_url)
    extra: dict[str, Any] = {}
    if notification is not None:
        alert = notification.alert(product.redactor)
        request = Request(
            words=words or question(alert, count=len(notification.firing) or 1),
            namespace=namespace,
            planner=planner,
            alert=alert,
            requester=ALERT_REQUESTER,
        )
        extra["alert"] = documents.AlertSource(
            groupKey=notification.group_key,
            status=notification.status,
            receiver=notification.receiver,
            alerts=len(notification.alerts),
            labels=alert.labels,
        )
    else:
        request = Request(words=words or "", namespace=namespace, planner=planner)
    run = _run(product, request, trail=trail, approval_wait_s=approval_wait_s)
    return emit(run, output, **extra)


def record(
    words: str,
    out: Path,
    *,
    name: str | None,
    namespace: str | None,
    context: str | None,
    kubeconfig: Path | None,
    prometheus_url: str | None,
    output: Output,
    trail: Trail,
    planner: str | None,
) -> int:
    settings = settings_with(kubeconfig)
    planner_for(settings, planner)
    product = App.live(settings, context=context, prometheus_url=prometheus_url, changes=False)
    recorder = RecordingTools(product.tools)
    product.tools = recorder
    now = time.time()
    request = Request(words=words, namespace=namespace, now=now, planner=planner)
    run = _run(product, request, trail=trail)
    bundle = recorder.bundle(
        name=name or out.stem,
        question=product.redactor.text(words),
        namespace=run.best.goal.scope.namespace,
        now=now,
        source=product.source,
    )
    bundle.write(out)
    console(stderr=True).print(f"wrote {out} ({len(bundle.calls)} calls)", highlight=False)
    return emit(run, output)


def _bundle(name: str) -> Bundle:
    names = demo_names()
    if name not in names:
        hint = f" To replay a recorded file, run `triage replay {name}`." if "." in name else ""
        choices = ", ".join(names) or "none"
        raise UsageError(f"no demo bundle {name!r}; choose one of: {choices}.{hint}")
    return Bundle.read(demo_dir() / f"{name}.json")


def _replay(bundle: Bundle, output: Output, trail: Trail, planner: str, **extra: Any) -> int:
    """A recorded bundle through the product's checked run, offline; the exit status."""
    settings = settings_with(None)
    product, replay = App.replay(settings, bundle)
    request = Request(
        words=bundle.question, default_namespace=bundle.namespace, now=bundle.now, planner=planner
    )
    err = console(stderr=True)
    if trail is not Trail.quiet:
        err.print(
            f"Replaying {extra.get('demo') or extra.get('replayed')}: {len(bundle.calls)} tool "
            f"results recorded {bundle.recorded_at} from {bundle.source}. Question: "
            f"{bundle.question}",
            highlight=False,
            markup=False,
        )
    run = product.checked_run(request, on_progress=StepTrail(trail, sys.stderr))
    if replay.misses and trail is not Trail.quiet:
        err.print(
            f"{len(replay.misses)} call(s) were not in the bundle and were answered as errors "
            "(the RCA says so).",
            highlight=False,
        )
    return emit(run, output, replay_misses=list(replay.misses), **extra)


def demo(scenario: str | None, list_: bool, output: Output, trail: Trail) -> int:
    names = demo_names()
    if list_:
        if output in (Output.json, Output.yaml):
            sys.stdout.write(documents.text(documents.DemoList(items=names), output.value))
        else:
            sys.stdout.write("".join(f"{n}\n" for n in names))
        return EXIT_OK
    if not names:
        raise UsageError("no demo bundles are installed with this package.")
    chosen = scenario or ("crashloop-bad-env" if "crashloop-bad-env" in names else names[0])
    return _replay(_bundle(chosen), output, trail, "rules", demo=chosen)


def replay(file: Path, output: Output, trail: Trail, planner: str | None) -> int:
    try:
        bundle = Bundle.read(file)
    except FileNotFoundError as e:
        raise UsageError(
            f"no bundle at {file}: write one with `triage record ... --out {file}`"
        ) from e
    except (ValueError, OSError) as e:
        raise UsageError(
            f"{file} is not a bundle written by `triage record` ({type(e).__name__})"
        ) from e
    return _replay(bundle, output, trail, planner or "rules", replayed=str(file))


def serve(
    demo_bundle: str | None,
    *,
    host: str | None,
    port: int | None,
    context: str | None,
    kubeconfig: Path | None,
    prometheus_url: str | None,
    planner: str | None,
    role: str = "serve",
) -> None:
    from triage.web import review, server  # noqa: PLC0415 (the server's dependencies load here)

    settings = settings_with(kubeconfig)
    if planner is not None:
        settings.planner.kind = "llm" if planner == "llm" else "rules"
    if demo_bundle is not None:
        product, _ = App.replay(settings, _bundle(demo_bundle))
    else:
        product = App.live(settings, context=context, prometheus_url=prometheus_url)
    bot = server.build_bot(settings, product)
    if role == "worker":  # started by `triage serve` itself (triage/web/workers.py)
        server.work(bot)
        return
    parts = review.build_review(settings, product)
    page = review.asgi(parts) if parts is not None else None
    server.serve(bot, host or settings.slack.host, port or settings.slack.port, page)


__all__ = ["EXIT_USAGE", "emit", "exit_for", "investigate", "investigation", "read_alert"]
