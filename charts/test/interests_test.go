package charttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

const interestValues = base + `
ingress:
  enabled: true
  hosts: [{host: hooks.example.org, paths: [{path: /notifications, pathType: Exact}]}]
register: {enabled: true, credentialsSecret: cdse-login}
reconcile: {interval: 15m}
interests:
  - name: l2a-alps
    events: [created, modified]
    filter: >-
      Collection/Name eq 'SENTINEL-2'
      and Attributes/OData.CSC.StringAttribute/any(att:att/Name eq 'productType' and att/OData.CSC.StringAttribute/Value eq 'S2MSI2A')
      and OData.CSC.Intersects(area=geography'SRID=4326;POLYGON((5.9 45.8,10.5 45.8,10.5 47.8,5.9 47.8,5.9 45.8))')
  - name: s1-grd
    filter: "Collection/Name eq 'SENTINEL-1' and contains(Name,'GRD')"
    maxSensingAge: 30d
    files: ["measurement/*-vv-*.tiff", "annotation/*-vv-*.xml"]
    versions: latest
`

// TestInterests: interests become a ConfigMap the receiver itself accepts
// (receiver interests check on the rendered file, an interest's files:
// and versions: included), mounted as a directory
// (so the kubelet's updates reach the running receiver) into the receiver
// and the register Job, which then runs apply instead of create; the
// reconciler, on, takes the interests' union (no RECONCILE_FILTER) and the
// catalogue login.
func TestInterests(t *testing.T) {
	m := mustRender(t, values(t, interestValues))

	var cm corev1.ConfigMap
	m.get(t, "ConfigMap/cdse-receiver-interests", &cm)
	file := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(file, []byte(cm.Data["interests.yaml"]), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	check := exec.CommandContext(ctx, "go", "run", "./cmd/receiver", "interests", "check", "--file", file)
	check.Dir = filepath.Join("..", "..")
	out, err := check.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "l2a-alps") || !strings.Contains(string(out), "s1-grd") || !strings.Contains(string(out), "latest") {
		t.Fatalf("receiver interests check on the rendered ConfigMap: %v\n%s\n--- file:\n%s", err, out, cm.Data["interests.yaml"])
	}

	mounted := func(what string, spec corev1.PodSpec) {
		t.Helper()
		var vol bool
		for _, v := range spec.Volumes {
			if v.Name == "interests" && v.ConfigMap != nil && v.ConfigMap.Name == "cdse-receiver-interests" {
				vol = true
			}
		}
		var mount bool
		for _, vm := range spec.Containers[0].VolumeMounts {
			if vm.Name == "interests" && vm.MountPath == "/etc/receiver/interests" && vm.SubPath == "" {
				mount = true
			}
		}
		if !vol || !mount {
			t.Errorf("%s: interests ConfigMap volume %v, directory mount %v", what, vol, mount)
		}
	}

	var sts appsv1.StatefulSet
	m.get(t, "StatefulSet/cdse-receiver", &sts)
	spec := sts.Spec.Template.Spec
	c := checkPod(t, spec)
	mounted("receiver", spec)
	e := env(c)
	if e["INTERESTS_FILE"].Value != "/etc/receiver/interests/interests.yaml" || e["INTEREST_SUBJECT_PREFIX"].Value != "cdse.interest" {
		t.Errorf("receiver env: INTERESTS_FILE %q, INTEREST_SUBJECT_PREFIX %q", e["INTERESTS_FILE"].Value, e["INTEREST_SUBJECT_PREFIX"].Value)
	}
	if e["RECONCILE_INTERVAL"].Value != "15m" || e["RECONCILE_EVENTS"].Value != "created,modified,deleted" {
		t.Errorf("reconciler env %+v %+v", e["RECONCILE_INTERVAL"], e["RECONCILE_EVENTS"])
	}
	if f, ok := e["RECONCILE_FILTER"]; ok {
		t.Errorf("RECONCILE_FILTER %q set with interests: the reconciler must take their union", f.Value)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].SecretRef == nil || c.EnvFrom[0].SecretRef.Name != "cdse-login" {
		t.Errorf("the reconciler's login: envFrom %+v", c.EnvFrom)
	}
	if _, ok := sts.Spec.Template.Annotations["checksum/interests"]; ok {
		t.Error("a checksum of the interests restarts the pod on every change; the receiver reloads them")
	}

	var job batchv1.Job
	m.get(t, "Job/cdse-receiver-register", &job)
	mounted("register job", job.Spec.Template.Spec)
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	if want := "apply --interests /etc/receiver/interests/interests.yaml --endpoint https://hooks.example.org/notifications --max-running 1 --preflight-wait 4m"; args != want {
		t.Errorf("register job args\n%q\nwant\n%q", args, want)
	}
}

