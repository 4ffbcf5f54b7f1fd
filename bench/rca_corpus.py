"""Bench: how often `triage investigate` names the right root cause, on the scenario corpus.

Loads the scenarios (tests/scenarios, and the held-out split in tests/scenarios/heldout) into
the real test control plane and their series into a real Prometheus, then runs the product as a
user would — the CLI in a subprocess, as the reader identity:

    .venv/bin/triage investigate "<question>" --kubeconfig <reader> --prometheus-url <url> \\
        -o json -q [--planner rules|llm] [--alert FILE]

and grades each answer against the scenario's `expect` (tests/scenarios/README.md, "expect"):

- class: the answer's root-cause class is the expected one or one it also accepts;
- facts: every fact has an alternative in the root-cause text (cause, summary, causal chain);
- wrong causes: the answer's class is none of the wrong classes, and its one-sentence cause
  contains none of the wrong phrases;
- outcome: the judge's outcome is the expected one (`verified`).

A scenario passes when all four hold. An answer that fails class, facts or wrong causes but was
`verified` is a wrong cause the judge let through; the bench counts those separately.

    .venv/bin/python -m bench.rca_corpus [--split dev|heldout|all] [--scenario NAME ...] \\
        [--planner rules|llm] [--json-out results.json] [--answers DIR] [--reveal-heldout]

Held-out scenarios are shown under an opaque id (`heldout-<hash>`) with no facts or answers,
unless --reveal-heldout: people working on the diagnosis read the bench's output, and must not
learn the held-out split from it. Aggregates (per class, per difficulty, per split) include them.

When the CLI has no `--alert` option, a scenario's alert is pasted into the question the way an
engineer pastes an Alertmanager notification, and the result says `alert: pasted`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from tests.support.controlplane import ControlPlane
from tests.support.observability import openmetrics_from_series, start_prometheus
from tests.support.scenario_format import Scenario, load_scenarios, scenario_series
from tests.support.scenarios import load_all

REPO = Path(__file__).resolve().parents[1]
TRIAGE = Path(sys.executable).parent / "triage"
RUN_TIMEOUT_S = 600.0


# --------------------------------------------------------------------------------------------
# Reading the CLI's JSON: the one place that knows its shape
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Graded:
    """What the grader reads from one answer."""

    root_cause_class: str | None
    cause: str  # the one-sentence cause line (wrong phrases are looked for here only)
    root_cause_text: str  # cause + summary + every root-cause link (facts are looked for here)
    outcome: str | None


def graded_fields(doc: Any) -> Graded:
    """The fields the grader needs from `triage investigate -o json`, whatever its wrapping.

    Today: `{"draft": {"root_cause_class", "summary", "root_cause": [{"text"}], ...},
    "verification": {"outcome"}}`. Also read: a one-sentence `cause` (or `rootCause`) on the
    draft, used as the cause line when present (else the causal chain's last link, the cause a
    human acts on, else the summary); and documents wrapped as `{"apiVersion", "kind", "spec" |
    "status" | "result" | "report": {...}}`, or with the outcome in `status`.
    """
    draft = _find(doc, lambda d: "root_cause_class" in d or "rootCauseClass" in d) or {}
    cls = draft.get("root_cause_class", draft.get("rootCauseClass"))
    links = draft.get("root_cause", draft.get("rootCauseChain", draft.get("chain"))) or []
    if isinstance(links, str):
        links = [{"text": links}]
    link_texts = [str(x.get("text", "")) if isinstance(x, Mapping) else str(x) for x in links]
    summary = str(draft.get("summary") or "")
    cause = draft.get("cause", draft.get("rootCause"))
    if not isinstance(cause, str) or not cause.strip():
        cause = next((t for t in reversed(link_texts) if t.strip()), summary)
    text = " ".join(t for t in [cause, summary, *link_texts] if t)
    verification = _find(doc, lambda d: "outcome" in d and not _is_draft(d))
    outcome = verification.get("outcome") if verification else None
    return Graded(
        root_cause_class=None if cls is None else str(cls),
        cause=str(cause),
        root_cause_text=text,
        outcome=None if outcome is None else str(outcome),
    )


def _is_draft(d: Mapping[str, Any]) -> bool:
    return "root_cause_class" in d or "rootCauseClass" in d


def _find(doc: Any, want: Any, depth: int = 0) -> dict[str, Any] | None:
    """The first mapping (breadth-first, preferring well-known keys) for which `want` holds."""
    if depth > 6 or not isinstance(doc, Mapping):
        return None
    if want(doc):
        return dict(doc)
    preferred = ("draft", "verification", "result", "report", "spec", "status", "candidate")
    keys = [k for k in preferred if k in doc] + [k for k in doc if k not in preferred]
    for key in keys:
        value = doc[key]
        found = _find(value, want, depth + 1) if isinstance(value, Mapping) else None
        if found is not None:
            return found
    return None


# --------------------------------------------------------------------------------------------
# Grading
# --------------------------------------------------------------------------------------------


@dataclass
class Result:
    scenario: str
    split: str
    root_cause_class: str
    difficulty: str
    multi_hop: bool
    exit_code: int | None = None
    seconds: float = 0.0
    alert: str = ""  # "", "option" or "pasted"
    got_class: str | None = None
    outcome: str | None = None
    class_ok: bool = False
    facts_missing: list[list[str]] = field(default_factory=list)
    wrong_asserted: list[str] = field(default_factory=list)
    outcome_ok: bool = False
    error: str | None = None
    cause: str = ""

    @property
    def facts_ok(self) -> bool:
        return self.error is None and not self.facts_missing

    @property
    def correct(self) -> bool:
        """Right class, every fact, no wrong cause (the judge's say aside)."""
        return self.class_ok and self.facts_ok and not self.wrong_asserted

    @property
    def passed(self) -> bool:
        return self.correct and self.outcome_ok

    @property
    def wrong_but_verified(self) -> bool:
        return self.error is None and not self.correct and self.outcome == "verified"


def grade(scenario: Scenario, graded: Graded, result: Result) -> None:
    expect = scenario.expect
    result.got_class = graded.root_cause_class
    result.outcome = graded.outcome
    result.cause = graded.cause
    accepted = {c.value for c in expect.accepted_classes}
    result.class_ok = graded.root_cause_class in accepted
    text = graded.root_cause_text.lower()
    result.facts_missing = [
        list(alts) for alts in scenario.rendered_facts() if not any(a.lower() in text for a in alts)
    ]
    cause_line = graded.cause.lower()
    for wrong in expect.wrong_causes:
        if wrong.class_ is not None and graded.root_cause_class == wrong.class_.value:
            result.wrong_asserted.append(f"class {wrong.class_.value}")
        if wrong.phrase is not None and scenario.render(wrong.phrase).lower() in cause_line:
            result.wrong_asserted.append(f"phrase {wrong.phrase!r}")
    result.outcome_ok = graded.outcome == expect.outcome


# --------------------------------------------------------------------------------------------
# Running the product
# --------------------------------------------------------------------------------------------


def cli_command() -> list[str]:
    """How a user runs the CLI: the installed `triage` entry point, or the module when the
    entry point is absent from this environment."""
    if TRIAGE.exists():
        return [str(TRIAGE)]
    return [sys.executable, "-m", "triage.cli"]


def cli_has_alert_option() -> bool:
    proc = subprocess.run(
        [*cli_command(), "investigate", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"},
    )
    return "--alert" in proc.stdout


def pasted_alert(payload: Mapping[str, Any]) -> str:
    """An Alertmanager notification as people paste it from Slack or e-mail."""
    (alert,) = payload["alerts"]
    labels = alert["labels"]
    head = f"[{payload['status'].upper()}:1] {labels['alertname']}"
    shown = " ".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "alertname")
    lines = [f"{head} ({shown})"]
    lines += [f"{k}: {v}" for k, v in sorted(alert["annotations"].items())]
    lines.append(f"Started: {alert['startsAt']}")
    if payload["status"] == "resolved":
        lines.append(f"Resolved: {alert['endsAt']}")
    return "\n".join(lines)


def investigate(
    scenario: Scenario,
    *,
    reader_kubeconfig: Path,
    prometheus_url: str,
    planner: str,
    alert_option: bool,
    work: Path,
) -> tuple[int | None, Any, str, str]:
    """Runs one investigation; (exit code, parsed JSON or None, stderr tail, alert mode)."""
    question = scenario.rendered_question
    args = [
        *cli_command(),
        "investigate",
        question,
        "--kubeconfig",
        str(reader_kubeconfig),
        "--prometheus-url",
        prometheus_url,
        "-o",
        "json",
        "-q",
        "--planner",
        planner,
    ]
    alert_mode = ""
    payload = scenario.alert_payload()
    if payload is not None:
        if alert_option:
            alert_file = work / f"{scenario.name}.alert.json"
            alert_file.write_text(json.dumps(payload, indent=2))
            args += ["--alert", str(alert_file)]
            alert_mode = "option"
        else:
            args[2] = f"{question}\n\n{pasted_alert(payload)}"
            alert_mode = "pasted"
    state = work / "state" / scenario.name
    state.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "TRIAGE_STATE__DIR": str(state), "NO_COLOR": "1"}
    try:
        proc = subprocess.run(
            args,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT_S,
            check=False,
            env=env,
            cwd=REPO,
        )
    except subprocess.TimeoutExpired:
        return None, None, f"timed out after {RUN_TIMEOUT_S:.0f}s", alert_mode
    try:
        doc = json.loads(proc.stdout)
    except ValueError:
        doc = None
    return proc.returncode, doc, proc.stderr[-2000:], alert_mode


