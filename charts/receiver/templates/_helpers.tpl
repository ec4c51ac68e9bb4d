{{- define "receiver.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "receiver.fullname" -}}
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

{{- define "receiver.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "receiver.labels" -}}
helm.sh/chart: {{ include "receiver.chart" . }}
{{ include "receiver.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "receiver.selectorLabels" -}}
app.kubernetes.io/name: {{ include "receiver.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "receiver.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "receiver.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "receiver.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The Secret with the webhook credentials (and the embedded NATS consumer password). */}}
{{- define "receiver.secretName" -}}
{{- default (include "receiver.fullname" .) .Values.auth.existingSecret }}
{{- end }}

{{/* The public webhook URL: register.endpoint, else the first Ingress host and path. */}}
{{- define "receiver.endpoint" -}}
{{- if .Values.register.endpoint }}
{{- .Values.register.endpoint }}
{{- else if .Values.ingress.enabled }}
{{- $h := first .Values.ingress.hosts }}
{{- printf "https://%s%s" $h.host (first $h.paths).path }}
{{- end }}
{{- end }}

{{/* Refuses combinations that cannot work or are unsafe. */}}
{{- define "receiver.validate" -}}
{{- if and (eq .Values.nats.mode "embedded") (gt (int .Values.replicaCount) 1) }}
{{- fail "replicaCount > 1 needs nats.mode=external: the embedded NATS is one server with its store on one pod's volume" }}
{{- end }}
{{- if and (eq .Values.nats.mode "external") (not .Values.nats.external.url) }}
{{- fail "nats.mode=external needs nats.external.url" }}
{{- end }}
{{- if and (not .Values.auth.existingSecret) (lt (len .Values.auth.password) 12) }}
{{- fail "auth.password (at least 12 characters) or auth.existingSecret is required: the webhook never runs without authentication" }}
{{- end }}
{{- if and (eq .Values.nats.mode "embedded") (not .Values.auth.existingSecret) (not .Values.nats.embedded.consumerPassword) }}
{{- fail "nats.embedded.consumerPassword (or auth.existingSecret with natsConsumerPassword) is required: the embedded NATS is reachable in the cluster, and only the receiver may publish into the stream" }}
{{- end }}
{{- if and .Values.statusCheck.enabled (not (or .Values.statusCheck.credentialsSecret .Values.register.credentialsSecret)) }}
{{- fail "statusCheck.enabled needs statusCheck.credentialsSecret or register.credentialsSecret (CDSE_USERNAME, CDSE_PASSWORD)" }}
{{- end }}
{{- if and .Values.register.enabled (not .Values.register.credentialsSecret) }}
{{- fail "register.enabled needs register.credentialsSecret (CDSE_USERNAME, CDSE_PASSWORD)" }}
{{- end }}
{{- if and .Values.register.enabled (not (include "receiver.endpoint" .)) }}
{{- fail "register.enabled needs register.endpoint or an Ingress host" }}
{{- end }}
{{- if and .Values.reconcile.interval (not (or .Values.reconcile.credentialsSecret .Values.register.credentialsSecret)) }}
{{- fail "reconcile.interval needs reconcile.credentialsSecret or register.credentialsSecret (CDSE_USERNAME, CDSE_PASSWORD): the reconciler lists the catalogue as that user" }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) }}
{{- fail "tls.enabled needs tls.secretName" }}
{{- end }}
{{- $p := .Values.nats.subjectPrefix }}{{- $q := .Values.nats.quarantine.subjectPrefix }}
{{- if or (eq $p $q) (hasPrefix (printf "%s." $p) $q) (hasPrefix (printf "%s." $q) $p) }}
{{- fail "nats.quarantine.subjectPrefix must not overlap nats.subjectPrefix: two streams cannot share subjects, and refused bodies must never reach the product stream" }}
{{- end }}
{{- if .Values.interests }}
{{- $i := .Values.nats.interestSubjectPrefix }}
{{- range (list $p $q) }}
{{- if or (eq $i .) (hasPrefix (printf "%s." $i) .) (hasPrefix (printf "%s." .) $i) }}
{{- fail (printf "nats.interestSubjectPrefix %q must not overlap the product or quarantine prefix %q: an interest's copies would be read as products" $i .) }}
{{- end }}
{{- end }}
{{- end }}
{{- if eq .Values.nats.stream .Values.nats.quarantine.stream }}
{{- fail "nats.quarantine.stream must differ from nats.stream" }}
{{- end }}
{{- end }}

{{/*
The webhook's credentials, from the chart's Secret: the receiver's, and
those register's Job and the status CronJob send (and preflight with).
*/}}
{{- define "receiver.webhookCredentialsEnv" -}}
- name: RECEIVER_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ include "receiver.secretName" . }}
      key: username
- name: RECEIVER_PASSWORD_FILE
  value: /etc/receiver/auth/password
{{- end }}

{{/* Where register finds the catalogue, when not the live one. */}}
{{- define "receiver.catalogueEnv" -}}
{{- with .Values.register.tokenURL }}
- name: CDSE_TOKEN_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.register.catalogueURL }}
- name: CDSE_CATALOGUE_URL
  value: {{ . | quote }}
{{- end }}
{{- end }}

{{/*
The mounts of the Secret and, with interests, of their ConfigMap (a
directory mount, not subPath: only that sees the kubelet's updates).
*/}}
{{- define "receiver.configMounts" -}}
{{ include "receiver.authMount" . }}
{{- if .Values.interests }}
- name: interests
  mountPath: /etc/receiver/interests
  readOnly: true
{{- end }}
{{- end }}

