{{/* metadata.name of the PulsarCluster: values.name or the release name. */}}
{{- define "pulsar-cluster.name" -}}
{{- default .Release.Name .Values.name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "pulsar-cluster.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: pulsar
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: pulsar
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* metadata.annotations lines (without the key), or nothing. */}}
{{- define "pulsar-cluster.annotations" -}}
{{- $annotations := deepCopy (default dict .root.Values.commonAnnotations) }}
{{- if .keep }}
{{- $_ := set $annotations "helm.sh/resource-policy" "keep" }}
{{- end }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "pulsar-cluster.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/*
A Kubernetes object name made from a Pulsar name, which may hold characters
(_ = : .) a DNS label may not: lower-cased, others replaced by "-".
*/}}
{{- define "pulsar-cluster.resourceName" -}}
{{- regexReplaceAll "[^a-z0-9-]+" (lower .) "-" | trunc 63 | trimAll "-" }}
{{- end }}

{{/*
A config override map (key -> scalar) written as key: "string" lines. Helm
reads every number in values as a float, which toString would write as
1.048576e+07: whole numbers are written as integers instead.
*/}}
{{- define "pulsar-cluster.configMap" -}}
{{- range $key, $value := . }}
{{- if and (kindIs "float64" $value) (eq $value (floor $value)) }}
{{ $key }}: {{ int64 $value | toString | quote }}
{{- else }}
{{ $key }}: {{ toString $value | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* A volume claim: size and storageClassName, leaving out what is empty. */}}
{{- define "pulsar-cluster.volume" -}}
{{- with .size }}
size: {{ . }}
{{- end }}
{{- with .storageClassName }}
storageClassName: {{ . | quote }}
{{- end }}
{{- end }}

{{/*
Fail early, with the reason, on a replication setting the broker could never
satisfy: managedLedgerDefaultAckQuorum <= WriteQuorum <= EnsembleSize <=
bookkeeper.replicas (the operator would only report the spec as invalid).
*/}}
{{- define "pulsar-cluster.checkQuorums" -}}
{{- $config := default dict .Values.broker.config }}
{{- $bookies := int .Values.bookkeeper.replicas }}
{{- $e := "managedLedgerDefaultEnsembleSize" }}
{{- $wq := "managedLedgerDefaultWriteQuorum" }}
{{- $aq := "managedLedgerDefaultAckQuorum" }}
{{- if and (hasKey $config $e) (gt (int (get $config $e)) $bookies) }}
{{- fail (printf "broker.config.%s (%v) must not exceed bookkeeper.replicas (%d)" $e (get $config $e) $bookies) }}
{{- end }}
{{- if and (hasKey $config $wq) (hasKey $config $e) (gt (int (get $config $wq)) (int (get $config $e))) }}
{{- fail (printf "broker.config.%s (%v) must not exceed %s (%v)" $wq (get $config $wq) $e (get $config $e)) }}
{{- end }}
{{- if and (hasKey $config $aq) (hasKey $config $wq) (gt (int (get $config $aq)) (int (get $config $wq))) }}
{{- fail (printf "broker.config.%s (%v) must not exceed %s (%v)" $aq (get $config $aq) $wq (get $config $wq)) }}
{{- end }}
{{- end }}

{{/*
In-cluster URLs of the cluster's services, named the way the operator names
them (pulsar_operator.cluster_config): <name>-<component>.<namespace>.svc.
The binary-protocol URL is the proxy's when a proxy runs (as the
PulsarCluster's status.brokerServiceURL), the admin URL the brokers'
(status.webServiceURL).
*/}}
{{- define "pulsar-cluster.serviceHost" -}}
{{- printf "%s-%s.%s.svc" (include "pulsar-cluster.name" .root) .component .root.Release.Namespace }}
{{- end }}

{{- define "pulsar-cluster.webServiceURL" -}}
{{- printf "http://%s:8080" (include "pulsar-cluster.serviceHost" (dict "root" . "component" "broker")) }}
{{- end }}

{{- define "pulsar-cluster.brokerServiceURL" -}}
{{- $component := "broker" }}
{{- if and .Values.proxy.enabled (gt (int .Values.proxy.replicas) 0) }}
{{- $component = "proxy" }}
{{- end }}
{{- printf "pulsar://%s:6650" (include "pulsar-cluster.serviceHost" (dict "root" . "component" $component)) }}
{{- end }}

{{- define "pulsar-cluster.metadataStoreURL" -}}
{{- if .Values.etcd.externalEndpoints }}
{{- printf "etcd:%s" (join "," .Values.etcd.externalEndpoints) }}
{{- else }}
{{- printf "etcd:http://%s:2379" (include "pulsar-cluster.serviceHost" (dict "root" . "component" "etcd")) }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the Spark drivers run as. */}}
{{- define "pulsar-cluster.sparkServiceAccount" -}}
{{- default (printf "%s-spark" (include "pulsar-cluster.name" .)) .Values.sparkSql.serviceAccount.name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of the Spark SQL objects: the chart's, naming the application pulsar-sql. */}}
{{- define "pulsar-cluster.sparkLabels" -}}
{{- $labels := include "pulsar-cluster.labels" . | fromYaml }}
{{- $_ := set $labels "app.kubernetes.io/name" "pulsar-sql" }}
{{- $_ := set $labels "app.kubernetes.io/component" "spark-job" }}
{{- toYaml $labels }}
{{- end }}

{{/* The Prometheus job label of a component's targets, set by the monitors and used
     as the dashboards' default: <release namespace>/<cluster name>-<component>. */}}
{{- define "pulsar-cluster.scrapeJob" -}}
{{- printf "%s/%s-%s" .root.Release.Namespace (include "pulsar-cluster.name" .root) .component }}
{{- end }}

{{/* The chart's labels with .extra added (a key in .extra wins). */}}
{{- define "pulsar-cluster.labelsWith" -}}
{{- $labels := include "pulsar-cluster.labels" .root | fromYaml }}
{{- toYaml (merge (deepCopy (default dict .extra)) $labels) }}
{{- end }}

{{/* A string map as "key: value, key: value" (sorted), for NOTES.txt. */}}
{{- define "pulsar-cluster.inlineMap" -}}
{{- $pairs := list }}
{{- range $key, $value := . }}
{{- $pairs = append $pairs (printf "%s: %s" $key $value) }}
{{- end }}
{{- join ", " $pairs }}
{{- end }}
