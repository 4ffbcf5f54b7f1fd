"""Benchmark: what an investigation costs the person waiting for it, and how that grows with
the namespace.

Two parts, each a before/after figure when run again with `--source DIR`:

- **wall** — `triage` as a fresh process, from start to exit (median of `--runs`): `triage demo
  crashloop-bad-env` (a shipped recorded incident, replayed without a cluster) and, with the
  test control plane, `triage investigate` on a small namespace of it (one crash-looping pod
  among 10 healthy ones, as the reader identity); then the top entries of `-X importtime`
  (each package's own import time, summed) for the investigate run. Bar: <= 2 s wall.
- **scale** (`--scale`, needs the test control plane) — a generated namespace per size
  (`bench-pods-N`: a Deployment of N healthy pods and one crash-looping pod, run by kwok):
  the checked run in this process (rules planner, SQLite checkpointer, reports in memory),
  timed after one warm-up run, with the bytes its checkpoints wrote (the SQLite checkpointer's
  `checkpoints` and `writes` tables) and the evidence payloads stored once beside them
  (`triage_evidence`), the apiserver's bytes on the wire (a counting TCP proxy
  between the reader and the apiserver) and as decoded. Bar: 1,000 pods within 3x of 10. At
  500 pods the same proxy measures the LIST calls a namespaced `k8sgpt analyze -n NS` sends
  (its core analyzers, read from k8sgpt's pkg/analyzer/*.go: pods, deployments, replicasets,
  daemonsets, statefulsets, jobs, cronjobs, PVCs, endpoints, ingresses, configmaps and pods
  again, nodes, validating and mutating webhooks, and the events of each failing pod), each
  unpaginated and gzip-negotiated as client-go does; k8sgpt itself was not run (its module is
  not on the Go module proxy this workplace reaches).

    .venv/bin/python -m bench.cli_investigate [--runs 3] [--cluster] [--scale]
        [--sizes 10,500,1000] [--source DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from triage.cli import main; sys.argv[0] = 'triage'; main()"
WALL_BAR_S = 2.0
SCALE_BAR = 3.0
CRASHLOOP = {"sim.triage.dev/state": "crashloop", "sim.triage.dev/exit-code": "3"}
NODE = "node-general-1"
CRASH_LOG = [
    "starting checkout 1.4.2",
    'FATAL env DATABASE_URL is not a valid URL: parse "postgres//db:5432": missing scheme',
]


# -- part 1: wall time of the command ---------------------------------------------------------


def _env(source: Path | None, state: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRIAGE_", "KUBECONFIG"))}
    env["XDG_STATE_HOME"] = str(state)
    env["TRIAGE_STATE__DIR"] = str(state)
    env["COLUMNS"] = "100"
    env["PYTHONPATH"] = str(source or ROOT)
    return env


def _timed(args: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", ENTRY, *args],
        env=env,
        cwd=env["PYTHONPATH"],  # `-c` puts the working directory first on sys.path
        capture_output=True,
        timeout=600,
        check=False,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.returncode


def _measure(label: str, args: list[str], env: dict[str, str], runs: int) -> float:
    samples = [_timed(args, env) for _ in range(runs)]
    cpu = statistics.median(s[0] for s in samples)
    wall = statistics.median(s[1] for s in samples)
    codes = sorted({s[2] for s in samples})
    verdict = "ok" if wall <= WALL_BAR_S else "over"
    print(
        f"  {label:<46} wall {wall:6.2f}s  cpu {cpu:6.2f}s  exit {codes}  "
        f"({runs} runs; bar <= {WALL_BAR_S:g}s: {verdict})"
    )
    return wall


def _importtime(args: list[str], env: dict[str, str], top: int) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", ENTRY, *args],
        env=env,
        cwd=env["PYTHONPATH"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    own: dict[str, int] = {}
    for line in proc.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        us, _, name = line[len("import time:") :].split("|")
        package = name.strip().split(".")[0]
        own[package] = own.get(package, 0) + int(us.strip())
    total = sum(own.values())
    print(f"\n  -X importtime: {total / 1e6:.2f}s importing in all; top packages (own time)")
    for package, micros in sorted(own.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {micros / 1e3:9.1f} ms  {package}")


def wall(args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="triage-cli-investigate-"))
    env = _env(args.source, work / "state")
    print(f"wall, process start to exit; code from {args.source or ROOT}")
    # Bytecode as an installed copy (or any second run) has it: without this, a tree edited
    # since its last import is compiled in every timed run when PYTHONDONTWRITEBYTECODE is set.
    source = args.source or ROOT
    packages = [str(source / p) for p in ("triage", "judge", "tools", "policies")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True, timeout=600)
    demo = ["demo", "crashloop-bad-env", "-q", "-o", "json"]
    _measure("triage demo crashloop-bad-env (replayed)", demo, env, args.runs)
    profiled = demo
    if args.cluster:
        cp = _control_plane()
        namespace = _scale_namespace(cp, 10)
        run = [
            "investigate",
            f"why is checkout crash-looping in {namespace}?",
            "-n",
            namespace,
            "-q",
            "-o",
            "json",
            "--kubeconfig",
            str(cp.reader_kubeconfig),
        ]
        _measure(f"triage investigate ({namespace}, cluster)", run, env, args.runs)
        profiled = run
    _importtime(profiled, env, args.top)


# -- part 2: cost with the namespace's size ---------------------------------------------------


class CountingProxy:
    """A TCP relay on a loopback port that counts the bytes each way (TLS passes through)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.down = 0  # apiserver -> client
        self.up = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def reset(self) -> None:
        with self._lock:
            self.down = self.up = 0

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target, timeout=30)
            threading.Thread(target=self._pump, args=(client, upstream, "up"), daemon=True).start()
            threading.Thread(
                target=self._pump, args=(upstream, client, "down"), daemon=True
            ).start()

    def _pump(self, src: socket.socket, dst: socket.socket, way: str) -> None:
        try:
            while chunk := src.recv(65536):
                with self._lock:
                    setattr(self, way, getattr(self, way) + len(chunk))
                dst.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self._server.close()