// TestWithoutInterests: nothing of the interests is rendered, and the
// reconciler, when on, takes the subscription's filter.
func TestWithoutInterests(t *testing.T) {
	m := mustRender(t, values(t, base+`
register: {enabled: true, credentialsSecret: cdse-login, endpoint: "https://hooks.example.org/notifications", filter: "Collection/Name eq 'SENTINEL-1'"}
reconcile: {interval: 15m, events: "created"}
`))
	if _, ok := m.objs["ConfigMap/cdse-receiver-interests"]; ok {
		t.Error("an interests ConfigMap without interests")
	}
	var sts appsv1.StatefulSet
	m.get(t, "StatefulSet/cdse-receiver", &sts)
	e := env(sts.Spec.Template.Spec.Containers[0])
	if _, ok := e["INTERESTS_FILE"]; ok {
		t.Error("INTERESTS_FILE without interests")
	}
	if e["RECONCILE_FILTER"].Value != "Collection/Name eq 'SENTINEL-1'" || e["RECONCILE_EVENTS"].Value != "created" {
		t.Errorf("reconciler filter %q events %q", e["RECONCILE_FILTER"].Value, e["RECONCILE_EVENTS"].Value)
	}
	var job batchv1.Job
	m.get(t, "Job/cdse-receiver-register", &job)
	if args := job.Spec.Template.Spec.Containers[0].Args; args[0] != "create" {
		t.Errorf("register job without interests runs %v", args)
	}
}

func TestInterestRefusals(t *testing.T) {
	tests := []refusal{
		{"name with capitals", base + "interests: [{name: L2A, filter: \"Name eq 'x'\"}]\n", "name"},
		{"no filter", base + "interests: [{name: l2a}]\n", "filter"},
		{"unknown event", base + "interests: [{name: l2a, events: [published], filter: \"Name eq 'x'\"}]\n", "events"},
		{"unknown field", base + "interests: [{name: l2a, filter: \"Name eq 'x'\", cloud: 30}]\n", "cloud"},
		{"sensing age", base + "interests: [{name: l2a, filter: \"Name eq 'x'\", maxSensingAge: a month}]\n", "maxSensingAge"},
		{"prefix on the products", base + "nats: {embedded: {consumerPassword: x}, interestSubjectPrefix: cdse.product.interest}\ninterests: [{name: l2a, filter: \"Name eq 'x'\"}]\n", "must not overlap"},
		{"prefix the quarantine's", base + "nats: {embedded: {consumerPassword: x}, interestSubjectPrefix: cdse.quarantine}\ninterests: [{name: l2a, filter: \"Name eq 'x'\"}]\n", "must not overlap"},
		{"reconciler without login", base + "reconcile: {interval: 15m}\n", "reconcile.interval needs"},
		{"reconciler interval", base + "reconcile: {interval: often, credentialsSecret: x}\n", "interval"},
	}
	assertRefused(t, tests)
}

// TestPreflightOff: register.preflight and statusCheck.preflight false pass
// --skip-preflight, for a cluster that cannot reach its own public address.
func TestPreflightOff(t *testing.T) {
	m := mustRender(t, values(t, base+`
register: {enabled: true, credentialsSecret: cdse-login, endpoint: "https://hooks.example.org/notifications", preflight: false}
statusCheck: {enabled: true, preflight: false}
`))
	var job batchv1.Job
	m.get(t, "Job/cdse-receiver-register", &job)
	if args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "); !strings.HasSuffix(args, "--skip-preflight") {
		t.Errorf("register job: %s", args)
	}
	var cj batchv1.CronJob
	m.get(t, "CronJob/cdse-receiver-status", &cj)
	if args := strings.Join(cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args, " "); !strings.HasSuffix(args, "--skip-preflight") {
		t.Errorf("status cronjob: %s", args)
	}
	m = mustRender(t, values(t, base+`
register: {enabled: true, credentialsSecret: cdse-login, endpoint: "https://hooks.example.org/notifications"}
`))
	m.get(t, "Job/cdse-receiver-register", &job)
	if args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "); strings.Contains(args, "skip-preflight") || !strings.HasSuffix(args, "--preflight-wait 4m") {
		t.Errorf("register job by default: %s, want the preflight retried for 4m", args)
	}
}
