"""The one settings root. Read from the environment here and only here, then passed down.

Environment variables use the prefix `TRIAGE_` and `__` between group and field, e.g.
`TRIAGE_PROMETHEUS__URL=http://prometheus:9090`. CLI flags override them. Nothing reads the
environment at import time: `Settings()` is built by the entry point.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
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
        description="Where the SQLite checkpointer, the SQLite inbox and recorded bundles live.",
    )
    checkpointer: Literal["sqlite", "postgres", "memory"] = Field(
        default="sqlite",
        description="Where runs are checkpointed and Slack requests are queued: sqlite (files in "
        "`dir`, one replica; the default because it needs nothing else), postgres (one database "
        "shared by every replica: `postgres_dsn`; what running more than one replica needs) or "
        "memory (checkpoints in the process, inbox still in `dir`; tests).",
    )
    postgres_dsn: SecretStr | None = Field(
        default=None,
        description="libpq connection string of the shared database "
        "(postgresql://user:password@host:5432/triage); required with checkpointer=postgres. "
        "A secret: the Helm chart reads it from an existing Secret.",
    )
    postgres_pool_size: int = Field(
        default=12,
        ge=2,
        le=200,
        description="Most connections one replica opens: one per running investigation "
        "(slack.workers, 4 by default) plus the inbox's (claims, renewals, acks) and margin for "
        "bursts. Twelve replicas of 12 stay well inside Postgres' default max_connections (100).",
    )
    postgres_timeout_s: float = Field(
        default=5.0,
        gt=0,
        le=60,
        description="Seconds to get a connection and for one statement to run; an inbox or "
        "checkpoint write that takes longer means the database is in trouble (Slack's ack "
        "budget is 3 s, so an ack never waits longer than this for the inbox).",
    )
    sqlite_synchronous: Literal["full", "normal"] = Field(
        default="full",
        description="SQLite's `synchronous` for the inbox: full (every commit is on disk before "
        "Slack gets its ack; concurrent acks share one commit, so the fsync is paid once per "
        "batch) or normal (WAL: a commit survives a crash of the process but not of the node's "
        "power; README, 'How durable is an ack').",
    )
    retention_days: float = Field(
        default=14.0,
        gt=0,
        description="Days a finished Slack request and an untouched run's checkpoints are kept "
        "(the RCAReport in the cluster is the record). Two weeks covers a post-mortem's "
        "follow-ups; the state directory stays bounded (~100 KB per investigation).",
    )
    prune_every_s: float = Field(
        default=3600.0, gt=0, description="Seconds between two prunings by `triage serve`."
    )

    @model_validator(mode="after")
    def _postgres_needs_a_dsn(self) -> StateSettings:
        if self.checkpointer == "postgres" and self.postgres_dsn is None:
            msg = (
                "state.checkpointer is postgres but no database is named: set "
                "TRIAGE_STATE__POSTGRES_DSN (postgresql://user:password@host:5432/db)"
            )
            raise ValueError(msg)
        return self


class ModelSettings(BaseModel):
    """One chat model: the worker's (LLM planner) or the judge's; `triage.llm` builds it.

    Unset `name` means no model: the rules planner works alone and the judge runs its
    deterministic gates only.
    """

    name: str | None = Field(
        default=None,
        description="A LangChain chat model as 'provider:model', e.g. 'openai:gpt-4.1-mini'; "
        "any provider `init_chat_model` knows (its integration package must be installed).",
    )
    base_url: str | None = Field(
        default=None,
        description="Base URL of an OpenAI-compatible server (vLLM, Ollama, LiteLLM, a local "
        "proxy), e.g. http://vllm:8000/v1. Unset: the provider's own endpoint.",
    )
    api_key: SecretStr | None = Field(
        default=None,
        description="API key. Unset: `api_key_file`, else the provider's usual variable "
        "(e.g. OPENAI_API_KEY).",
    )
    api_key_file: Path | None = Field(
        default=None,
        description="File holding the API key (a mounted Kubernetes Secret); read when the "
        "model is built, surrounding whitespace stripped.",
    )
    timeout_s: float = Field(
        default=60.0,
        gt=0,
        le=600,
        description="Per-request timeout, seconds. A long RCA from a large model takes tens of "
        "seconds; past a minute the rules planner's answer is worth more than waiting.",
    )
    max_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Attempts per model request (errors, timeouts, malformed output), then the "
        "rules planner takes over. The client's own retries are off so this is the only bound.",
    )
    backoff_s: float = Field(
        default=1.0,
        ge=0,
        le=30,
        description="Wait before the first retry, seconds; doubles each retry, capped at 10 s.",
    )
    temperature: float = Field(
        default=0.0, ge=0, le=2, description="Sampling temperature; 0 for repeatable RCAs."
    )
    max_output_tokens: int = Field(
        default=4096, ge=256, description="Most tokens one reply may use (an RCA fits in 4k)."
    )


class PlannerSettings(BaseModel):
    kind: Literal["rules", "llm"] = Field(
        default="rules",
        description="rules (deterministic, no model) or llm (the worker model plans, with the "
        "rules planner's findings as hints and as the fallback).",
    )
    max_model_turns: int = Field(
        default=6,
        ge=1,
        le=30,
        description="Most planning requests to the model per investigation (each may ask for "
        "several read calls); the graph's tool budget bounds the calls themselves.",
    )
    max_calls_per_turn: int = Field(
        default=8, ge=1, le=30, description="Most read calls taken from one model reply."
    )
    max_model_seconds: float = Field(
        default=240.0,
        gt=0,
        description="Wall-clock seconds the model may take over a whole investigation, retries "
        "included; then the rules planner finishes. Four minutes keeps an incident answer "
        "timely even when every request is slow.",
    )
    evidence_chars: int = Field(
        default=60_000,
        ge=2_000,
        description="Characters of tool output put into one prompt (~15k tokens); older "
        "evidence beyond it is shown by its excerpt only.",
    )
    item_chars: int = Field(
        default=3_000,
        ge=200,
        description="Characters of one tool result's data shown to the model.",
    )


class MutationSettings(BaseModel):
    """How changes are made (what may be changed is the policy file's `mutations` section)."""

    mutator_service_account: str = Field(
        default="triage-system/triage-mutator",
        description="namespace/name of the ServiceAccount every write impersonates; the agent's "
        "own identity may impersonate it and nothing else.",
    )
    approval_recorder_service_account: str = Field(
        default="triage-system/triage-approval-recorder",
        description="namespace/name of the ServiceAccount the bot impersonates to record a Slack "
        "user's approval or refusal (the apiserver lets it create approvals for `slack:` users "
        "only); the mutator can never record one.",
    )
    ledger_namespace: str = Field(
        default="triage-system", description="Where the Operation records (the ledger) live."
    )
    timeout_s: float = Field(
        default=10.0, gt=0, description="Per-request timeout for writes and ledger calls, seconds."
    )
    lease_s: float = Field(
        default=30.0,
        gt=0,
        description="How long one process holds an operation, seconds: longer than a write's "
        "timeout plus a ledger update, so a live holder is never taken over; a crashed one "
        "is taken over (state check first) after at most this long.",
    )
    max_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Writes one operation may send in all, each only after a state check.",
    )
    alertmanager_url: str | None = Field(
        default=None, description="Alertmanager base URL for silences. Unset: no silences."
    )

    @model_validator(mode="after")
    def _lease_outlives_a_write(self) -> MutationSettings:
        if self.lease_s <= 2 * self.timeout_s:
            msg = (
                f"mutations.lease_s ({self.lease_s:g}) must exceed twice mutations.timeout_s "
                f"({self.timeout_s:g}): a live writer must never look abandoned"
            )
            raise ValueError(msg)
        return self


