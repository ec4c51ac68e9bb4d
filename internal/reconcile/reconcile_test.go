package reconcile

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/auth"
	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/publish/publishtest"
)

type world struct {
	sim *cdsesim.Sim
	api *catalogclient.Client
	env *publishtest.Env
}

func setup(t *testing.T) *world {
	t.Helper()
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"u": {Password: "pw"}}, PushBackoff: time.Millisecond})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	ts := auth.PasswordTokenSource(auth.PasswordConfig{TokenURL: srv.URL + "/auth/realms/CDSE/protocol/openid-connect/token", Username: "u", Password: "pw"})
	return &world{sim: sim, api: catalogclient.New(srv.URL+"/odata/v1", ts, nil), env: publishtest.New(t, nil)}
}

func (w *world) reconciler(t *testing.T, filter string) *Reconciler {
	t.Helper()
	log, _ := test.NewNullLogger()
	r, err := New(Options{Filter: filter, Interval: time.Hour, SubjectPrefix: "cdse.product", PageSize: 30, RequestsPerSec: 1000}, w.api, w.env.Publisher, w.env.Quarantine, w.env.JS, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pushed stores a created notification for p as the webhook would have.
func (w *world) pushed(t *testing.T, p *cdsesim.Product) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"SubscriptionEvent": "created", "ProductId": p.ID, "ProductName": p.Name, "value": p.Entity()})
	n, err := notification.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.Publisher.Publish(context.Background(), ingest.Messages([]notification.Notification{n}, "cdse.product", ingest.SourcePush)); err != nil {
		t.Fatal(err)
	}
}

func count(msgs []string) (bySource map[string]int, distinct int) {
	bySource = map[string]int{}
	seen := map[string]bool{}
	for _, m := range msgs {
		f := strings.Fields(m)
		bySource[f[1]]++
		seen[f[2]] = true
	}
	return bySource, len(seen)
}

func TestReconcileRecoversLostPushes(t *testing.T) {
	w := setup(t)
	// A PUSH subscription to a receiver that is down: every delivery fails
	// its retries and is dropped.
	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	if _, err := w.api.CreateSubscription(context.Background(), catalogclient.SubscriptionRequest{SubscriptionType: "push", NotificationEndpoint: deadURL + "/notifications"}); err != nil {
		t.Fatal(err)
	}
	products := w.sim.Generate(cdsesim.Sentinel2, 100)
	w.sim.Generate(cdsesim.Sentinel1, 10) // outside the filter
	w.sim.WaitPushes()
	if st := w.sim.Stats(); st.PushDropped != 110 {
		t.Fatalf("simulator stats %+v: want every push dropped", st)
	}
	// 20 of them reached the stream by PUSH before the outage.
	for _, p := range products[:20] {
		w.pushed(t, p)
	}
	r := w.reconciler(t, "Collection/Name eq 'SENTINEL-2'")
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	bySource, distinct := count(w.env.Messages(t))
	if distinct != 100 || bySource["push"] != 20 || bySource["reconcile"] != 80 {
		t.Fatalf("after the pass: %d distinct products, by source %v; want 100 = 20 push + 80 reconcile", distinct, bySource)
	}
	wm, err := r.Watermark(context.Background())
	if err != nil || !wm.Equal(products[99].PublicationDate.Truncate(time.Microsecond)) {
		t.Errorf("watermark %v (%v), want the last product's PublicationDate %v", wm, err, products[99].PublicationDate)
	}

	// A restarted receiver keeps the watermark and publishes nothing twice.
	r2 := w.reconciler(t, "Collection/Name eq 'SENTINEL-2'")
	if wm2, _ := r2.Watermark(context.Background()); !wm2.Equal(wm) {
		t.Errorf("watermark after restart %v, want %v", wm2, wm)
	}
	w.sim.Generate(cdsesim.Sentinel2, 5)
	if err := r2.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	bySource, distinct = count(w.env.Messages(t))
	if distinct != 105 || bySource["reconcile"] != 85 {
		t.Fatalf("after the second pass: %d distinct, by source %v", distinct, bySource)
	}
}

func TestOneReplicaAtATime(t *testing.T) {
	w := setup(t)
	w.sim.Generate(cdsesim.Sentinel2, 60)
	a, b := w.reconciler(t, ""), w.reconciler(t, "")
	ctx := context.Background()
	a.mu.Lock()
	if err := a.buckets(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.acquire(ctx); err != nil {
		t.Fatal(err)
	}
	a.mu.Unlock()
	if err := b.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(w.env.Messages(t)); got != 0 {
		t.Fatalf("b reconciled while a held the lease: %d messages", got)
	}
	a.mu.Lock()
	a.release(ctx)
	a.mu.Unlock()
	// Both at once, repeatedly: still exactly once.
	var wg sync.WaitGroup
	for _, r := range []*Reconciler{a, b, a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); _ = r.Pass(ctx) }()
	}
	wg.Wait()
	if err := b.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := w.env.Messages(t)
	if _, distinct := count(msgs); len(msgs) != 60 || distinct != 60 {
		t.Fatalf("%d messages, %d distinct; want 60", len(msgs), distinct)
	}
}
