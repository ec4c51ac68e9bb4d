package charttest

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// fetcherValues run the fetcher beside the embedded NATS, into a bucket of
// an S3-compatible store with static keys.
const fetcherValues = base + `
fetcher:
  enabled: true
  target: s3://products/cdse
  credentialsSecret: cdse-login
  s3: {existingSecret: s3-keys, endpoint: "https://s3.example.org", region: eu-central-1, pathStyle: true}
`

// secretFile is where a file of a pod comes from: the Secret and its key.
type secretFile struct{ secret, key string }

// fileOf resolves path, a file a container reads, to the Secret volume
// mounted over it ("" if none).
func fileOf(t *testing.T, spec corev1.PodSpec, c corev1.Container, path string) secretFile {
	t.Helper()
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
		if !ok {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return secretFile{v.Secret.SecretName, rel}
			}
			for _, it := range v.Secret.Items {
				if it.Path == rel {
					return secretFile{v.Secret.SecretName, it.Key}
				}
			}
		}
	}
	return secretFile{}
}

// selects reports whether a selector's labels are all among labels.
func selects(selector, labels map[string]string) bool {
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return len(selector) > 0
}

// checkFetcherPod checks the fetcher's pod as checkPod does the
// receiver's, and returns its container.
func checkFetcherPod(t *testing.T, spec corev1.PodSpec) corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers", len(spec.Containers))
	}
	c := spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("container security context %+v", sc)
	}
	if psc := spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod security context %+v", psc)
	}
	if spec.EnableServiceLinks == nil || *spec.EnableServiceLinks || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("enableServiceLinks or automountServiceAccountToken is not false")
	}
	if strings.Join(c.Command, " ") != "/usr/local/bin/fetcher" || len(c.Args) != 0 {
		t.Errorf("command %v %v, want /usr/local/bin/fetcher", c.Command, c.Args)
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "admin" || c.Ports[0].ContainerPort != 9091 || env(c)["FETCH_ADMIN_ADDR"].Value != ":9091" {
		t.Errorf("ports %+v, FETCH_ADMIN_ADDR %q", c.Ports, env(c)["FETCH_ADMIN_ADDR"].Value)
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.LivenessProbe.HTTPGet.Port.StrVal != "admin" ||
		c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.ReadinessProbe.HTTPGet.Port.StrVal != "admin" {
		t.Errorf("probes %+v %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	// Above FETCH_SHUTDOWN_TIMEOUT, in seconds.
	shutdown, err := time.ParseDuration(env(c)["FETCH_SHUTDOWN_TIMEOUT"].Value)
	if err != nil || spec.TerminationGracePeriodSeconds == nil || time.Duration(*spec.TerminationGracePeriodSeconds)*time.Second <= shutdown {
		t.Errorf("terminationGracePeriodSeconds %v, FETCH_SHUTDOWN_TIMEOUT %v (%v)", spec.TerminationGracePeriodSeconds, env(c)["FETCH_SHUTDOWN_TIMEOUT"].Value, err)
	}
	for _, name := range []string{"CDSE_PASSWORD", "NATS_PASSWORD", "AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"} {
		if e, ok := env(c)[name]; ok {
			t.Errorf("%s in the environment: %+v", name, e)
		}
	}
	return c
}

// Off by default: nothing of the fetcher, and the receiver gives no
// fetcher login.
func TestFetcherOffByDefault(t *testing.T) {
	m := mustRender(t, values(t, base+`metrics: {serviceMonitor: {enabled: true}, grafanaDashboard: {enabled: true}}
networkPolicy: {enabled: true}`))
	for _, key := range m.keys() {
		if strings.Contains(key, "fetcher") {
			t.Errorf("%s rendered with the fetcher off", key)
		}
	}
	var sts appsv1.StatefulSet
	m.get(t, "StatefulSet/cdse-receiver", &sts)
	for name := range env(sts.Spec.Template.Spec.Containers[0]) {
		if strings.Contains(name, "FETCHER") {
			t.Errorf("the receiver has %s with the fetcher off", name)
		}
	}
	var cm corev1.ConfigMap
	m.get(t, "ConfigMap/cdse-receiver-dashboard", &cm)
	if _, ok := cm.Data["cdse-fetcher.json"]; ok {
		t.Error("the fetcher's dashboard with the fetcher off")
	}
	if strings.Contains(m.notes, "fetcher") {
		t.Errorf("NOTES mention the fetcher:\n%s", m.notes)
	}
}

// The fetcher beside the embedded NATS: a Deployment of the receiver's
// image with its settings, the catalogue login, the S3 keys as files, and
// its own NATS login, the same user and password file as the receiver's.
func TestFetcherEmbeddedS3(t *testing.T) {
	m := mustRender(t, values(t, fetcherValues))
	var dep appsv1.Deployment
	m.get(t, "Deployment/cdse-receiver-fetcher", &dep)
	var sts appsv1.StatefulSet
	m.get(t, "StatefulSet/cdse-receiver", &sts)
	spec := dep.Spec.Template.Spec
	c := checkFetcherPod(t, spec)
	if *dep.Spec.Replicas != 2 || c.Image != sts.Spec.Template.Spec.Containers[0].Image {
		t.Errorf("replicas %d, image %q (the receiver's %q)", *dep.Spec.Replicas, c.Image, sts.Spec.Template.Spec.Containers[0].Image)
	}
	e := env(c)
	for k, v := range map[string]string{
		"FETCH_TARGET": "s3://products/cdse", "FETCH_CONCURRENCY": "4", "FETCH_SHUTDOWN_TIMEOUT": "30s", "FETCH_CONSUMER": "fetcher", "FETCH_START": "new",
		"NATS_URL": "nats://cdse-receiver-nats:4222", "NATS_USER": "fetcher", "NATS_STREAM": "CDSE_PRODUCTS", "NATS_SUBJECT_PREFIX": "cdse.product",
		"AWS_ENDPOINT_URL_S3": "https://s3.example.org", "AWS_REGION": "eu-central-1", "FETCH_S3_PATH_STYLE": "true", "LOG_FORMAT": "json",
	} {
		if e[k].Value != v {
			t.Errorf("%s = %q, want %q", k, e[k].Value, v)
		}
	}
	if *spec.TerminationGracePeriodSeconds != 45 {
		t.Errorf("terminationGracePeriodSeconds %d", *spec.TerminationGracePeriodSeconds)
	}
	if got := c.Resources.Limits.Memory().String(); got != "256Mi" {
		t.Errorf("memory limit %s", got)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "cdse-login" {
		t.Errorf("the catalogue login: envFrom %+v", c.EnvFrom)
	}
	// The S3 keys: the Secret's keys, as the files S3OptionsFromEnv reads.
	for name, key := range map[string]string{"AWS_ACCESS_KEY_ID_FILE": "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY_FILE": "AWS_SECRET_ACCESS_KEY"} {
		if f := fileOf(t, spec, c, e[name].Value); f != (secretFile{"s3-keys", key}) {
			t.Errorf("%s=%q is %+v, want key %s of s3-keys", name, e[name].Value, f, key)
		}
	}

	// One password, on both sides, from the chart's Secret.
	rc := sts.Spec.Template.Spec.Containers[0]
	re := env(rc)
	if re["FETCH_CONSUMER"].Value == "" || re["FETCH_CONSUMER"].Value != e["FETCH_CONSUMER"].Value {
		t.Errorf("the receiver guards consumer %q, the fetcher's is %q", re["FETCH_CONSUMER"].Value, e["FETCH_CONSUMER"].Value)
	}
	if re["NATS_EMBEDDED_FETCHER_USER"].Value != e["NATS_USER"].Value {
		t.Errorf("the receiver's fetcher user %q, the fetcher's %q", re["NATS_EMBEDDED_FETCHER_USER"].Value, e["NATS_USER"].Value)
	}
	want := secretFile{"cdse-receiver-fetcher-nats", "password"}
	if f := fileOf(t, spec, c, e["NATS_PASSWORD_FILE"].Value); f != want {
		t.Errorf("the fetcher's NATS_PASSWORD_FILE %q is %+v, want %+v", e["NATS_PASSWORD_FILE"].Value, f, want)
	}
	if f := fileOf(t, sts.Spec.Template.Spec, rc, re["NATS_EMBEDDED_FETCHER_PASSWORD_FILE"].Value); f != want {
		t.Errorf("the receiver's NATS_EMBEDDED_FETCHER_PASSWORD_FILE %q is %+v, want %+v", re["NATS_EMBEDDED_FETCHER_PASSWORD_FILE"].Value, f, want)
	}
	var sec corev1.Secret
	m.get(t, "Secret/cdse-receiver-fetcher-nats", &sec)
	if len(sec.Data["password"]) < 32 {
		t.Errorf("generated password %q", sec.Data["password"])
	}
	for what, a := range map[string]map[string]string{"receiver": sts.Spec.Template.Annotations, "fetcher": dep.Spec.Template.Annotations} {
		if a["checksum/fetcher-nats"] == "" {
			t.Errorf("the %s's pods have no checksum/fetcher-nats: they would keep an old password", what)
		}
	}

	// Its own pods and Service: the receiver's Services never select them.
	labels := dep.Spec.Template.Labels
	if !selects(dep.Spec.Selector.MatchLabels, labels) {
		t.Errorf("the Deployment's selector %v does not select its pods %v", dep.Spec.Selector.MatchLabels, labels)
	}
	for _, name := range []string{"cdse-receiver", "cdse-receiver-admin", "cdse-receiver-nats"} {
		var svc corev1.Service
		m.get(t, "Service/"+name, &svc)
		if selects(svc.Spec.Selector, labels) {
			t.Errorf("Service %s selects the fetcher's pods", name)
		}
	}
	if selects(dep.Spec.Selector.MatchLabels, sts.Spec.Template.Labels) {
		t.Error("the fetcher's selector takes the receiver's pods")
	}
	var svc corev1.Service
	m.get(t, "Service/cdse-receiver-fetcher", &svc)
	if !selects(svc.Spec.Selector, labels) || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].TargetPort.StrVal != "admin" || svc.Spec.Ports[0].Port != 9091 {
		t.Errorf("fetcher Service %+v", svc.Spec)
	}
	if !strings.Contains(m.notes, "logs deploy/cdse-receiver-fetcher") {
		t.Errorf("NOTES lack the fetcher:\n%s", m.notes)
	}
}

// The password given, or from an existing Secret: both sides read it.
func TestFetcherPasswordGivenOrExisting(t *testing.T) {
	m := mustRender(t, values(t, fetcherValues+`
nats: {embedded: {consumerPassword: consumer-password, fetcherPassword: a-given-fetcher-password}}
`))
	var sec corev1.Secret
	m.get(t, "Secret/cdse-receiver-fetcher-nats", &sec)
	if string(sec.Data["password"]) != "a-given-fetcher-password" {
		t.Errorf("password %q", sec.Data["password"])
	}
	b := mustRender(t, values(t, fetcherValues+`
nats: {embedded: {consumerPassword: consumer-password, fetcherPassword: another-fetcher-password}}
`))
	var da, db appsv1.Deployment
	m.get(t, "Deployment/cdse-receiver-fetcher", &da)
	b.get(t, "Deployment/cdse-receiver-fetcher", &db)
	if da.Spec.Template.Annotations["checksum/fetcher-nats"] == db.Spec.Template.Annotations["checksum/fetcher-nats"] {
		t.Error("a new password does not change the fetcher's pod template")
	}

	m = mustRender(t, values(t, fetcherValues+`
nats: {embedded: {consumerPassword: consumer-password, fetcherPasswordSecret: my-fetcher-login}}
`))
	if _, ok := m.objs["Secret/cdse-receiver-fetcher-nats"]; ok {
		t.Error("the chart's Secret rendered with fetcherPasswordSecret")
	}
	var dep appsv1.Deployment
	m.get(t, "Deployment/cdse-receiver-fetcher", &dep)
	var sts appsv1.StatefulSet
	m.get(t, "StatefulSet/cdse-receiver", &sts)
	want := secretFile{"my-fetcher-login", "password"}
	c, rc := dep.Spec.Template.Spec.Containers[0], sts.Spec.Template.Spec.Containers[0]
	if f := fileOf(t, dep.Spec.Template.Spec, c, env(c)["NATS_PASSWORD_FILE"].Value); f != want {
		t.Errorf("fetcher: %+v, want %+v", f, want)
	}
	if f := fileOf(t, sts.Spec.Template.Spec, rc, env(rc)["NATS_EMBEDDED_FETCHER_PASSWORD_FILE"].Value); f != want {
		t.Errorf("receiver: %+v, want %+v", f, want)
	}
}

// An external cluster: its URL, the fetcher's own credentials file (or the
// receiver's), its CA; no login on the receiver's side.
func TestFetcherExternalNATS(t *testing.T) {
	ext := `
replicaCount: 2
auth: {password: "a-long-webhook-password"}
nats: {mode: external, external: {url: "nats://nats.nats.svc:4222", credsSecret: receiver-creds, tlsCASecret: nats-ca}}
reconcile: {interval: 15m, credentialsSecret: cdse-login}
fetcher: {enabled: true, replicas: 3, concurrency: 2, target: "s3://products"%s}
`
	for _, tt := range []struct{ name, extra, creds string }{
		{"own credentials", ", nats: {credsSecret: fetcher-creds}", "fetcher-creds"},
		{"the receiver's credentials", "", "receiver-creds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := mustRender(t, values(t, strings.Replace(ext, "%s", tt.extra, 1)))
			var dep appsv1.Deployment
			m.get(t, "Deployment/cdse-receiver-fetcher", &dep)
			spec := dep.Spec.Template.Spec
			c := checkFetcherPod(t, spec)
			e := env(c)
			if *dep.Spec.Replicas != 3 || e["NATS_URL"].Value != "nats://nats.nats.svc:4222" || e["FETCH_CONCURRENCY"].Value != "2" {
				t.Errorf("replicas %d, env %+v", *dep.Spec.Replicas, e)
			}
			if f := fileOf(t, spec, c, e["NATS_CREDS"].Value); f != (secretFile{tt.creds, "nats.creds"}) {
				t.Errorf("NATS_CREDS %q is %+v", e["NATS_CREDS"].Value, f)
			}
			if f := fileOf(t, spec, c, e["NATS_CA"].Value); f != (secretFile{"nats-ca", "ca.crt"}) {
				t.Errorf("NATS_CA %q is %+v", e["NATS_CA"].Value, f)
			}
			for _, name := range []string{"NATS_USER", "NATS_PASSWORD_FILE", "AWS_ACCESS_KEY_ID_FILE", "FETCH_S3_PATH_STYLE", "AWS_ENDPOINT_URL_S3"} {
				if _, ok := e[name]; ok {
					t.Errorf("%s set", name)
				}
			}
			// The reconciler's login serves the fetcher.
			if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef.Name != "cdse-login" {
				t.Errorf("envFrom %+v", c.EnvFrom)
			}
			if _, ok := m.objs["Secret/cdse-receiver-fetcher-nats"]; ok {
				t.Error("an embedded-NATS password with an external cluster")
			}
			var rd appsv1.Deployment
			m.get(t, "Deployment/cdse-receiver", &rd)
			if _, ok := env(rd.Spec.Template.Spec.Containers[0])["NATS_EMBEDDED_FETCHER_USER"]; ok {
				t.Error("the receiver gives a fetcher login with an external cluster")
			}
		})
	}
}

// A directory target: the shared claim, mounted where the target is.
func TestFetcherFileTarget(t *testing.T) {
	m := mustRender(t, values(t, base+`
register: {credentialsSecret: cdse-login}
fetcher:
  enabled: true
  target: file:///products/cdse
  persistence: {existingClaim: cdse-products}
`))
	var dep appsv1.Deployment
	m.get(t, "Deployment/cdse-receiver-fetcher", &dep)
	spec := dep.Spec.Template.Spec
	c := checkFetcherPod(t, spec)
	var claim, mount bool
	for _, v := range spec.Volumes {
		if v.Name == "products" && v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == "cdse-products" {
			claim = true
		}
	}
	for _, vm := range c.VolumeMounts {
		if vm.Name == "products" && vm.MountPath == "/products" && !vm.ReadOnly {
			mount = true
		}
	}
	if !claim || !mount || env(c)["FETCH_TARGET"].Value != "file:///products/cdse" {
		t.Errorf("claim %v, mount %v, volumes %+v, mounts %+v", claim, mount, spec.Volumes, c.VolumeMounts)
	}
	if c.EnvFrom[0].SecretRef.Name != "cdse-login" {
		t.Errorf("register's login does not serve the fetcher: %+v", c.EnvFrom)
	}
	for _, name := range []string{"AWS_ACCESS_KEY_ID_FILE", "AWS_REGION"} {
		if _, ok := env(c)[name]; ok {
			t.Errorf("%s set for a directory target", name)
		}
	}
}

// Monitoring: a ServiceMonitor of the fetcher's Service, its dashboard
// (with the quota of the alert), a NetworkPolicy, and the label that lets
// it reach the embedded NATS through the receiver's.
func TestFetcherMonitoringAndPolicy(t *testing.T) {
	m := mustRender(t, values(t, fetcherValues+`
metrics:
  serviceMonitor: {enabled: true, labels: {release: kps}}
  grafanaDashboard: {enabled: true}
  prometheusRule: {fetchQuotaBytes: 24e12}
networkPolicy: {enabled: true}
`))
	var sm struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Selector struct {
				MatchLabels map[string]string `json:"matchLabels"`
			} `json:"selector"`
			Endpoints []struct {
				Port string `json:"port"`
				Path string `json:"path"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	m.get(t, "ServiceMonitor/cdse-receiver-fetcher", &sm)
	var svc, admin corev1.Service
	m.get(t, "Service/cdse-receiver-fetcher", &svc)
	m.get(t, "Service/cdse-receiver-admin", &admin)
	if !selects(sm.Spec.Selector.MatchLabels, svc.Labels) || sm.Metadata.Labels["release"] != "kps" || len(sm.Spec.Endpoints) != 1 ||
		sm.Spec.Endpoints[0].Port != "admin" || sm.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor %+v, the fetcher's Service labels %v", sm, svc.Labels)
	}
	if selects(sm.Spec.Selector.MatchLabels, admin.Labels) {
		t.Error("the fetcher's ServiceMonitor scrapes the receiver's admin Service")
	}
	// CdseFetcherDown matches the scrape job, which the operator names
	// after the Service.
	if !strings.Contains(svc.Name, "fetcher") {
		t.Errorf("Service %s: the job name lacks \"fetcher\"", svc.Name)
	}

	var cm corev1.ConfigMap
	m.get(t, "ConfigMap/cdse-receiver-dashboard", &cm)
	var d struct {
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query string `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal([]byte(cm.Data["cdse-fetcher.json"]), &d); err != nil || d.UID != "cdse-fetcher" || len(d.Panels) < 10 {
		t.Fatalf("the fetcher's dashboard in the ConfigMap: %v %+v", err, d)
	}
	var quota string
	for _, v := range d.Templating.List {
		if v.Name == "quota" {
			quota = v.Query
		}
	}
	if quota != "2.4e+13" {
		t.Errorf("the dashboard's quota %q, want the alert's 2.4e+13", quota)
	}

	var dep appsv1.Deployment
	m.get(t, "Deployment/cdse-receiver-fetcher", &dep)
	var np networkingv1.NetworkPolicy
	m.get(t, "NetworkPolicy/cdse-receiver", &np)
	var natsFrom bool
	for _, rule := range np.Spec.Ingress {
		if rule.Ports[0].Port.StrVal == "nats" && selects(rule.From[0].PodSelector.MatchLabels, dep.Spec.Template.Labels) {
			natsFrom = true
		}
	}
	if !natsFrom {
		t.Errorf("the receiver's NetworkPolicy keeps the fetcher (labels %v) from the embedded NATS", dep.Spec.Template.Labels)
	}
	var fnp networkingv1.NetworkPolicy
	m.get(t, "NetworkPolicy/cdse-receiver-fetcher", &fnp)
	if !selects(fnp.Spec.PodSelector.MatchLabels, dep.Spec.Template.Labels) || len(fnp.Spec.Ingress) != 1 || fnp.Spec.Ingress[0].Ports[0].Port.StrVal != "admin" {
		t.Errorf("the fetcher's NetworkPolicy %+v", fnp.Spec)
	}
}

func TestFetcherRefusals(t *testing.T) {
	on := base + "register: {credentialsSecret: cdse-login}\n"
	assertRefused(t, []refusal{
		{"no target", on + "fetcher: {enabled: true}\n", "fetcher.target"},
		{"no login", base + "fetcher: {enabled: true, target: s3://products}\n", "fetcher.credentialsSecret"},
		{"directory without a claim", on + "fetcher: {enabled: true, target: file:///products}\n", "existingClaim"},
		{"directory beside the claim", on + "fetcher: {enabled: true, target: file:///data/products, persistence: {existingClaim: p}}\n", "mountPath"},
		{"grace within the shutdown", on + "fetcher: {enabled: true, target: s3://products, shutdownTimeoutSeconds: 60}\n", "terminationGracePeriodSeconds"},
		{"fetcher user the consumer's", on + "nats: {embedded: {consumerPassword: x, fetcherUser: consumer}}\nfetcher: {enabled: true, target: s3://products}\n", "fetcherUser"},
		{"schema: target", on + "fetcher: {enabled: true, target: ftp://products}\n", "target"},
		{"schema: concurrency", on + "fetcher: {enabled: true, target: s3://products, concurrency: 0}\n", "concurrency"},
		{"schema: path style", on + "fetcher: {enabled: true, target: s3://products, s3: {pathStyle: yes-please}}\n", "pathStyle"},
		{"schema: start", on + "fetcher: {enabled: true, target: s3://products, start: yesterday}\n", "start"},
		{"schema: unknown key", on + "fetcher: {enabled: true, target: s3://products, concurency: 2}\n", "concurency"},
		{"schema: shutdown", on + "fetcher: {enabled: true, target: s3://products, shutdownTimeoutSeconds: 30s}\n", "shutdownTimeoutSeconds"},
	})
}

// The fetcher itself accepts the environment the chart gives it: built
// from this tree, run with the rendered variables (files and the login
// Secret filled in), it reaches "fetcher starting" (its settings loaded
// and valid, the target built) without warning of a variable it does not
// read; it is stopped there (no NATS to connect to).
func TestFetcherAcceptsTheRenderedEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the fetcher")
	}
	m := mustRender(t, values(t, strings.Replace(fetcherValues, "  enabled: true\n", "  enabled: true\n  extraEnv: [{name: FETCH_MAX_ATTEMPTS, value: \"5\"}]\n", 1)+`
register: {tokenURL: "https://identity.example.org/token"}
`))
	var dep appsv1.Deployment
	m.get(t, "Deployment/cdse-receiver-fetcher", &dep)
	spec := dep.Spec.Template.Spec
	c := spec.Containers[0]
	if env(c)["FETCH_MAX_ATTEMPTS"].Value != "5" || env(c)["CDSE_TOKEN_URL"].Value == "" {
		t.Errorf("extraEnv and register.tokenURL not in the fetcher's environment: %+v", env(c))
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "fetcher")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/fetcher")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/fetcher: %v\n%s", err, out)
	}

	vars := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"),
		// The Secret of envFrom.
		"CDSE_USERNAME=me@example.org", "CDSE_PASSWORD=a-cdse-password"}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			t.Fatalf("%s from %+v: not filled in by this test", e.Name, e.ValueFrom)
		}
		v := e.Value
		if strings.HasSuffix(e.Name, "_FILE") {
			f := fileOf(t, spec, c, v)
			if f.secret == "" {
				t.Fatalf("%s=%s is no mounted Secret", e.Name, v)
			}
			v = filepath.Join(dir, f.secret+"-"+f.key)
			if err := os.WriteFile(v, []byte("value-of-"+f.key+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		vars = append(vars, e.Name+"="+v)
	}
	run := exec.CommandContext(ctx, bin)
	run.Env = vars
	stdout, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	run.Stderr = run.Stdout
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	started, done := make(chan bool, 1), make(chan struct{})
	var lines []string
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if strings.Contains(sc.Text(), "fetcher starting") {
				started <- true
			}
		}
		started <- false
	}()
	var ok bool
	select {
	case ok = <-started:
	case <-time.After(time.Minute):
	}
	// A moment for what it logs right after starting, then stop it.
	time.Sleep(500 * time.Millisecond)
	_ = run.Process.Kill()
	<-done
	_ = run.Wait()
	if !ok {
		t.Fatalf("the fetcher did not start with the chart's environment (exit %v):\n%s", run.ProcessState, strings.Join(lines, "\n"))
	}
	for _, l := range lines {
		if strings.Contains(l, "none of our binaries reads") || strings.Contains(l, `"level":"error"`) {
			t.Errorf("the fetcher on the chart's environment: %s", l)
		}
	}
}