def _control_plane() -> Any:
    from tests.support.controlplane import ControlPlane  # noqa: PLC0415 (only with a cluster)

    return ControlPlane.start_or_reuse()


def _scale_namespace(cp: Any, pods: int) -> str:
    """`bench-pods-N`: N healthy pods of `web` and one crash-looping pod of `checkout`, all
    Running or crash-looping under kwok before this returns."""
    from kubernetes import client  # noqa: PLC0415

    namespace = f"bench-pods-{pods}"
    core = client.CoreV1Api(cp.api_client())
    if namespace not in {n.metadata.name for n in core.list_namespace().items}:
        cp.create_namespace(namespace)

    def deployment(name: str, replicas: int, annotations: dict[str, str]) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}, "annotations": annotations},
                    "spec": {
                        # placed, not scheduled: the test cluster's kwok nodes take 110 pods
                        # each (the scheduler's count; kwok itself runs any number)
                        "nodeName": NODE,
                        "containers": [
                            {
                                "name": "app",
                                "image": f"registry.example/{name}:1.4.2",
                                "env": [{"name": "LOG_LEVEL", "value": "info"}],
                                "resources": {"requests": {"cpu": "1m", "memory": "1Mi"}},
                            }
                        ],
                    },
                },
            },
        }

    cp.apply(namespace, [deployment("web", pods, {}), deployment("checkout", 1, CRASHLOOP)])

    def count(**query: str) -> int:
        # raw, every 2 s: deserialising 1,000 typed pods per poll would slow kwok itself
        raw: Any = core.list_namespaced_pod(namespace, _preload_content=False, **query)
        return len(json.loads(raw.data)["items"])

    deadline = time.monotonic() + 1200
    while count(field_selector="status.phase=Running") < pods + 1 or count() != pods + 1:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{pods + 1} pods in {namespace} did not all start")
        time.sleep(2)
    crashing = core.list_namespaced_pod(namespace, label_selector="app=checkout").items[0]
    for previous in (False, True):
        cp.set_pod_logs(namespace, crashing.metadata.name, "app", CRASH_LOG, previous=previous)
    return namespace


