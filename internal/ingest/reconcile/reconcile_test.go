package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
)

type world struct {
	sim *cdsesim.Sim
	api *catalogclient.Client
	env *publishtest.Env
}

func setup(t *testing.T) *world {
	t.Helper()
	// A running limit of 2: deadPushSubscription needs created/modified
	// and deleted, which one subscription cannot carry.
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"u": {Password: "pw"}}, PushBackoff: time.Millisecond, MaxRunning: 2})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	ts := cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "u", Password: "pw"})
	return &world{sim: sim, api: catalogclient.New(srv.URL+"/odata/v1", ts, nil), env: publishtest.New(t, nil)}
}

func (w *world) reconciler(t *testing.T, filter string) *Reconciler {
	t.Helper()
	log, _ := test.NewNullLogger()
	r, err := New(Options{Filter: filter, Interval: time.Hour, Route: ingest.Route{Prefix: "cdse.product"}, PageSize: 30, RequestsPerSec: 1000}, w.api, w.env.Publisher, w.env.Quarantine, w.env.Topology, prometheus.NewRegistry(), log)
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
	if _, err := w.env.Publisher.Publish(context.Background(), ingest.Messages([]notification.Notification{n}, &ingest.Route{Prefix: "cdse.product"}, ingest.SourcePush)); err != nil {
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
	wm, err := r.Watermark(context.Background(), event.Created)
	if err != nil || !wm.Equal(products[99].PublicationDate.Truncate(time.Microsecond)) {
		t.Errorf("watermark %v (%v), want the last product's PublicationDate %v", wm, err, products[99].PublicationDate)
	}

	// A restarted receiver keeps the watermark and publishes nothing twice.
	r2 := w.reconciler(t, "Collection/Name eq 'SENTINEL-2'")
	if wm2, _ := r2.Watermark(context.Background(), event.Created); !wm2.Equal(wm) {
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

// deadPushSubscription registers a PUSH subscription for every event to an
// endpoint nobody listens on: the simulator retries three times and drops
// each notification, as the catalogue does with a receiver that is down.
func (w *world) deadPushSubscription(t *testing.T) {
	t.Helper()
	dead := httptest.NewServer(nil)
	deadURL := dead.URL
	dead.Close()
	// The catalogue takes created and modified together, deleted apart.
	for _, events := range [][]string{{"created", "modified"}, {"deleted"}} {
		if _, err := w.api.CreateSubscription(context.Background(), catalogclient.SubscriptionRequest{SubscriptionType: "push",
			SubscriptionEvent: events, NotificationEndpoint: deadURL + "/notifications"}); err != nil {
			t.Fatal(err)
		}
	}
}

// pushedEvent stores the notification of an event as the webhook would
// have: value is the product as the catalogue shows it now (nil for a
// deletion pushed without value).
func (w *world) pushedEvent(t *testing.T, ev string, p *cdsesim.Product, value json.RawMessage) {
	t.Helper()
	m := map[string]any{"SubscriptionEvent": ev, "ProductId": p.ID, "ProductName": p.Name}
	if value != nil {
		m["value"] = value
	}
	body, _ := json.Marshal(m)
	n, err := notification.Decode(body)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.env.Publisher.Publish(context.Background(), ingest.Messages([]notification.Notification{n}, &ingest.Route{Prefix: "cdse.product"}, ingest.SourcePush)); err != nil {
		t.Fatal(err)
	}
}

func TestReconcileModifiedAndDeleted(t *testing.T) {
	w := setup(t)
	w.deadPushSubscription(t)
	ctx := context.Background()
	ps := w.sim.Generate(cdsesim.Sentinel2, 30)
	for _, p := range ps[:10] {
		w.pushedEvent(t, "created", p, nil)
	}
	for i, p := range ps[10:15] {
		if err := w.sim.ModifyProduct(p.ID); err != nil {
			t.Fatal(err)
		}
		if i < 2 { // these two modifications did reach the stream
			raw, err := w.api.GetProduct(ctx, p.ID)
			if err != nil {
				t.Fatal(err)
			}
			w.pushedEvent(t, "modified", p, raw)
		}
	}
	for i, p := range ps[:4] {
		if err := w.sim.DeleteProduct(p.ID, "Duplicated product"); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			w.pushedEvent(t, "deleted", p, nil)
		}
	}
	w.sim.WaitPushes()
	if st := w.sim.Stats(); st.PushDropped != 39 {
		t.Fatalf("simulator dropped %d pushes, want 39 (30 created, 5 modified, 4 deleted)", st.PushDropped)
	}
	r := w.reconciler(t, "Collection/Name eq 'SENTINEL-2'")
	if err := r.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		msgs := natstest.StreamMessages(t, w.env.JS, publishtest.Stream)
		got := map[string]int{} // "event source" -> count
		ids := map[string]int{}
		for _, m := range msgs {
			got[m.Header.Get("Cdse-Event")+" "+m.Header.Get("Cdse-Source")]++
			ids[m.Header.Get("Nats-Msg-Id")]++
			// The product type token is UNKNOWN for the test's pushed bodies
			// (no value); the reconciler's carry the product.
			if want := "cdse.product." + m.Header.Get("Cdse-Event") + ".SENTINEL-2."; !strings.HasPrefix(m.Subject, want) {
				t.Errorf("%s: subject %s, want %s*", when, m.Subject, want)
			}
		}
		want := map[string]int{"created push": 10, "created reconcile": 20, "modified push": 2, "modified reconcile": 3, "deleted push": 1, "deleted reconcile": 3}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %d %q messages, want %d (all: %v)", when, got[k], k, v, got)
			}
		}
		for id, n := range ids {
			if n != 1 {
				t.Errorf("%s: %s stored %d times", when, id, n)
			}
		}
		if len(msgs) != 39 {
			t.Errorf("%s: %d messages, want 39", when, len(msgs))
		}
	}
	check("after the pass")
	// Modified ones are keyed by product and ModificationDate, as pushed.
	raw, _ := w.api.GetProduct(ctx, ps[12].ID)
	var p catalogclient.Product
	json.Unmarshal(raw, &p)
	key := "modified:" + ps[12].ID + ":" + p.ModificationDate.UTC().Format(time.RFC3339Nano)
	s, _ := w.env.JS.Stream(ctx, publishtest.Stream)
	if _, err := s.GetLastMsgForSubject(ctx, "cdse.product.modified.SENTINEL-2.>"); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range natstest.StreamMessages(t, w.env.JS, publishtest.Stream) {
		found = found || m.Header.Get("Nats-Msg-Id") == key
	}
	if !found {
		t.Errorf("no message with the key %s", key)
	}
	for _, ev := range event.Kinds {
		if wm, err := r.Watermark(ctx, ev); err != nil || wm.IsZero() {
			t.Errorf("%s watermark %v %v", ev, wm, err)
		}
	}
	// Another pass, from the watermarks: nothing new.
	if err := w.reconciler(t, "Collection/Name eq 'SENTINEL-2'").Pass(ctx); err != nil {
		t.Fatal(err)
	}
	check("after a second pass")
}

