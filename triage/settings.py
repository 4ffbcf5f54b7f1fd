"""The one settings root. Read from the environment here and only here, then passed down.

Environment variables use the prefix `TRIAGE_` and `__` between group and field, e.g.
`TRIAGE_PROMETHEUS__URL=http://prometheus:9090`. CLI flags override them. Nothing reads the
environment at import time: `Settings()` is built by the entry point.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field
from pydantic_settings import BaseSettings, SettingsConfigDict


def default_state_dir() -> Path:
    """$XDG_STATE_HOME/triage, else ~/.local/state/triage (where the checkpointer lives)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "triage"


class KubeSettings(BaseModel):
    kubeconfig: Path | None = Field(
        default=None, description="Path to a kubeconfig; default: $KUBECONFIG or ~/.kube/config."
    )
    context: str | None = Field(default=None, description="kubeconfig context; default: current.")
    timeout_s: float = Field(
        default=10.0,
        gt=0,
        description="Per-request timeout, seconds. An apiserver under incident load can be slow; "
        "10 s still leaves room for ~20 calls inside a one-minute triage.",
    )
    page_size: int = Field(
        default=250, ge=1, le=5000, description="Items per list page (the `limit` parameter)."
    )
    max_items: int = Field(
        default=2000, ge=1, description="Hard cap on items one list call returns, across pages."
    )


class PrometheusSettings(BaseModel):
    url: str | None = Field(
        default=None, description="Prometheus base URL. Unset: Prometheus evidence unavailable."
    )
    timeout_s: float = Field(default=10.0, gt=0, description="Per-query timeout, seconds.")
    max_points: int = Field(
        default=240, ge=10, le=11000, description="Most points per series in a range query."
    )


class GraphSettings(BaseModel):
    recursion_limit: int = Field(
        default=80,
        ge=10,
        description="LangGraph super-step limit; a planner loop cannot run away past it.",
    )
    max_tool_calls: int = Field(
        default=60, ge=1, description="Most read-tool calls one investigation may make."
    )
    window_s: float = Field(
        default=3 * 3600.0,
        gt=0,
        description="Default look-back window, seconds, when the request names no time.",
    )


class StateSettings(BaseModel):
    dir: Path = Field(
        default_factory=default_state_dir,
        description="Where the SQLite checkpointer and recorded bundles live.",
    )
    checkpointer: Literal["sqlite", "memory"] = Field(
        default="sqlite", description="sqlite (embedded, survives restarts) or memory (tests)."
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TRIAGE_", env_nested_delimiter="__", extra="ignore"
    )

    kube: KubeSettings = Field(default_factory=KubeSettings)
    prometheus: PrometheusSettings = Field(default_factory=PrometheusSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    kubeconfig_env: Path | None = Field(
        default=None,
        validation_alias="KUBECONFIG",
        description="The standard $KUBECONFIG, used when kube.kubeconfig is not set.",
    )
    redaction_patterns: list[str] = Field(
        default_factory=list,
        description="Extra regular expressions whose matches are redacted everywhere.",
    )

    def kubeconfig_path(self) -> Path | None:
        """The kubeconfig to use: TRIAGE_KUBE__KUBECONFIG, else $KUBECONFIG (first entry)."""
        if self.kube.kubeconfig is not None:
            return self.kube.kubeconfig
        if self.kubeconfig_env is not None and str(self.kubeconfig_env):
            return Path(str(self.kubeconfig_env).split(os.pathsep)[0])
        return None
