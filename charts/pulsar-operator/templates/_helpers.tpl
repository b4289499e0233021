{{/* Chart name, shortened to the 63 characters a label value may hold. */}}
{{- define "pulsar-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object name prefix: "<release>-<chart>" unless the release name already holds the chart name. */}}
{{- define "pulsar-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "pulsar-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pulsar-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "pulsar-operator.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "pulsar-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: operator
app.kubernetes.io/part-of: pulsar
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "pulsar-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "pulsar-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "pulsar-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The namespaces watched when not cluster-wide, as a JSON list (the release namespace by default). */}}
{{- define "pulsar-operator.watchedNamespaces" -}}
{{- if .Values.watch.namespaces }}
{{- .Values.watch.namespaces | uniq | toJson }}
{{- else }}
{{- list .Release.Namespace | toJson }}
{{- end }}
{{- end }}

{{/*
RBAC rules for the custom resources the operator reconciles. They are read
from the chart's own crds/ folder, so a CRD added there is covered without
editing this file: the resource itself, its status and its finalizers
(compute.functionmesh.io only with functionMesh.enabled).
*/}}
{{- define "pulsar-operator.customResourceRules" -}}
{{- range $path, $_ := .Files.Glob "crds/*.yaml" }}
{{- range $doc := splitList "\n---" ($.Files.Get $path) }}
{{- $crd := fromYaml $doc }}
{{- $skipped := and (eq (dig "spec" "group" "" $crd) "compute.functionmesh.io") (not $.Values.functionMesh.enabled) }}
{{- if and $crd.spec (eq (default "" $crd.kind) "CustomResourceDefinition") (not $skipped) }}
- apiGroups: [{{ $crd.spec.group | quote }}]
  resources:
    - {{ $crd.spec.names.plural }}
  verbs: ["get", "list", "watch", "patch", "update"]
- apiGroups: [{{ $crd.spec.group | quote }}]
  resources:
    - {{ $crd.spec.names.plural }}/status
    - {{ $crd.spec.names.plural }}/finalizers
  verbs: ["get", "patch", "update"]
{{- end }}
{{- end }}
{{- end }}
{{- end }}

{{/*
RBAC rules for the objects the operator creates and owns for each
PulsarCluster and Function, plus what kopf itself needs in a watched
namespace (events).
*/}}
{{- define "pulsar-operator.workloadRules" -}}
- apiGroups: ["apps"]
  resources: ["statefulsets"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: [""]
  resources: ["services", "configmaps"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
# The HorizontalPodAutoscaler of a Function with maxReplicas.
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch", "create", "patch", "update", "delete"]
# Pods are only read (the bookie loops watch bookie pods).
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
# The decommission loop deletes a removed bookie's claims when
# persistentVolumeClaimRetentionPolicy.whenScaled is Delete.
- apiGroups: [""]
  resources: ["persistentvolumeclaims"]
  verbs: ["get", "list", "delete"]
# kopf posts Kubernetes events about handler progress and failures; the
# controller loops post one per decision.
- apiGroups: ["", "events.k8s.io"]
  resources: ["events"]
  verbs: ["create"]
{{- end }}
