"""Re-record the demo bundles shipped in triage/demo/ from real runs.

    .venv/bin/python -m tests.support.record_demo [scenario ...]

Starts (or reuses) the test control plane, applies the scenarios, backfills a real Prometheus
with their series, then runs `triage record` for each scenario as the reader identity. The
bundles hold only redacted tool results, never raw objects.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

from tests.support.controlplane import ControlPlane
from tests.support.observability import openmetrics_from_series, start_prometheus
from tests.support.scenario_format import load_scenarios, scenario_series
from tests.support.scenarios import load_all
from triage.cli.main import app
from triage.core.bundles import demo_dir


def main(names: list[str]) -> int:
    cp = ControlPlane.start_or_reuse()
    scenarios = [s for s in load_scenarios(split="dev") if not names or s.name in names]
    load_all(cp, scenarios)
    work = Path(tempfile.mkdtemp(prefix="triage-record-"))
    prom = start_prometheus(
        openmetrics_from_series(scenario_series(scenarios), time.time()), workdir=work / "prom"
    )
    failures = 0
    try:
        for sc in scenarios:
            out = demo_dir() / f"{sc.name}.json"
            result = CliRunner().invoke(
                app,
                [
                    "record",
                    sc.rendered_question,
                    "--out",
                    str(out),
                    "--name",
                    sc.name,
                    "--kubeconfig",
                    str(cp.reader_kubeconfig),
                    "--prometheus-url",
                    prom.url,
                    "-o",
                    "markdown",
                    "-q",
                ],
                env={"TRIAGE_STATE__DIR": str(work)},
            )
            summary = next((ln for ln in result.stdout.splitlines() if ln.startswith("# ")), "")
            print(f"{sc.name}: exit {result.exit_code} {summary}")
            failures += result.exit_code not in (0, 1)
    finally:
        prom.stop()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
