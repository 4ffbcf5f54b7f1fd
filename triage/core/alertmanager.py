"""An Alertmanager webhook notification, and what an investigation takes from it.

Alertmanager posts one JSON document per alert group and notification (webhook version 4):
the group's key, its status, the group's and the common labels and annotations, and the
alerts. `triage serve`'s receiver (triage/web/alerts.py) and `triage investigate --alert FILE`
read it through this one model, so both scope an investigation the same way:

- the scope comes from the labels (namespace, pod, deployment, statefulset, daemonset, job,
  service, container, node, severity), and only values shaped like Kubernetes names are
  kept: a label cannot smuggle a sentence into the question;
- the question is written here from the alert's name and those labels, never from its
  annotations; the annotations (summary, description, runbook) go along as data on
  `Goal.alert`, redacted and clipped, for the planner to read like any tool output — never as
  instructions, never as a command (an alert commands no change: intake is told so).
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tools.redact import Redactor
from triage.core.models import Alert

#: The labels that scope an investigation, in the order the question names them.
SCOPE_LABELS = (
    "namespace",
    "deployment",
    "statefulset",
    "daemonset",
    "job",
    "service",
    "pod",
    "container",
    "node",
    "severity",
    # kube-state-metrics' object labels, as kube-prometheus's rules carry them: what the
    # alert measures (a quota's resource, a claim, an autoscaler, a CronJob, a budget)
    "resourcequota",
    "resource",
    "persistentvolumeclaim",
    "horizontalpodautoscaler",
    "cronjob",
    "job_name",
    "poddisruptionbudget",
)
_NAME_LIKE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,252}$")
_ALERTNAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_:]{0,200}$")
MAX_LABELS = 40
MAX_ANNOTATIONS = 10
MAX_ANNOTATION_CHARS = 2000
MAX_ALERTS = 1000  # Alertmanager sends every alert of a group; the question needs a few


class WebhookAlert(BaseModel):
    """One alert of the group, as Alertmanager sends it."""

    model_config = ConfigDict(extra="ignore")
    status: Literal["firing", "resolved"] = "firing"
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    starts_at: str = Field(default="", alias="startsAt")
    ends_at: str = Field(default="", alias="endsAt")
    generator_url: str = Field(default="", alias="generatorURL")
    fingerprint: str = ""


class Notification(BaseModel):
    """One webhook notification (Alertmanager's `version: "4"` payload)."""

    model_config = ConfigDict(extra="ignore")
    version: str = "4"
    group_key: str = Field(alias="groupKey", min_length=1, max_length=10_000)
    truncated_alerts: int = Field(default=0, alias="truncatedAlerts", ge=0)
    status: Literal["firing", "resolved"]
    receiver: str = Field(default="", max_length=500)
    group_labels: dict[str, str] = Field(default_factory=dict, alias="groupLabels")
    common_labels: dict[str, str] = Field(default_factory=dict, alias="commonLabels")
    common_annotations: dict[str, str] = Field(default_factory=dict, alias="commonAnnotations")
    external_url: str = Field(default="", alias="externalURL")
    alerts: list[WebhookAlert] = Field(default_factory=list, max_length=MAX_ALERTS)

    @property
    def key(self) -> str:
        """A short, stable id for the group (its groupKey can be long and has any bytes)."""
        return hashlib.sha256(self.group_key.encode()).hexdigest()[:20]

    @property
    def firing(self) -> list[WebhookAlert]:
        return [a for a in self.alerts if a.status == "firing"]

    def labels(self) -> dict[str, str]:
        """The group's labels: the common ones, then those every firing alert shares, then the
        first firing alert's for the scope labels the others do not contradict."""
        merged = {**self.group_labels, **self.common_labels}
        alerts = self.firing or self.alerts
        if alerts:
            first = alerts[0].labels
            for key in SCOPE_LABELS:
                if key in merged or key not in first:
                    continue
                if all(a.labels.get(key, first[key]) == first[key] for a in alerts):
                    merged[key] = first[key]
        return dict(list(merged.items())[:MAX_LABELS])

    def name(self) -> str:
        labels = self.labels()
        for source in (labels, *(a.labels for a in self.alerts)):
            name = source.get("alertname", "")
            if _ALERTNAME.match(name):
                return name
        return "Alert"

    def alert(self, redactor: Redactor) -> Alert:
        """The group as the `Alert` an investigation starts from: the scope labels that look
        like names, and the annotations (redacted, clipped) as data."""
        labels = {
            k: v[:253]
            for k, v in self.labels().items()
            if k == "alertname" or (k in SCOPE_LABELS and _NAME_LIKE.match(v))
        }
        source = self.common_annotations or (self.alerts[0].annotations if self.alerts else {})
        annotations = {
            k[:100]: redactor.text(v[:MAX_ANNOTATION_CHARS])
            for k, v in list(source.items())[:MAX_ANNOTATIONS]
        }
        return Alert(name=self.name(), labels=labels, annotations=annotations, status=self.status)


def question(alert: Alert, *, count: int = 1) -> str:
    """The request an alert makes, in words written here (from its name and scope labels only):
    what the judge reads as "what was asked"."""
    labels = alert.labels
    where = []
    for kind in ("deployment", "statefulset", "daemonset", "job", "service", "pod"):
        if labels.get(kind):
            where.append(f"{kind}/{labels[kind]}")
    if labels.get("container"):
        where.append(f"container {labels['container']}")
    if labels.get("node"):
        where.append(f"node {labels['node']}")
    text = f"[FIRING:{count}] {alert.name}: alert {alert.name} is firing"
    if where:
        text += " for " + ", ".join(where)
    if labels.get("namespace"):
        text += f" in namespace {labels['namespace']}"
    if labels.get("severity"):
        text += f" (severity {labels['severity']})"
    return text + ". Find out why it fires."
