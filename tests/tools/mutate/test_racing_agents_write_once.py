"""Two agent processes (and then eight threads) race on one operation: exactly one writes.

The processes are real and separate (tests/tools/mutate/worker.py), start at the same instant and
submit the same request. The ledger's create-once claim decides: the loser either sees the
winner's live claim and stands back, or sees the finished record. Writes are counted at the
wire of each process.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.tools.mutate.rig import SILENCE_ACTIONS, Rig, action_params
from tests.tools.mutate.wire import Wire, landed, read_log
from tools.mutate.ledger import Phase

pytestmark = pytest.mark.cluster


@pytest.fixture
def rig(request, ledger_cluster, target_ns):
    am_url = None
    if request.node.callspec.params.get("action") in SILENCE_ACTIONS:
        am_url = request.getfixturevalue("alertmanager").url
    r = Rig(ledger_cluster, target_ns, am_url)
    yield r
    r.close()


@pytest.mark.parametrize("action", action_params(["rollout_restart", "scale", "silence_create"]))
def test_two_processes_racing_on_one_operation_write_once(rig, action, tmp_path):
    case = rig.case(action)
    start_at = time.time() + 2.5  # both are up and imported by then
    racers = [
        rig.worker(tmp_path, case.request, log_name=f"racer{i}.log", start_at=start_at)
        for i in range(2)
    ]
    outcomes = []
    for p in racers:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err[-2000:]
        outcomes.append(json.loads(out))

    writes = [landed(read_log(str(tmp_path / f"racer{i}.log")), *case.write) for i in range(2)]
    assert sorted(writes) == [0, 1], (writes, outcomes)
    assert {o["operation"] for o in outcomes} == {outcomes[0]["operation"]}
    winner = outcomes[writes.index(1)]
    assert winner["phase"] == Phase.SUCCEEDED
    op = rig.registry().ledger.get(winner["operation"])
    assert op is not None
    assert op.phase is Phase.SUCCEEDED
    case.check(op)


@pytest.mark.parametrize("action", action_params(["rollout_restart", "silence_create"]))
def test_eight_agents_racing_in_threads_write_once(rig, action):
    case = rig.case(action)
    wires = [Wire() for _ in range(8)]
    registries = [rig.registry(w) for w in wires]
    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(lambda r: r.submit(case.request), registries))
    assert sum(w.landed(*case.write) for w in wires) == 1
    assert any(o.phase is Phase.SUCCEEDED for o in outcomes)
    assert len({o.operation.id for o in outcomes if o.operation}) == 1
    op = registries[0].ledger.get(outcomes[0].result.data["operation"])
    assert op is not None
    assert op.phase is Phase.SUCCEEDED
    case.check(op)
