"""The typed payloads the read tools return: one TypedDict per kind of object, in one module.

`tools/read/shapes.py` builds them from the apiserver's JSON; detectors, the judge and the
renderers read them through these types (`Facts` in the rules planner casts an ok result's
data to the payload of its tool). TypedDicts, not models: evidence travels through the
checkpointer as plain JSON, and a payload read back is the same dict it was when it was made,
so typing it costs nothing at run time while mypy checks every field a reader touches.

Secrets never appear here. Env vars keep their names, the ConfigMap/Secret *references*
(name and key) and the literal values of the spec — redacted by the read tools' Redactor, which
masks a value whose name looks secret whole, and clipped — because the cause of an incident is
so often in a setting (a heap flag, a URL, a port); values that come from a Secret are never
read. ConfigMaps: names (and key names), never data.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict


class ContainerState(TypedDict, total=False):
    kind: Literal["waiting", "running", "terminated"]
    reason: str
    message: str
    exit_code: int
    started_at: str
    finished_at: str


class Resources(TypedDict):
    limits: dict[str, str]
    requests: dict[str, str]


class Probe(TypedDict, total=False):
    kind: Literal["http", "tcp", "exec", "grpc"]
    path: str
    port: int | str
    command: list[str]
    # what the kubelet sends as the request's host: httpGet.host, or an httpHeaders Host; an
    # HTTP probe without either is sent to, and names as its Host, the pod's IP
    host: str
    header_names: list[str]  # the httpHeaders' names only: a value may hold a credential
    service: str  # a gRPC probe's grpc.service: the name the health service is asked about
    initial_delay_s: int
    period_s: int
    timeout_s: int
    failure_threshold: int


class EnvVar(TypedDict, total=False):
    name: str
    value: str  # a literal value of the spec (redacted, clipped)
    configmap: str  # "name/key" of a configMapKeyRef
    secret: str  # "name/key" of a secretKeyRef: the reference, never the value
    field: str  # a fieldRef/resourceFieldRef path


class ContainerPort(TypedDict, total=False):
    name: str
    port: int
    protocol: str
    host_port: int  # hostPort: the node's own port, one pod per node may hold it


class ContainerSpec(TypedDict):
    """What a pod template says about one container (pods and revisions alike)."""

    name: str
    image: str
    command: list[str]
    args: list[str]
    env: list[EnvVar]
    env_from: list[str]  # "configmap:NAME" / "secret:NAME"
    ports: list[ContainerPort]
    limits: dict[str, str]
    requests: dict[str, str]
    liveness: Probe | None
    readiness: Probe | None
    startup: Probe | None
    mounts: list[str]  # "volume -> /path"
    # imagePullPolicy as set (the apiserver defaults it: Always for :latest or no tag, else
    # IfNotPresent); IfNotPresent pulls only on a node that does not have the image cached
    pull_policy: NotRequired[str]
    # an init container's restartPolicy: Always makes it a native sidecar (Kubernetes 1.29+),
    # which keeps running beside the app instead of having to exit before the next one starts
    restart_policy: NotRequired[str]


class Volume(TypedDict, total=False):
    name: str
    kind: str  # persistentVolumeClaim, configMap, secret, emptyDir, hostPath, projected, ...
    ref: str  # the claim, ConfigMap or Secret it names
    medium: str  # an emptyDir's medium: "Memory" is a tmpfs, counted as the container's memory
    size_limit: str  # an emptyDir's sizeLimit


class Container(TypedDict):
    name: str
    image: str | None
    ready: bool
    restarts: int
    state: ContainerState | None
    last_terminated: ContainerState | None
    limits: dict[str, str]
    requests: dict[str, str]
    spec: ContainerSpec | None


class Owner(TypedDict):
    kind: str | None
    name: str | None


class Condition(TypedDict, total=False):
    type: str
    status: str
    reason: str
    message: str
    lastTransitionTime: str


class Toleration(TypedDict, total=False):
    key: str
    operator: str
    value: str
    effect: str


class Pod(TypedDict):
    name: str
    phase: str | None
    node: str | None
    created: str | None
    labels: dict[str, str]
    owner: Owner | None
    ready: bool
    conditions: list[Condition]
    containers: list[Container]
    node_selector: dict[str, str]
    tolerations: list[Toleration]
    configmaps: list[str]
    secrets_referenced: list[str]
    claims: list[str]
    reason: str | None
    message: str | None
    init_containers: list[Container]
    service_account: str | None
    volumes: list[Volume]
    affinity: list[str]  # one line per required rule ("anti-affinity app=x on hostname")
    start_time: str | None
    priority_class: str | None  # spec.priorityClassName: how the cluster ranks it, by design
    # spec.imagePullSecrets by name (the ServiceAccount admission adds its account's): which
    # Secrets the kubelet pulls with; the Secrets themselves are never read
    pull_secrets: NotRequired[list[str]]
    # spec.schedulerName when it is not the default kube-scheduler's (default-scheduler): only
    # a scheduler of that name binds the pod, so where none runs it stays Pending, unevented
    scheduler: NotRequired[str]


class PodRef(TypedDict):
    """A pod found across namespaces (k8s.find_pods, k8s.pods_on_node)."""

    namespace: str
    name: str
    phase: str | None
    ready: bool
    labels: dict[str, str]
    containers: list[str]
    args: str  # the first container's command and args, clipped (which class it serves)
    # what its containers request, per resource, "+"-joined when several do ("1+500m"):
    # who holds a node's GPUs, CPU or memory when a pod cannot fit there
    requests: NotRequired[dict[str, str]]
    started: NotRequired[str | None]


class EventObject(TypedDict):
    kind: str | None
    name: str | None


class Event(TypedDict):
    type: str | None
    reason: str | None
    message: str | None
    object: EventObject
    count: int
    last_seen: str | None
    first_seen: NotRequired[str | None]  # firstTimestamp: with count, how often it recurs
    source: str | None


class PodTemplate(TypedDict):
    """A pod template, shaped so two revisions can be diffed field by field."""

    containers: list[ContainerSpec]
    init_containers: list[ContainerSpec]
    service_account: str | None
    volumes: list[Volume]
    node_selector: dict[str, str]
    annotations: dict[str, str]  # template annotations (restart stamps, checksums), redacted
    # every other setting of the template, flattened path -> value (shapes.settings): what a
    # release can change beyond the fields above (dnsPolicy, ports, securityContext, volumes)
    settings: NotRequired[dict[str, str]]


class Deployment(TypedDict):
    name: str
    created: str | None
    revision: str | None
    generation: int | None
    observed_generation: int | None
    replicas: int | None
    ready: int
    updated: int
    available: int
    unavailable: int
    selector: dict[str, str]
    template_labels: dict[str, str]
    template: PodTemplate
    strategy: str | None
    max_surge: int | str | None  # rollingUpdate.maxSurge as written (None: the 25% default)
    max_unavailable: int | str | None  # rollingUpdate.maxUnavailable as written
    conditions: list[Condition]
    paused: bool
    restart_stamp: str | None  # the triage.dev/restart template annotation (operation id)
    # a new pod counts as available only after it has been Ready this long: a rollout of N
    # pods one at a time takes N times it, by design
    min_ready_s: NotRequired[int]
    progress_deadline_s: NotRequired[int | None]
    # what people (and tools such as a downscaler) noted on it; machine-written ones dropped
    annotations: NotRequired[dict[str, str]]


class ReplicaSet(TypedDict):
    name: str
    created: str | None
    owner: Owner | None
    revision: str | None
    template_hash: str | None
    replicas: int
    ready: int
    available: int
    images: list[str]
    template: PodTemplate


class RolloutHistory(TypedDict):
    deployment: Deployment
    revisions: list[ReplicaSet]


class Taint(TypedDict, total=False):
    key: str
    value: str
    effect: str


class Node(TypedDict):
    name: str
    labels: dict[str, str]
    unschedulable: bool
    taints: list[Taint]
    allocatable: dict[str, str]
    conditions: list[Condition]
    heartbeat: str | None  # the Ready condition's lastHeartbeatTime
    runtime: NotRequired[str | None]  # status.nodeInfo.containerRuntimeVersion (containerd://1.7)


class ServicePort(TypedDict, total=False):
    name: str
    port: int
    targetPort: int | str
    protocol: str


class Service(TypedDict):
    name: str
    type: str | None
    headless: bool  # clusterIP None: DNS answers with the pods themselves (a StatefulSet's own)
    selector: dict[str, str]
    ports: list[ServicePort]
    # type ExternalName: the DNS name it is an alias (CNAME) for; it has no endpoints by design
    external_name: NotRequired[str | None]
    cluster_ip: NotRequired[str | None]  # spec.clusterIP: what the kubelet's service links carry


class FoundService(Service):
    """A Service found across namespaces by its name (k8s.find_services)."""

    namespace: str


class Endpoints(TypedDict):
    service: str
    ready: int  # ready, in a slice that has ports: these receive traffic
    not_ready: int
    without_ports: int  # in a slice with no ports: the named targetPort resolves in no pod
    pods: list[str]


class PVC(TypedDict):
    name: str
    phase: str | None
    storage_class: str | None
    requested: str | None
    volume: str | None
    access_modes: list[str]


class PersistentVolume(TypedDict):
    name: str
    phase: str | None  # Available, Bound, Released, Failed
    storage_class: str | None
    capacity: str | None
    access_modes: list[str]
    # where it can be attached: (label key, operator, values) of its required node affinity
    # (a zonal disk: topology.kubernetes.io/zone In [eu-west-1a]); alternatives OR-ed
    node_affinity: NotRequired[list[list[tuple[str, str, list[str]]]]]
    claim: str | None  # namespace/name of the claim it is bound or reserved for
    # what happens to it once its claim is deleted: Retain (kept, Released), Delete, Recycle
    reclaim_policy: NotRequired[str | None]


class StorageClass(TypedDict):
    name: str
    provisioner: str | None
    default: bool
    # Immediate (the default) or WaitForFirstConsumer: a claim of the latter stays Pending,
    # by design, until a pod that mounts it is scheduled (the volume is made in its zone)
    binding_mode: NotRequired[str]
    # where it may provision: (label key, values) pairs of its allowedTopologies, ANDed within
    # the first term; empty when it may provision anywhere
    allowed_topologies: NotRequired[list[tuple[str, list[str]]]]


class MetricValue(TypedDict):
    name: str | None
    kind: str | None  # Resource, ContainerResource, Pods, Object, External
    utilization: int | None
    value: str | None  # averageValue or value, as the API writes it ("48250", "500m")


class MetricTarget(TypedDict):
    name: str | None
    kind: str | None
    utilization: int | None
    value: str | None


class ScaleTarget(TypedDict):
    kind: str | None
    name: str | None


class HPA(TypedDict):
    name: str
    target: ScaleTarget
    min_replicas: int
    max_replicas: int | None
    current_replicas: int | None
    desired_replicas: int | None
    current_metrics: list[MetricValue]
    target_metrics: list[MetricTarget]
    conditions: list[Condition]
    # behavior.scaleDown.stabilizationWindowSeconds as written (None: the default, 300 s):
    # how long the controller keeps the highest recent recommendation before scaling down
    scale_down_window_s: NotRequired[int | None]


class Job(TypedDict):
    name: str
    created: str | None
    owner: Owner | None
    backoff_limit: int
    active_deadline_s: int | None
    # ttlSecondsAfterFinished, when set: a finished Job is kept (and counted by a
    # count/jobs.batch quota) until deleted without it
    ttl_after_finished_s: NotRequired[int]
    active: int
    succeeded: int
    failed: int
    start_time: str | None
    completion_time: str | None
    conditions: list[Condition]
    template: PodTemplate


class CronJob(TypedDict):
    name: str
    schedule: str
    suspend: bool
    concurrency_policy: str | None
    starting_deadline_s: int | None
    time_zone: NotRequired[str | None]  # spec.timeZone: the zone its schedule is read in
    last_schedule: str | None
    last_success: str | None
    active: list[str]  # names of the Jobs it is running now
    annotations: dict[str, str]  # what people noted on it (machine-written ones dropped)


class StatefulSet(TypedDict):
    name: str
    service_name: str | None
    pod_management: str  # OrderedReady (the default) or Parallel
    replicas: int | None
    ready: int
    current: int
    updated: int
    update_strategy: str  # RollingUpdate (the default) or OnDelete
    partition: int  # rollingUpdate.partition: pods with a lower ordinal keep the old revision
    # spec.ordinals.start: the first pod's ordinal (0 unless set), so the pods are
    # <name>-<start> .. <name>-<start + replicas - 1>
    ordinals_start: NotRequired[int]
    # persistentVolumeClaimRetentionPolicy.whenScaled: Retain (the default) keeps the claims
    # of the pods a scale-down removes; Delete deletes them
    claims_when_scaled: NotRequired[str]
    current_revision: str | None
    update_revision: str | None
    selector: dict[str, str]
    claim_templates: list[PVCTemplate]
    template: PodTemplate
    conditions: list[Condition]
    annotations: dict[str, str]


class PVCTemplate(TypedDict):
    name: str
    storage_class: str | None
    requested: str | None


class DaemonSet(TypedDict):
    name: str
    desired: int
    current: int
    ready: int
    unavailable: int
    misscheduled: int
    selector: dict[str, str]
    template: PodTemplate


class FoundDaemonSet(DaemonSet):
    """A DaemonSet listed across namespaces (k8s.find_daemonsets)."""

    namespace: str


class IngressBackend(TypedDict, total=False):
    host: str
    path: str
    path_type: str  # Exact, Prefix, ImplementationSpecific
    service: str
    port: int | str


class Ingress(TypedDict):
    name: str
    ingress_class: str | None
    tls_secrets: list[str]
    backends: list[IngressBackend]
    load_balancer: list[str]
    canary: dict[str, str]  # ingress-nginx canary-* annotations, without their prefix
    # nginx.ingress.kubernetes.io/backend-protocol (HTTP when unset: GRPC, GRPCS, HTTPS …)
    backend_protocol: NotRequired[str | None]
    annotation_owners: NotRequired[list[str]]  # the prefixes of its annotations' keys
    annotations: NotRequired[dict[str, str]]  # people's annotations (machine-written dropped)


class FoundIngress(Ingress):
    """An Ingress found across namespaces by a host it routes (k8s.find_ingresses)."""

    namespace: str


class IngressClass(TypedDict):
    name: str
    controller: str | None
    default: bool


class PolicyPeer(TypedDict, total=False):
    pods: dict[str, str]  # podSelector matchLabels ({} = every pod)
    namespaces: dict[str, str]  # namespaceSelector matchLabels
    cidr: str
    cidr_except: list[str]  # ipBlock.except: ranges inside cidr that it does not admit
    ports: list[str]  # "TCP/53"


class NetworkPolicy(TypedDict):
    name: str
    pod_selector: dict[str, str]  # {} selects every pod of the namespace
    types: list[str]  # Ingress, Egress
    ingress: list[list[PolicyPeer]]  # one list of peers per rule ([] = from anywhere)
    ingress_ports: list[list[str]]
    egress: list[list[PolicyPeer]]
    egress_ports: list[list[str]]


class ResourceQuota(TypedDict):
    name: str
    hard: dict[str, str]
    used: dict[str, str]
    scopes: list[str]  # BestEffort, NotBestEffort, Terminating, …: the pods it counts


class LimitRange(TypedDict):
    name: str
    limits: list[dict[str, Any]]  # type, max, min, default, defaultRequest per resource


class PDB(TypedDict):
    name: str
    selector: dict[str, str]
    min_available: int | str | None
    max_unavailable: int | str | None
    allowed_disruptions: int
    current_healthy: int
    desired_healthy: int
    expected_pods: int
    # spec.unhealthyPodEvictionPolicy when set (IfHealthyBudget when not): whether a Running
    # pod that is not Ready may be evicted while the budget is not met
    unhealthy_policy: NotRequired[str]
    # spec.selector given and empty ({}): in policy/v1 it selects every pod of the namespace
    # (an absent selector selects none; policy/v1beta1 read {} as none)
    selects_all: NotRequired[bool]


class PolicyRule(TypedDict, total=False):
    api_groups: list[str]
    resources: list[str]
    verbs: list[str]
    names: list[str]


class ServiceAccount(TypedDict):
    name: str
    annotations: dict[str, str]  # e.g. eks.amazonaws.com/role-arn: the cloud identity it gets
    automount_token: bool | None
    # imagePullSecrets by name: admission copies them into every pod that runs as the account
    pull_secrets: NotRequired[list[str]]


class Role(TypedDict):
    name: str
    kind: str  # Role or ClusterRole
    rules: list[PolicyRule]


class RoleBinding(TypedDict, total=False):
    name: str
    role: str  # "Role/name" or "ClusterRole/name"
    subjects: list[str]  # "ServiceAccount/ns/name", "User/alice", "Group/x"
    cluster: bool  # a ClusterRoleBinding (absent: a RoleBinding of the namespace)


class RBAC(TypedDict):
    roles: list[Role]  # the namespace's Roles and the ClusterRoles its bindings name
    bindings: list[RoleBinding]  # its RoleBindings, and ClusterRoleBindings of its accounts


class Webhook(TypedDict):
    configuration: str
    kind: str  # validating or mutating
    name: str
    failure_policy: str | None
    service: str | None  # "namespace/name:port"
    url: str | None
    namespace_selector: dict[str, str]
    rules: list[str]  # "CREATE pods", ...


class NamespaceInfo(TypedDict):
    name: str
    phase: str | None


class RCAReportRead(TypedDict):
    name: str
    uid: str | None
    resource_version: str | None
    spec_digest: str | None
    draft_digest: str | None
    attempt: int | None
    draft: dict[str, Any] | None
    outcome: str | None


class RangeSeries(TypedDict):
    labels: dict[str, str]
    values: list[tuple[float, float]]


class InstantSample(TypedDict):
    labels: dict[str, str]
    value: float


LogLines = list[str]
