"""The real test control plane, started by the test suite: a pytest plugin and its handle.

Tests that need Kubernetes talk to a real kube-apiserver (with RBAC), kube-controller-manager,
kube-scheduler and etcd built from k8s.io/kubernetes, with kwok as the kubelet of four fake
nodes (tests/controlplane/README.md). Nothing here emulates the API: this module only builds,
starts, finds and stops those processes, and offers a few conveniences on top of the official
`kubernetes` client.

One control plane serves a whole pytest session, and is reused across sessions while it is
healthy (`.run/state.json` records it), because a warm start still costs seconds and a reuse
costs milliseconds. Each test gets its own namespace instead of its own cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import ssl
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config, dynamic
from kubernetes.client.exceptions import ApiException

CONTROLPLANE_DIR = Path(__file__).resolve().parents[1] / "controlplane"
DEFAULT_STATE_DIR = CONTROLPLANE_DIR / ".run"
KEEP_ENV = "TRIAGE_TEST_KEEP_CLUSTER"
_BINARY = CONTROLPLANE_DIR / "bin" / "triage-cp"

_KWOK_LOGS = {"api_version": "kwok.x-k8s.io/v1alpha1", "kind": "Logs"}


class ControlPlaneError(RuntimeError):
    """The control plane could not be built, started or reached."""


def build(*, timeout_s: float = 1800.0) -> None:
    """Run tests/controlplane/build.sh: minutes when cold, milliseconds when up to date."""
    proc = subprocess.run(
        [str(CONTROLPLANE_DIR / "build.sh")],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if proc.returncode != 0:
        raise ControlPlaneError(f"build.sh failed ({proc.returncode}):\n{proc.stderr[-4000:]}")


def _pid_alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@dataclass
class ControlPlane:
    """A running control plane, as recorded in `<state_dir>/state.json` by `triage-cp up`."""

    state_dir: Path
    server: str
    admin_kubeconfig: Path
    reader_kubeconfig: Path
    mutator_kubeconfig: Path
    ca_cert: Path
    pod_logs_dir: Path
    pids: tuple[int, ...]
    started_here: bool = False
    _dyn: dynamic.DynamicClient | None = field(default=None, init=False, repr=False)

    # -- lifecycle ---------------------------------------------------------------------------

    @classmethod
    def start_or_reuse(
        cls, *, timeout_s: float = 120.0, state_dir: Path = DEFAULT_STATE_DIR
    ) -> ControlPlane:
        """Reuse the healthy control plane recorded in state_dir, else start a fresh one.

        Builds first when the binaries are missing or stale (build.sh is a no-op otherwise).
        `triage-cp up --reuse` decides under a per-state-dir lock, so concurrent sessions and
        up.sh share one control plane instead of wiping each other's, and records this process
        as a user of it.
        """
        build()
        proc = subprocess.run(
            [
                str(_BINARY),
                "up",
                "--reuse",
                f"--user-pid={os.getpid()}",
                f"--state-dir={state_dir}",
                f"--config-dir={CONTROLPLANE_DIR}",
                f"--timeout={int(timeout_s)}s",
            ],
            capture_output=True,
            text=True,
            timeout=timeout_s + 30,
            check=False,
        )
        if proc.returncode != 0:
            raise ControlPlaneError(
                f"triage-cp up failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
            )
        cp = cls._load(state_dir)
        if cp is None:
            raise ControlPlaneError(f"triage-cp up wrote no usable state in {state_dir}")
        cp.started_here = " started " in proc.stdout.splitlines()[0]
        return cp

    @classmethod
    def _load(cls, state_dir: Path) -> ControlPlane | None:
        try:
            raw = json.loads((state_dir / "state.json").read_text())
        except (OSError, ValueError):
            return None
        if not raw.get("reader_kubeconfig"):
            return None  # `up` did not finish
        return cls(
            state_dir=state_dir,
            server=raw["server"],
            admin_kubeconfig=Path(raw["admin_kubeconfig"]),
            reader_kubeconfig=Path(raw["reader_kubeconfig"]),
            mutator_kubeconfig=Path(raw["mutator_kubeconfig"]),
            ca_cert=Path(raw["ca_cert"]),
            pod_logs_dir=Path(raw["pod_logs_dir"]),
            pids=tuple(p["pid"] for p in raw["processes"]),
        )

    def healthy(self) -> bool:
        """Every recorded process is alive and the apiserver answers /readyz as admin."""
        if not all(_pid_alive(pid) for pid in self.pids):
            return False
        pki = self.state_dir / "pki"
        ctx = ssl.create_default_context(cafile=str(self.ca_cert))
        ctx.load_cert_chain(str(pki / "admin.crt"), str(pki / "admin.key"))
        try:
            with urllib.request.urlopen(f"{self.server}/readyz", context=ctx, timeout=5) as r:
                return bool(r.status == 200)
        except OSError:
            return False

    def stop(self) -> None:
        """Stop every component (`triage-cp down`), whoever else uses them."""
        self.close()
        self._down()

    def release(self) -> None:
        """End this process's use. A control plane this process started is stopped unless
        another registered session still runs; one it reused is left alone."""
        self.close()
        if self.started_here:
            self._down(f"--release-pid={os.getpid()}")
        else:
            with contextlib.suppress(FileNotFoundError):
                (self.state_dir / "users" / str(os.getpid())).unlink()

    def _down(self, *extra: str) -> None:
        proc = subprocess.run(
            [str(_BINARY), "down", f"--state-dir={self.state_dir}", *extra],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if proc.returncode != 0:
            raise ControlPlaneError(f"triage-cp down failed:\n{proc.stdout}\n{proc.stderr}")

    # -- clients -----------------------------------------------------------------------------

    def api_client(self, kubeconfig: Path | None = None) -> client.ApiClient:
        """A client authenticated by `kubeconfig` (admin by default), verifying our CA."""
        path = kubeconfig or self.admin_kubeconfig
        return config.new_client_from_config(config_file=str(path))

    def _dynamic(self) -> dynamic.DynamicClient:
        if self._dyn is None:
            self._dyn = dynamic.DynamicClient(
                self.api_client(), cache_file=str(self.state_dir / "discovery-cache.json")
            )
        return self._dyn

    def close(self) -> None:
        """Close the clients this handle holds (the control plane keeps running)."""
        if self._dyn is not None:
            self._dyn.client.close()
            self._dyn = None

    # -- conveniences ------------------------------------------------------------------------

    def create_namespace(self, name: str) -> None:
        """Create a namespace and wait for its "default" ServiceAccount, without which the
        apiserver's ServiceAccount admission refuses pods."""
        with self.api_client() as api:
            core = client.CoreV1Api(api)
            core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))

            def has_default_sa() -> bool:
                try:
                    core.read_namespaced_service_account("default", name)
                except ApiException as e:
                    if e.status == 404:
                        return False
                    raise
                return True

            self.wait_for(has_default_sa, 30, f"ServiceAccount {name}/default")

    def delete_namespace(self, name: str) -> None:
        """Delete a namespace; the namespace controller removes its contents in the background."""
        with self.api_client() as api:
            try:
                client.CoreV1Api(api).delete_namespace(name, propagation_policy="Background")
            except ApiException as e:
                if e.status != 404:
                    raise

    def apply(self, namespace: str, manifests: list[dict[str, Any]]) -> None:
        """Create each object, or replace it when it exists (cluster-scoped kinds ignore
        `namespace`). Goes through the dynamic client, so any kind the apiserver serves works."""
        dyn = self._dynamic()
        for manifest in manifests:
            body = json.loads(json.dumps(manifest))  # never mutate the caller's dict
            resource = dyn.resources.get(api_version=body["apiVersion"], kind=body["kind"])
            ns = namespace if resource.namespaced else None
            if ns is not None:
                body.setdefault("metadata", {})["namespace"] = ns
            try:
                resource.create(body=body, namespace=ns)
            except ApiException as e:
                if e.status != 409:
                    raise
                current = resource.get(name=body["metadata"]["name"], namespace=ns)
                body["metadata"]["resourceVersion"] = current.metadata.resourceVersion
                resource.replace(body=body, namespace=ns)

    def set_pod_logs(
        self,
        namespace: str,
        pod: str,
        container: str,
        lines: list[str],
        previous: bool = False,
    ) -> None:
        """Make `lines` the (current or previous) log of a container, served by kwok.

        The apiserver proxies `pods/log` to the node's kubelet endpoint, which is kwok; kwok
        reads the file named by a `Logs` object for the pod. Files are in the CRI log format
        the kubelet reads (`<RFC3339Nano> stdout F <line>`); timestamps are one second apart
        and end now, so sinceSeconds/tailLines behave.
        """
        pod_dir = self.pod_logs_dir / namespace / pod
        pod_dir.mkdir(parents=True, exist_ok=True)
        path = pod_dir / (f"{container}.previous.log" if previous else f"{container}.log")
        start = datetime.now(UTC) - timedelta(seconds=len(lines))
        text = "".join(
            f"{(start + timedelta(seconds=i)).strftime('%Y-%m-%dT%H:%M:%S.%fZ')} stdout F {line}\n"
            for i, line in enumerate(lines)
        )
        path.write_text(text)
        containers = sorted(
            {p.name.split(".", 1)[0] for p in pod_dir.iterdir() if p.suffix == ".log"}
        )
        logs = {
            "apiVersion": _KWOK_LOGS["api_version"],
            "kind": _KWOK_LOGS["kind"],
            "metadata": {"name": pod, "namespace": namespace},
            "spec": {
                "logs": [
                    {
                        "containers": [c],
                        "logsFile": str(pod_dir / f"{c}.log"),
                        "previousLogsFile": str(pod_dir / f"{c}.previous.log"),
                    }
                    for c in containers
                ]
            },
        }
        self.apply(namespace, [logs])

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float, what: str) -> None:
        """Poll `predicate` every 100 ms until true; raise TimeoutError naming `what`."""
        deadline = time.monotonic() + timeout_s
        while True:
            if predicate():
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what}")
            time.sleep(0.1)


