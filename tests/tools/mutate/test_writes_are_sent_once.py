"""No transport layer re-sends a write behind the ledger's back, and a silent apiserver costs one
timeout, not four. Counted on the socket (a loopback proxy in front of the real apiserver) and
compared with what the client decided to send (the wire log above urllib3): they are equal.

The product's clients are built as the product builds them (`triage.app.kube_client` from a
kubeconfig, the mutator by impersonation). The control case builds one client with urllib3's
default retries and shows the same lost answer re-sent: the test would see a regression.
"""

from __future__ import annotations

import copy
import re
import time
from pathlib import Path
from typing import Any

import pytest
import urllib3
from kubernetes import client as k8s

from policies import Policy
from tests.tools.mutate.cluster import MUTATOR_SA, create_deployment, policy_for
from tests.tools.mutate.proxy import Lose, Proxy
from tests.tools.mutate.rig import OPS, Rig
from tools.errors import TimedOut
from tools.mutate.kube import KubeMutator, service_account_user
from tools.mutate.ledger import KubeLedger, Operation, Phase, Target, args_digest, operation_id
from tools.mutate.registry import MutateRegistry
from tools.read.kube import KubeReader
from tools.read.registry import ReadRegistry
from tools.results import ErrorKind
from triage.app import kube_client, mutate_registry
from triage.core.settings import KubeSettings, MutationSettings, Settings

pytestmark = pytest.mark.cluster

SCALE = r"/deployments/web/scale$"


@pytest.fixture
def proxy(ledger_cluster):
    p = Proxy(ledger_cluster.server, ledger_cluster.ca_cert).start()
    yield p
    p.stop()


@pytest.fixture
def rig(ledger_cluster, target_ns):
    r = Rig(ledger_cluster, target_ns)
    create_deployment(ledger_cluster, r.admin, target_ns, "web", replicas=2)
    yield r
    r.close()


def _settings(proxy: Proxy, rig: Rig, tmp_path: Path, timeout_s: float = 5.0) -> Settings:
    kubeconfig = proxy.kubeconfig(rig.cp.reader_kubeconfig, tmp_path / "via-proxy.kubeconfig")
    return Settings(
        kube=KubeSettings(kubeconfig=kubeconfig, timeout_s=timeout_s),
        mutations=MutationSettings(timeout_s=timeout_s, lease_s=3 * timeout_s),
    )