# --------------------------------------------------------------------------------------------
# Reporting
# --------------------------------------------------------------------------------------------


def shown_name(scenario: Scenario, reveal: bool) -> str:
    if scenario.heldout and not reveal:
        return f"heldout-{hashlib.sha256(scenario.name.encode()).hexdigest()[:8]}"
    return scenario.name


def rate(results: Sequence[Result]) -> str:
    passed = sum(r.passed for r in results)
    return f"{passed}/{len(results)} ({100.0 * passed / len(results):.0f}%)" if results else "-"


def group_table(title: str, groups: Mapping[str, Sequence[Result]]) -> list[str]:
    width = max([len(title), *(len(k) for k in groups)])
    lines = [f"{title:{width}}  {'passed':>14}  {'class ok':>8}  {'facts ok':>8}  {'wrong+ver':>9}"]
    for key in sorted(groups):
        rs = groups[key]
        lines.append(
            f"{key:{width}}  {rate(rs):>14}  {sum(r.class_ok for r in rs):>8}  "
            f"{sum(r.facts_ok for r in rs):>8}  {sum(r.wrong_but_verified for r in rs):>9}"
        )
    return lines


def report(results: Sequence[Result], reveal: bool, scenarios: Mapping[str, Scenario]) -> str:
    lines = [
        f"{'scenario':42} {'expected':26} {'got':26} {'cls':>3} {'facts':>5} {'wrong':>5} "
        f"{'outcome':>21} {'pass':>4} {'s':>5}"
    ]
    lines.append("-" * len(lines[0]))
    for r in sorted(results, key=lambda r: (r.split, r.scenario)):
        sc = scenarios[r.scenario]
        facts = (
            "-"
            if r.error is not None
            else f"{len(sc.expect.facts) - len(r.facts_missing)}/{len(sc.expect.facts)}"
        )
        lines.append(
            f"{shown_name(sc, reveal):42} {r.root_cause_class:26} {(r.got_class or '-'):26} "
            f"{'ok' if r.class_ok else 'NO':>3} {facts:>5} "
            f"{'-' if r.error else len(r.wrong_asserted):>5} "
            f"{(r.outcome or r.error or '-')[:21]:>21} {'yes' if r.passed else 'no':>4} "
            f"{r.seconds:5.0f}"
        )
        if r.error and (reveal or not sc.heldout):
            lines.append(f"    error: {r.error[:300]}")
        elif not r.passed and (reveal or not sc.heldout):
            if r.facts_missing:
                lines.append(f"    missing facts: {r.facts_missing}")
            if r.wrong_asserted:
                lines.append(f"    wrong cause asserted: {r.wrong_asserted}")
    by_class: dict[str, list[Result]] = defaultdict(list)
    by_difficulty: dict[str, list[Result]] = defaultdict(list)
    by_split: dict[str, list[Result]] = defaultdict(list)
    by_hops: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_class[r.root_cause_class].append(r)
        by_difficulty[r.difficulty].append(r)
        by_split[r.split].append(r)
        by_hops["multi-hop" if r.multi_hop else "single-hop"].append(r)
    lines += ["", *group_table("class", by_class)]
    lines += ["", *group_table("difficulty", by_difficulty)]
    lines += ["", *group_table("hops", by_hops)]
    lines += ["", *group_table("split", by_split)]
    wrong_verified = sum(r.wrong_but_verified for r in results)
    lines += [
        "",
        f"overall: {rate(results)} passed; correct answers (judge aside): "
        f"{sum(r.correct for r in results)}/{len(results)}; "
        f"wrong causes the judge verified: {wrong_verified}; "
        f"errors (no parsable answer): {sum(r.error is not None for r in results)}",
    ]
    return "\n".join(lines)


