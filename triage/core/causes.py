"""Root-cause classes: the one vocabulary planners, the judge, reports and scenarios share.

A class names the *kind of cause* a human acts on, never a symptom: "the rollout is stuck",
"the HPA is at max" or "the pods restart" are what a user sees; the class says why (a setting
the new revision broke, a quota that rejects new pods, a probe that kills a healthy app). The
specific cause (which variable, which port, which Role) is the last link of the RCA's causal
chain; the class only groups causes that are checked and fixed the same way.

Each class has a one-line description (it goes into the LLM planner's prompt and the report
CRD's schema) and an area (how the README groups them). `CauseClass.parse` is the only way in
from outside (a model's reply, a scenario file, a stored report): a spelling that is not a
member is refused there, never passed through, so no wrong RCA can pass the judge by a
spelling. Members whose `is_cause` is False are not causes at all: "no fault", "inconclusive"
and the reasons nothing could be decided.
"""

from __future__ import annotations

from enum import StrEnum


class Area(StrEnum):
    CONTAINERS = "containers"
    SCHEDULING = "scheduling"
    WORKLOADS = "workloads"
    NETWORK = "network"
    AUTOSCALING = "autoscaling"
    NODES = "nodes"
    ACCESS = "access"
    STORAGE = "storage"
    DEPENDENCIES = "dependencies"
    METRICS = "metrics"
    NONE = "none"


class UnknownCauseClass(ValueError):
    """A root-cause class spelled in a way that is not a member (refused where it enters)."""


class CauseClass(StrEnum):
    # containers
    BAD_CONFIG = "bad_config"
    APPLICATION_ERROR = "application_error"
    OOM_KILLED = "oom_killed"
    MEMORY_LEAK = "memory_leak"
    LIVENESS_PROBE_FAILING = "liveness_probe_failing"
    READINESS_PROBE_FAILING = "readiness_probe_failing"
    STARTUP_PROBE_FAILING = "startup_probe_failing"
    IMAGE_PULL = "image_pull"
    MISSING_CONFIG_REFERENCE = "missing_config_reference"
    INIT_CONTAINER_FAILING = "init_container_failing"
    # scheduling and admission
    INSUFFICIENT_RESOURCES = "insufficient_resources"
    UNSCHEDULABLE_PLACEMENT = "unschedulable_placement"
    QUOTA_EXCEEDED = "quota_exceeded"
    LIMIT_RANGE_VIOLATION = "limit_range_violation"
    ADMISSION_WEBHOOK = "admission_webhook"
    # workloads
    CRONJOB_NOT_SCHEDULED = "cronjob_not_scheduled"
    STATEFULSET_MISCONFIGURED = "statefulset_misconfigured"
    PDB_BLOCKING = "pdb_blocking"
    # network
    SERVICE_SELECTOR_MISMATCH = "service_selector_mismatch"
    SERVICE_PORT_MISMATCH = "service_port_mismatch"
    INGRESS_MISCONFIGURED = "ingress_misconfigured"
    NETWORK_POLICY_BLOCKING = "network_policy_blocking"
    # dependencies
    DEPENDENCY_UNAVAILABLE = "dependency_unavailable"
    DEPENDENCY_SATURATED = "dependency_saturated"
    # autoscaling
    HPA_AT_MAX = "hpa_at_max"
    HPA_METRICS_UNAVAILABLE = "hpa_metrics_unavailable"
    # nodes
    NODE_NOT_READY = "node_not_ready"
    NODE_PRESSURE = "node_pressure"
    # access
    RBAC_FORBIDDEN = "rbac_forbidden"
    CLOUD_ACCESS_DENIED = "cloud_access_denied"
    # storage
    PVC_PENDING = "pvc_pending"
    VOLUME_FULL = "volume_full"
    # metrics
    REGRESSION_AFTER_DEPLOY = "regression_after_deploy"
    CPU_THROTTLING = "cpu_throttling"
    # not causes
    NO_FAULT = "no_fault"
    INCONCLUSIVE = "inconclusive"
    NONEXISTENT_TARGET = "nonexistent_target"
    EVIDENCE_UNAVAILABLE = "evidence_unavailable"
    NO_SCOPE = "no_scope"

    @property
    def description(self) -> str:
        return _TABLE[self][1]

    @property
    def area(self) -> Area:
        return _TABLE[self][0]

    @property
    def is_cause(self) -> bool:
        """False for "no fault", "inconclusive" and the reasons nothing could be decided."""
        return self.area is not Area.NONE

    @classmethod
    def parse(cls, value: object) -> CauseClass:
        """The member spelled exactly `value`; anything else is refused (UnknownCauseClass)."""
        if isinstance(value, CauseClass):
            return value
        try:
            return cls(str(value))
        except ValueError:
            shown = str(value)[:60]
            raise UnknownCauseClass(
                f"unknown root-cause class {shown!r}; expected one of: {', '.join(cls)}"
            ) from None


