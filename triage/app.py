"""The composition root: the one place Settings become clients, and the one checked run.

Every surface — the CLI, the Slack worker, the benches and the tests — builds an `App` (from
the settings, or from parts a test injects at the wire: a kubeconfig of the test control
plane, a recorded bundle) and calls `App.checked_run`. Budget tracking, the attempt limit,
the change path, report submission, judging and publishing therefore exist once, here and in
the modules this one wires: the graph (triage/agent/graph.py), the loop
(triage/verification/loop.py), the judge (judge/). A surface decides only what to show.

What a run needs, per request: the parsed goal (intake runs once, here), a planner (fresh per
attempt: a model client counts its own tokens), the judge with its own model client, one
budget both are tracked against, the read tools, the report store and, when the policy allows
any change, the mutate registry whose writes impersonate the mutator identity.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kubernetes import client as k8s
from kubernetes import config as kube_config
from kubernetes.config.config_exception import ConfigException

from judge import Judge
from policies import Policy, PolicyError, load_policy
from tools.errors import ToolError
from tools.mutate.alertmanager import AlertmanagerMutator
from tools.mutate.kube import KubeMutator, impersonating
from tools.mutate.ledger import KubeLedger
from tools.mutate.registry import MutateRegistry
from tools.read.kube import KubeReader
from tools.read.prometheus import PrometheusReader
from tools.read.registry import ReadRegistry, ReadTools
from tools.redact import Redactor
from tools.results import ErrorKind
from triage.agent import intake
from triage.agent.changes import ChangeSteps, Ledger, decided, whoami
from triage.agent.graph import (
    RunResult,
    build_graph,
    checkpointer_for,
    inputs_for,
    run_graph,
    setup_postgres_checkpointer,
)
from triage.agent.planners.base import Planner, TakesFeedback
from triage.agent.planners.rules.planner import RulesPlanner
from triage.core import database
from triage.core.bundles import Bundle, ReplayTools
from triage.core.errors import (
    ConfigError,
    NamespaceNotFound,
    UsageError,
    cluster_error,
)
from triage.core.llm import ModelClient, require_libraries
from triage.core.models import Alert, Goal, RequestKind
from triage.core.settings import Settings
from triage.reports.store import KubeReportStore, MemoryReportReads, MemoryReportStore, ReportStore
from triage.reports.views import KubeReports, MemoryReports, ReportReader
from triage.verification.budget import Budget
from triage.verification.loop import CheckedRun, Outcome, ProgressFn, run_checked

APPROVAL_POLL_S = 2.0


@dataclass(frozen=True)
class Requester:
    """Who asked, and from where: recorded on every Operation (`spec.requestedBy`,
    `spec.requestedVia`). An empty `who` means "whoever the apiserver says this client is"
    (the CLI): `App.requester_for` asks it with a SelfSubjectReview when a change is commanded."""

    who: str  # "slack:T024/U123", "kube:alice@example.com"; "": ask the apiserver
    where: str  # "slack:T024/C0AB/1700000000.1234", "cli"
    person: bool = True  # bots, apps and alerts never command a change


CLI_REQUESTER = Requester(who="", where="cli")


@dataclass(frozen=True)
class Request:
    """One thing to investigate, as a surface received it."""

    words: str
    namespace: str | None = None  # explicit (-n): wins over anything in the words
    default_namespace: str | None = None  # the channel's or the kubeconfig context's
    run_id: str | None = None  # the thread id; the same id resumes the same run
    now: float | None = None  # the reference time (a recorded bundle's, a Slack ts)
    requester: Requester = CLI_REQUESTER
    planner: str | None = None  # "rules" | "llm"; None: the settings' choice
    alert: Alert | None = None  # an Alertmanager group's: its words command nothing


@dataclass
class App:
    """The wired product. Build it with `App.live`, `App.replay`, or from injected parts."""

    settings: Settings
    tools: ReadTools
    store: ReportStore | None
    policy: Policy
    redactor: Redactor
    registry: MutateRegistry | None = None
    approvals: Ledger | None = None  # the ledger as the Slack approval recorder identity
    source: str = ""
    api_client: k8s.ApiClient | None = None
    context_namespace: str | None = None
    planners: Callable[[str | None], Planner] | None = None  # tests: a scripted chat model
    _pool: Any = field(default=None, init=False, repr=False)
    _pool_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    # -- construction ------------------------------------------------------------------------

    @staticmethod
    def load_policy(settings: Settings) -> Policy:
        try:
            return load_policy(settings.policy_file)
        except PolicyError as e:
            raise ConfigError(str(e)) from e

    @classmethod
    def live(
        cls,
        settings: Settings,
        *,
        context: str | None = None,
        prometheus_url: str | None = None,
        changes: bool = True,
    ) -> App:
        """Clients from the kubeconfig (KUBECONFIG lists are merged, as kubectl does)."""
        check_models(settings)
        policy = cls.load_policy(settings)
        redactor = Redactor(settings.redaction_patterns)
        api_client, context_ns = kube_client(settings, context)
        kube = KubeReader(
            api_client,
            timeout_s=settings.kube.timeout_s,
            page_size=settings.kube.page_size,
            max_items=settings.kube.max_items,
            redactor=redactor,
        )
        url = prometheus_url or settings.prometheus.url
        prom = (
            PrometheusReader(
                url,
                timeout_s=settings.prometheus.timeout_s,
                max_points=settings.prometheus.max_points,
                redactor=redactor,
            )
            if url
            else None
        )
        source = f"apiserver {api_client.configuration.host}" + (
            f", prometheus {url}" if url else ""
        )
        return cls(
            settings=settings,
            tools=ReadRegistry(kube, prom),
            store=KubeReportStore(api_client, timeout_s=settings.kube.timeout_s),
            policy=policy,
            redactor=redactor,
            registry=mutate_registry(settings, policy, api_client) if changes else None,
            approvals=approval_recorder(settings, api_client) if changes else None,
            source=source,
            api_client=api_client,
            context_namespace=context_ns,
        )

    @classmethod
    def replay(cls, settings: Settings, bundle: Bundle) -> tuple[App, ReplayTools]:
        """A recorded bundle instead of a cluster; reports are kept in memory and read back."""
        check_models(settings)
        replay = ReplayTools(bundle)
        memory = MemoryReportStore()
        app = cls(
            settings=settings,
            tools=MemoryReportReads(replay, memory),
            store=memory,
            policy=cls.load_policy(settings),
            redactor=Redactor(settings.redaction_patterns),
            source=f"bundle {bundle.name} recorded {bundle.recorded_at} from {bundle.source}",
            context_namespace=bundle.namespace,
        )
        return app, replay

    # -- parts ---------------------------------------------------------------------------------

    def state_pool(self) -> Any:
        """The shared database's connection pool (checkpoints and the Slack inbox), opened
        once per process with the checkpointer's tables in place; None unless
        `state.checkpointer` is postgres. ConfigError when the database cannot be reached."""
        if self.settings.state.checkpointer != "postgres":
            return None
        with self._pool_lock:
            if self._pool is None:
                pool = database.open_pool(self.settings.state)
                try:
                    setup_postgres_checkpointer(pool)
                except Exception:  # the schema step failed: close what was opened, re-raise
                    pool.close()
                    raise
                self._pool = pool
            return self._pool

    def close(self) -> None:
        """Close the shared database's pool, if one was opened."""
        with self._pool_lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def reports(self) -> ReportReader | None:
        """Where the review page and `triage reports` read RCAReports from."""
        if isinstance(self.store, MemoryReportStore):
            return MemoryReports(self.store)
        if self.api_client is not None:
            return KubeReports(self.api_client, timeout_s=self.settings.kube.timeout_s)
        return None

    def ledger_entry(self, op_id: str) -> dict[str, Any] | None:
        """One Operation of the ledger as plain data (the review page links changes to it),
        read as this process's own identity; None when absent or there is no cluster."""
        if self.registry is not None:
            op = self.registry.ledger.get(op_id)
        elif self.api_client is not None:
            m = self.settings.mutations
            ledger = KubeLedger(
                self.api_client, namespace=m.ledger_namespace, timeout_s=m.timeout_s
            )
            op = ledger.get(op_id)
        else:
            return None
        return None if op is None else op.model_dump(mode="json")

    def planner(self, kind: str | None = None) -> Planner:
        """A fresh planner for one attempt: `kind`, else the settings' choice."""
        if self.planners is not None:
            return self.planners(kind)
        return planner_for(self.settings, kind, self.redactor)

    def judge_model(self) -> ModelClient | None:
        """The judge's own model client for one run (TRIAGE_JUDGE_MODEL__*), or None."""
        if not self.settings.judge_model.name:
            return None
        return ModelClient.from_settings(self.settings.judge_model, "judge", self.redactor)

    def intake(self, request: Request) -> Goal:
        """The request as a Goal: parsed once, here, for the whole run."""
        return intake.parse(
            request.words,
            now=time.time() if request.now is None else request.now,
            namespace=request.namespace or None,
            default_namespace=request.default_namespace or self.context_namespace,
            default_window_s=self.settings.graph.window_s,
            alert=request.alert,
            commands=request.alert is None,
        )

    def resolve_namespace(self, goal: Goal) -> Goal:
        """The goal with the namespace the cluster has. The one the words, a flag or the
        alert named is kept when it exists; a candidate from the words that exists wins over
        a mere default (the kube context's, the channel's), and over a named one that does
        not exist. A word taken as the namespace is no longer a workload to look for."""
        candidates = goal.scope.namespace_candidates
        first = goal.scope.namespace
        if not candidates:
            return goal
        if (
            first is not None
            and not goal.scope.namespace_is_default
            and self.tools.call("k8s.namespace", {"namespace": first}).ok
        ):
            return goal
        for name in candidates:
            if name == first:
                continue
            if self.tools.call("k8s.namespace", {"namespace": name}).ok:
                workloads = tuple(w for w in goal.scope.workloads if w.explicit or w.name != name)
                scope = goal.scope.model_copy(
                    update={
                        "namespace": name,
                        "namespace_is_default": False,
                        "workloads": workloads,
                    }
                )
                return goal.model_copy(update={"scope": scope})
        if first is None or goal.scope.namespace_is_default:
            on_node = self._namespace_on_node(goal)
            if on_node is not None:
                scope = goal.scope.model_copy(
                    update={"namespace": on_node, "namespace_is_default": False}
                )
                return goal.model_copy(update={"scope": scope})
        return goal

    def _namespace_on_node(self, goal: Goal) -> str | None:
        """The namespace of the pods on a node the words name, when no namespace was said:
        the one whose pods belong to a workload the words name, else the only one there
        besides the cluster's own (kube-system and the like)."""
        named = {w.name for w in goal.scope.workloads}
        for name in goal.scope.namespace_candidates:
            if not self.tools.call("k8s.node", {"node": name}).ok:
                continue
            on = self.tools.call("k8s.pods_on_node", {"node": name})
            pods = [x for x in (on.data or []) if isinstance(x, dict)] if on.ok else []
            spaces = {
                str(x["namespace"]) for x in pods if not str(x["namespace"]).startswith("kube-")
            }
            owned = {
                str(x["namespace"])
                for x in pods
                if any(str(x["name"]).startswith(f"{w}-") for w in named)
            }
            for found in (owned, spaces):
                if len(found) == 1:
                    return found.pop()
        return None

    def requester_for(self, request: Request) -> tuple[Requester, str | None]:
        """Who asked, as the ledger records it, and why it is unknown (None: it is known). A
        request without a name (the CLI) is the user the apiserver authenticates this client
        as, asked with a SelfSubjectReview — never a name anyone typed."""
        asked = request.requester
        if asked.who:
            return asked, None
        if self.api_client is None:
            return asked, "who asked is not known here (no cluster to ask), so nothing is changed"
        try:
            name = whoami(self.api_client, timeout_s=self.settings.kube.timeout_s)
        except ToolError as e:
            return asked, f"cannot tell who you are ({e}), so nothing is changed"
        if not name:
            return asked, "the apiserver did not say who you are, so nothing is changed"
        return Requester(who=f"kube:{name}", where=asked.where, person=asked.person), None

    def preflight(self, goal: Goal) -> None:
        """Fail plainly before any work: no namespace, no such namespace, no cluster."""
        ns = goal.scope.namespace
        if ns is None:
            raise UsageError(
                "no namespace: pass --namespace NAME, set one in the kubeconfig context, or "
                "say 'in namespace NAME' in the question."
            )
        result = self.tools.call("k8s.namespace", {"namespace": ns})
        if result.ok:
            return
        if result.error_kind is ErrorKind.NOT_FOUND:
            raise NamespaceNotFound(
                f"namespace {ns!r} does not exist. List namespaces with `kubectl get ns`."
            )
        server = self.api_client.configuration.host if self.api_client else "the cluster"
        raise cluster_error(result.error_kind, result.excerpt, server)

    # -- the checked run -----------------------------------------------------------------------

    def checked_run(
        self,
        request: Request,
        goal: Goal | None = None,
        *,
        on_progress: ProgressFn | None = None,
    ) -> CheckedRun:
        """investigate → draft → [approve → mutate] → submit → judge → (retry | publish).

        The same `request.run_id` continues a run that paused for an approval or was cut by a
        crash, from its checkpoint.
        """
        goal = self.resolve_namespace(goal or self.intake(request))
        unknown = None
        if goal.commands:
            requester, unknown = self.requester_for(request)
            request = replace(request, requester=requester)
        run_id = request.run_id or f"cli:{uuid.uuid4()}"
        now = time.time() if request.now is None else request.now
        verification = self.policy.verification
        budget = Budget(verification.budget, verification.pricing)
        model = self.judge_model()
        if model is not None:
            budget.track("judge", self.settings.judge_model.name, model.usage)
        judge = Judge(self.tools, model, model_name=self.settings.judge_model.name)
        worker = _Attempts(self, goal, request, run_id, now, budget, on_progress)
        run = run_checked(
            worker=worker,
            judge=judge,
            store=self.store,
            policy=verification,
            budget=budget,
            redactor=self.redactor,
            run_id=run_id,
            on_progress=on_progress,
        )
        if goal.commands and worker.changes is None:
            run.notes.append(unknown or self.changes_unavailable(request))
        return run

    def changes_unavailable(self, request: Request) -> str:
        if not request.requester.person:
            return "changes are only made when a person commands them; this request was not"
        if not request.requester.who:
            return "changes are only made for a known person; who asked is not known"
        return (
            "changes are not enabled here: the policy allows no action in any namespace "
            "(policies/policy.schema.json, mutations)"
        )

    def wait_for_approval(
        self,
        run: CheckedRun,
        *,
        timeout_s: float,
        on_wait: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> bool:
        """Poll the ledger until every awaited operation is decided (approved, refused or
        expired); False when `timeout_s` passed first. The run is then resumed by calling
        `checked_run` again with the same run id."""
        if self.registry is None or run.outcome is not Outcome.AWAITING_APPROVAL:
            return True
        ids = [str(a["operation"]) for a in run.awaiting]
        deadline = time.monotonic() + timeout_s
        if on_wait is not None:
            on_wait(run.awaiting)
        while time.monotonic() < deadline:
            if decided(self.registry, ids):
                return True
            time.sleep(min(APPROVAL_POLL_S, max(deadline - time.monotonic(), 0.0)))
        return decided(self.registry, ids)


class _Attempts:
    """The worker of one checked run: each attempt runs the graph on its own thread id."""

    def __init__(
        self,
        app: App,
        goal: Goal,
        request: Request,
        run_id: str,
        now: float,
        budget: Budget,
        on_progress: ProgressFn | None,
    ) -> None:
        self.app = app
        self.goal = goal
        self.request = request
        self.run_id = run_id
        self.now = now
        self.budget = budget
        self.on_progress = on_progress
        self.first: Planner | None = app.planner(request.planner)  # config errors: now
        asker = request.requester
        commanded = bool(goal.commands) and asker.person and bool(asker.who)
        self.changes = ChangeSteps(app.registry) if commanded and app.registry is not None else None

    @property
    def takes_feedback(self) -> bool:
        planner = self.first or self.app.planner(self.request.planner)
        return isinstance(planner, TakesFeedback)

    def __call__(self, attempt: int, feedback: tuple[str, ...]) -> RunResult:
        planner = self.first if attempt == 1 and self.first else None
        planner = planner or self.app.planner(self.request.planner)
        if feedback and isinstance(planner, TakesFeedback):
            planner.take_feedback(feedback)  # back to the worker with the judge's missing list
        client = getattr(planner, "client", None)
        if isinstance(client, ModelClient):
            self.budget.track("worker", self.app.settings.worker_model.name, client.usage)
        thread = self.run_id if attempt == 1 else f"{self.run_id}:attempt-{attempt}"
        settings = self.app.settings
        if self.goal.kind is RequestKind.CASUAL:
            return RunResult(thread, self.goal, [], None, 0.0)
        with checkpointer_for(settings.state, self.app.state_pool()) as (saver, store):
            graph = build_graph(
                planner, self.app.tools, settings.graph, saver, self.changes, evidence_store=store
            )
            inputs = inputs_for(
                self.goal,
                run=self.run_id,
                now=self.now,
                requested_by=self.request.requester.who,
                requested_via=self.request.requester.where,
            )
            return run_graph(
                graph,
                inputs,
                thread_id=thread,
                recursion_limit=settings.graph.recursion_limit,
                on_progress=self.on_progress,
                evidence_store=store,
            )


def check_models(settings: Settings) -> None:
    """ModelNotConfigured (exit 2) before any work when a configured model's libraries are not
    installed (the `llm` extra): the LLM planner's model, the judge's."""
    if settings.planner.kind == "llm":
        require_libraries(settings.worker_model)
    require_libraries(settings.judge_model)


def planner_for(
    settings: Settings, kind: str | None = None, redactor: Redactor | None = None
) -> Planner:
    """A fresh planner: `kind`, else the settings' choice; ConfigError when it cannot be built
    (so a surface can check the choice before any work)."""
    chosen = kind or settings.planner.kind
    if chosen == "rules":
        return RulesPlanner()
    if chosen != "llm":
        raise UsageError(f"unknown planner {chosen!r}: use rules or llm")
    from triage.agent.planners.llm.planner import LLMPlanner  # noqa: PLC0415 (model libs)

    return LLMPlanner.from_settings(settings, redactor)


def kube_client(settings: Settings, context: str | None) -> tuple[k8s.ApiClient, str | None]:
    """An API client from the kubeconfig and the namespace of its context (None if unset);
    urllib3's retries are off (`retries=False`), so nothing is ever re-sent behind our back."""
    path = settings.kubeconfig_paths()
    chosen = context or settings.kube.context
    try:
        contexts, active = kube_config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
            config_file=path
        )
        if chosen is not None:
            active = next((c for c in contexts if c.get("name") == chosen), None)
            if active is None:
                names = ", ".join(sorted(str(c.get("name")) for c in contexts)) or "none"
                raise ConfigError(f"no context {chosen!r} in the kubeconfig (contexts: {names})")
        cfg = k8s.Configuration()
        kube_config.load_kube_config(  # type: ignore[no-untyped-call]
            config_file=path, context=chosen, client_configuration=cfg, persist_config=False
        )
        # No transport-level retries, for any call: a write is sent once per decision the
        # ledger takes, and a silent apiserver costs one timeout, not four. Reads retry
        # explicitly and boundedly (tools/read/kube.py).
        cfg.retries = False
        client = k8s.ApiClient(cfg)
    except (ConfigException, FileNotFoundError) as e:
        where = path or "~/.kube/config"
        raise ConfigError(
            f"no usable kubeconfig at {where} ({e}). Set KUBECONFIG or pass --kubeconfig."
        ) from e
    namespace = ((active or {}).get("context") or {}).get("namespace")
    return client, str(namespace) if namespace else None


