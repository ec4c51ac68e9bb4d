package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natsproc"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// serverVersions are the nats-server releases the receiver is tested
// against as an external server: the last patch of every minor line from
// 2.10 (the NATS maintainers patch the newest two; platform teams run
// older ones), and one older than MinServerVersion, which must work and be
// warned about. The embedded release (go.mod's) is added by the test. Keep
// the README's table ("NATS server versions") in step.
var serverVersions = []string{"v2.9.25", "v2.10.27", "v2.11.17", "v2.12.15", "v2.14.9"}

// TestServerVersions runs the receiver against a nats-server process of
// each release: it updates a stream that exists with other settings,
// stores every fixture once and answers a second send as a duplicate,
// is ready, goes unready and answers 503 while the server is killed,
// reconnects by itself after the restart, and still knows the ids it
// stored before.
func TestServerVersions(t *testing.T) {
	versions := append(serverVersions, natsproc.EmbeddedVersion(t))
	for _, v := range versions {
		t.Run(v, func(t *testing.T) {
			srv := natsproc.Start(t, natsproc.Binary(t, v), t.TempDir())
			js, closeNC := natstest.JetStream(t, srv.URL())
			defer closeNC()
			ctx := context.Background()
			// A stream made by hand before the receiver came, with a
			// shorter duplicate window and a subject of its own.
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CDSE_PRODUCTS", Subjects: []string{"legacy.>"}, Storage: jetstream.FileStorage, Duplicates: time.Minute}); err != nil {
				t.Fatal(err)
			}
			r := receivertest.Start(t, func(c *config.Config) { c.NATSURL = srv.URL() })

			info, err := js.Stream(ctx, "CDSE_PRODUCTS")
			if err != nil {
				t.Fatal(err)
			}
			cfg := info.CachedInfo().Config
			if cfg.Duplicates != 24*time.Hour || strings.Join(cfg.Subjects, " ") != "legacy.> cdse.product.> cdse.fetchretry.CDSE_PRODUCTS.> cdse.superseded.>" {
				t.Errorf("stream not updated: duplicates %s, subjects %v", cfg.Duplicates, cfg.Subjects)
			}
			all := r.PostFixtures(t)
			one := fixtures.Notification(t, "created-s2.json")
			if code, answer := r.Post(t, one); code != http.StatusOK || !strings.Contains(answer, `"duplicates":1`) {
				t.Errorf("second send: %d %s", code, answer)
			}
			if n := natstest.StreamCount(t, js, "CDSE_PRODUCTS"); n != uint64(len(all)) {
				t.Errorf("%d messages for %d fixtures", n, len(all))
			}
			warned := false
			for _, e := range r.Logs.AllEntries() {
				if e.Level == logrus.WarnLevel && strings.Contains(e.Message, "older than "+natsconn.MinServerVersion) {
					warned = true
				}
			}
			if old := !natsconn.VersionAtLeast(v, natsconn.MinServerVersion); warned != old {
				t.Errorf("server %s: warned about its version: %v, want %v", v, warned, old)
			}

			ns, err := notification.Parse(one, 1)
			if err != nil {
				t.Fatal(err)
			}
			fresh := []byte(strings.ReplaceAll(string(one), ns[0].ProductID, uuid.NewString()))

			srv.Kill()
			waitReady(t, r, http.StatusServiceUnavailable)
			if code, answer := r.Post(t, fresh); code != http.StatusServiceUnavailable {
				t.Errorf("a new product while the server is down: %d %s", code, answer)
			}
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			waitReady(t, r, http.StatusOK)
			// The catalogue's retry is stored, once.
			for i, want := range []string{`"accepted":1`, `"duplicates":1`} {
				if code, answer := r.Post(t, fresh); code != http.StatusOK || !strings.Contains(answer, want) {
					t.Errorf("after the restart, send %d of the refused product: %d %s", i+1, code, answer)
				}
			}
			if n := natstest.StreamCount(t, js, "CDSE_PRODUCTS"); n != uint64(len(all))+1 {
				t.Errorf("%d messages, want %d", n, len(all)+1)
			}
		})
	}
}

// waitReady waits until the receiver's /readyz answers want.
func waitReady(t *testing.T, r *receivertest.Receiver, want int) {
	t.Helper()
	if err := scrape.Status(r.Admin+"/readyz", want, 20*time.Second); err != nil {
		t.Fatal(err)
	}
}
