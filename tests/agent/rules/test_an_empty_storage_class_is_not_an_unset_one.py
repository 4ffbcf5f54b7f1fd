"""storageClassName "" (what a chart's storageClass "-" writes) turns dynamic provisioning off:
the claim binds only to a classless volume, and the default class is not used. The answer says
so, naming the default class when there is one."""

from __future__ import annotations

from typing import cast

from hypothesis import given
from hypothesis import strategies as st

from tools.read import payloads as p
from triage.agent.planners.rules.analyzers.storage import _classless

names = st.from_regex(r"[a-z][a-z0-9-]{2,20}", fullmatch=True)


@given(claim=names, default=st.one_of(st.none(), names))
def test_an_empty_class_is_explained(claim: str, default: str | None) -> None:
    classes = [
        cast(p.StorageClass, {"name": "slow-hdd", "provisioner": "x", "default": False}),
        *(
            [cast(p.StorageClass, {"name": default, "provisioner": "y", "default": True})]
            if default
            else []
        ),
    ]
    said = _classless(cast(p.PVC, {"name": claim}), classes)
    assert f'claim {claim} sets storageClassName ""' in said
    assert "dynamic provisioning off" in said
    assert (f"default StorageClass {default}" in said) == bool(default)
    assert "slow-hdd" not in said
