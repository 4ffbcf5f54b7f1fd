"""Benchmark: how long the `triage` command takes to start, and what its imports cost.

Runs the CLI as a fresh process each time (a cold interpreter, warm disk cache) and reports the
median CPU seconds (user + system, from the child's rusage) and wall seconds of:

- `triage --help`;
- `triage version`;
- `triage investigate` up to its first answer from an apiserver that is not there (a kubeconfig
  pointing at a closed local port): the start-up an investigation pays before any work;
- with `--cluster`, `triage investigate` end to end on a small scenario (one namespace holding
  one ConfigMap) in the real test control plane, as the reader identity.

and the top entries of `python -X importtime` (each package's own import time, summed) for
`triage --help` and for the investigate start-up.

    .venv/bin/python -m bench.cli_start [--runs 5] [--cluster] [--source DIR]

`--source DIR` runs another checkout's code with this environment (e.g. a `git worktree` of
an older commit, for a before/after), by putting DIR first on PYTHONPATH.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ENTRY = "import sys; from triage.cli import main; sys.argv[0] = 'triage'; main()"
CLOSED_PORT_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: nowhere
  cluster: {server: "https://127.0.0.1:9"}
contexts:
- name: nowhere
  context: {cluster: nowhere, user: nobody, namespace: shop}
current-context: nowhere
users:
- name: nobody
  user: {token: not-a-token}
"""


def _env(source: Path | None, state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIAGE_", "KUBECONFIG"))}
    env["XDG_STATE_HOME"] = str(state)
    env["COLUMNS"] = "100"
    if source is not None:
        env["PYTHONPATH"] = str(source)
    return env


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """CPU seconds (user+sys of the child), wall seconds, exit status of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        env=env,
        cwd=env.get("PYTHONPATH"),  # `-c` puts the working directory first on sys.path
        capture_output=True,
        timeout=600,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.returncode


def _importtime(args: list[str], env: dict[str, str], top: int) -> list[tuple[int, str]]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", ENTRY, *args],
        env=env,
        cwd=env.get("PYTHONPATH"),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    by_package: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        own, _, name = line[len("import time:") :].split("|")
        package = name.strip().split(".")[0]
        by_package[package] = by_package.get(package, 0) + int(own)
    return sorted(((t, p) for p, t in by_package.items()), reverse=True)[:top]


def _measure(label: str, args: list[str], env: dict[str, str], runs: int) -> None:
    samples = [_timed(args, env) for _ in range(runs)]
    cpu = statistics.median(s[0] for s in samples)
    wall = statistics.median(s[1] for s in samples)
    codes = sorted({s[2] for s in samples})
    print(f"{label:<44} cpu {cpu:6.3f}s  wall {wall:6.3f}s  exit {codes}  ({runs} runs)")


def _print_imports(label: str, args: list[str], env: dict[str, str], top: int) -> None:
    every = _importtime(args, env, 10_000)
    rows, total = every[:top], sum(c for c, _ in every)
    print(f"\n-X importtime, {label}: {total / 1e6:.2f}s in all; top packages (own time)")
    for own, name in rows:
        print(f"  {own / 1e3:9.1f} ms  {name}")


def _small_scenario(work: Path) -> Path:
    """One namespace with one ConfigMap in the real test control plane; the reader's
    kubeconfig."""
    from tests.support.controlplane import ControlPlane  # noqa: PLC0415 (only with --cluster)

    cp = ControlPlane.start_or_reuse()
    api = cp.api_client()
    from kubernetes import client  # noqa: PLC0415

    core = client.CoreV1Api(api)
    ns = "bench-cli-start"
    if ns not in {n.metadata.name for n in core.list_namespace().items}:
        core.create_namespace({"metadata": {"name": ns}})
        core.create_namespaced_config_map(ns, {"metadata": {"name": "settings"}})
    del work
    return cp.reader_kubeconfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (median shown)")
    parser.add_argument("--top", type=int, default=12, help="import-time entries shown")
    parser.add_argument("--source", type=Path, default=None, help="another checkout to run")
    parser.add_argument(
        "--cluster", action="store_true", help="also investigate a small scenario end to end"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="triage-cli-start-"))
    env = _env(args.source, work / "state")
    nowhere = work / "nowhere.kubeconfig"
    nowhere.write_text(CLOSED_PORT_KUBECONFIG)
    print(f"python {sys.version.split()[0]}; code from {args.source or 'this checkout'}")
    _measure("triage --help", ["--help"], env, args.runs)
    _measure("triage version", ["version"], env, args.runs)
    start = ["investigate", "why is checkout down", "-q", "--kubeconfig", str(nowhere)]
    _measure("triage investigate (start-up, no apiserver)", start, env, args.runs)
    if args.cluster:
        reader = _small_scenario(work)
        run = [
            "investigate",
            "is anything wrong in bench-cli-start?",
            "-n",
            "bench-cli-start",
            "-q",
            "-o",
            "json",
            "--kubeconfig",
            str(reader),
        ]
        _measure("triage investigate (small scenario)", run, env, args.runs)
    _print_imports("triage --help", ["--help"], env, args.top)
    _print_imports("triage investigate start-up", start, env, args.top)


if __name__ == "__main__":
    main()
