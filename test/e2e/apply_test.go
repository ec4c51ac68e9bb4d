package e2e

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

// TestApplySwapLosesNothing: with the live limit of one running
// subscription, a change of the interests makes register apply replace the
// subscription; products the catalogue publishes while it is swapped (the
// old one paused, the new one not yet running: PUSH sends them nowhere)
// reach their interests all the same, once each, through the reconciler,
// whose filter is the interests' union.
func TestApplySwapLosesNothing(t *testing.T) {
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-pw"}}, PushBackoff: 10 * time.Millisecond})
	// Products published during the swap: when the old subscription is
	// paused, the catalogue publishes these.
	var mu sync.Mutex
	var during []*cdsesim.Product
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Method == http.MethodPatch {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		sim.Handler().ServeHTTP(w, r)
		if r.Method == http.MethodPatch && strings.Contains(string(body), `"paused"`) {
			mu.Lock()
			during = append(during, sim.Generate(cdsesim.Sentinel1, 3)...)
			during = append(during, sim.Generate(cdsesim.Sentinel2, 3)...)
			mu.Unlock()
		}
	}))
	t.Cleanup(func() { srv.Close(); sim.Close() })
	w := newSimAt(t, sim, srv.URL)
	dir := t.TempDir()
	file := filepath.Join(dir, "interests.yaml")
	v1 := "interests:\n  - name: s2\n    filter: Collection/Name eq 'SENTINEL-2'\n"
	v2 := v1 + "  - name: s1\n    filter: Collection/Name eq 'SENTINEL-1'\n"
	if err := os.WriteFile(file, []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	nats := natstest.RunJetStream(t)
	login := func(c *config.Config) {
		c.NATSURL, c.InterestsFile = nats.ClientURL(), file
		w.login(c)
	}
	a := receivertest.Start(t, login)
	w.register(t, "apply", "--interests", file, "--endpoint", a.Webhook, "--insecure-endpoint")
	before := sim.Generate(cdsesim.Sentinel2, 4)
	sim.WaitPushes()

	// The interests change: the receiver takes the file, apply swaps.
	if err := os.WriteFile(file, []byte(v2), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(file, time.Now().Add(time.Second), time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	a.App.Reload(true)
	out := w.register(t, "apply", "--interests", file, "--endpoint", a.Webhook, "--insecure-endpoint")
	if !strings.Contains(out, "applied") {
		t.Fatalf("apply: %s", out)
	}
	after := append(sim.Generate(cdsesim.Sentinel1, 2), sim.Generate(cdsesim.Sentinel2, 2)...)
	sim.WaitPushes()
	mu.Lock()
	if len(during) != 6 {
		t.Fatalf("%d products published during the swap, want 6: the test did not catch the window", len(during))
	}
	window := append([]*cdsesim.Product(nil), during...)
	mu.Unlock()

	// The reconciler's pass (at a replica's start) bridges the window.
	receivertest.Start(t, func(c *config.Config) {
		login(c)
		c.Webhook, c.ReconcileInterval, c.ReconcileLookback = false, time.Hour, time.Hour
	})
	js, closeNC := natstest.JetStream(t, nats.ClientURL())
	defer closeNC()
	want := map[string]int{}
	for _, ps := range [][]*cdsesim.Product{before, window, after} {
		for _, p := range ps {
			name := map[string]string{"SENTINEL-1": "s1", "SENTINEL-2": "s2"}[p.Collection]
			want[name+" "+p.ID] = 1
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := map[string]int{}
		for _, m := range natstest.StreamMessages(t, js, "CDSE_PRODUCTS") {
			if name := m.Header.Get("Cdse-Interest"); name != "" {
				got[name+" "+m.Header.Get("Cdse-Product-Id")]++
			}
		}
		if len(got) >= len(want) || time.Now().After(deadline) {
			for k, n := range want {
				if got[k] != n {
					t.Errorf("%s: %d copies, want %d", k, got[k], n)
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d interest copies, want %d", len(got), len(want))
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}