var (
	fetcherMetric = regexp.MustCompile(`cdse_fetcher_[a-z_]+`)
	recorded      = regexp.MustCompile(`cdse_fetcher:[a-z0-9_]+:[a-z0-9_]+`)
)

// The fetcher's alerts and dashboard query metrics the fetcher registers
// (the names written in internal/fetcher/fetch and internal/fetcher) and rules
// the rules file records: an alert on a name that is not there would
// never fire. (test/e2e scrapes a running receiver for the receiver's.)
// TestFetcherFilesAndStac: fetcher.files becomes FETCH_FILES (the globs
// joined with commas) and fetcher.stac FETCH_STAC; no files, no
// FETCH_FILES (the whole archive).
func TestFetcherFilesAndStac(t *testing.T) {
	container := func(v string) map[string]corev1.EnvVar {
		var dep appsv1.Deployment
		mustRender(t, values(t, v)).get(t, "Deployment/cdse-receiver-fetcher", &dep)
		return env(dep.Spec.Template.Spec.Containers[0])
	}
	e := container(strings.Replace(fetcherValues, "  enabled: true\n", "  enabled: true\n  files: [\"GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2\", MTD_MSIL2A.xml]\n  stac: false\n", 1))
	if got := e["FETCH_FILES"].Value; got != "GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2,MTD_MSIL2A.xml" {
		t.Errorf("FETCH_FILES %q", got)
	}
	if got := e["FETCH_STAC"].Value; got != "false" {
		t.Errorf("FETCH_STAC %q, want false", got)
	}
	e = container(fetcherValues)
	if _, ok := e["FETCH_FILES"]; ok || e["FETCH_STAC"].Value != "true" {
		t.Errorf("defaults: FETCH_FILES %q, FETCH_STAC %q; want none and true", e["FETCH_FILES"].Value, e["FETCH_STAC"].Value)
	}
}

