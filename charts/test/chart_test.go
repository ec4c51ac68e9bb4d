package charttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

var chartDir = filepath.Join("..", "receiver")

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// values parses a YAML snippet over the chart's defaults.
func values(t *testing.T, y string) map[string]any {
	t.Helper()
	v := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// manifests renders the chart; objects are keyed "Kind/name".
type manifests struct {
	objs  map[string][]byte
	notes string
}

func render(t *testing.T, vals map[string]any) (*manifests, error) {
	t.Helper()
	c := loadChart(t)
	rv, err := chartutil.ToRenderValues(c, vals, chartutil.ReleaseOptions{Name: "cdse", Namespace: "eo", IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(c, rv)
	if err != nil {
		return nil, err
	}
	m := &manifests{objs: map[string][]byte{}}
	for name, text := range out {
		if strings.HasSuffix(name, "NOTES.txt") {
			m.notes = text
			continue
		}
		for _, doc := range strings.Split(text, "\n---") {
			if strings.TrimSpace(doc) == "" {
				continue
			}
			j, err := yaml.YAMLToJSON([]byte(doc))
			if err != nil {
				t.Fatalf("%s: not YAML: %v\n%s", name, err, doc)
			}
			var meta struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(j, &meta); err != nil || meta.Kind == "" {
				continue // a comment-only document
			}
			m.objs[meta.Kind+"/"+meta.Metadata.Name] = j
		}
	}
	return m, nil
}

func mustRender(t *testing.T, vals map[string]any) *manifests {
	t.Helper()
	m, err := render(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *manifests) get(t *testing.T, key string, into any) {
	t.Helper()
	j, ok := m.objs[key]
	if !ok {
		t.Fatalf("no %s among %v", key, m.keys())
	}
	if err := json.Unmarshal(j, into); err != nil {
		t.Fatalf("%s: %v", key, err)
	}
}

func (m *manifests) keys() []string {
	var k []string
	for key := range m.objs {
		k = append(k, key)
	}
	sort.Strings(k)
	return k
}

func env(c corev1.Container) map[string]corev1.EnvVar {
	out := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		out[e.Name] = e
	}
	return out
}

const base = `
auth: {password: "a-long-webhook-password"}
nats: {embedded: {consumerPassword: "consumer-password"}}
`

func checkPod(t *testing.T, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context %+v", sc)
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod security context %+v", psc)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks {
		t.Error("enableServiceLinks is not false: the Services' variables would be warned about as unknown")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("probes %+v %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	if spec.TerminationGracePeriodSeconds == nil || *spec.TerminationGracePeriodSeconds <= 20 {
		t.Errorf("terminationGracePeriodSeconds must exceed the 20s shutdown bound")
	}
	e := env(c)
	if e["RECEIVER_PASSWORD_FILE"].Value == "" || e["RECEIVER_USERNAME"].ValueFrom == nil {
		t.Errorf("credentials not from the Secret: %+v", e)
	}
	if _, plain := e["RECEIVER_PASSWORD"]; plain {
		t.Error("the password is in the environment in clear")
	}
	return c
}

func TestDefaultsEmbedded(t *testing.T) {
	m := mustRender(t, values(t, base))
	var sts appsv1.StatefulSet
	m.get(t, "StatefulSet/cdse-receiver", &sts)
	if *sts.Spec.Replicas != 1 || len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests.Storage().String() != "10Gi" {
		t.Errorf("statefulset %+v", sts.Spec)
	}
	c := checkPod(t, sts.Spec.Template.Spec)
	e := env(c)
	if e["RECEIVER_SHUTDOWN_DELAY"].Value != "5s" {
		t.Errorf("shutdown delay %q", e["RECEIVER_SHUTDOWN_DELAY"].Value)
	}
	if e["NATS_EMBEDDED_ADDR"].Value != "0.0.0.0:4222" || e["NATS_EMBEDDED_USER"].Value != "consumer" || e["RECEIVER_DATA_DIR"].Value != "/data" {
		t.Errorf("embedded env %+v", e)
	}
	if _, ok := e["NATS_URL"]; ok {
		t.Error("NATS_URL set in embedded mode")
	}
	for k, v := range map[string]string{"NATS_EMBEDDED_SYNC": "2m", "QUARANTINE_STREAM": "CDSE_QUARANTINE", "QUARANTINE_SUBJECT_PREFIX": "cdse.quarantine", "QUARANTINE_MAX_AGE": "720h", "QUARANTINE_MAX_BYTES": "1GiB"} {
		if e[k].Value != v {
			t.Errorf("%s = %q, want %q", k, e[k].Value, v)
		}
	}
	if sts.Spec.Template.Annotations["checksum/secret"] == "" {
		t.Error("no checksum/secret annotation: pods would not roll when the credentials change")
	}
	var nats corev1.Service
	m.get(t, "Service/cdse-receiver-nats", &nats)
	if nats.Spec.Type != corev1.ServiceTypeClusterIP || nats.Spec.Ports[0].Port != 4222 {
		t.Errorf("nats service %+v", nats.Spec)
	}
	var sec corev1.Secret
	m.get(t, "Secret/cdse-receiver", &sec)
	if string(sec.Data["password"]) != "a-long-webhook-password" || string(sec.Data["natsConsumerPassword"]) != "consumer-password" {
		t.Errorf("secret %v", sec.Data)
	}
	for _, absent := range []string{"PodDisruptionBudget/cdse-receiver", "Ingress/cdse-receiver", "Job/cdse-receiver-register", "Deployment/cdse-receiver"} {
		if _, ok := m.objs[absent]; ok {
			t.Errorf("%s rendered by default", absent)
		}
	}
	if !strings.Contains(m.notes, "register create") || !strings.Contains(m.notes, "port-forward svc/cdse-receiver-nats") {
		t.Errorf("NOTES:\n%s", m.notes)
	}
}

func TestChecksumFollowsSecret(t *testing.T) {
	a := mustRender(t, values(t, base))
	b := mustRender(t, values(t, base+"\nauth: {password: another-long-password}\n"))
	var sa, sb appsv1.StatefulSet
	a.get(t, "StatefulSet/cdse-receiver", &sa)
	b.get(t, "StatefulSet/cdse-receiver", &sb)
	if sa.Spec.Template.Annotations["checksum/secret"] == sb.Spec.Template.Annotations["checksum/secret"] {
		t.Error("a new password does not change the pod template")
	}
}

func TestExternalNATSThreeReplicas(t *testing.T) {
	m := mustRender(t, values(t, `
replicaCount: 3
auth: {password: "a-long-webhook-password"}
nats:
  mode: external
  external: {url: "nats://nats.nats.svc:4222", credsSecret: nats-creds, tlsCASecret: nats-ca, streamReplicas: 3}
`))
	var dep appsv1.Deployment
	m.get(t, "Deployment/cdse-receiver", &dep)
	if *dep.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *dep.Spec.Replicas)
	}
	e := env(checkPod(t, dep.Spec.Template.Spec))
	if e["NATS_URL"].Value != "nats://nats.nats.svc:4222" || e["NATS_STREAM_REPLICAS"].Value != "3" || e["NATS_CREDS"].Value == "" || e["NATS_CA"].Value == "" {
		t.Errorf("external env %+v", e)
	}
	var pdb struct {
		Spec struct {
			MinAvailable int `json:"minAvailable"`
		} `json:"spec"`
	}
	m.get(t, "PodDisruptionBudget/cdse-receiver", &pdb)
	if pdb.Spec.MinAvailable != 1 {
		t.Errorf("pdb %+v", pdb)
	}
	for _, absent := range []string{"StatefulSet/cdse-receiver", "Service/cdse-receiver-nats"} {
		if _, ok := m.objs[absent]; ok {
			t.Errorf("%s rendered in external mode", absent)
		}
	}
}

func TestIngressTLSAndRegisterJob(t *testing.T) {
	m := mustRender(t, values(t, base+`
ingress:
  enabled: true
  className: nginx
  annotations: {cert-manager.io/cluster-issuer: letsencrypt}
  hosts: [{host: hooks.example.org, paths: [{path: /notifications, pathType: Exact}]}]
  tls: [{secretName: hooks-tls, hosts: [hooks.example.org]}]
register:
  enabled: true
  credentialsSecret: cdse-login
  filter: "Collection/Name eq 'SENTINEL-1'"
  events: created,modified
`))
	var ing networkingv1.Ingress
	m.get(t, "Ingress/cdse-receiver", &ing)
	if *ing.Spec.IngressClassName != "nginx" || ing.Spec.TLS[0].SecretName != "hooks-tls" || ing.Spec.Rules[0].Host != "hooks.example.org" ||
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Port.Name != "http" {
		t.Errorf("ingress %+v", ing.Spec)
	}
	var job batchv1.Job
	m.get(t, "Job/cdse-receiver-register", &job)
	if job.Annotations["helm.sh/hook"] != "post-install,post-upgrade" {
		t.Errorf("job hook %v", job.Annotations)
	}
	c := job.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"create", "--endpoint https://hooks.example.org/notifications", "--filter Collection/Name eq 'SENTINEL-1'", "--events created,modified"} {
		if !strings.Contains(args, want) {
			t.Errorf("register args %q lack %q", args, want)
		}
	}
	if c.EnvFrom[0].SecretRef.Name != "cdse-login" || c.Command[0] != "register" {
		t.Errorf("register job container %+v", c)
	}
	if !strings.Contains(m.notes, "https://hooks.example.org/notifications") {
		t.Errorf("NOTES lack the webhook URL:\n%s", m.notes)
	}
}

