"""Kubernetes reads beyond pods, events and logs: workloads, networking, policy, access.

Each is one scoped list (a namespace, or a cluster-scoped kind the reader may list), capped,
shaped (tools/read/shapes_kinds.py) and wrapped in the envelope by the shared plumbing
(tools/read/kube_base.py). Nothing here reads a Secret: RBAC objects, webhooks and quotas carry
names and rules, never credentials.
"""

from __future__ import annotations

from typing import Any, cast

from tools.kube_call import METADATA_ONLY
from tools.read import payloads as p
from tools.read import shapes_kinds as kinds
from tools.read.kube_base import Json, KubeBase, excerpt_of
from tools.results import ToolResult, digest

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ADMISSION = "/apis/admissionregistration.k8s.io/v1"
SERVICE_ACCOUNTS = "/api/v1/namespaces/{namespace}/serviceaccounts"


class WorkloadReads(KubeBase):
    def deployments(self, namespace: str, label_selector: str | None = None) -> ToolResult:
        kw: Json = {"label_selector": label_selector} if label_selector else {}
        return self._kinds(
            "k8s.deployments",
            {"namespace": namespace, "label_selector": label_selector},
            "/apis/apps/v1/namespaces/{namespace}/deployments",
            kinds.deployment,
            lambda d: (
                f"{d['name']} rev {d['revision']}: {d['available']}/{d['replicas']} available"
            ),
            namespace=namespace,
            **kw,
        )

    def rollout_history(self, namespace: str, deployment: str) -> ToolResult:
        """The deployment's ReplicaSets ordered by revision, with their pod templates."""

        def produce() -> tuple[Any, str, str]:
            dep = self._json(
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
                namespace=namespace,
                name=deployment,
            )
            match = ((dep.get("spec") or {}).get("selector") or {}).get("matchLabels", {})
            selector = ",".join(f"{k}={v}" for k, v in match.items())
            listed = self._list(
                "/apis/apps/v1/namespaces/{namespace}/replicasets",
                namespace=namespace,
                label_selector=selector,
            )
            self._truncated = listed.truncated
            uid = (dep.get("metadata") or {}).get("uid")
            owned = [
                kinds.replicaset(i)
                for i in listed.items
                if any(
                    r.get("uid") == uid
                    for r in (i.get("metadata") or {}).get("ownerReferences", [])
                )
            ]
            owned.sort(key=lambda r: int(r["revision"] or 0))
            excerpt = "; ".join(
                f"rev {r['revision']} {r['name']} {','.join(r['images'])} "
                f"created {r['created']} ready {r['ready']}/{r['replicas']}"
                for r in owned
            )
            history: p.RolloutHistory = {
                "deployment": kinds.deployment(dep),
                "revisions": owned,
            }
            return history, excerpt, listed.digest

        return self._result(
            "k8s.rollout_history", {"namespace": namespace, "deployment": deployment}, produce
        )

    def statefulsets(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.statefulsets",
            {"namespace": namespace},
            "/apis/apps/v1/namespaces/{namespace}/statefulsets",
            kinds.statefulset,
            lambda s: (
                f"{s['name']}: {s['ready']}/{s['replicas']} ready, service {s['service_name']}"
            ),
            namespace=namespace,
        )

    def daemonsets(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.daemonsets",
            {"namespace": namespace},
            "/apis/apps/v1/namespaces/{namespace}/daemonsets",
            kinds.daemonset,
            lambda d: f"{d['name']}: {d['ready']}/{d['desired']} ready",
            namespace=namespace,
        )

    def find_daemonsets(self) -> ToolResult:
        """DaemonSets of every namespace the reader may list (few per cluster, each meant to
        run on every node it tolerates): whether the cluster's own agents, the network plugin
        among them, can run on a node that is not Ready."""

        def shape(item: Json) -> p.FoundDaemonSet:
            found = cast(p.FoundDaemonSet, dict(kinds.daemonset(item)))
            found["namespace"] = str((item.get("metadata") or {}).get("namespace"))
            return found

        return self._kinds(
            "k8s.find_daemonsets",
            {},
            "/apis/apps/v1/daemonsets",
            shape,
            lambda d: f"{d['namespace']}/{d['name']}: {d['ready']}/{d['desired']} ready",
        )

    def jobs(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.jobs",
            {"namespace": namespace},
            "/apis/batch/v1/namespaces/{namespace}/jobs",
            kinds.job,
            lambda j: (
                f"{j['name']}: {j['succeeded']} succeeded, {j['failed']} failed "
                f"(backoffLimit {j['backoff_limit']})"
            ),
            namespace=namespace,
        )

    def cronjobs(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.cronjobs",
            {"namespace": namespace},
            "/apis/batch/v1/namespaces/{namespace}/cronjobs",
            kinds.cronjob,
            lambda c: (
                f"{c['name']} '{c['schedule']}'{' suspended' if c['suspend'] else ''}, "
                f"last scheduled {c['last_schedule']}"
            ),
            namespace=namespace,
        )

    def hpas(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.hpas",
            {"namespace": namespace},
            "/apis/autoscaling/v2/namespaces/{namespace}/horizontalpodautoscalers",
            kinds.hpa,
            lambda h: (
                f"{h['name']} -> {h['target']['name']}: {h['current_replicas']} replicas "
                f"(min {h['min_replicas']}, max {h['max_replicas']})"
            ),
            namespace=namespace,
        )

    def pdbs(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.pdbs",
            {"namespace": namespace},
            "/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
            kinds.pdb,
            lambda b: (
                f"{b['name']}: {b['allowed_disruptions']} disruption(s) allowed, "
                f"{b['current_healthy']}/{b['desired_healthy']} healthy"
            ),
            namespace=namespace,
        )