// skipWatcher records the largest $skip asked for and the 422 answers.
type skipWatcher struct {
	h        http.Handler
	mu       sync.Mutex
	maxSkip  int
	requests int
	refused  int
}

func (s *skipWatcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := httptest.NewRecorder()
	s.h.ServeHTTP(rec, r)
	s.mu.Lock()
	if strings.HasSuffix(r.URL.Path, "Products") {
		s.requests++
		if n, _ := strconv.Atoi(r.URL.Query().Get("$skip")); n > s.maxSkip {
			s.maxSkip = n
		}
		if rec.Code == http.StatusUnprocessableEntity {
			s.refused++
		}
	}
	s.mu.Unlock()
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(rec.Body.Bytes())
}

// TestReconcilePastTheSkipLimit: one pass over 12 000 products (in groups
// of 100 with the same PublicationDate) with pages of 1000 completes
// without a $skip and without a 422, exactly once.
func TestReconcilePastTheSkipLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("12 000 products")
	}
	clock := cdsesim.NewClock(time.Now().Add(-time.Hour).UTC())
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"u": {Password: "pw"}}, Now: clock.Now})
	watch := &skipWatcher{h: sim.Handler()}
	srv := httptest.NewServer(watch)
	t.Cleanup(func() { srv.Close(); sim.Close() })
	ts := cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "u", Password: "pw"})
	w := &world{sim: sim, api: catalogclient.New(srv.URL+"/odata/v1", ts, nil), env: publishtest.New(t, nil)}
	const n = 12000
	for range n / 100 {
		// 4 KiB: no tree of files (a product that small keeps a plain
		// archive), so that listing 12 000 checksums hashes 48 MB, not 2 GB.
		sim.GenerateWith(cdsesim.Sentinel2, 100, func(p *cdsesim.Product) { p.ContentLength = 4 << 10 })
		clock.Add(time.Second)
	}
	log, _ := test.NewNullLogger()
	r, err := New(Options{Filter: "Collection/Name eq 'SENTINEL-2'", Events: []event.Kind{event.Created}, Interval: time.Hour, Route: ingest.Route{Prefix: "cdse.product"},
		PageSize: 1000, RequestsPerSec: 1000}, w.api, w.env.Publisher, w.env.Quarantine, w.env.Topology, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := natstest.StreamCount(t, w.env.JS, publishtest.Stream); got != n {
		t.Fatalf("%d messages, want %d", got, n)
	}
	msgs := natstest.StreamMessages(t, w.env.JS, publishtest.Stream)
	for id, c := range natstest.CountBy(msgs, "Cdse-Product-Id") {
		if c != 1 {
			t.Fatalf("product %s stored %d times", id, c)
		}
	}
	// Each page starts at the last date listed, so the up to 100 products
	// of that date come again (and are left out): 14 requests, not 13.
	if watch.maxSkip != 0 || watch.refused != 0 || watch.requests > n/1000+2 {
		t.Errorf("listing: largest $skip %d, %d answered 422, %d requests (want 0, 0, at most %d)", watch.maxSkip, watch.refused, watch.requests, n/1000+2)
	}
}