class Decisions:
    """Every request the client decides to send, counted where it hands it to urllib3 (a
    request urllib3 re-sends by itself is counted on the socket only)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.log: list[tuple[str, str]] = []

    def request(self, method: str, url: str, **kw: Any) -> Any:
        self.log.append((method.upper(), urllib3.util.parse_url(url).path or ""))
        return self._inner.request(method, url, **kw)

    def count(self, method: str, path: str) -> int:
        rx = re.compile(path)
        return sum(1 for m, p in self.log if m == method and rx.search(p))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def _decisions(api: k8s.ApiClient) -> Decisions:
    rest = api.rest_client
    decisions = Decisions(rest.pool_manager)
    rest.pool_manager = decisions  # type: ignore[assignment]
    return decisions


def _product(proxy: Proxy, rig: Rig, tmp_path: Path, **kw: float):
    settings = _settings(proxy, rig, tmp_path, **kw)
    api, _ = kube_client(settings, None)
    registry = mutate_registry(settings, Policy(mutations=policy_for(rig.ns)), api)
    assert registry is not None
    assert isinstance(registry.ledger, KubeLedger)
    decided = _decisions(registry.ledger._api.api_client)  # the mutator's client
    return api, registry, decided


def _scale(rig: Rig, replicas: int):
    t = Target(kind="Deployment", namespace=rig.ns, name="web")
    return rig.request("scale", t, {"replicas": replicas})


def test_a_write_whose_answer_is_lost_is_sent_exactly_once(proxy, rig, tmp_path):
    api, registry, decided = _product(proxy, rig, tmp_path)
    proxy.lose.append(Lose("PATCH", SCALE))

    outcome = registry.submit(_scale(rig, 5))

    assert proxy.count("PATCH", SCALE) == 1  # on the socket
    assert decided.count("PATCH", SCALE) == 1
    assert outcome.phase is Phase.SUCCEEDED, outcome.result.excerpt  # found applied, not re-sent
    assert "found applied" in outcome.operation.message
    dep = k8s.AppsV1Api(rig.admin).read_namespaced_deployment("web", rig.ns)
    assert dep.spec.replicas == 5
    assert api.configuration.retries is False
    api.close()


def test_a_ledger_update_whose_answer_is_lost_is_resent_only_by_the_engine(proxy, rig, tmp_path):
    api, registry, decided = _product(proxy, rig, tmp_path)
    proxy.lose.append(Lose("PUT", rf"{OPS}/scale-[a-z0-9]+$"))  # the fence before the write

    outcome = registry.submit(_scale(rig, 4))

    assert outcome.phase is Phase.SUCCEEDED, outcome.result.excerpt
    puts = rf"{OPS}/scale-[a-z0-9]+$"
    # every PUT on the socket is one the engine decided on after reading the record back
    assert proxy.count("PUT", puts) == decided.count("PUT", puts)
    assert proxy.count("PUT", puts) >= 3  # the lost fence, its explicit re-send, the outcome
    assert proxy.count("PATCH", SCALE) == 1
    api.close()


def test_the_control_urllib3_defaults_would_resend_it(proxy, rig, tmp_path):
    """Why this matters: the same lost answer through a client with urllib3's default retries
    reaches the apiserver several times, and the client never knows."""
    settings = _settings(proxy, rig, tmp_path)
    base, _ = kube_client(settings, None)
    cfg = copy.deepcopy(base.configuration)
    cfg.retries = None  # the kubernetes client's default
    defaults = k8s.ApiClient(cfg)
    defaults.set_default_header("Impersonate-User", service_account_user(MUTATOR_SA))
    decided = _decisions(defaults)
    registry = MutateRegistry(
        policy_for(rig.ns),
        KubeLedger(defaults, namespace="triage-system", timeout_s=5),
        kube=KubeMutator(defaults, timeout_s=5),
        lease_s=15,
    )
    puts = rf"{OPS}/scale-[a-z0-9]+$"
    proxy.lose.append(Lose("PUT", puts))

    registry.submit(_scale(rig, 3))

    assert proxy.count("PUT", puts) > decided.count("PUT", puts)  # re-sent behind our back
    defaults.close()
    base.close()


def test_a_silent_apiserver_costs_one_timeout(proxy, rig, tmp_path):
    settings = _settings(proxy, rig, tmp_path, timeout_s=1.0)
    api, _ = kube_client(settings, None)
    reads = ReadRegistry(KubeReader(api, timeout_s=1.0))
    namespace = rf"/api/v1/namespaces/{rig.ns}$"
    proxy.lose.append(Lose("GET", namespace, silent_s=4.0))

    started = time.monotonic()
    result = reads.call("k8s.namespace", {"namespace": rig.ns})
    elapsed = time.monotonic() - started

    assert not result.ok
    assert result.error_kind is ErrorKind.TIMEOUT
    assert proxy.count("GET", namespace) == 1  # a timeout is not retried
    assert elapsed < 2.5, elapsed
    api.close()


def test_a_silent_apiserver_costs_a_write_one_timeout(proxy, rig, tmp_path):
    api, registry, decided = _product(proxy, rig, tmp_path, timeout_s=1.0)
    ledger = registry.ledger
    proxy.lose.append(Lose("POST", rf"{OPS}$", silent_s=4.0))
    op = _scale(rig, 6)

    started = time.monotonic()
    with pytest.raises(TimedOut):
        ledger.claim(_operation_for(op))
    elapsed = time.monotonic() - started

    assert proxy.count("POST", rf"{OPS}$") == decided.count("POST", rf"{OPS}$") == 1
    assert elapsed < 2.5, elapsed
    api.close()


def _operation_for(req) -> Operation:
    return Operation(
        id=operation_id(req.run, req.step, req.action, req.target, req.args),
        run=req.run,
        step=req.step,
        action=req.action,
        target=req.target,
        args=req.args,
        args_digest=args_digest(req.action, req.target, req.args),
        requested_by=req.requested_by,
        requested_via=req.requested_via,
        phase=Phase.PENDING,
    )


def test_a_read_whose_connection_broke_is_tried_once_more_explicitly(proxy, rig, tmp_path):
    settings = _settings(proxy, rig, tmp_path, timeout_s=2.0)
    api, _ = kube_client(settings, None)
    decided = _decisions(api)
    reads = ReadRegistry(KubeReader(api, timeout_s=2.0))
    namespace = rf"/api/v1/namespaces/{rig.ns}$"
    proxy.lose.append(Lose("GET", namespace, times=5))  # every answer lost

    result = reads.call("k8s.namespace", {"namespace": rig.ns})

    assert not result.ok
    assert proxy.count("GET", namespace) == decided.count("GET", namespace) == 2  # bounded
    api.close()
