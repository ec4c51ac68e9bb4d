// Package receivertest runs the real receiver in a test, as the examples'
// tests and the end-to-end tests need it: webhook and embedded NATS on free
// loopback ports, a data directory of the test's own, stopped at cleanup.
package receivertest

import (
	"bytes"
	"context"
	"io"
	"maps"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/receiver/app"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// The webhook's login in every receiver this package starts.
const (
	User     = "cdse"
	Password = "receivertest-webhook-password"
)

// Receiver is a running receiver.
type Receiver struct {
	App *app.App
	// Webhook is the webhook's URL; NATSURL the embedded server's (or the
	// external one's); Admin the admin port's base URL.
	Webhook, NATSURL, Admin string
	// Logs holds what the receiver logged.
	Logs *test.Hook
}

// Start runs a receiver with the default configuration changed by mutate
// (nil for none), and the sources extra besides its own, and waits until
// it is ready.
func Start(t testing.TB, mutate func(*config.Config), extra ...app.Builder) *Receiver {
	t.Helper()
	cfg := config.Default()
	cfg.Username, cfg.Password = User, Password
	cfg.Addr, cfg.AdminAddr, cfg.NATSEmbeddedAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	cfg.DataDir = t.TempDir()
	if mutate != nil {
		mutate(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	log, hook := test.NewNullLogger()
	a, err := app.New(cfg, log, prometheus.NewRegistry(), extra...)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Shutdown(context.Background()) })
	if err := scrape.Status("http://"+a.AdminAddr()+"/readyz", http.StatusOK, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	r := &Receiver{App: a, NATSURL: a.NATSURL(), Admin: "http://" + a.AdminAddr(), Logs: hook}
	if cfg.Webhook {
		r.Webhook = "http://" + a.WebhookAddr() + cfg.Path
	}
	return r
}

// Post sends body to the webhook as the catalogue does and returns the
// status and the answer.
func (r *Receiver) Post(t testing.TB, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.Webhook, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(User, Password)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// PostFixtures sends every fixture of testdata/notifications to the webhook,
// fails the test unless each is answered 200, and returns them by name.
func (r *Receiver) PostFixtures(t testing.TB) map[string][]byte {
	t.Helper()
	all := fixtures.All(t)
	for _, name := range slices.Sorted(maps.Keys(all)) { // the order of the files, every run
		if code, answer := r.Post(t, all[name]); code != http.StatusOK {
			t.Fatalf("%s: %d %s", name, code, answer)
		}
	}
	return all
}
