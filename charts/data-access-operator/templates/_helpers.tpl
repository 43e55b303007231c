{{/* Release-scoped names and labels. */}}
{{- define "dao.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "dao.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "dao.selectorLabels" -}}
app.kubernetes.io/name: {{ include "dao.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "dao.labels" -}}
{{ include "dao.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: data-access-service
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "dao.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "dao.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The service's one image: the operator's, and by default the data plane's and the gateway's. */}}
{{- define "dao.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{- define "dao.dataplaneImage" -}}
{{- .Values.dataplane.image | default (include "dao.image" .) -}}
{{- end -}}

{{/* The Lease the replicas elect a leader with (in the release namespace). */}}
{{- define "dao.leaseName" -}}
{{- include "dao.fullname" . -}}
{{- end -}}