def summary_json(
    results: Sequence[Result], reveal: bool, scenarios: Mapping[str, Scenario], meta: dict[str, Any]
) -> dict[str, Any]:
    rows = []
    for r in results:
        sc = scenarios[r.scenario]
        row = {**asdict(r), "passed": r.passed, "correct": r.correct, "facts_ok": r.facts_ok}
        row["wrong_but_verified"] = r.wrong_but_verified
        if sc.heldout and not reveal:
            row["scenario"] = shown_name(sc, reveal)
            for key in ("facts_missing", "wrong_asserted", "cause", "error"):
                row[key] = None
        rows.append(row)

    def rates(key: Any) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = defaultdict(lambda: {"passed": 0, "total": 0})
        for r in results:
            out[key(r)]["total"] += 1
            out[key(r)]["passed"] += int(r.passed)
        return dict(out)

    return {
        **meta,
        "results": rows,
        "by_class": rates(lambda r: r.root_cause_class),
        "by_difficulty": rates(lambda r: r.difficulty),
        "by_split": rates(lambda r: r.split),
        "overall": {"passed": sum(r.passed for r in results), "total": len(results)},
        "correct": sum(r.correct for r in results),
        "wrong_causes_verified": sum(r.wrong_but_verified for r in results),
        "errors": sum(r.error is not None for r in results),
    }