_TABLE: dict[CauseClass, tuple[Area, str]] = {
    CauseClass.BAD_CONFIG: (
        Area.CONTAINERS,
        "a setting (env var, argument, config file, address) is wrong or missing, so the "
        "container exits or misbehaves",
    ),
    CauseClass.APPLICATION_ERROR: (
        Area.CONTAINERS,
        "the program itself fails (panic, unhandled exception, bad migration) with a correct "
        "configuration, typically in a new revision",
    ),
    CauseClass.OOM_KILLED: (
        Area.CONTAINERS,
        "the container is killed for exceeding its memory limit, which is below what the "
        "process is configured or needs to use (heap flags, working set)",
    ),
    CauseClass.MEMORY_LEAK: (
        Area.CONTAINERS,
        "memory grows steadily until the limit kills the container: a leak, not a limit set "
        "too low",
    ),
    CauseClass.LIVENESS_PROBE_FAILING: (
        Area.CONTAINERS,
        "the liveness probe (wrong path/port, too short a timeout or delay) makes the kubelet "
        "kill a container that is otherwise working",
    ),
    CauseClass.READINESS_PROBE_FAILING: (
        Area.CONTAINERS,
        "the readiness probe fails (wrong path/port or what it checks), so the pods get no "
        "traffic and the Service has no ready endpoints",
    ),
    CauseClass.STARTUP_PROBE_FAILING: (
        Area.CONTAINERS,
        "the startup probe gives up before the application has started",
    ),
    CauseClass.IMAGE_PULL: (
        Area.CONTAINERS,
        "the image cannot be pulled: the tag or repository does not exist, or the registry "
        "refuses the credentials",
    ),
    CauseClass.MISSING_CONFIG_REFERENCE: (
        Area.CONTAINERS,
        "the pod references a ConfigMap, Secret or key that does not exist, so its containers "
        "cannot be created",
    ),
    CauseClass.INIT_CONTAINER_FAILING: (
        Area.CONTAINERS,
        "an init container fails or never finishes, so the main containers never start",
    ),
    CauseClass.INSUFFICIENT_RESOURCES: (
        Area.SCHEDULING,
        "no node has the CPU, memory, GPUs or pods capacity the pod requests",
    ),
    CauseClass.UNSCHEDULABLE_PLACEMENT: (
        Area.SCHEDULING,
        "the pod's placement rules (nodeSelector, affinity, anti-affinity, taints without "
        "tolerations, topology spread) exclude every node",
    ),
    CauseClass.QUOTA_EXCEEDED: (
        Area.SCHEDULING,
        "a ResourceQuota rejects new pods (or other objects) in the namespace",
    ),
    CauseClass.LIMIT_RANGE_VIOLATION: (
        Area.SCHEDULING,
        "a LimitRange rejects the pod's requests or limits",
    ),
    CauseClass.ADMISSION_WEBHOOK: (
        Area.SCHEDULING,
        "an admission webhook denies the objects, or fails closed because its service is down",
    ),
    CauseClass.CRONJOB_NOT_SCHEDULED: (
        Area.WORKLOADS,
        "a CronJob creates no Jobs: it is suspended, its schedule or deadline makes it miss "
        "runs, or its concurrency policy blocks them",
    ),
    CauseClass.STATEFULSET_MISCONFIGURED: (
        Area.WORKLOADS,
        "a StatefulSet cannot create or run its pods (governing Service missing, volume "
        "claim templates that cannot bind)",
    ),
    CauseClass.PDB_BLOCKING: (
        Area.WORKLOADS,
        "a PodDisruptionBudget allows no disruption, so drains and evictions are blocked",
    ),
    CauseClass.SERVICE_SELECTOR_MISMATCH: (
        Area.NETWORK,
        "a Service's selector matches no pod, so it has no endpoints",
    ),
    CauseClass.SERVICE_PORT_MISMATCH: (
        Area.NETWORK,
        "a Service's targetPort is not a port the pods listen on",
    ),
    CauseClass.INGRESS_MISCONFIGURED: (
        Area.NETWORK,
        "an Ingress names a class, TLS Secret or backend Service/port that does not exist",
    ),
    CauseClass.NETWORK_POLICY_BLOCKING: (
        Area.NETWORK,
        "a NetworkPolicy drops the traffic (ingress from a client, egress to a dependency or "
        "to DNS)",
    ),
    CauseClass.DEPENDENCY_UNAVAILABLE: (
        Area.DEPENDENCIES,
        "a service this workload depends on (database, cache, API, in any namespace) is down "
        "or has no ready endpoints; the caller's errors are a consequence",
    ),
    CauseClass.DEPENDENCY_SATURATED: (
        Area.DEPENDENCIES,
        "a dependency is up but saturated (connection pool exhausted, database at max "
        "connections), so requests queue and time out",
    ),
    CauseClass.HPA_AT_MAX: (
        Area.AUTOSCALING,
        "the HorizontalPodAutoscaler is held at maxReplicas while load needs more",
    ),
    CauseClass.HPA_METRICS_UNAVAILABLE: (
        Area.AUTOSCALING,
        "the HorizontalPodAutoscaler cannot compute its metric (containers without resource "
        "requests, metrics API missing), so it does not scale",
    ),
    CauseClass.NODE_NOT_READY: (
        Area.NODES,
        "the node the pods run on is NotReady or unreachable",
    ),
    CauseClass.NODE_PRESSURE: (
        Area.NODES,
        "a node under memory, disk or PID pressure evicts pods or refuses new ones",
    ),
    CauseClass.RBAC_FORBIDDEN: (
        Area.ACCESS,
        "the workload's ServiceAccount lacks a permission its Role must grant (403 from the "
        "apiserver)",
    ),
    CauseClass.CLOUD_ACCESS_DENIED: (
        Area.ACCESS,
        "an external service (object store, cloud API) refuses the workload's credentials",
    ),
    CauseClass.PVC_PENDING: (
        Area.STORAGE,
        "a PersistentVolumeClaim cannot bind (missing StorageClass, no provisioner, no "
        "matching volume)",
    ),
    CauseClass.VOLUME_FULL: (
        Area.STORAGE,
        "a volume or the container's writable layer is full (ENOSPC)",
    ),
    CauseClass.REGRESSION_AFTER_DEPLOY: (
        Area.METRICS,
        "errors or latency rose with a deploy: the change in that revision is the cause",
    ),
    CauseClass.CPU_THROTTLING: (
        Area.METRICS,
        "the CPU limit throttles the container (CFS throttling), so requests slow down",
    ),
    CauseClass.NO_FAULT: (Area.NONE, "no fault found: what was checked is healthy, with why"),
    CauseClass.INCONCLUSIVE: (Area.NONE, "the evidence does not decide a cause"),
    CauseClass.NONEXISTENT_TARGET: (Area.NONE, "what the request names does not exist"),
    CauseClass.EVIDENCE_UNAVAILABLE: (Area.NONE, "the cluster or Prometheus could not be read"),
    CauseClass.NO_SCOPE: (Area.NONE, "the request names no namespace to look in"),
}

assert set(_TABLE) == set(CauseClass), "every class has a table entry"