func TestExistingSecretAndTLS(t *testing.T) {
	m := mustRender(t, values(t, `
auth: {existingSecret: my-receiver-auth, htpasswdKey: htpasswd}
tls: {enabled: true, secretName: receiver-tls}
`))
	if _, ok := m.objs["Secret/cdse-receiver"]; ok {
		t.Error("a Secret rendered although existingSecret is set")
	}
	var sts appsv1.StatefulSet
	m.get(t, "StatefulSet/cdse-receiver", &sts)
	spec := sts.Spec.Template.Spec
	e := env(checkPod(t, spec))
	if e["RECEIVER_USERNAME"].ValueFrom.SecretKeyRef.Name != "my-receiver-auth" || e["RECEIVER_HTPASSWD_FILE"].Value != "/etc/receiver/auth/htpasswd" || e["RECEIVER_TLS_CERT_FILE"].Value == "" {
		t.Errorf("env %+v", e)
	}
	vols := map[string]string{}
	for _, v := range spec.Volumes {
		vols[v.Name] = v.Secret.SecretName
	}
	if vols["auth"] != "my-receiver-auth" || vols["tls"] != "receiver-tls" {
		t.Errorf("volumes %v", vols)
	}
}

// refusal is a set of values the chart must refuse, with what its error
// names.
type refusal struct{ name, values, want string }

