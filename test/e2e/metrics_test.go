package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/testcert"
)

var metricName = regexp.MustCompile(`cdse_receiver_[a-z_]+`)

// queried are the cdse_receiver_* metrics the alerts query, by file.
func queried(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	b, err := os.ReadFile(filepath.Join("..", "..", "charts", "receiver", "files", "prometheus-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "expr:") {
			out["prometheus-rules.yaml"] = append(out["prometheus-rules.yaml"], metricName.FindAllString(line, -1)...)
		}
	}
	if len(out["prometheus-rules.yaml"]) < 10 {
		t.Fatalf("only %v queried by the rules", out)
	}
	b, err = os.ReadFile(filepath.Join("..", "..", "charts", "receiver", "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("dashboard panel %q queries nothing", p.Title)
		}
		for _, q := range p.Targets {
			names := metricName.FindAllString(q.Expr, -1)
			if len(names) == 0 {
				t.Errorf("dashboard panel %q: %q queries no receiver metric", p.Title, q.Expr)
			}
			out["grafana-dashboard.json "+p.Title] = append(out["grafana-dashboard.json "+p.Title], names...)
		}
	}
	return out
}

// Every metric an alert or a dashboard panel queries exists on a receiver running every source
// (webhook over TLS, PULL, reconciler): no alert on a metric that is not
// there, which would never fire.
func TestAlertsAndDashboardQueryMetricsThatExist(t *testing.T) {
	w := newSim(t)
	out := w.register(t, "-o", "json", "create", "--type", "pull")
	var subs []struct{ Id string }
	if err := json.Unmarshal([]byte(out), &subs); err != nil || len(subs) != 1 {
		t.Fatalf("register output %q: %v", out, err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	notAfter := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	testcert.Write(t, certFile, keyFile, 1, notAfter)
	// With interests, the watch of the subscription compares its filter
	// with them (cdse_receiver_subscription_filter_covers_interests).
	interests := filepath.Join(dir, "interests.yaml")
	if err := os.WriteFile(interests, []byte("interests:\n  - name: s2\n    filter: Collection/Name eq 'SENTINEL-2'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.startReceiver(t, func(c *config.Config) {
		c.TLSCertFile, c.TLSKeyFile = certFile, keyFile
		c.PullSubscription, c.PullInterval = subs[0].Id, 100*time.Millisecond
		c.ReconcileInterval, c.ReconcileFilter = time.Hour, "Collection/Name eq 'SENTINEL-2'"
		c.InterestsFile = interests
	})
	scrape := func() string {
		resp, err := http.Get("http://" + w.app.AdminAddr() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// The PULL source, the reconciler and the subscription's watch have
	// run once (their first pass and read are at start).
	deadline := time.Now().Add(10 * time.Second)
	var text string
	for {
		text = scrape()
		if strings.Contains(text, "cdse_receiver_pull_queue_length ") && strings.Contains(text, "cdse_receiver_reconcile_passes_total 1") &&
			strings.Contains(text, "cdse_receiver_subscription_status{") || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	exposed := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		if name := metricName.FindString(line); name != "" && !strings.HasPrefix(line, "#") {
			exposed[name] = true
		}
	}
	for file, names := range queried(t) {
		for _, name := range names {
			if !exposed[name] {
				have := make([]string, 0, len(exposed))
				for n := range exposed {
					have = append(have, n)
				}
				sort.Strings(have)
				t.Errorf("%s queries %s, which the receiver does not expose; it has:\n%s", file, name, strings.Join(have, "\n"))
			}
		}
	}
	// The values the alerts compare.
	for name, want := range map[string]float64{
		"cdse_receiver_ready": 1, "cdse_receiver_nats_connected": 1,
		"cdse_receiver_tls_certificate_expiry_timestamp_seconds":  float64(notAfter.Unix()),
		`cdse_receiver_stream_messages{stream="CDSE_PRODUCTS"}`:   0,
		`cdse_receiver_stream_messages{stream="CDSE_QUARANTINE"}`: 0,
	} {
		if got, ok := sample(text, name); !ok || got != want {
			t.Errorf("%s = %v (found %v), want %v", name, got, ok, want)
		}
	}
	if got, _ := sample(text, "cdse_receiver_last_stored_timestamp_seconds"); time.Since(time.Unix(int64(got), 0)) > time.Minute {
		t.Errorf("cdse_receiver_last_stored_timestamp_seconds = %v, want about now (the start)", got)
	}
}

// sample is the value of a series (name and labels as exposed).
func sample(text, name string) (float64, bool) {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}
