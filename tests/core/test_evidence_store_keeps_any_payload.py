"""The evidence store (triage/core/evidence_store.py) gives back what was put, on every backend
the checkpointer can be (SQLite, the real PostgreSQL, memory), whatever a tool returned: a
Prometheus NaN or Inf (a 0/0 ratio with no traffic), a NUL or a lone surrogate in a log line
decoded with errors="replace", a set; and an id put again replaces the old payload."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.state import BACKENDS, state_settings
from triage.agent.graph import checkpointer_for, setup_postgres_checkpointer
from triage.core.database import open_pool
from triage.core.evidence_store import EvidenceStore
from triage.core.settings import StateSettings

HOSTILE: dict[str, Any] = {
    "E1": [{"metric": {}, "values": [[1.0, float("nan")], [2.0, float("inf")]]}],
    "E2": ["GET / 200", "a NUL \x00 here", "a lone surrogate \ud800 here"],
    "E3": {"names": {"b", "a"}},
    "E4": None,
}


@pytest.fixture(params=[*BACKENDS, "memory"])
def store(request, tmp_path) -> Iterator[EvidenceStore]:
    if request.param == "memory":
        settings = StateSettings(dir=tmp_path, checkpointer="memory")
    else:
        settings = state_settings(request, request.param, tmp_path)
    pool = None
    if settings.checkpointer == "postgres":
        pool = open_pool(settings)
        setup_postgres_checkpointer(pool)
    try:
        with checkpointer_for(settings, pool) as (_, evidence):
            yield evidence
    finally:
        if pool is not None:
            pool.close()


def test_every_payload_comes_back(store: EvidenceStore) -> None:
    store.put("run-1", HOSTILE)
    got = store.get("run-1", ["E1", "E2", "E3", "E4", "E9"])

    assert set(got) == {"E1", "E2", "E3", "E4"}  # E9 was never put
    values = got["E1"][0]["values"]
    assert math.isnan(values[0][1])
    assert values[1][1] == math.inf
    assert got["E2"] == HOSTILE["E2"]
    assert sorted(got["E3"]["names"]) == ["a", "b"]
    assert got["E4"] is None


def test_an_id_put_again_is_replaced_and_threads_are_apart(store: EvidenceStore) -> None:
    store.put("run-1", {"E1": ["first"]})
    store.put("run-1", {"E1": ["second"]})
    store.put("run-2", {"E1": ["other run"]})

    assert store.get("run-1", ["E1"]) == {"E1": ["second"]}
    assert store.get("run-2", ["E1"]) == {"E1": ["other run"]}
    assert store.get("run-3", ["E1"]) == {}