// assertRefused renders each set of values and wants its refusal.
func assertRefused(t *testing.T, tests []refusal) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := render(t, values(t, tt.values))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want one naming %q", err, tt.want)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	tests := []refusal{
		{"no password", `nats: {embedded: {consumerPassword: x}}`, "auth.password"},
		{"short password", `auth: {password: short}
nats: {embedded: {consumerPassword: x}}`, "auth.password"},
		{"embedded with replicas", base + "replicaCount: 2\n", "replicaCount > 1 needs nats.mode=external"},
		{"embedded without consumer password", `auth: {password: "a-long-webhook-password"}`, "consumerPassword"},
		{"external without url", base + "nats: {mode: external}\n", "nats.external.url"},
		{"register without credentials", base + "register: {enabled: true, endpoint: 'https://x.example/n'}\n", "credentialsSecret"},
		{"schema: mode", base + "nats: {mode: cluster}\n", "mode"},
		{"schema: replicas", base + "replicaCount: 0\n", "replicaCount"},
		{"schema: prefix", base + "nats: {subjectPrefix: 'cdse.>'}\n", "subjectPrefix"},
		{"quarantine under the product prefix", base + "nats: {embedded: {consumerPassword: x}, quarantine: {subjectPrefix: cdse.product.quarantine}}\n", "must not overlap"},
		{"quarantine above the product prefix", base + "nats: {embedded: {consumerPassword: x}, quarantine: {subjectPrefix: cdse}}\n", "must not overlap"},
		{"quarantine on the product stream", base + "nats: {embedded: {consumerPassword: x}, quarantine: {stream: CDSE_PRODUCTS}}\n", "must differ"},
		{"schema: quarantine size", base + "nats: {embedded: {consumerPassword: x}, quarantine: {maxBytes: lots}}\n", "maxBytes"},
		{"schema: download quota", base + "metrics: {prometheusRule: {fetchQuotaBytes: 12TB}}\n", "fetchQuotaBytes"},
	}
	assertRefused(t, tests)
}

func TestLint(t *testing.T) {
	for name, v := range map[string]string{
		"embedded": base,
		"external": `
replicaCount: 3
auth: {password: "a-long-webhook-password"}
nats: {mode: external, external: {url: "nats://nats:4222"}}
metrics: {serviceMonitor: {enabled: true}}
`,
		"fetcher": fetcherValues + `
metrics: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}, grafanaDashboard: {enabled: true}}
networkPolicy: {enabled: true}
`,
	} {
		t.Run(name, func(t *testing.T) {
			res := lint.All(chartDir, values(t, v), "eo", false)
			for _, msg := range res.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", msg)
				}
			}
		})
	}
}

