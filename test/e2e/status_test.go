package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/register"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
)

// runRegister runs register and returns its exit code and output.
func (w *world) runRegister(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return bins.Run(t, bins.Register(t), w.env, args...)
}

// checks runs register status -o json and returns the exit code and each
// check's outcome by name.
func (w *world) checks(t *testing.T, args ...string) (int, map[string]register.Check) {
	t.Helper()
	code, out, errOut := w.runRegister(t, append([]string{"status", "-o", "json"}, args...)...)
	var r register.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("register status: exit %d, %v: %s %s", code, err, out, errOut)
	}
	got := map[string]register.Check{}
	for _, c := range r.Checks {
		got[c.Name] = c
	}
	if r.OK != (code == 0) {
		t.Errorf("ok %v, exit %d", r.OK, code)
	}
	return code, got
}

// register status against the simulator and a running receiver: all
// green, then one thing broken at a time.
func TestRegisterStatus(t *testing.T) {
	w := setup(t)
	admin := "http://" + w.app.AdminAddr()
	out := w.register(t, "-o", "json", "create", "--endpoint", w.webhook, "--insecure-endpoint")
	var subs []struct{ Id string }
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 {
		t.Fatalf("register output %q: %v", out, err)
	}
	w.sim.Generate(cdsesim.Sentinel2, 1)
	w.sim.WaitPushes()
	w.waitMessages(t, 1)

	// What the receiver says of itself, once the quarantine stream exists:
	// the receiver creates it in the background, after it is ready.
	var st *status.Receiver
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var err error
		if st, err = status.Fetch(context.Background(), http.DefaultClient, admin); err != nil {
			t.Fatal(err)
		}
		if st.Quarantine != nil || time.Now().After(deadline) {
			break
		}
	}
	if !st.Ready || st.Webhook == nil || st.Webhook.Username != webhookUser || st.Webhook.Path != "/notifications" || len(st.Sources) != 1 ||
		st.Sources[0].Name != "push" || st.Sources[0].LastStored == nil || st.Stream == nil || st.Stream.Messages != 1 || st.Quarantine == nil {
		t.Errorf("receiver status %+v", st)
	}

	code, got := w.checks(t, "--receiver", admin, "--endpoint", w.webhook)
	for _, name := range []string{"receiver", "receiver ready", "stream", "quarantine", "catalogue", "push subscription", "endpoint tcp", "endpoint webhook", "credentials", "last notification"} {
		if got[name].Status != "ok" {
			t.Errorf("%s: %+v", name, got[name])
		}
	}
	if code != 0 {
		t.Fatalf("all green, exit %d: %+v", code, got)
	}
	// Without --endpoint the receiver's webhook path finds the subscription.
	if code, got := w.checks(t, "--receiver", admin); code != 0 || got["push subscription"].Status != "ok" {
		t.Errorf("without --endpoint: exit %d %+v", code, got)
	}
	// The table for people.
	if code, out, _ := w.runRegister(t, "status", "--receiver", admin); code != 0 || !strings.Contains(out, "push subscription  ✔") {
		t.Errorf("table: exit %d\n%s", code, out)
	}

	for _, tt := range []struct {
		name   string
		args   []string
		before func()
		after  func()
		check  string
		detail string
	}{
		{name: "wrong endpoint", args: []string{"--receiver", admin, "--endpoint", "https://elsewhere.example/notifications"},
			check: "push subscription", detail: "no subscription sends to https://elsewhere.example/notifications"},
		{name: "receiver down", args: []string{"--receiver", "http://127.0.0.1:1", "--endpoint", w.webhook},
			check: "receiver", detail: "connection refused"},
		{name: "silence", args: []string{"--receiver", admin, "--endpoint", w.webhook, "--max-silence", "1ms"},
			check: "last notification", detail: "more than --max-silence 1ms"},
		{name: "paused", args: []string{"--receiver", admin, "--endpoint", w.webhook},
			before: func() { w.register(t, "pause", subs[0].Id) }, after: func() { w.register(t, "resume", subs[0].Id) },
			check: "push subscription", detail: "is paused"},
		{name: "catalogue login", args: []string{"--receiver", admin, "--endpoint", w.webhook},
			before: func() { w.env["CDSE_PASSWORD"] = "wrong-password" }, after: func() { w.env["CDSE_PASSWORD"] = "account-pw" },
			check: "catalogue", detail: "wrong username or password"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.before != nil {
				tt.before()
				defer tt.after()
			}
			code, got := w.checks(t, tt.args...)
			if c := got[tt.check]; code != 1 || c.Status != "fail" || !strings.Contains(c.Detail, tt.detail) {
				t.Errorf("exit %d, %s: %+v, want a failure saying %q", code, tt.check, c, tt.detail)
			}
		})
	}

	// A subscription that sends another user than the receiver expects.
	w.register(t, "cancel", subs[0].Id)
	w.env["RECEIVER_USERNAME"] = "someone-else"
	// The preflight stops it first: the receiver refuses that user.
	if code, _, errOut := w.runRegister(t, "create", "--endpoint", w.webhook, "--insecure-endpoint"); code != 1 || !strings.Contains(errOut, "preflight: wrong-credentials") {
		t.Fatalf("create with a user the receiver refuses: exit %d\n%s", code, errOut)
	}
	w.register(t, "create", "--endpoint", w.webhook, "--insecure-endpoint", "--skip-preflight")
	w.env["RECEIVER_USERNAME"] = webhookUser
	code, got = w.checks(t, "--receiver", admin, "--endpoint", w.webhook)
	if c := got["credentials"]; code != 1 || c.Status != "fail" || !strings.Contains(c.Detail, `sends user "someone-else", the receiver expects "cdse"`) {
		t.Errorf("exit %d, credentials %+v", code, c)
	}
}