#: Seconds allowed between recording a post's intent and sending it (a busy event loop).
POST_MARGIN_S = 5.0


class SlackSettings(BaseModel):
    """The Slack bot (`triage serve`, triage/slack/). Tokens are secrets: never logged, never
    posted (the Redactor masks Slack token shapes in everything the bot says)."""

    bot_token: SecretStr | None = Field(
        default=None, description="Bot token (xoxb-…). Unset: `triage serve` refuses to start."
    )
    signing_secret: SecretStr | None = Field(
        default=None,
        description="Signing secret that every HTTP request from Slack is verified against.",
    )
    app_token: SecretStr | None = Field(
        default=None,
        description="App-level token (xapp-…) for Socket Mode; unset: HTTP events only.",
    )
    channels: list[str] = Field(
        default_factory=list,
        description="Channel IDs the bot answers in; empty: every channel it is invited to.",
    )
    allowed_bots: list[str] = Field(
        default_factory=list,
        description="Bot or app ids (B…, A…) whose mentions are investigated; empty: messages "
        "written by any bot or app are dropped. An allowed bot still never commands a change.",
    )
    channel_namespaces: dict[str, str] = Field(
        default_factory=dict,
        description="Channel ID -> default Kubernetes namespace, for messages that name none.",
    )
    api_base_url: str = Field(
        default="https://slack.com/api/",
        description="Slack Web API base URL (tests point it at a local server).",
    )
    api_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=120,
        description="Per-request timeout for Web API calls, seconds; Slack answers in well "
        "under a second, so 10 s means it is in trouble.",
    )
    max_rate_limit_retries: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Retries of one Web API call answered 429 (each after its Retry-After); "
        "then the call fails and the request is retried later from the inbox.",
    )
    max_retry_after_s: float = Field(
        default=60.0,
        gt=0,
        description="Longest Retry-After honoured, seconds; a longer one fails the call.",
    )
    lease_s: float = Field(
        default=30.0,
        gt=0,
        description="How long one replica holds a request, seconds (renewed while it works); "
        "a crashed replica's request is taken over after at most this long.",
    )
    max_attempts: int = Field(
        default=3,
        ge=1,
        le=10,
        description="Times one request is picked up (crashes and errors included) before it "
        "is marked failed and the user is told.",
    )
    workers: int = Field(
        default=4,
        ge=1,
        le=64,
        description="Investigations run at once per replica; more requests wait in the inbox.",
    )
    worker_process: bool = Field(
        default=True,
        description="`triage serve` investigates in a process of its own beside the one that "
        "acks Slack (they share only the inbox): investigations are CPU-bound Python, and in "
        "threads of the acking process they hold its GIL (50 acks at once: p99 200-330 ms "
        "with 4 investigations running, 75 ms with none). false: one process (a small box).",
    )
    progress_interval_s: float = Field(
        default=3.0,
        ge=0,
        description="Least time between two edits of the progress message, seconds.",
    )
    max_message_chars: int = Field(
        default=3000,
        ge=500,
        le=3900,
        description="Characters per RCA message; a longer RCA is split into several.",
    )
    max_messages: int = Field(
        default=4,
        ge=1,
        le=20,
        description="RCA messages at most; an RCA that needs more is uploaded as a file.",
    )
    max_body_bytes: int = Field(
        default=1024 * 1024,
        ge=64 * 1024,
        description="Largest request body /slack/events reads, bytes; a larger one is refused "
        "(413) before it is read. 1 MiB is far above anything Slack sends: a message holds at "
        "most 40,000 characters and an interactivity payload a few hundred KB.",
    )
    body_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=60,
        description="Seconds a request's body may take to arrive (408 after). Slack sends its "
        "payload at once and retries after 3 s anyway; a slow client holds a connection this "
        "long at most.",
    )
    header_timeout_s: float = Field(
        default=10.0,
        gt=0,
        le=60,
        description="Seconds a connection may take to send a request's headers before it is "
        "closed (slowloris); Slack's arrive in one packet.",
    )
    max_json_depth: int = Field(
        default=64,
        ge=8,
        le=512,
        description="Deepest nesting of arrays and objects accepted in a payload (400 beyond); "
        "Slack's deepest (rich text in blocks in a message) is about a dozen.",
    )
    max_mention_chars: int = Field(
        default=40_000,
        ge=1000,
        description="Characters of a mention kept (redacted) in the inbox; a longer one is cut, "
        "saying so. 40,000 is Slack's own limit for a message.",
    )
    host: str = Field(default="0.0.0.0", description="Address `triage serve` listens on.")  # noqa: S104
    port: int = Field(default=3000, ge=1, le=65535, description="Port `triage serve` listens on.")

    @field_validator("bot_token", "signing_secret", "app_token", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        """An empty variable (an optional Secret key that is absent) means "not configured"."""
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def post_window_s(self) -> float:
        """Seconds a try of a post may still land in Slack after it was sent: its timeout, and
        a margin for the gap between recording the intent and sending. While a post is in
        flight its request is held this long and the hold renewed (Retry-After waits included),
        so no other replica looks for the message before it can have arrived; a holder killed
        mid-post is taken over after at most this long."""
        return self.api_timeout_s + POST_MARGIN_S


class AlertRoute(BaseModel):
    """Alert groups whose labels all match `match` are posted to `channel` (first route wins)."""

    match: dict[str, str] = Field(
        default_factory=dict,
        description="Label -> exact value the group's labels must have; `receiver` matches "
        "the Alertmanager receiver's name. Empty: every group.",
    )
    channel: str = Field(min_length=1, description="Slack channel ID (C…) for the ticket.")


class AlertSettings(BaseModel):
    """The Alertmanager webhook receiver of `triage serve` (triage/web/alerts.py): each firing
    alert group starts one investigation, posted as a ticket in the mapped channel."""

    path: str = Field(
        default="/alertmanager",
        pattern=r"^/[A-Za-z0-9/_-]{1,100}$",
        description="The receiver's route on the bot's port (Alertmanager's `webhook_configs` "
        "url is http://triage:3000/alertmanager).",
    )
    bearer_token: SecretStr | None = Field(
        default=None,
        description="Token Alertmanager sends as `Authorization: Bearer …` (its http_config "
        "`authorization.credentials`). Unset, with no basic auth: the receiver is off.",
    )
    bearer_token_file: Path | None = Field(
        default=None,
        description="File holding the bearer token (a mounted Secret); read at start.",
    )
    basic_username: str | None = Field(
        default=None, description="User for HTTP basic auth (http_config `basic_auth`)."
    )
    basic_password: SecretStr | None = Field(
        default=None, description="Password for HTTP basic auth."
    )
    channel: str | None = Field(
        default=None,
        description="Slack channel ID for groups no route matches. Unset: such a group is "
        "answered 200 and counted as unrouted (triage_alerts_total), never investigated.",
    )
    routes: list[AlertRoute] = Field(
        default_factory=list,
        description="Channel per label match, first match wins, e.g. "
        '[{"match": {"namespace": "shop"}, "channel": "C0SHOP"}].',
    )
    max_investigations: int = Field(
        default=5,
        ge=1,
        le=100,
        description="Alert groups investigated per channel per `window_s`; more in the same "
        "window are a storm: counted and listed in one summary message, not investigated "
        "(a later notification of the same group, after the storm, starts it). Five is as "
        "many incident threads as an on-call engineer reads at once.",
    )
    window_s: float = Field(
        default=300.0,
        ge=10,
        le=86_400,
        description="The storm window, seconds: Alertmanager's own group_interval default.",
    )
    max_body_bytes: int = Field(
        default=4 * 1024 * 1024,
        ge=64 * 1024,
        description="Largest notification read, bytes (413 beyond). A group of 1,000 alerts "
        "with their labels and annotations stays under 4 MiB.",
    )

    @field_validator("bearer_token", "basic_password", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @model_validator(mode="after")
    def _basic_is_a_pair(self) -> AlertSettings:
        if (self.basic_username is None) != (self.basic_password is None):
            msg = "alerts.basic_username and alerts.basic_password go together"
            raise ValueError(msg)
        return self

    @property
    def enabled(self) -> bool:
        """On when it can authenticate Alertmanager (a token or basic auth is set)."""
        auth = self.bearer_token or self.bearer_token_file or self.basic_username
        return bool(auth)


class ReviewSettings(BaseModel):
    """The review page (`triage serve`, triage/web/review.py): its own listener, so it can be
    exposed (port-forward, a Service, an Ingress) without exposing the Slack endpoint, and
    the reverse."""

    enabled: bool = Field(
        default=True,
        description="Serve the review page on its own port whenever there is a report source.",
    )
    host: str = Field(default="0.0.0.0", description="Address the review page listens on.")  # noqa: S104
    port: int = Field(
        default=8081, ge=1, le=65535, description="Port of the review page (not the Slack port)."
    )
    external_url: str | None = Field(
        default=None,
        description="The page's URL as people reach it (e.g. https://triage.example.com): the "
        "Slack ticket's 'Open report' button links there. Unset: no button.",
    )
    auth: Literal["kubernetes", "none"] = Field(
        default="kubernetes",
        description="kubernetes: a bearer token the apiserver accepts (TokenReview) or a "
        "trusted proxy's header, then SubjectAccessReview per namespace. none: no login, "
        "everything visible — refused unless `host` is a loopback address (a laptop, a demo).",
    )
    trusted_proxy_user_header: str | None = Field(
        default=None,
        description="Header an authenticating proxy (oauth2-proxy: X-Forwarded-User) sets to "
        "the user's name; trusted only from `trusted_proxy_cidrs`. Unset: tokens only.",
    )
    trusted_proxy_groups_header: str | None = Field(
        default=None,
        description="Header with the user's groups, comma-separated (oauth2-proxy: "
        "X-Forwarded-Groups); used in the SubjectAccessReview.",
    )
    trusted_proxy_cidrs: list[str] = Field(
        default_factory=lambda: ["127.0.0.1/32", "::1/128"],
        description="Peers whose proxy headers are believed; default loopback only, i.e. a "
        "proxy in the same pod. Anyone else sending the header is refused.",
    )
    token_cache_s: float = Field(
        default=60.0,
        ge=0,
        le=600,
        description="How long a TokenReview answer is reused, seconds: one review per minute "
        "per user, not per request; a revoked token is refused within this long.",
    )
    access_cache_s: float = Field(
        default=30.0,
        ge=0,
        le=600,
        description="How long a SubjectAccessReview answer is reused, seconds (an RBAC change "
        "shows within this long).",
    )
    list_cache_s: float = Field(
        default=10.0,
        ge=0,
        le=600,
        description="How stale the list of reports may be, seconds: one list call serves every "
        "page view within this window.",
    )
    refresh_s: float = Field(
        default=60.0,
        ge=1,
        description="How often the server re-reads the reports to count reviews written "
        "elsewhere (`triage reports review`) into triage_reviews_total, seconds.",
    )
    page_size: int = Field(default=50, ge=5, le=500, description="Reports per page of the list.")
    slack_reviewers: list[str] = Field(
        default_factory=list,
        description="Slack user IDs whose Confirm cause / Dispute clicks are recorded; empty: "
        "anyone in a channel the bot answers in (they see the ticket, they may judge it).",
    )
    session_s: float = Field(
        default=8 * 3600.0,
        gt=0,
        description="Lifetime of the login cookie that holds a pasted token, seconds (the "
        "token itself is re-checked every `token_cache_s`).",
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TRIAGE_", env_nested_delimiter="__", extra="ignore"
    )

    kube: KubeSettings = Field(default_factory=KubeSettings)
    prometheus: PrometheusSettings = Field(default_factory=PrometheusSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    state: StateSettings = Field(default_factory=StateSettings)
    planner: PlannerSettings = Field(default_factory=PlannerSettings)
    mutations: MutationSettings = Field(default_factory=MutationSettings)
    slack: SlackSettings = Field(default_factory=SlackSettings)
    review: ReviewSettings = Field(default_factory=ReviewSettings)
    alerts: AlertSettings = Field(default_factory=AlertSettings)
    worker_model: ModelSettings = Field(
        default_factory=ModelSettings, description="The LLM planner's model (role: worker)."
    )
    judge_model: ModelSettings = Field(
        default_factory=ModelSettings,
        description="The judge's model (role: judge); separate so a different, cheaper or "
        "stricter model can check the worker.",
    )
    kubeconfig_env: str | None = Field(
        default=None,
        validation_alias="KUBECONFIG",
        description="The standard $KUBECONFIG (one file, or several joined by ':'), used when "
        "kube.kubeconfig is not set.",
    )
    redaction_patterns: list[str] = Field(
        default_factory=list,
        description="Extra regular expressions whose matches are redacted everywhere.",
    )
    policy_file: Path | None = Field(
        default=None,
        description="The operator's policy YAML (policies/policy.schema.json); unset: the "
        "shipped default (policies/default.yaml). Helm mounts it from a ConfigMap.",
    )

    def kubeconfig_paths(self) -> str | None:
        """The kubeconfig to use: TRIAGE_KUBE__KUBECONFIG, else $KUBECONFIG — a list of files
        separated by ':' that the client merges as kubectl does — else None (~/.kube/config)."""
        if self.kube.kubeconfig is not None:
            return str(self.kube.kubeconfig)
        if self.kubeconfig_env:
            return self.kubeconfig_env
        return None