// The PrometheusRule carries the rules of the plain file (which promtool
// tests), with the silence threshold of the values.
func TestPrometheusRule(t *testing.T) {
	if _, ok := mustRender(t, values(t, base)).objs["PrometheusRule/cdse-receiver"]; ok {
		t.Error("a PrometheusRule by default")
	}
	m := mustRender(t, values(t, base+`
metrics: {prometheusRule: {enabled: true, labels: {release: kps}, maxSilenceSeconds: 7200, maxMissedShare: 0.2, fetchQuotaBytes: 24e12}}
`))
	type rules struct {
		Groups []struct {
			Name     string `json:"name"`
			Interval string `json:"interval"`
			Rules    []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	var pr struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec rules `json:"spec"`
	}
	m.get(t, "PrometheusRule/cdse-receiver", &pr)
	b, err := os.ReadFile(filepath.Join(chartDir, "files", "prometheus-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var file rules
	if err := yaml.Unmarshal(b, &file); err != nil {
		t.Fatal(err)
	}
	if pr.Metadata.Labels["release"] != "kps" || len(pr.Spec.Groups) != len(file.Groups) || len(file.Groups) != 5 {
		t.Fatalf("PrometheusRule %+v", pr)
	}
	for g := range file.Groups {
		if pr.Spec.Groups[g].Name != file.Groups[g].Name || pr.Spec.Groups[g].Interval != file.Groups[g].Interval {
			t.Errorf("group %d: %q every %q, want %q every %q", g, pr.Spec.Groups[g].Name, pr.Spec.Groups[g].Interval, file.Groups[g].Name, file.Groups[g].Interval)
		}
		if len(pr.Spec.Groups[g].Rules) != len(file.Groups[g].Rules) {
			t.Fatalf("group %d: %d rules, want %d", g, len(pr.Spec.Groups[g].Rules), len(file.Groups[g].Rules))
		}
		for i, got := range pr.Spec.Groups[g].Rules {
			want := file.Groups[g].Rules[i]
			for alert, threshold := range map[string][2]string{"CdseReceiverSilent": {"> 21600", "> 7200"}, "CdseReceiverPushMissing": {"ratio6h > 0.05", "ratio6h > 0.2"},
				"CdseFetcherQuotaNear": {"> 0.8 * 12e12", "> 0.8 * 2.4e+13"}} {
				if want.Alert == alert {
					want.Expr = strings.Replace(want.Expr, threshold[0], threshold[1], 1)
					if want.Expr == file.Groups[g].Rules[i].Expr {
						t.Errorf("%s has no threshold to set", alert)
					}
				}
			}
			if got.Alert != want.Alert || got.Expr != want.Expr || got.For != want.For || got.Annotations["runbook_url"] != want.Annotations["runbook_url"] ||
				got.Annotations["summary"] != want.Annotations["summary"] || got.Labels["severity"] != want.Labels["severity"] {
				t.Errorf("rule %d.%d: %+v, want %+v", g, i, got, want)
			}
		}
	}
}

// register status as a CronJob, off by default, against the admin Service
// and the registered endpoint, with the catalogue login from a Secret.
func TestStatusCheckCronJob(t *testing.T) {
	if _, ok := mustRender(t, values(t, base)).objs["CronJob/cdse-receiver-status"]; ok {
		t.Error("a status CronJob by default")
	}
	if _, err := render(t, values(t, base+`statusCheck: {enabled: true}`)); err == nil || !strings.Contains(err.Error(), "statusCheck.enabled needs") {
		t.Errorf("no credentials: %v", err)
	}
	m := mustRender(t, values(t, base+`
statusCheck: {enabled: true, maxSilence: 2h, credentialsSecret: cdse-login}
register: {endpoint: "https://hooks.example.org/notifications"}
`))
	var cj batchv1.CronJob
	m.get(t, "CronJob/cdse-receiver-status", &cj)
	pod := cj.Spec.JobTemplate.Spec.Template
	c := pod.Spec.Containers[0]
	want := []string{"status", "--receiver", "http://cdse-receiver-admin:9090", "--endpoint", "https://hooks.example.org/notifications", "--max-silence", "2h"}
	if strings.Join(c.Command, " ") != "register" || strings.Join(c.Args, " ") != strings.Join(want, " ") {
		t.Errorf("command %v %v", c.Command, c.Args)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "cdse-login" || cj.Spec.ConcurrencyPolicy != batchv1.ForbidConcurrent {
		t.Errorf("envFrom %+v, concurrency %v", c.EnvFrom, cj.Spec.ConcurrencyPolicy)
	}
	if pod.Labels["app.kubernetes.io/name"] == "receiver" || c.SecurityContext == nil || *c.SecurityContext.AllowPrivilegeEscalation {
		t.Errorf("pod labels %v (the Services would select it), security %+v", pod.Labels, c.SecurityContext)
	}
	// The webhook's credentials, from the Secret: the preflight checks
	// them rather than posting without (a failed login every run).
	e := env(c)
	if e["RECEIVER_PASSWORD_FILE"].Value != "/etc/receiver/auth/password" || e["RECEIVER_USERNAME"].ValueFrom == nil ||
		len(pod.Spec.Volumes) != 1 || pod.Spec.Volumes[0].Secret.SecretName != "cdse-receiver" || len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/receiver/auth" {
		t.Errorf("webhook credentials: env %+v, volumes %+v, mounts %+v", e, pod.Spec.Volumes, c.VolumeMounts)
	}
}

// The dashboard ConfigMap, opt-in, carries the file as it is, with the
// sidecar's label.
func TestGrafanaDashboard(t *testing.T) {
	if _, ok := mustRender(t, values(t, base)).objs["ConfigMap/cdse-receiver-dashboard"]; ok {
		t.Error("a dashboard by default")
	}
	m := mustRender(t, values(t, base+`metrics: {grafanaDashboard: {enabled: true, annotations: {grafana_folder: EO}}}`))
	var cm corev1.ConfigMap
	m.get(t, "ConfigMap/cdse-receiver-dashboard", &cm)
	want, err := os.ReadFile(filepath.Join(chartDir, "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID    string `json:"uid"`
		Panels []any  `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["cdse-receiver.json"]), &d); err != nil || d.UID != "cdse-receiver" || len(d.Panels) < 10 {
		t.Errorf("dashboard in the ConfigMap: %v %+v", err, d)
	}
	if strings.TrimSpace(cm.Data["cdse-receiver.json"]) != strings.TrimSpace(string(want)) {
		t.Error("the ConfigMap's dashboard differs from files/grafana-dashboard.json")
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "EO" {
		t.Errorf("labels %v, annotations %v", cm.Labels, cm.Annotations)
	}
}

func TestNetworkPolicyAndSpread(t *testing.T) {
	if _, ok := mustRender(t, values(t, base)).objs["NetworkPolicy/cdse-receiver"]; ok {
		t.Error("a NetworkPolicy by default")
	}
	m := mustRender(t, values(t, base+`
networkPolicy: {enabled: true}
topologySpreadConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]
`))
	var np networkingv1.NetworkPolicy
	m.get(t, "NetworkPolicy/cdse-receiver", &np)
	if np.Spec.PodSelector.MatchLabels["app.kubernetes.io/instance"] != "cdse" || len(np.Spec.Ingress) != 3 {
		t.Fatalf("policy %+v", np.Spec)
	}
	web, adm, nats := np.Spec.Ingress[0], np.Spec.Ingress[1], np.Spec.Ingress[2]
	if web.Ports[0].Port.StrVal != "http" || web.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "ingress-nginx" {
		t.Errorf("webhook rule %+v", web)
	}
	if adm.Ports[0].Port.StrVal != "admin" || len(adm.From) != 2 || adm.From[1].PodSelector.MatchLabels["app.kubernetes.io/name"] != "receiver-status" {
		t.Errorf("admin rule %+v", adm)
	}
	if nats.Ports[0].Port.StrVal != "nats" || nats.From[0].PodSelector.MatchLabels["cdse-receiver/nats-client"] != "true" || nats.From[0].NamespaceSelector == nil {
		t.Errorf("nats rule %+v", nats)
	}
	var sts appsv1.StatefulSet
	m.get(t, "StatefulSet/cdse-receiver", &sts)
	tsc := sts.Spec.Template.Spec.TopologySpreadConstraints
	if len(tsc) != 1 || tsc[0].TopologyKey != "topology.kubernetes.io/zone" || tsc[0].LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "cdse" {
		t.Errorf("topology spread %+v", tsc)
	}
	// External NATS: no NATS port to open.
	m = mustRender(t, values(t, base+`
networkPolicy: {enabled: true}
nats: {mode: external, external: {url: "nats://nats.nats:4222"}}
`))
	m.get(t, "NetworkPolicy/cdse-receiver", &np)
	if len(np.Spec.Ingress) != 2 {
		t.Errorf("external mode: %d rules", len(np.Spec.Ingress))
	}
}