class NetworkReads(KubeBase):
    def services(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.services",
            {"namespace": namespace},
            "/api/v1/namespaces/{namespace}/services",
            kinds.service,
            lambda s: (
                f"{s['name']} selector {s['selector']} ports "
                + ",".join(f"{x.get('port')}->{x.get('targetPort')}" for x in s["ports"])
            ),
            namespace=namespace,
        )

    def find_services(self, service: str) -> ToolResult:
        """Services of that name in every namespace the reader may list (a field selector:
        never a survey): where a dependency lives when the namespace a caller names does not
        exist, or holds no such Service."""

        def shape(item: Json) -> p.FoundService:
            found = cast(p.FoundService, dict(kinds.service(item)))
            found["namespace"] = str((item.get("metadata") or {}).get("namespace"))
            return found

        return self._kinds(
            "k8s.find_services",
            {"service": service},
            "/api/v1/services",
            shape,
            lambda s: (
                f"{s['namespace']}/{s['name']} ports "
                + ",".join(str(x.get("port")) for x in s["ports"])
            ),
            field_selector=f"metadata.name={service}",
        )

    def endpoints(self, namespace: str, service: str) -> ToolResult:
        def produce() -> tuple[Any, str, str]:
            listed = self._list(
                "/apis/discovery.k8s.io/v1/namespaces/{namespace}/endpointslices",
                namespace=namespace,
                label_selector=f"kubernetes.io/service-name={service}",
            )
            eps = kinds.endpoint_slices(service, listed.items)
            excerpt = (
                f"service {service}: {eps['ready']} ready endpoints, {eps['not_ready']} not ready"
                + (f", {eps['without_ports']} without ports" if eps["without_ports"] else "")
            )
            # An answer of zero endpoints is a fact, not an absence of data.
            return eps, excerpt, listed.digest

        return self._result("k8s.endpoints", {"namespace": namespace, "service": service}, produce)

    def ingresses(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.ingresses",
            {"namespace": namespace},
            "/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses",
            kinds.ingress,
            lambda i: (
                f"{i['name']} class {i['ingress_class']} tls {i['tls_secrets']} -> "
                + ",".join(f"{b.get('service')}:{b.get('port')}" for b in i["backends"])
            ),
            namespace=namespace,
        )

    def find_ingresses(self, host: str) -> ToolResult:
        """Ingresses of every namespace the reader may list that route `host` (exactly, or by
        a one-label wildcard rule *.example.com): who serves a URL the user names when the
        namespace asked about has no Ingress for it. An Ingress routes only to Services of its
        own namespace, so where it lives is half the answer."""

        def produce() -> tuple[Any, str, str]:
            listed = self._list("/apis/networking.k8s.io/v1/ingresses")
            self._truncated = self._truncated or listed.truncated
            found: list[p.FoundIngress] = []
            for item in listed.items:
                shaped = cast(p.FoundIngress, dict(kinds.ingress(item)))
                if any(routes_host(str(b.get("host") or ""), host) for b in shaped["backends"]):
                    shaped["namespace"] = str((item.get("metadata") or {}).get("namespace"))
                    found.append(shaped)
            return found, excerpt_of(found, _found_ingress_line), listed.digest

        return self._result("k8s.find_ingresses", {"host": host}, produce)

    def ingress_classes(self) -> ToolResult:
        return self._kinds(
            "k8s.ingress_classes",
            {},
            "/apis/networking.k8s.io/v1/ingressclasses",
            kinds.ingress_class,
            lambda c: f"{c['name']} ({c['controller']}){' default' if c['default'] else ''}",
        )

    def network_policies(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.network_policies",
            {"namespace": namespace},
            "/apis/networking.k8s.io/v1/namespaces/{namespace}/networkpolicies",
            kinds.network_policy,
            lambda n: f"{n['name']} selects {n['pod_selector'] or 'all pods'} types {n['types']}",
            namespace=namespace,
        )