def mutate_registry(
    settings: Settings, policy: Policy, api_client: k8s.ApiClient, *, always: bool = False
) -> MutateRegistry | None:
    """The mutate registry when the policy allows any change (writes impersonate the mutator
    ServiceAccount, through the ledger); None when it allows none, unless `always` (`triage
    ops`, which must still say "refused by the policy")."""
    rules = policy.mutations
    if not always and (not rules.namespaces or not rules.actions):
        return None
    m = settings.mutations
    mutator = impersonating(api_client, m.mutator_service_account)
    alertmanager = (
        AlertmanagerMutator(m.alertmanager_url, timeout_s=m.timeout_s)
        if m.alertmanager_url
        else None
    )
    return MutateRegistry(
        rules,
        KubeLedger(mutator, namespace=m.ledger_namespace, timeout_s=m.timeout_s),
        kube=KubeMutator(mutator, timeout_s=m.timeout_s),
        alertmanager=alertmanager,
        lease_s=m.lease_s,
        max_attempts=m.max_attempts,
    )


def approval_recorder(settings: Settings, api_client: k8s.ApiClient) -> Ledger:
    """The ledger as the Slack approval recorder ServiceAccount (impersonated): the identity the
    apiserver sees when the bot records a Slack user's decision. It may create approvals naming
    `slack:` users and nothing else; the mutator may create none."""
    m = settings.mutations
    recorder = impersonating(api_client, m.approval_recorder_service_account)
    return KubeLedger(recorder, namespace=m.ledger_namespace, timeout_s=m.timeout_s)