# -- pytest plugin ---------------------------------------------------------------------------


def pytest_collection_finish(session: pytest.Session) -> None:
    """Build before the first cluster test, so a cold build is not charged to its timeout."""
    if session.config.option.collectonly:
        return
    if any(item.get_closest_marker("cluster") for item in session.items):
        build()


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """The session's control plane: started once, or reused when one is already healthy.

    Stopped at session end only if this session started it, no other live session uses it,
    and TRIAGE_TEST_KEEP_CLUSTER is not "1".
    """
    keep = os.environ.get(KEEP_ENV) == "1"
    cp = ControlPlane.start_or_reuse()
    # A reused control plane gets the identities' current rights (the manifest may have grown)
    # and the shared IngressClass.
    for shared in ("20-identities.yaml", "30-ingress-classes.yaml"):
        text = (CONTROLPLANE_DIR / "manifests" / shared).read_text()
        cp.apply("triage-system", [d for d in yaml.safe_load_all(text) if d])
    yield cp
    if keep:
        cp.started_here = False  # release() then only unregisters this session
    cp.release()


@pytest.fixture(scope="session")
def k8s_admin(control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    """An ApiClient authenticated as the cluster admin (system:masters)."""
    with control_plane.api_client() as api:
        yield api


@pytest.fixture
def namespace(control_plane: ControlPlane, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace named after the test, deleted afterwards."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    name = f"t-{slug}-{uuid.uuid4().hex[:6]}"
    control_plane.create_namespace(name)
    yield name
    control_plane.delete_namespace(name)