{{/* The volumes of receiver.configMounts. */}}
{{- define "receiver.configVolumes" -}}
{{ include "receiver.authVolume" . }}
{{- if .Values.interests }}
- name: interests
  configMap:
    name: {{ include "receiver.fullname" . }}-interests
{{- end }}
{{- end }}

{{/* The webhook's credentials file (the htpasswd Secret), mounted: the
receiver's and the status check's. */}}
{{- define "receiver.authMount" -}}
- name: auth
  mountPath: /etc/receiver/auth
  readOnly: true
{{- end }}

{{/* The volume of receiver.authMount. */}}
{{- define "receiver.authVolume" -}}
- name: auth
  secret:
    secretName: {{ include "receiver.secretName" . }}
{{- end }}

{{/* The fetcher's objects (Deployment, Service, ServiceMonitor). */}}
{{- define "receiver.fetcherName" -}}
{{- printf "%s-fetcher" (include "receiver.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The fetcher's pods: not the receiver's selector labels, so that the
receiver's Services never pick them. */}}
{{- define "receiver.fetcherSelectorLabels" -}}
app.kubernetes.io/name: {{ include "receiver.name" . }}-fetcher
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "receiver.fetcherLabels" -}}
helm.sh/chart: {{ include "receiver.chart" . }}
{{ include "receiver.fetcherSelectorLabels" . }}
app.kubernetes.io/component: fetcher
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Whether the embedded NATS gives the fetcher its login
(NATS_EMBEDDED_FETCHER_USER/_PASSWORD): "true" or "". */}}
{{- define "receiver.fetcherLogin" -}}
{{- if and .Values.fetcher.enabled (eq .Values.nats.mode "embedded") }}true{{ end }}
{{- end }}

{{/* The Secret holding the fetcher's password of the embedded NATS under
the key "password": nats.embedded.fetcherPasswordSecret, else the chart's. */}}
{{- define "receiver.fetcherNATSSecretName" -}}
{{- .Values.nats.embedded.fetcherPasswordSecret | default (printf "%s-fetcher-nats" (include "receiver.fullname" .) | trunc 63 | trimSuffix "-") }}
{{- end }}

{{/* The fetcher's password of the embedded NATS: the value, else the one
the chart's Secret already holds (upgrades keep it), else a new one. */}}
{{- define "receiver.fetcherNATSPassword" -}}
{{- if .Values.nats.embedded.fetcherPassword }}
{{- .Values.nats.embedded.fetcherPassword }}
{{- else }}
{{- $s := lookup "v1" "Secret" .Release.Namespace (include "receiver.fetcherNATSSecretName" .) }}
{{- if and $s $s.data $s.data.password }}
{{- $s.data.password | b64dec }}
{{- else }}
{{- randAlphaNum 32 }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Secret with the fetcher's catalogue login (CDSE_USERNAME,
CDSE_PASSWORD): its own, else the reconciler's, else register's. */}}
{{- define "receiver.fetcherCredentialsSecret" -}}
{{- .Values.fetcher.credentialsSecret | default .Values.reconcile.credentialsSecret | default .Values.register.credentialsSecret }}
{{- end }}

{{/* Refuses fetcher values that cannot work. */}}
{{- define "receiver.validateFetcher" -}}
{{- if .Values.fetcher.enabled }}
{{- $f := .Values.fetcher }}
{{- if not $f.target }}
{{- fail "fetcher.enabled needs fetcher.target: s3://bucket/prefix, or file:///dir on fetcher.persistence.existingClaim" }}
{{- end }}
{{- if not (include "receiver.fetcherCredentialsSecret" .) }}
{{- fail "fetcher.enabled needs fetcher.credentialsSecret (or reconcile.credentialsSecret, register.credentialsSecret): a Secret with CDSE_USERNAME and CDSE_PASSWORD, the account the products are downloaded with" }}
{{- end }}
{{- if hasPrefix "file://" $f.target }}
{{- if not $f.persistence.existingClaim }}
{{- fail "fetcher.target file://... needs fetcher.persistence.existingClaim: a ReadWriteMany volume every replica writes into (the image's file system is read-only)" }}
{{- end }}
{{- $dir := trimSuffix "/" $f.persistence.mountPath }}
{{- if not (or (eq $f.target (printf "file://%s" $dir)) (hasPrefix (printf "file://%s/" $dir) $f.target)) }}
{{- fail (printf "fetcher.target %s is not under fetcher.persistence.mountPath %s, where the claim is mounted" $f.target $f.persistence.mountPath) }}
{{- end }}
{{- end }}
{{- if le (int $f.terminationGracePeriodSeconds) (int $f.shutdownTimeoutSeconds) }}
{{- fail "fetcher.terminationGracePeriodSeconds must exceed fetcher.shutdownTimeoutSeconds: the fetcher hands its cut downloads back to NATS after that timeout, and would be killed first" }}
{{- end }}
{{- if and (eq .Values.nats.mode "embedded") (eq .Values.nats.embedded.fetcherUser .Values.nats.embedded.consumerUser) }}
{{- fail "nats.embedded.fetcherUser must differ from nats.embedded.consumerUser: they are two logins with different rights" }}
{{- end }}
{{- end }}
{{- end }}
