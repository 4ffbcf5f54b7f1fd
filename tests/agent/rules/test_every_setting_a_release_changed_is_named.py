"""A release can change any field of a pod template, not only the ones an SRE checks first.
`shapes.settings` flattens every other field of a raw template (what `kubectl get -o json`
returns) and the diff names each path that differs; rules/settings.py then says which changed
setting governs the failure the new pods log. Property-based where the input is a template."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tools.read import shapes
from triage.agent.planners.rules.analyzers.memory import _memory_backed
from triage.agent.planners.rules.diff import diff
from triage.agent.planners.rules.settings import explaining


def _raw(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "metadata": {"labels": {"app": "coupon", "version": "2.2.6", "pod-template-hash": "x1"}},
        "spec": {
            "dnsPolicy": "ClusterFirst",
            "restartPolicy": "Always",
            "containers": [
                {
                    "name": "app",
                    "image": "shop/coupon:2.2.6",
                    "env": [{"name": "DB_PASSWORD", "value": "hunter2-very-secret"}],
                    "args": ["--token=abc"],
                    "ports": [
                        {"name": "http", "containerPort": 8080, "protocol": "TCP"},
                        {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
                    ],
                    "securityContext": {"readOnlyRootFilesystem": False, "runAsUser": 1000},
                    "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                }
            ],
            "volumes": [{"name": "scratch", "emptyDir": {}}],
        },
    }
    base["spec"].update(spec)
    return base


def _changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [c.text for c in diff(shapes.template(old), shapes.template(new))]


def test_pod_level_and_container_level_settings_are_named_by_path() -> None:
    old = _raw()
    new = copy.deepcopy(old)
    new["spec"]["dnsPolicy"] = "Default"
    app = new["spec"]["containers"][0]
    app["ports"][0]["containerPort"] = 8000
    app["securityContext"]["readOnlyRootFilesystem"] = True
    new["spec"]["volumes"][0]["emptyDir"] = {"medium": "Memory"}

    texts = _changed(old, new)

    assert "dnsPolicy ClusterFirst → Default" in texts
    assert "containers[app].ports[http].containerPort 8080 → 8000" in texts
    assert "containers[app].securityContext.readOnlyRootFilesystem false → true" in texts
    assert "volumes[scratch].emptyDir.medium set to Memory" in texts


def test_env_values_and_arguments_stay_out_of_the_settings() -> None:
    """They are diffed by the typed fields (values redacted upstream), never flattened."""
    flat = shapes.settings(_raw())
    assert not any("hunter2" in v or "abc" in v for v in flat.values())
    assert not any(".env" in k or ".args" in k for k in flat)
    assert "labels.pod-template-hash" not in flat


def test_a_version_label_that_follows_the_image_is_not_a_change_of_its_own() -> None:
    old = _raw()
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["version"] = "2.3.0"
    new["spec"]["containers"][0]["image"] = "shop/coupon:2.3.0"
    assert _changed(old, new) == ["image shop/coupon:2.2.6 → shop/coupon:2.3.0"]
    new["metadata"]["labels"]["tier"] = "edge"  # a label of its own is a change
    assert "labels.tier set to edge" in _changed(old, new)


@given(st.permutations(range(2)))
def test_reordering_named_items_is_no_change(order: list[int]) -> None:
    old = _raw()
    new = copy.deepcopy(old)
    ports = new["spec"]["containers"][0]["ports"]
    new["spec"]["containers"][0]["ports"] = [ports[i] for i in order]
    assert _changed(old, new) == []


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][A-Za-z]{0,12}", fullmatch=True),
        st.one_of(st.integers(), st.booleans(), st.text(max_size=20)),
        max_size=6,
    )
)
def test_any_new_pod_field_is_named_when_it_changes(fields: dict[str, Any]) -> None:
    """Fields the code was not written for (a future spec field, a vendor extension) are
    diffed all the same: coverage by construction, not by list."""
    fields = {k: v for k, v in fields.items() if k not in shapes._TYPED_SPEC_KEYS}
    old = _raw()
    new = copy.deepcopy(old)
    new["spec"].update(fields)
    changed = _changed(old, new)
    for key in fields:
        assert any(t.startswith(f"{key} ") for t in changed), key


def _one_change(path_change: tuple[str, Any, Any]) -> list[Any]:
    path, before, after = path_change
    old, new = _raw(), _raw()
    node_old, node_new = old["spec"], new["spec"]
    *parents, leaf = path.split(".")
    for part in parents:
        node_old = node_old.setdefault(part, {})
        node_new = node_new.setdefault(part, {})
    if before is not None:
        node_old[leaf] = before
    node_new[leaf] = after
    return diff(shapes.template(old), shapes.template(new))


def test_a_failure_is_laid_on_the_changed_setting_that_governs_it() -> None:
    dns = _one_change(("dnsPolicy", "ClusterFirst", "Default"))
    found = explaining("Error: getaddrinfo ENOTFOUND coupon-redis.cache.svc.cluster.local", dns)
    assert found is not None
    assert found[0].text == "dnsPolicy ClusterFirst → Default"
    assert "DNS" in found[1]

    sc = _one_change(("securityContext.runAsUser", 0, 10001))
    found = explaining("open /var/cache/nginx/client_temp: permission denied", sc)
    assert found is not None
    assert "runAsUser" in found[0].text

    memory = _one_change(("hostNetwork", False, True))
    assert explaining("listen tcp :8080: bind: address already in use", memory) is not None


def test_a_setting_of_another_family_or_the_image_alone_explains_nothing() -> None:
    dns = _one_change(("dnsPolicy", "ClusterFirst", "Default"))
    assert explaining("open /data/x: permission denied", dns) is None
    assert explaining("panic: runtime error: index out of range", dns) is None
    old, new = _raw(), _raw()
    new["spec"]["containers"][0]["image"] = "shop/coupon:9"
    image_only = diff(shapes.template(old), shapes.template(new))
    assert explaining("getaddrinfo ENOTFOUND redis", image_only) is None


def _pod_with(volume: dict[str, Any], mount: str) -> Any:
    raw = {
        "metadata": {"name": "ingest-1", "namespace": "media"},
        "spec": {
            "containers": [
                {"name": "app", "image": "x", "volumeMounts": [{"name": "v", "mountPath": mount}]}
            ],
            "volumes": [{"name": "v", **volume}],
        },
        "status": {"phase": "Running", "containerStatuses": [{"name": "app", "ready": True}]},
    }
    return shapes.pod(raw)


def test_a_memory_backed_scratch_volume_is_found_on_the_container_that_writes_it() -> None:
    pod = _pod_with({"emptyDir": {"medium": "Memory", "sizeLimit": "2Gi"}}, "/scratch")
    assert _memory_backed(pod, pod["containers"][0]) == ("v", "/scratch", "2Gi")
    disk = _pod_with({"emptyDir": {}}, "/scratch")
    assert _memory_backed(disk, disk["containers"][0]) is None
    shm = _pod_with({"emptyDir": {"medium": "Memory"}}, "/dev/shm")
    assert _memory_backed(shm, shm["containers"][0]) is None  # shared memory, sized for IPC