def _checkpoint_bytes(db: Path) -> int:
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        a = conn.execute(
            "SELECT COALESCE(SUM(LENGTH(checkpoint) + LENGTH(metadata)), 0) FROM checkpoints"
        ).fetchone()[0]
        b = conn.execute("SELECT COALESCE(SUM(LENGTH(value)), 0) FROM writes").fetchone()[0]
    return int(a) + int(b)


def _payload_bytes(db: Path) -> int:
    """The evidence's payloads, stored once beside the checkpoints (triage_evidence); 0 for
    a checkout that keeps them in the checkpoints."""
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        try:
            row = conn.execute("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM triage_evidence")
        except sqlite3.OperationalError:
            return 0
        return int(row.fetchone()[0])


def _proxied_client(cp: Any, proxy: CountingProxy) -> Any:
    """The reader's client with its kubeconfig's server moved to the proxy (setting the host
    on a built client does not reach the URLs it builds)."""
    import yaml  # noqa: PLC0415

    config = yaml.safe_load(Path(cp.reader_kubeconfig).read_text())
    for cluster in config["clusters"]:
        url = urlparse(cluster["cluster"]["server"])
        cluster["cluster"]["server"] = f"{url.scheme}://127.0.0.1:{proxy.port}"
    path = Path(tempfile.mkdtemp(prefix="triage-proxied-")) / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return cp.api_client(path)


def _k8sgpt_lists(api: Any, namespace: str) -> tuple[int, int]:
    """The LIST calls of a namespaced k8sgpt run (see the module docstring); requests, bytes
    decoded (the wire bytes are the proxy's)."""
    from tools.kube_call import get_raw  # noqa: PLC0415 (this checkout's raw GET)

    ns = f"/api/v1/namespaces/{namespace}"
    apps = f"/apis/apps/v1/namespaces/{namespace}"
    batch = f"/apis/batch/v1/namespaces/{namespace}"
    paths = [
        f"{ns}/pods",
        f"{apps}/daemonsets",
        f"{apps}/deployments",
        f"{apps}/replicasets",
        f"{ns}/persistentvolumeclaims",
        f"{ns}/endpoints",
        f"/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses",
        f"{apps}/statefulsets",
        f"{batch}/jobs",
        f"{batch}/cronjobs",
        "/api/v1/nodes",
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
        "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations",
        f"{ns}/configmaps",
        f"{ns}/pods",  # the ConfigMap analyzer lists the pods again
    ]
    decoded = 0
    pods = json.loads(get_raw(api, f"{ns}/pods", timeout_s=60).body)["items"]
    failing = [
        p["metadata"]["name"]
        for p in pods
        if p["status"].get("phase") != "Running"
        or any(not c.get("ready") for c in p["status"].get("containerStatuses") or [])
    ]
    for path in paths:
        decoded += len(get_raw(api, path, timeout_s=60).body)
    for name in failing:  # util.FetchLatestEvent for each failing pod
        query = {"fieldSelector": f"involvedObject.name={name}"}
        decoded += len(get_raw(api, f"{ns}/events", query=query, timeout_s=60).body)
    return len(paths) + len(failing) + 1, decoded