// TestReconcileTiesBeyondAPage: created, modified and deleted events whose
// dates tie in groups larger than a page are each stored exactly once, and
// a second pass stores nothing new.
func TestReconcileTiesBeyondAPage(t *testing.T) {
	clock := cdsesim.NewClock(time.Now().Add(-time.Hour).UTC())
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"u": {Password: "pw"}}, Now: clock.Now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	ts := cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "u", Password: "pw"})
	w := &world{sim: sim, api: catalogclient.New(srv.URL+"/odata/v1", ts, nil), env: publishtest.New(t, nil)}
	ps := sim.Generate(cdsesim.Sentinel2, 150) // 150 created at one instant
	clock.Add(time.Second)
	for _, p := range ps[:120] { // 120 modified at one instant
		if err := sim.ModifyProduct(p.ID); err != nil {
			t.Fatal(err)
		}
	}
	clock.Add(time.Second)
	for i, p := range ps[20:130] { // 110 deleted at one instant, with the causes seen live
		if err := sim.DeleteProduct(p.ID, []string{"Reprocessed product", "Automatic eviction"}[i%2]); err != nil {
			t.Fatal(err)
		}
	}
	log, _ := test.NewNullLogger()
	r, err := New(Options{Filter: "Collection/Name eq 'SENTINEL-2'", Interval: time.Hour, Route: ingest.Route{Prefix: "cdse.product"},
		PageSize: 50, RequestsPerSec: 1000}, w.api, w.env.Publisher, w.env.Quarantine, w.env.Topology, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	for pass := range 2 {
		if err := r.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		msgs := natstest.StreamMessages(t, w.env.JS, publishtest.Stream)
		// Created: the 40 still live (deleted products are not listed in
		// Products; their deletion is). Modified: of the 120, the 20 still
		// live. Deleted: 110.
		if got, want := natstest.CountBy(msgs, "Cdse-Event"), map[string]int{"created": 40, "modified": 20, "deleted": 110}; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pass %d: stored %v, want %v", pass+1, got, want)
		}
		for id, c := range natstest.CountBy(msgs, "Nats-Msg-Id") {
			if c != 1 {
				t.Errorf("pass %d: %s stored %d times", pass+1, id, c)
			}
		}
	}
}

