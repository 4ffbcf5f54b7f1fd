"""Pod status is classified into the states wait_for names, as a kubelet would report them."""

from __future__ import annotations

from typing import Any

from tests.support.scenarios import pod_states


def pod(phase: str, *, node: str | None = "n1", ready: bool = True, **container: Any) -> Any:
    return {
        "spec": {"nodeName": node} if node else {},
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": [container] if container else [],
        },
    }


def test_ready_and_not_ready() -> None:
    assert pod_states(pod("Running")) == {"running", "ready"}
    assert pod_states(pod("Running", ready=False)) == {"running", "not-ready"}


def test_waiting_reasons() -> None:
    crash = pod("Running", ready=False, state={"waiting": {"reason": "CrashLoopBackOff"}})
    assert "crashloop" in pod_states(crash)
    pull = pod("Pending", state={"waiting": {"reason": "ImagePullBackOff"}})
    assert "imagepull" in pod_states(pull)
    config = pod("Pending", state={"waiting": {"reason": "CreateContainerConfigError"}})
    assert "config-error" in pod_states(config)


def test_oomkilled_from_last_state() -> None:
    oom = pod(
        "Running",
        state={"waiting": {"reason": "CrashLoopBackOff"}},
        lastState={"terminated": {"reason": "OOMKilled", "exitCode": 137}},
    )
    assert {"oomkilled", "crashloop"} <= pod_states(oom)


def test_pending_means_unscheduled_and_failed_is_a_phase() -> None:
    assert pod_states(pod("Pending", node=None)) == {"pending"}
    assert "pending" not in pod_states(pod("Pending"))
    assert pod_states(pod("Failed")) == {"failed"}
