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

    .venv/bin/python -m bench.cli_start [--runs 5] [--cluster] [--before REF | --source DIR]

`--before REF` measures the code of commit REF first (a temporary `git worktree` of it, removed
afterwards) and then this checkout, in the same run and the same environment, and prints both
with the ratio: the CLI's start-up before and after a change (e.g. `--before a8b4f05^`, the
commit before the CLI stopped loading the product for --help). `--source DIR` runs only
another checkout's code. Either way the other code is first on PYTHONPATH and is the child's
working directory (`python -c` puts the working directory first on sys.path, ahead of
PYTHONPATH). A command the older code does not have (`triage version`) shows its exit status.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

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


def _cwd(env: dict[str, str]) -> str:
    return env.get("PYTHONPATH") or str(ROOT)


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """CPU seconds (user+sys of the child), wall seconds, exit status of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        env=env,
        cwd=_cwd(env),
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
        cwd=_cwd(env),
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


Sample = tuple[float, float, list[int]]  # median CPU s, median wall s, exit statuses


def _measure(label: str, args: list[str], env: dict[str, str], runs: int) -> Sample:
    samples = [_timed(args, env) for _ in range(runs)]
    cpu = statistics.median(s[0] for s in samples)
    wall = statistics.median(s[1] for s in samples)
    codes = sorted({s[2] for s in samples})
    print(f"{label:<44} cpu {cpu:6.3f}s  wall {wall:6.3f}s  exit {codes}  ({runs} runs)")
    return cpu, wall, codes


def _print_imports(label: str, args: list[str], env: dict[str, str], top: int) -> float:
    every = _importtime(args, env, 10_000)
    rows, total = every[:top], sum(c for c, _ in every)
    print(f"\n-X importtime, {label}: {total / 1e6:.2f}s in all; top packages (own time)")
    for own, name in rows:
        print(f"  {own / 1e3:9.1f} ms  {name}")
    return total / 1e6


@contextmanager
def _worktree(ref: str) -> Iterator[Path]:
    """A temporary `git worktree` of `ref` (detached), removed afterwards."""
    where = Path(tempfile.mkdtemp(prefix="triage-before-")) / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(where), ref],
        check=True,
        timeout=120,
    )
    try:
        yield where
    finally:
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(where)],
            check=False,
            timeout=120,
        )
        shutil.rmtree(where.parent, ignore_errors=True)


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


def _suite(
    source: Path | None, work: Path, args: argparse.Namespace, reader: Path | None
) -> dict[str, Sample | float]:
    """Every measurement for the code in `source` (None: this checkout)."""
    env = _env(source, work / "state")
    nowhere = work / "nowhere.kubeconfig"
    nowhere.write_text(CLOSED_PORT_KUBECONFIG)
    print(f"\n== code from {source or 'this checkout'} (python {sys.version.split()[0]})")
    out: dict[str, Sample | float] = {}
    out["triage --help"] = _measure("triage --help", ["--help"], env, args.runs)
    out["triage version"] = _measure("triage version", ["version"], env, args.runs)
    start = ["investigate", "why is checkout down", "-q", "--kubeconfig", str(nowhere)]
    label = "triage investigate (start-up, no apiserver)"
    out[label] = _measure(label, start, env, args.runs)
    if reader is not None:
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
        label = "triage investigate (small scenario)"
        out[label] = _measure(label, run, env, args.runs)
    out["imports --help"] = _print_imports("triage --help", ["--help"], env, args.top)
    out["imports start-up"] = _print_imports("triage investigate start-up", start, env, args.top)
    return out


def _compare(ref: str, before: dict[str, Sample | float], after: dict[str, Sample | float]) -> None:
    print(f"\n== before ({ref}) -> after (this checkout): median CPU seconds")
    for label, was in before.items():
        now = after[label]
        if isinstance(was, float) and isinstance(now, float):
            print(f"{label:<44} {was:6.3f}s -> {now:6.3f}s  (import time, one run)")
            continue
        assert isinstance(was, tuple)
        assert isinstance(now, tuple)
        if was[2] != [0] and "version" in label:
            print(f"{label:<44} (not a command before: exit {was[2]}) -> {now[0]:6.3f}s")
            continue
        if now[0] <= 0 or was[0] <= 0:
            ratio = ""
        elif now[0] <= was[0]:
            ratio = f"{was[0] / now[0]:.1f}x less"
        else:
            ratio = f"{now[0] / was[0]:.1f}x more"
        print(f"{label:<44} {was[0]:6.3f}s -> {now[0]:6.3f}s  {ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command (median shown)")
    parser.add_argument("--top", type=int, default=12, help="import-time entries shown")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--source", type=Path, default=None, help="another checkout to run")
    which.add_argument("--before", default=None, help="a commit to measure first, for a ratio")
    parser.add_argument(
        "--cluster", action="store_true", help="also investigate a small scenario end to end"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="triage-cli-start-"))
    reader = _small_scenario(work) if args.cluster else None
    if args.before is None:
        _suite(args.source, work, args, reader)
        return
    with _worktree(args.before) as tree:
        before = _suite(tree, work, args, reader)
    after = _suite(None, work, args, reader)
    _compare(args.before, before, after)


if __name__ == "__main__":
    main()
