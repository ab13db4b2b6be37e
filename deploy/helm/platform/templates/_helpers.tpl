{{/*
Names, labels and checks shared by the templates.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "platform.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's full name: "<release>-<name>", the release name alone when it already holds the
name, or fullnameOverride; 63 characters at most (a DNS label). */}}
{{- define "platform.fullname" -}}
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

{{/* "<chart>-<version>" for the helm.sh/chart label. */}}
{{- define "platform.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The labels that select the release's pods: the Deployment's selector, the Service's, the
PodDisruptionBudget's and the ServiceMonitor's. Never change them on an installed release (a
Deployment's selector is immutable). */}}
{{- define "platform.selectorLabels" -}}
app.kubernetes.io/name: {{ include "platform.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Every resource's labels. */}}
{{- define "platform.labels" -}}
helm.sh/chart: {{ include "platform.chart" . }}
{{ include "platform.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | toString | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: host
app.kubernetes.io/part-of: model-serving-platform
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* The Secret holding DATABASE_URL and PLATFORM_TOKEN_SECRET. */}}
{{- define "platform.secretName" -}}
{{- .Values.secrets.existingSecret | default (include "platform.fullname" .) -}}
{{- end -}}

{{/* The PersistentVolumeClaim mounted at MODELS_DIR. */}}
{{- define "platform.modelsClaimName" -}}
{{- .Values.models.existingClaim | default (printf "%s-models" (include "platform.fullname" .) | trunc 63 | trimSuffix "-") -}}
{{- end -}}

{{/* The pods' ServiceAccount; empty: the namespace's default. */}}
{{- define "platform.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "platform.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The grace period Kubernetes gives a pod that is being deleted, in seconds: the preStop sleep,
then (after SIGTERM) the drain delay and the shutdown timeout, and a margin for the exit. The
kubelet counts the preStop hook in the grace period, so all four add up. */}}
{{- define "platform.terminationGracePeriodSeconds" -}}
{{- $d := .Values.drain -}}
{{- add (int64 $d.preStopSleepSeconds) (int64 $d.delaySeconds) (int64 $d.timeoutSeconds) (int64 $d.marginSeconds) -}}
{{- end -}}

{{/* The container's resources: .Values.resources with nvidia.com/gpu added to the limits when
gpu > 0 (extended resources are requested through their limit). */}}
{{- define "platform.resources" -}}
{{- $resources := deepCopy (.Values.resources | default dict) -}}
{{- if gt (int64 .Values.gpu) 0 -}}
{{- $limits := deepCopy (get $resources "limits" | default dict) -}}
{{- $_ := set $limits "nvidia.com/gpu" (int64 .Values.gpu) -}}
{{- $_ := set $resources "limits" $limits -}}
{{- end -}}
{{- toYaml $resources -}}
{{- end -}}

{{/* Fails rendering unless the value (list NAME VALUE MIN MAX) is a whole number in [MIN, MAX]. */}}
{{- define "platform.checkInteger" -}}
{{- $name := index . 0 -}}
{{- $value := index . 1 -}}
{{- if not (regexMatch "^[0-9]+$" (toString $value)) -}}
{{- fail (printf "%s must be a whole number from %d to %d, got %v" $name (index . 2) (index . 3) $value) -}}
{{- end -}}
{{- if or (lt (int64 $value) (int64 (index . 2))) (gt (int64 $value) (int64 (index . 3))) -}}
{{- fail (printf "%s must be a whole number from %d to %d, got %v" $name (index . 2) (index . 3) $value) -}}
{{- end -}}
{{- end -}}

{{/* Every check of the values, with a message naming the value; rendered (as nothing) by the
Deployment, so that a bad value fails `helm install` before anything is applied. */}}
{{- define "platform.validate" -}}
{{- include "platform.checkInteger" (list "gpu" .Values.gpu 0 64) -}}
{{- include "platform.checkInteger" (list "replicaCount" .Values.replicaCount 0 10000) -}}
{{- include "platform.checkInteger" (list "port" .Values.port 1 65535) -}}
{{- include "platform.checkInteger" (list "drain.preStopSleepSeconds" .Values.drain.preStopSleepSeconds 0 3600) -}}
{{- include "platform.checkInteger" (list "drain.delaySeconds" .Values.drain.delaySeconds 0 3600) -}}
{{- include "platform.checkInteger" (list "drain.timeoutSeconds" .Values.drain.timeoutSeconds 1 3600) -}}
{{- include "platform.checkInteger" (list "drain.marginSeconds" .Values.drain.marginSeconds 0 3600) -}}
{{- if not (has (toString .Values.logLevel) (list "fatal" "error" "warn" "info" "debug" "trace" "silent")) -}}
{{- fail (printf "logLevel must be one of fatal, error, warn, info, debug, trace, silent; got %q" (toString .Values.logLevel)) -}}
{{- end -}}
{{- if not .Values.secrets.existingSecret -}}
{{- $url := .Values.secrets.databaseUrl | default "" | toString -}}
{{- if not $url -}}
{{- fail "secrets.databaseUrl is required (postgres://user:password@host:5432/database), or name a Secret holding it in secrets.existingSecret" -}}
{{- end -}}
{{- if not (regexMatch "^postgres(ql)?://" $url) -}}
{{- fail "secrets.databaseUrl must be a PostgreSQL URL (postgres://user:password@host:5432/database)" -}}
{{- end -}}
{{- $token := .Values.secrets.tokenSecret | default "" | toString -}}
{{- if not $token -}}
{{- fail "secrets.tokenSecret is required: 32 bytes or more, the same on every replica (e.g. openssl rand -hex 32), or name a Secret holding it in secrets.existingSecret" -}}
{{- end -}}
{{- if lt (len $token) 32 -}}
{{- fail (printf "secrets.tokenSecret must be at least 32 bytes long, got %d" (len $token)) -}}
{{- end -}}
{{- end -}}
{{- if not .Values.models.existingClaim -}}
{{- if not (has .Values.models.persistence.accessMode (list "ReadWriteMany" "ReadOnlyMany")) -}}
{{- fail (printf "models.persistence.accessMode must be ReadWriteMany or ReadOnlyMany (every replica mounts the volume, on any node), got %q" (toString .Values.models.persistence.accessMode)) -}}
{{- end -}}
{{- end -}}
{{- if not (has (toString .Values.podAntiAffinity) (list "soft" "hard" "")) -}}
{{- fail (printf "podAntiAffinity must be soft, hard or empty, got %q" (toString .Values.podAntiAffinity)) -}}
{{- end -}}
{{- if .Values.autoscaling.enabled -}}
{{- include "platform.checkInteger" (list "autoscaling.minReplicas" .Values.autoscaling.minReplicas 1 10000) -}}
{{- include "platform.checkInteger" (list "autoscaling.maxReplicas" .Values.autoscaling.maxReplicas 1 10000) -}}
{{- if gt (int64 .Values.autoscaling.minReplicas) (int64 .Values.autoscaling.maxReplicas) -}}
{{- fail (printf "autoscaling.minReplicas (%v) must not be above autoscaling.maxReplicas (%v)" .Values.autoscaling.minReplicas .Values.autoscaling.maxReplicas) -}}
{{- end -}}
{{- if not .Values.autoscaling.targetRequestsInFlight -}}
{{- fail "autoscaling.targetRequestsInFlight is required when autoscaling.enabled is true (a quantity such as \"4\")" -}}
{{- end -}}
{{- end -}}
{{- end -}}