def scale(args: argparse.Namespace) -> None:
    from tests.support.product import app_over  # noqa: PLC0415
    from tools.read.kube import KubeReader  # noqa: PLC0415
    from tools.read.registry import ReadRegistry  # noqa: PLC0415
    from triage.app import Request  # noqa: PLC0415

    cp = _control_plane()
    sizes = [int(s) for s in args.sizes.split(",")]
    namespaces = {n: _scale_namespace(cp, n) for n in sizes}
    host = urlparse(cp.api_client(cp.reader_kubeconfig).configuration.host)
    proxy = CountingProxy(host.hostname or "127.0.0.1", host.port or 443)
    work = Path(tempfile.mkdtemp(prefix="triage-bench-scale-"))
    print(f"\nscale: one crash-looping pod among N healthy ones; code from {args.source or ROOT}")
    print(
        f"  {'pods':>5} {'graph s':>8} {'x10':>5} {'evid':>5} {'ckpt KiB':>9} {'payload KiB':>11} "
        f"{'reqs':>5} "
        f"{'wire KiB':>9} {'decoded KiB':>11} {'cause'}"
    )
    times: dict[int, float] = {}
    for n in sizes:
        samples = []
        for i in range(args.runs + 1):  # the first run warms caches up and is not counted
            state = work / f"{n}-{i}"
            state.mkdir()
            kube = KubeReader(_proxied_client(cp, proxy))
            app = app_over(ReadRegistry(kube, None), state, checkpointer="sqlite")
            proxy.reset()
            started = time.perf_counter()
            run = app.checked_run(
                Request(words=f"why is checkout crash-looping in {namespaces[n]}?", planner="rules")
            )
            took = time.perf_counter() - started
            wire = proxy.down
            if i:
                samples.append(took)
        times[n] = statistics.median(samples)
        best = run.best
        cause = best.draft.root_cause_class if best.draft is not None else "-"
        ratio = times[n] / times[sizes[0]]
        print(
            f"  {n:5d} {times[n]:8.2f} {ratio:5.1f} {len(best.evidence):5d} "
            f"{_checkpoint_bytes(state / 'checkpoints.sqlite') / 1024:9.1f} "
            f"{_payload_bytes(state / 'checkpoints.sqlite') / 1024:11.1f} "
            f"{kube.stats.requests:5d} {wire / 1024:9.1f} {kube.stats.bytes / 1024:11.1f} {cause}"
        )
        if n == 500 and not args.source:
            proxy.reset()
            reqs, decoded = _k8sgpt_lists(_proxied_client(cp, proxy), namespaces[n])
            print(
                f"  {n:5d} k8sgpt analyze -n (its LIST calls, gzip): {reqs} requests, "
                f"wire {proxy.down / 1024:.1f} KiB, decoded {decoded / 1024:.1f} KiB "
                f"(Triage: wire {wire / 1024:.1f} KiB; bar: Triage <= k8sgpt)"
            )
    if len(sizes) > 1:
        top = times[sizes[-1]] / times[sizes[0]]
        verdict = "ok" if top <= SCALE_BAR else "over"
        print(
            f"  graph at {sizes[-1]} pods = {top:.1f}x {sizes[0]} pods "
            f"(bar <= {SCALE_BAR:g}x: {verdict})"
        )
    proxy.close()
    if not args.keep:  # the control plane is shared: leave it as it was
        for namespace in namespaces.values():
            cp.delete_namespace(namespace)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per figure (median shown)")
    parser.add_argument("--top", type=int, default=12, help="import-time entries shown")
    parser.add_argument("--source", type=Path, default=None, help="another checkout to run")
    parser.add_argument("--cluster", action="store_true", help="also investigate on a cluster")
    parser.add_argument("--scale", action="store_true", help="the namespace-size part")
    parser.add_argument("--sizes", default="10,500,1000", help="pods per namespace")
    parser.add_argument("--keep", action="store_true", help="keep the generated namespaces")
    parser.add_argument("--no-wall", action="store_true", help="skip the wall-time part")
    args = parser.parse_args()
    if not args.no_wall:
        wall(args)
    if args.scale:
        scale(args)


if __name__ == "__main__":
    main()