// TestListedAfterStored: Options.Listed is told, per event, after the pass
// stored its window: the filter listed, the window's start (the watermark
// minus the overlap) and the listing's start minus the overlap, once the
// window's products are on the stream.
func TestListedAfterStored(t *testing.T) {
	w := setup(t)
	products := w.sim.Generate(cdsesim.Sentinel2, 40)
	now := time.Now().Add(time.Hour)
	type call struct {
		ev          event.Kind
		filter      string
		from, until time.Time
		stored      int
	}
	var calls []call
	log, _ := test.NewNullLogger()
	const filter = "Collection/Name eq 'SENTINEL-2'"
	o := Options{Filter: filter, Interval: time.Hour, Route: ingest.Route{Prefix: "cdse.product"}, PageSize: 30, RequestsPerSec: 1000,
		Overlap: 5 * time.Minute, Lookback: 3 * time.Hour, Events: []event.Kind{event.Created}, Now: func() time.Time { return now }}
	o.Listed = func(_ context.Context, ev event.Kind, f string, from, until time.Time) error {
		calls = append(calls, call{ev, f, from, until, len(w.env.Messages(t))})
		return nil
	}
	r, err := New(o, w.api, w.env.Publisher, w.env.Quarantine, w.env.Topology, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := call{event.Created, filter, now.Add(-3*time.Hour - 5*time.Minute), now.Add(-5 * time.Minute), 40}
	if len(calls) != 1 || calls[0] != want {
		t.Fatalf("Listed: %+v, want %+v", calls, want)
	}
	// The second pass starts at the watermark (the last product) minus
	// the overlap.
	if err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || !calls[1].from.Equal(products[39].PublicationDate.Truncate(time.Microsecond).Add(-5*time.Minute)) {
		t.Errorf("second pass: %+v", calls)
	}
}

// TestWatermarkNeverPastTheListing: products dated after the pass's
// listing began (published during it, or ahead by the catalogue's clock)
// do not move the watermark past that start, so the next window starts
// at or before the range the pass announced ends: the ranges join.
func TestWatermarkNeverPastTheListing(t *testing.T) {
	w := setup(t)
	w.sim.Generate(cdsesim.Sentinel2, 10)
	began := time.Now().Add(-10 * time.Minute) // the products are dated after it
	var listed [][2]time.Time
	log, _ := test.NewNullLogger()
	o := Options{Filter: "Collection/Name eq 'SENTINEL-2'", Interval: time.Hour, Route: ingest.Route{Prefix: "cdse.product"}, PageSize: 30, RequestsPerSec: 1000,
		Overlap: 5 * time.Minute, Lookback: time.Hour, Events: []event.Kind{event.Created}, Now: func() time.Time { return began }}
	o.Listed = func(_ context.Context, _ event.Kind, _ string, from, until time.Time) error {
		listed = append(listed, [2]time.Time{from, until})
		return nil
	}
	r, err := New(o, w.api, w.env.Publisher, w.env.Quarantine, w.env.Topology, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if wm, err := r.Watermark(context.Background(), event.Created); err != nil || !wm.Equal(began.Truncate(time.Microsecond)) && !wm.Equal(began) {
		t.Errorf("watermark %s (%v), want the listing's start %s", wm, err, began)
	}
	if len(listed) != 2 || listed[1][0].After(listed[0][1]) {
		t.Errorf("the second window %v does not join the first range %v", listed[1], listed[0])
	}
}