# --------------------------------------------------------------------------------------------
# main
# --------------------------------------------------------------------------------------------


def select(split: str, names: Iterable[str]) -> list[Scenario]:
    scenarios = load_scenarios(split=split)  # type: ignore[arg-type]
    wanted = set(names)
    if wanted:
        unknown = wanted - {s.name for s in scenarios}
        if unknown:
            raise SystemExit(f"no such scenario in split {split}: {', '.join(sorted(unknown))}")
        scenarios = [s for s in scenarios if s.name in wanted]
    return scenarios


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="all")
    parser.add_argument("--scenario", nargs="+", default=[], metavar="NAME")
    parser.add_argument("--planner", choices=("rules", "llm"), default="rules")
    parser.add_argument("--json-out", type=Path, help="write the results as JSON here")
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="control plane state dir (default: the test suite's, reused when healthy)",
    )
    parser.add_argument(
        "--answers",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep each answer (the CLI's JSON) as DIR/<scenario>.json (dev scenarios only, "
        "unless --reveal-heldout)",
    )
    parser.add_argument(
        "--reveal-heldout",
        action="store_true",
        help="show held-out scenarios by name, with their facts and answers",
    )
    args = parser.parse_args(argv)

    scenarios = select(args.split, args.scenario)
    t0 = time.perf_counter()
    cp = (
        ControlPlane.start_or_reuse(state_dir=args.state_dir)
        if args.state_dir
        else ControlPlane.start_or_reuse()
    )
    work = Path(tempfile.mkdtemp(prefix="triage-rca-corpus-"))
    prom = None
    try:
        load_all(cp, scenarios)
        prom = start_prometheus(
            openmetrics_from_series(scenario_series(scenarios), time.time(), extend_for=3 * 3600),
            workdir=work / "prom",
        )
        alert_option = cli_has_alert_option()
        print(
            f"setup: {len(scenarios)} scenarios loaded, prometheus at {prom.url} "
            f"({time.perf_counter() - t0:.0f}s); planner {args.planner}; alerts "
            f"{'via --alert' if alert_option else 'pasted into the question (no --alert option)'}",
            flush=True,
        )
        results = []
        for sc in scenarios:
            result = Result(
                scenario=sc.name,
                split="heldout" if sc.heldout else "dev",
                root_cause_class=sc.expect.root_cause_class.value,
                difficulty=sc.expect.difficulty,
                multi_hop=sc.expect.multi_hop,
            )
            start = time.perf_counter()
            code, doc, stderr, alert_mode = investigate(
                sc,
                reader_kubeconfig=cp.reader_kubeconfig,
                prometheus_url=prom.url,
                planner=args.planner,
                alert_option=alert_option,
                work=work,
            )
            result.seconds = time.perf_counter() - start
            result.exit_code = code
            result.alert = alert_mode
            if doc is not None and args.answers and (args.reveal_heldout or not sc.heldout):
                args.answers.mkdir(parents=True, exist_ok=True)
                (args.answers / f"{sc.name}.json").write_text(json.dumps(doc, indent=2) + "\n")
            if doc is None:
                result.error = f"exit {code}, no JSON on stdout: {stderr.strip()[-300:]}"
            else:
                grade(sc, graded_fields(doc), result)
            results.append(result)
            print(
                f"  {shown_name(sc, args.reveal_heldout):42} "
                f"{'pass' if result.passed else 'fail'} ({result.seconds:.0f}s)",
                flush=True,
            )
    finally:
        if prom is not None:
            prom.stop()
        cp.release()
    by_name = {s.name: s for s in scenarios}
    print()
    print(report(results, args.reveal_heldout, by_name))
    if args.json_out:
        meta = {
            "split": args.split,
            "planner": args.planner,
            "alerts": "option" if alert_option else "pasted",
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        doc = summary_json(results, args.reveal_heldout, by_name, meta)
        args.json_out.write_text(json.dumps(doc, indent=2) + "\n")
        print(f"\nresults written to {args.json_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
