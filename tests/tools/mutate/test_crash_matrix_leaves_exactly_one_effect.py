"""The crash matrix: every mutation, stopped at each of the four points, then resumed.

Points: before the intent is written; after the intent, before the write; after the write,
before its answer; after the answer, before the ledger records the outcome. "Stopped" is either
a fault at the wire (the connection drops; the same process carries on or gives up) or a real
SIGKILL of a separate agent process at that request. Resumed by another agent (a new holder
whose clock is past the first one's claim). Each case must end with the right phase and
exactly one effect in the cluster, counted both in the cluster's state and in the writes the
servers accepted.
"""

from __future__ import annotations

from dataclasses import asdict

import pytest

from tests.tools.mutate.rig import (
    ACTIONS,
    LEASE_S,
    POINTS,
    SILENCE_ACTIONS,
    Rig,
    action_params,
    crash_faults,
)
from tests.tools.mutate.wire import Fault, Wire, landed, read_log
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


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("action", action_params(ACTIONS))
def test_a_dropped_connection_at_each_point_still_gives_one_effect(rig, action, point):
    case = rig.case(action)
    wire = Wire()
    wire.arm(*crash_faults(case, point, kill=False))
    first = rig.registry(wire).submit(case.request)
    assert all(f.hits for f in wire.faults), f"fault at {point} never fired"
    wire.disarm()
    resumed = rig.registry(wire, later_s=LEASE_S + 1).submit(case.request)

    assert resumed.phase is Phase.SUCCEEDED, (first.result.excerpt, resumed.result.excerpt)
    assert wire.landed(*case.write) == 1, wire.log
    case.check(resumed.operation)
    assert resumed.operation.before
    assert resumed.operation.after


@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("action", action_params(ACTIONS))
def test_a_killed_agent_resumed_by_another_gives_one_effect(rig, action, point, tmp_path):
    case = rig.case(action)
    faults = [asdict(f) for f in crash_faults(case, point, kill=True)]
    for f in faults:
        f.pop("callback"), f.pop("seen"), f.pop("hits")
    killed = rig.worker(tmp_path, case.request, faults=faults, log_name="killed.log")
    _, err = killed.communicate(timeout=60)
    assert killed.returncode == -9, f"the agent was not killed at {point}: {err[-2000:]}"

    wire = Wire()  # the agent that picks the run up again, after the dead one's claim ran out
    resumed = rig.registry(wire, later_s=LEASE_S + 1).submit(case.request)
    assert resumed.phase is Phase.SUCCEEDED, resumed.result.excerpt

    log = read_log(str(tmp_path / "killed.log")) + wire.log
    assert landed(log, *case.write) == 1, log
    case.check(resumed.operation)


@pytest.mark.parametrize("what", ["timeout_response", "error_503_before", "error_503_after"])
@pytest.mark.parametrize("action", action_params(ACTIONS))
def test_a_timeout_or_5xx_on_the_write_is_checked_before_any_retry(rig, action, what):
    case = rig.case(action)
    wire = Wire()
    method, path = case.write
    wire.arm(Fault(method, path, what))
    outcome = rig.registry(wire).submit(case.request)

    assert wire.faults[0].hits == 1
    assert outcome.phase is Phase.SUCCEEDED, outcome.result.excerpt
    assert wire.landed(*case.write) == 1, wire.log
    case.check(outcome.operation)
    assert outcome.operation.attempts == (2 if what == "error_503_before" else 1)
