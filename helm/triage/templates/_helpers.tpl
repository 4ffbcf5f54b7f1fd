{{/*
Names. Every object name is at most 63 characters (DNS label, label values). A component name
is "<fullname>-<component>"; when that would be too long the fullname is cut and an 8-character
hash of the whole name is added, so two long names never collide after truncation.
*/}}

{{- define "triage.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "triage.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* name63: (list base suffix) -> "base-suffix", at most 63 characters, collision-safe. */}}
{{- define "triage.name63" -}}
{{- $base := index . 0 -}}
{{- $suffix := index . 1 -}}
{{- $full := ternary $base (printf "%s-%s" $base $suffix) (eq $suffix "") -}}
{{- if le (len $full) 63 -}}
{{- $full -}}
{{- else -}}
{{- $hash := sha256sum $full | trunc 8 -}}
{{- $keep := sub 63 (add (len $suffix) 10) | int -}}
{{- if eq $suffix "" -}}
{{- printf "%s-%s" ($base | trunc (int (sub 63 9)) | trimSuffix "-") $hash -}}
{{- else -}}
{{- printf "%s-%s-%s" ($base | trunc $keep | trimSuffix "-") $hash $suffix -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A namespaced object of one component: (dict "ctx" $ "component" "reader"). */}}
{{- define "triage.componentName" -}}
{{- include "triage.name63" (list (include "triage.fullname" .ctx) .component) -}}
{{- end -}}

{{/* A cluster-scoped object (ClusterRole, ClusterRoleBinding): the release namespace is part
of the name, so releases of the same name in two namespaces do not fight over one object. */}}
{{- define "triage.clusterName" -}}
{{- include "triage.name63" (list (printf "%s-%s" .ctx.Release.Namespace (include "triage.fullname" .ctx)) .component) -}}
{{- end -}}

{{- define "triage.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels. Selectors use only name + instance + component, so they are scoped to the release
and never change on upgrade (a Deployment's selector is immutable). */}}
{{- define "triage.selectorLabels" -}}
app.kubernetes.io/name: {{ include "triage.name" . }}
app.kubernetes.io/instance: {{ .Release.Name | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{- define "triage.labels" -}}
helm.sh/chart: {{ include "triage.chart" . }}
{{ include "triage.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: triage
{{- end -}}

{{/* Labels of one component: (dict "ctx" $ "component" "agent"). */}}
{{- define "triage.componentLabels" -}}
{{ include "triage.labels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "triage.componentSelectorLabels" -}}
{{ include "triage.selectorLabels" .ctx }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* The three identities. */}}
{{- define "triage.agentServiceAccount" -}}
{{- if .Values.serviceAccounts.agent.create -}}
{{- default (include "triage.fullname" .) .Values.serviceAccounts.agent.name -}}
{{- else -}}
{{- required "serviceAccounts.agent.name is required when serviceAccounts.agent.create is false" .Values.serviceAccounts.agent.name -}}
{{- end -}}
{{- end -}}

{{- define "triage.readerServiceAccount" -}}
{{- if .Values.serviceAccounts.reader.create -}}
{{- default (include "triage.componentName" (dict "ctx" . "component" "reader")) .Values.serviceAccounts.reader.name -}}
{{- else -}}
{{- required "serviceAccounts.reader.name is required when serviceAccounts.reader.create is false" .Values.serviceAccounts.reader.name -}}
{{- end -}}
{{- end -}}

{{- define "triage.mutatorServiceAccount" -}}
{{- if .Values.serviceAccounts.mutator.create -}}
{{- default (include "triage.componentName" (dict "ctx" . "component" "mutator")) .Values.serviceAccounts.mutator.name -}}
{{- else -}}
{{- required "serviceAccounts.mutator.name is required when serviceAccounts.mutator.create is false" .Values.serviceAccounts.mutator.name -}}
{{- end -}}
{{- end -}}

{{- define "triage.approvalRecorderServiceAccount" -}}
{{- if .Values.serviceAccounts.approvalRecorder.create -}}
{{- default (include "triage.componentName" (dict "ctx" . "component" "approval-recorder")) .Values.serviceAccounts.approvalRecorder.name -}}
{{- else -}}
{{- required "serviceAccounts.approvalRecorder.name is required when serviceAccounts.approvalRecorder.create is false" .Values.serviceAccounts.approvalRecorder.name -}}
{{- end -}}
{{- end -}}

{{- define "triage.image" -}}
{{- $tag := default .Chart.AppVersion .Values.image.tag -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}
{{- end -}}

{{/* What the mutator may do, derived from the policy's allowed actions (tools/k8s_mutate.py):
every Deployment action reads the Deployment and patches it (the operation-ID stamp, and
restart/rollback themselves); scale goes through the scale subresource; rollback lists the
Deployment's ReplicaSets to find the pinned revision; delete_pod reads the pod (its UID is the
precondition) and deletes or evicts it. Silences are Alertmanager's: no Kubernetes rights. */}}
{{- define "triage.mutatorRules" -}}
{{- $actions := .Values.policy.mutations.actions | default dict -}}
{{- $deploy := or (hasKey $actions "rollout_restart") (hasKey $actions "scale") (hasKey $actions "rollback") -}}
{{- if $deploy }}
- apiGroups: [apps]
  resources: [deployments]
  verbs: [get, patch]
{{- end }}
{{- if hasKey $actions "scale" }}
- apiGroups: [apps]
  resources: [deployments/scale]
  verbs: [patch]
{{- end }}
{{- if hasKey $actions "rollback" }}
- apiGroups: [apps]
  resources: [replicasets]
  verbs: [list]
{{- end }}
{{- if hasKey $actions "delete_pod" }}
- apiGroups: [""]
  resources: [pods]
  verbs: [get, delete]
- apiGroups: [""]
  resources: [pods/eviction]
  verbs: [create]
{{- end }}
{{- end -}}

{{/* An Ingress: (dict "ctx" $ "name" NAME "values" {className, host, annotations, tls}
"paths" [{path, type}] "service" SERVICE "port" PORT-NAME). Both Ingresses of the chart (the
Slack events' and the review page's) are this one shape. */}}
{{- define "triage.ingress" -}}
{{- $v := .values }}
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: {{ .name }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "triage.componentLabels" (dict "ctx" .ctx "component" "agent") | nindent 4 }}
  {{- with $v.annotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with $v.className }}
  ingressClassName: {{ . }}
  {{- end }}
  {{- with $v.tls }}
  tls:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  rules:
    - {{- with $v.host }}
      host: {{ . | quote }}
      {{- end }}
      http:
        paths:
          {{- range .paths }}
          - path: {{ .path }}
            pathType: {{ .type }}
            backend:
              service:
                name: {{ $.service }}
                port:
                  name: {{ $.port }}
          {{- end }}
{{- end -}}