class PolicyReads(KubeBase):
    def pvcs(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.pvcs",
            {"namespace": namespace},
            "/api/v1/namespaces/{namespace}/persistentvolumeclaims",
            kinds.pvc,
            lambda c: f"{c['name']} {c['phase']} class {c['storage_class']}",
            namespace=namespace,
        )

    def persistent_volumes(self) -> ToolResult:
        return self._kinds(
            "k8s.persistent_volumes",
            {},
            "/api/v1/persistentvolumes",
            kinds.persistent_volume,
            lambda v: (
                f"{v['name']} {v['phase']} {v['capacity']} class {v['storage_class']!r}"
                + (f" for {v['claim']}" if v["claim"] else "")
            ),
        )

    def storage_classes(self) -> ToolResult:
        return self._kinds(
            "k8s.storage_classes",
            {},
            "/apis/storage.k8s.io/v1/storageclasses",
            kinds.storage_class,
            lambda c: f"{c['name']} ({c['provisioner']})",
        )

    def resource_quotas(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.resource_quotas",
            {"namespace": namespace},
            "/api/v1/namespaces/{namespace}/resourcequotas",
            kinds.resource_quota,
            lambda q: (
                f"{q['name']}: "
                + ", ".join(f"{k} {q['used'].get(k, '0')}/{v}" for k, v in q["hard"].items())
            ),
            namespace=namespace,
        )

    def limit_ranges(self, namespace: str) -> ToolResult:
        return self._kinds(
            "k8s.limit_ranges",
            {"namespace": namespace},
            "/api/v1/namespaces/{namespace}/limitranges",
            kinds.limit_range,
            lambda r: f"{r['name']}: {r['limits']}",
            namespace=namespace,
        )

    def service_accounts(self, namespace: str) -> ToolResult:
        """ServiceAccounts: names and the annotations that bind them to a cloud identity (IRSA,
        GKE Workload Identity, Azure). Their tokens are Secrets and are never read."""
        return self._kinds(
            "k8s.service_accounts",
            {"namespace": namespace},
            SERVICE_ACCOUNTS,
            kinds.service_account,
            lambda a: (
                f"{a['name']}{' ' + str(a['annotations']) if a['annotations'] else ''}"
                + (
                    f" imagePullSecrets {','.join(a['pull_secrets'])}"
                    if a.get("pull_secrets")
                    else ""
                )
            ),
            namespace=namespace,
        )

    def rbac(self, namespace: str) -> ToolResult:
        """The namespace's RoleBindings, its Roles and the ClusterRoles those bindings name."""

        def produce() -> tuple[Any, str, str]:
            bindings = self._list(
                f"{RBAC}/namespaces/{{namespace}}/rolebindings", namespace=namespace
            )
            roles = self._list(f"{RBAC}/namespaces/{{namespace}}/roles", namespace=namespace)
            accounts = self._list(SERVICE_ACCOUNTS, namespace=namespace)
            cluster = self._list(f"{RBAC}/clusterrolebindings")
            self._truncated = bindings.truncated or roles.truncated or cluster.truncated
            shaped_bindings = [kinds.role_binding(b) for b in bindings.items]
            # ClusterRoleBindings that bind this namespace's ServiceAccounts — or the same
            # account names in another namespace (a binding copied from elsewhere).
            names = {str((a.get("metadata") or {}).get("name")) for a in accounts.items}
            for item in cluster.items:
                shaped = kinds.role_binding(item) | {"cluster": True}
                accounts_bound = [
                    s.split("/", 2)[1:]
                    for s in shaped["subjects"]
                    if s.startswith("ServiceAccount/")
                ]
                if any(ns == namespace or name in names for ns, name in accounts_bound):
                    shaped_bindings.append(shaped)
            shaped_roles = [kinds.role(r | {"kind": "Role"}) for r in roles.items]
            wanted = sorted(
                {
                    b["role"].split("/", 1)[1]
                    for b in shaped_bindings
                    if b["role"].startswith("ClusterRole/")
                }
            )
            for name in wanted[:20]:
                obj = self._json(f"{RBAC}/clusterroles/{{name}}", name=name)
                shaped_roles.append(kinds.role(obj | {"kind": "ClusterRole"}))
            data: p.RBAC = {"roles": shaped_roles, "bindings": shaped_bindings}
            excerpt = "; ".join(
                f"{b['name']}: {b['role']} -> {', '.join(b['subjects'])}" for b in shaped_bindings
            )
            return data, excerpt, digest(bindings.digest + roles.digest + cluster.digest)

        return self._result("k8s.rbac", {"namespace": namespace}, produce)

    def webhooks(self) -> ToolResult:
        """Validating and mutating admission webhooks (cluster-scoped configurations)."""

        def produce() -> tuple[Any, str, str]:
            validating = self._list(f"{ADMISSION}/validatingwebhookconfigurations")
            mutating = self._list(f"{ADMISSION}/mutatingwebhookconfigurations")
            self._truncated = validating.truncated or mutating.truncated
            hooks: list[p.Webhook] = [
                h for i in validating.items for h in kinds.webhooks(i, "validating")
            ] + [h for i in mutating.items for h in kinds.webhooks(i, "mutating")]
            excerpt = "; ".join(
                f"{h['kind']} {h['name']} -> {h['service'] or h['url']} "
                f"(failurePolicy {h['failure_policy']})"
                for h in hooks[:8]
            )
            return hooks, excerpt, digest(validating.digest + mutating.digest)

        return self._result("k8s.webhooks", {}, produce)

    def configmap_names(self, namespace: str) -> ToolResult:
        """Names only, asked for as metadata: the apiserver sends no ConfigMap's data."""

        def produce() -> tuple[Any, str, str]:
            listed = self._list(
                "/api/v1/namespaces/{namespace}/configmaps",
                accept=METADATA_ONLY,
                namespace=namespace,
            )
            self._truncated = listed.truncated
            names = sorted((i.get("metadata") or {}).get("name", "") for i in listed.items)
            return names, f"configmaps: {', '.join(names)}", listed.digest

        return self._result("k8s.configmap_names", {"namespace": namespace}, produce)

    def configmap_keys(self, namespace: str, name: str) -> ToolResult:
        """The keys of one ConfigMap (data and binaryData), never a value: which file a
        volume's `items` or an env's configMapKeyRef can find. The object comes over the wire
        (the apiserver has no keys-only view) and its values are dropped here, unread."""

        def produce() -> tuple[Any, str, str]:
            listed = self._list(
                "/api/v1/namespaces/{namespace}/configmaps",
                namespace=namespace,
                field_selector=f"metadata.name={name}",
            )
            self._truncated = listed.truncated
            found = [
                {
                    "name": str((i.get("metadata") or {}).get("name", "")),
                    "keys": sorted([*(i.get("data") or {}), *(i.get("binaryData") or {})]),
                }
                for i in listed.items
            ]
            excerpt = "; ".join(
                f"configmap {c['name']} keys: {', '.join(c['keys'])}" for c in found
            )
            return found, excerpt, listed.digest

        return self._result("k8s.configmap_keys", {"namespace": namespace, "name": name}, produce)


def _found_ingress_line(i: p.FoundIngress) -> str:
    return f"{i['namespace']}/{i['name']} class {i['ingress_class']} -> " + ",".join(
        f"{b.get('service')}:{b.get('port')}" for b in i["backends"]
    )


def routes_host(rule_host: str, host: str) -> bool:
    """An Ingress rule's host matches `host`: equal, or a wildcard rule ("*.example.com")
    matching exactly one more label in front (the Ingress API's rule)."""
    if not rule_host:
        return False
    if rule_host.startswith("*."):
        head, _, rest = host.partition(".")
        return bool(head) and rest == rule_host[2:]
    return rule_host == host
