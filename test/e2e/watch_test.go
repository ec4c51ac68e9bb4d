package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// receiverStatus reads the receiver's /status.
func receiverStatus(t *testing.T, admin string) *status.Receiver {
	t.Helper()
	st, err := status.Fetch(t.Context(), &http.Client{Timeout: 5 * time.Second}, admin)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitWatch waits until the receiver's watch of its subscription meets
// cond, and returns it.
func waitWatch(t *testing.T, admin, what string, cond func(*status.Watch) bool) *status.Watch {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := receiverStatus(t, admin)
		if st.Subscription != nil && cond(st.Subscription) {
			return st.Subscription
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(st.Subscription)
			t.Fatalf("%s: the watch says %s", what, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func covers(want bool) func(*status.Watch) bool {
	return func(w *status.Watch) bool { return w.CoversInterests != nil && *w.CoversInterests == want }
}

// Issue 32: an interest appended to the file and reloaded (SIGHUP) is not
// in the running subscription's filter until register apply runs; the
// receiver says so (the reload's log line, /status, the metric, register
// status) until it does, and no longer after.
func TestWatchSaysTheSubscriptionDoesNotCoverTheInterests(t *testing.T) {
	// The live limit: one running subscription.
	w := newSimWith(t, cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-pw"}}, PushBackoff: 10 * time.Millisecond}))
	file := filepath.Join(t.TempDir(), "interests.yaml")
	three := "interests:\n" +
		"  - name: s2\n    filter: Collection/Name eq 'SENTINEL-2'\n" +
		"  - name: s1\n    filter: Collection/Name eq 'SENTINEL-1'\n" +
		"  - name: s3\n    filter: Collection/Name eq 'SENTINEL-3'\n"
	four := three + "  - name: s5p\n    filter: Collection/Name eq 'SENTINEL-5P'\n"
	if err := os.WriteFile(file, []byte(three), 0o600); err != nil {
		t.Fatal(err)
	}
	r := receivertest.Start(t, func(c *config.Config) { w.login(c); c.InterestsFile = file })
	w.register(t, "apply", "--interests", file, "--endpoint", r.Webhook, "--insecure-endpoint")
	r.App.Reload(true) // SIGHUP: the watch reads the subscription again
	first := waitWatch(t, r.Admin, "applied", covers(true))
	if first.Status != "running" || len(first.Problems) > 0 {
		t.Fatalf("after apply: %+v", first)
	}
	if code, got := w.checks(t, "--receiver", r.Admin); code != 0 || got["interests"].Status != "ok" || got["watch"].Status != "ok" {
		t.Fatalf("register status after apply: exit %d %+v", code, got)
	}

	// A fourth interest, reloaded: said at once, from the last read.
	if err := os.WriteFile(file, []byte(four), 0o600); err != nil {
		t.Fatal(err)
	}
	r.Logs.Reset()
	r.App.Reload(true)
	var said bool
	for _, e := range r.Logs.AllEntries() {
		if strings.HasPrefix(e.Message, "interests file reloaded") && e.Data["interests"] == 4 {
			said = e.Data["subscription_covers_interests"] == false && e.Data["subscription"] == first.ID && strings.Contains(e.Message, "run register apply")
			t.Logf("%s %v", e.Message, e.Data)
		}
	}
	if !said {
		t.Error("the reload's log line does not say the subscription does not cover the interests")
	}
	st := receiverStatus(t, r.Admin)
	if w := st.Subscription; w.CoversInterests == nil || *w.CoversInterests || !strings.Contains(strings.Join(w.Problems, ";"), "run register apply") {
		t.Errorf("/status after the reload: %+v", w)
	}
	if st.Interests == nil || st.Interests.Count != 4 || !strings.Contains(st.Interests.Filter, "SENTINEL-5P") {
		t.Errorf("/status interests: %+v", st.Interests)
	}
	if got := scrape.Value(t, r.Admin, `cdse_receiver_subscription_filter_covers_interests{id="`+first.ID+`"}`); got != "0" {
		t.Errorf("covers metric %s, want 0", got)
	}
	code, got := w.checks(t, "--receiver", r.Admin)
	if code != 1 || got["interests"].Status != "fail" || !strings.Contains(got["interests"].Detail, "run register apply") || got["watch"].Status != "warn" {
		t.Errorf("register status after the reload: exit %d %+v", code, got)
	}

	// register apply, and the receiver's next read (SIGHUP here): all green.
	w.register(t, "apply", "--interests", file, "--endpoint", r.Webhook, "--insecure-endpoint")
	// Before that read, the watch's last one is of the subscription apply
	// just cancelled: register status says so rather than warn about it.
	if _, got := w.checks(t, "--receiver", r.Admin); got["watch"].Status == "warn" || !strings.Contains(got["watch"].Detail, "since cancelled") {
		t.Errorf("register status just after the second apply: %+v", got["watch"])
	}
	r.App.Reload(true)
	next := waitWatch(t, r.Admin, "applied again", func(s *status.Watch) bool { return s.ID != first.ID && covers(true)(s) })
	if len(next.Problems) > 0 {
		t.Errorf("after the second apply: %+v", next)
	}
	if got := scrape.Value(t, r.Admin, `cdse_receiver_subscription_filter_covers_interests{id="`+next.ID+`"}`); got != "1" {
		t.Errorf("covers metric %s, want 1", got)
	}
	if code, got := w.checks(t, "--receiver", r.Admin); code != 0 || got["interests"].Status != "ok" {
		t.Errorf("register status after the second apply: exit %d %+v", code, got)
	}
}

// Issue 32: the receiver's own subscription, quiet for WATCH_QUIET, then
// paused, then cancelled, is said each time in /status and in the series
// its alerts read (deploy/prometheus/rules_test.yaml tests them); a
// receiver with WATCH_RESUME resumes the paused one.
func TestWatchQuietPausedCancelledAndResumed(t *testing.T) {
	clock := cdsesim.NewClock(time.Now().Add(-31 * 24 * time.Hour))
	w := newSimWith(t, cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-pw"}}, Now: clock.Now}))
	r := receivertest.Start(t, w.login)
	out := w.register(t, "-o", "json", "create", "--endpoint", r.Webhook, "--insecure-endpoint")
	var subs []struct{ Id string }
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 {
		t.Fatalf("register output %q: %v", out, err)
	}
	id := subs[0].Id
	clock.Add(31 * 24 * time.Hour) // created 31 days ago, nothing sent since
	series := func(status string) string {
		return `cdse_receiver_subscription_status{id="` + id + `",status="` + status + `"}`
	}

	r.App.Reload(true)
	quiet := waitWatch(t, r.Admin, "quiet", func(s *status.Watch) bool { return s.ID == id })
	if quiet.Status != "running" || len(quiet.Problems) != 1 || !strings.Contains(quiet.Problems[0], "no notification for 744h") {
		t.Errorf("quiet: %+v", quiet)
	}
	last, _ := strconv.ParseFloat(scrape.Value(t, r.Admin, `cdse_receiver_subscription_last_notification_timestamp_seconds{id="`+id+`"}`), 64)
	threshold, _ := strconv.ParseFloat(scrape.Value(t, r.Admin, "cdse_receiver_subscription_quiet_threshold_seconds"), 64)
	if age := float64(time.Now().Unix()) - last; age <= threshold || threshold != 30*86400 {
		t.Errorf("the quiet alert's expression: time() - %v = %v, not above %v", last, age, threshold)
	}

	w.register(t, "pause", id)
	r.App.Reload(true)
	waitWatch(t, r.Admin, "paused", func(s *status.Watch) bool { return s.Status == "paused" })
	if got := scrape.Value(t, r.Admin, series("paused")); got != "1" {
		t.Errorf("%s %s, want 1", series("paused"), got)
	}
	if got := scrape.Value(t, r.Admin, series("running")); got != "0" {
		t.Errorf("%s %s, want 0", series("running"), got)
	}
	if code, _ := scrapeReady(t, r.Admin); code != http.StatusOK {
		t.Errorf("a paused subscription made the receiver unready: %d", code)
	}

	// A second receiver, which resumes it (WATCH_RESUME).
	r2 := receivertest.Start(t, func(c *config.Config) { w.login(c); c.WatchResume = true })
	resumed := waitWatch(t, r2.Admin, "resumed", func(s *status.Watch) bool { return s.Resumed == 1 })
	if resumed.Status != "running" || resumed.ID != id {
		t.Errorf("after the resume: %+v", resumed)
	}
	if got := scrape.Value(t, r2.Admin, "cdse_receiver_subscription_resumed_total"); got != "1" {
		t.Errorf("resumed_total %s, want 1", got)
	}
	if out := w.register(t, "get", id); !strings.Contains(out, "running") {
		t.Errorf("the catalogue's subscription after the resume: %s", out)
	}

	w.register(t, "cancel", id)
	r.App.Reload(true)
	waitWatch(t, r.Admin, "cancelled", func(s *status.Watch) bool { return s.Status == "missing" })
	if got := scrape.Value(t, r.Admin, `cdse_receiver_subscription_status{id="",status="missing"}`); got != "1" {
		t.Errorf("missing: %s, want 1", got)
	}
}

func scrapeReady(t *testing.T, admin string) (int, string) {
	t.Helper()
	resp, err := http.Get(admin + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	return resp.StatusCode, resp.Status
}