// TestFetcherReadsTheInterests: with interests, the fetcher gets their
// ConfigMap mounted as INTERESTS_FILE (an interest's files: for its
// copies), and its pods restart when it changes (the fetcher reads it at
// start only); without, neither.
func TestFetcherReadsTheInterests(t *testing.T) {
	v := strings.Replace(interestValues, "\nregister:", "\nfetcher: {enabled: true, target: s3://products/cdse, s3: {existingSecret: s3-keys}}\nregister:", 1)
	m := mustRender(t, values(t, v))
	var dep appsv1.Deployment
	m.get(t, "Deployment/cdse-receiver-fetcher", &dep)
	spec := dep.Spec.Template.Spec
	c := spec.Containers[0]
	if got := env(c)["INTERESTS_FILE"].Value; got != "/etc/receiver/interests/interests.yaml" {
		t.Errorf("INTERESTS_FILE %q", got)
	}
	var mounted bool
	for _, vm := range c.VolumeMounts {
		for _, vol := range spec.Volumes {
			if vm.Name == vol.Name && vm.MountPath == "/etc/receiver/interests" && vm.SubPath == "" && vol.ConfigMap != nil && vol.ConfigMap.Name == "cdse-receiver-interests" {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("the interests' ConfigMap is not mounted at /etc/receiver/interests: %+v %+v", c.VolumeMounts, spec.Volumes)
	}
	var cm corev1.ConfigMap
	m.get(t, "ConfigMap/cdse-receiver-interests", &cm)
	if !strings.Contains(cm.Data["interests.yaml"], "measurement/*-vv-*.tiff") {
		t.Errorf("the interests' files: are not in the ConfigMap:\n%s", cm.Data["interests.yaml"])
	}
	if dep.Spec.Template.Annotations["checksum/interests"] == "" {
		t.Error("no checksum/interests on the fetcher's pods: a change of the interests would not reach it")
	}

	dep = appsv1.Deployment{}
	mustRender(t, values(t, fetcherValues)).get(t, "Deployment/cdse-receiver-fetcher", &dep)
	if _, ok := env(dep.Spec.Template.Spec.Containers[0])["INTERESTS_FILE"]; ok || dep.Spec.Template.Annotations["checksum/interests"] != "" {
		t.Error("INTERESTS_FILE or its checksum without interests")
	}
}

func TestFetcherQueriesMetricsThatExist(t *testing.T) {
	registered := map[string]bool{}
	for _, dir := range []string{"fetcher/fetch", "fetcher"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "internal", filepath.FromSlash(dir), "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("internal/%s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`Name:\s*"(cdse_fetcher_[a-z_]+)"`).FindAllStringSubmatch(string(b), -1) {
				registered[m[1]] = true
			}
		}
	}
	if len(registered) < 7 {
		t.Fatalf("only %v registered: the pattern no longer matches how the fetcher names its metrics", registered)
	}

	rules, err := os.ReadFile(filepath.Join(chartDir, "files", "prometheus-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	records := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+- record: (\S+)$`).FindAllStringSubmatch(string(rules), -1) {
		records[m[1]] = true
	}
	check := func(where, expr string) {
		t.Helper()
		names := fetcherMetric.FindAllString(expr, -1)
		rec := recorded.FindAllString(expr, -1)
		if len(names)+len(rec) == 0 && !strings.Contains(expr, "up{") && !strings.Contains(expr, "$quota") {
			t.Errorf("%s: %q queries nothing of the fetcher", where, expr)
		}
		for _, n := range names {
			if !registered[n] {
				t.Errorf("%s queries %s, which the fetcher does not register", where, n)
			}
		}
		for _, r := range rec {
			if !records[r] {
				t.Errorf("%s queries %s, which the rules file does not record", where, r)
			}
		}
	}
	var exprs int
	for _, line := range strings.Split(string(rules), "\n") {
		if strings.Contains(line, "cdse_fetcher") && (strings.Contains(line, "expr:") || strings.HasPrefix(strings.TrimSpace(line), "sum") || strings.HasPrefix(strings.TrimSpace(line), "max")) {
			check("prometheus-rules.yaml", line)
			exprs++
		}
	}
	if exprs < 5 {
		t.Fatalf("only %d of the fetcher's expressions in the rules file", exprs)
	}

	b, err := os.ReadFile(filepath.Join(chartDir, "files", "grafana-dashboard-fetcher.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		UID    string
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil || dash.UID != "cdse-fetcher" || len(dash.Panels) < 10 {
		t.Fatalf("the fetcher's dashboard: %v %+v", err, dash)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q queries nothing", p.Title)
		}
		for _, q := range p.Targets {
			check("dashboard panel "+p.Title, q.Expr)
		}
	}
}

// The values of docs/fetching.md's "Deploying", applied as it says: `helm
// upgrade --reset-then-reuse-values -f values-fetcher.yaml` over a release
// installed with the receiver's values, which it keeps.
func TestDocsFetcherValues(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "fetching.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# values-fetcher.yaml\n.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/fetching.md has no ```yaml block starting # values-fetcher.yaml")
	}
	if !strings.Contains(string(b), "helm upgrade cdse charts/receiver -n eo --reset-then-reuse-values -f values-fetcher.yaml") {
		t.Fatal("docs/fetching.md no longer upgrades as this test does")
	}
	cfg := &action.Configuration{
		Releases:     storage.Init(driver.NewMemory()),
		KubeClient:   &kubefake.PrintingKubeClient{Out: io.Discard},
		Capabilities: chartutil.DefaultCapabilities,
		Log:          func(string, ...any) {},
	}
	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = "cdse", "eo"
	if _, err := install.Run(loadChart(t), values(t, base)); err != nil {
		t.Fatalf("install: %v", err)
	}
	up := action.NewUpgrade(cfg)
	up.Namespace, up.ResetThenReuseValues = "eo", true
	rel, err := up.Run("cdse", loadChart(t), values(t, string(m[1])))
	if err != nil {
		t.Fatalf("helm upgrade with the documented values: %v", err)
	}
	out := &manifests{objs: map[string][]byte{}}
	for _, doc := range strings.Split(rel.Manifest, "\n---") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind     string                `json:"kind"`
			Metadata struct{ Name string } `json:"metadata"`
		}
		if json.Unmarshal(j, &meta) == nil && meta.Kind != "" {
			out.objs[meta.Kind+"/"+meta.Metadata.Name] = j
		}
	}
	var dep appsv1.Deployment
	out.get(t, "Deployment/cdse-receiver-fetcher", &dep)
	c := checkFetcherPod(t, dep.Spec.Template.Spec)
	e := env(c)
	if *dep.Spec.Replicas != 2 || e["FETCH_TARGET"].Value != "s3://eo-products/cdse" || e["AWS_ENDPOINT_URL_S3"].Value != "https://s3.example.org" ||
		c.EnvFrom[0].SecretRef.Name != "cdse-login" {
		t.Errorf("the documented fetcher: replicas %d, env %+v, envFrom %+v", *dep.Spec.Replicas, e, c.EnvFrom)
	}
	var sec corev1.Secret
	out.get(t, "Secret/cdse-receiver", &sec)
	if string(sec.Data["password"]) != "a-long-webhook-password" {
		t.Error("the upgrade lost the receiver's values")
	}
	for _, key := range []string{"ServiceMonitor/cdse-receiver-fetcher", "PrometheusRule/cdse-receiver", "ConfigMap/cdse-receiver-dashboard"} {
		if _, ok := out.objs[key]; !ok {
			t.Errorf("no %s", key)
		}
	}

	// Why not --reuse-values: over a release of a chart whose defaults
	// had no fetcher block (here: only its switch), it keeps those
	// defaults, and the templates find no fetcher.persistence, ...
	old := loadChart(t)
	old.Values["fetcher"] = map[string]any{"enabled": false}
	cfg.Releases = storage.Init(driver.NewMemory())
	if _, err := install.Run(old, values(t, base)); err != nil {
		t.Fatalf("install of the chart without the fetcher: %v", err)
	}
	up = action.NewUpgrade(cfg)
	up.Namespace, up.ReuseValues = "eo", true
	if _, err := up.Run("cdse", loadChart(t), values(t, string(m[1]))); err == nil {
		t.Error("--reuse-values over a chart without the fetcher worked: docs/fetching.md says it does not")
	}
}
