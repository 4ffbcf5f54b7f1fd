"""Benchmark: per scenario, rules-planner triage time and apiserver requests and bytes.

Runs against the real test control plane and a real Prometheus, as the reader identity:

    .venv/bin/python -m bench.triage_scenarios [--repeat 3]

Baseline: an unscoped tool that lists pods, events, deployments and replicasets in *all*
namespaces on every triage (what `kubectl get pods,events,deploy,rs -A -o json` fetches).
The ratio column is our bytes per triage divided by that baseline's bytes.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tests.support.controlplane import ControlPlane
from tests.support.observability import openmetrics_from_series, start_prometheus
from tests.support.product import app_over
from tests.support.scenario_format import load_scenarios, scenario_series
from tests.support.scenarios import load_all
from tools.read.kube import KubeReader
from tools.read.prometheus import PrometheusReader
from tools.read.registry import ReadRegistry
from triage.app import Request


def baseline_bytes(kube: KubeReader) -> tuple[int, int]:
    before_req, before_bytes = kube.stats.requests, kube.stats.bytes
    for path in ("/api/v1/pods", "/api/v1/events", "/apis/apps/v1/deployments"):
        kube._list(path)
    kube._list("/apis/apps/v1/replicasets")
    return kube.stats.requests - before_req, kube.stats.bytes - before_bytes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per scenario (median shown)")
    args = parser.parse_args()

    t0 = time.perf_counter()
    cp = ControlPlane.start_or_reuse()
    scenarios = load_scenarios(split="dev")
    load_all(cp, scenarios)
    work = Path(tempfile.mkdtemp(prefix="triage-bench-"))
    prom = start_prometheus(
        openmetrics_from_series(scenario_series(scenarios), time.time()), workdir=work / "prom"
    )
    print(f"setup (control plane, scenarios, prometheus): {time.perf_counter() - t0:.1f}s")
    try:
        client = cp.api_client(cp.reader_kubeconfig)
        base_kube = KubeReader(client)
        base_req, base_bytes = baseline_bytes(base_kube)
        print(
            f"baseline (unscoped list of pods/events/deploy/rs): {base_req} requests, "
            f"{base_bytes / 1024:.1f} KiB"
        )
        header = (
            f"{'scenario':32} {'class':26} {'ok':>3} {'ms':>7} {'calls':>5} "
            f"{'api req':>7} {'api KiB':>8} {'ratio':>6}"
        )
        print(header)
        print("-" * len(header))
        totals: list[float] = []
        for sc in sorted(scenarios, key=lambda s: s.name):
            times = []
            for _ in range(args.repeat):
                kube = KubeReader(client)
                tools = ReadRegistry(kube, PrometheusReader(prom.url))
                start = time.perf_counter()
                run = app_over(tools, work, checkpointer="memory").checked_run(
                    Request(words=sc.rendered_question, planner="rules")
                )
                result = run.best
                times.append((time.perf_counter() - start) * 1000)
            assert result.draft is not None
            got = result.draft.root_cause_class
            median = statistics.median(times)
            totals.append(median)
            print(
                f"{sc.name:32} {got:26} {'yes' if got == sc.expect.root_cause_class else 'NO':>3} "
                f"{median:7.0f} {len(result.evidence):5d} {kube.stats.requests:7d} "
                f"{kube.stats.bytes / 1024:8.1f} {kube.stats.bytes / max(base_bytes, 1):6.2f}"
            )
        print(
            f"\nmedian triage {statistics.median(totals):.0f} ms, "
            f"max {max(totals):.0f} ms over {len(totals)} scenarios"
        )
    finally:
        prom.stop()


if __name__ == "__main__":
    main()
