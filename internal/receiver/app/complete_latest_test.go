package app

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/stream/complete"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/interesttest"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/versionstest"
)

// TestLatestRangesWaitForTheVersionsConsumer: after a pass, the range of
// an interest that takes the latest versions only advances only once the
// versions consumer has decided every product event stored by the pass's
// end; before that (here: no consumer yet) it is left, counted, while the
// range of the interest of all versions beside it advances. Once the
// consumer has caught up, the next pass advances it over both passes'
// listings: one range, from the first pass's start.
func TestLatestRangesWaitForTheVersionsConsumer(t *testing.T) {
	defer func(w time.Duration) { latestWait = w }(latestWait)
	latestWait = 300 * time.Millisecond
	const f = "interests:\n  - name: all\n    filter: Collection/Name eq 'SENTINEL-1'\n  - name: latest\n    versions: latest\n    filter: Collection/Name eq 'SENTINEL-1'\n"
	router, _, topo, _ := latestRangesEnv(t, f)
	log, _ := test.NewNullLogger()
	ctx := context.Background()
	c := testConfig(t, t.TempDir())
	c.ReconcileInterval = time.Hour
	reg := prometheus.NewRegistry()
	ranges, err := newCompleteRanges(Deps{Config: c, Interests: router, Topology: topo, Registry: reg, Log: log}, []event.Kind{event.Created})
	if err != nil {
		t.Fatal(err)
	}
	scopes := interestScopes(router.Current())
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	pass := func(from, until time.Time) {
		t.Helper()
		filter := ranges.filterOf()
		if err := ranges.listed(ctx, event.Created, filter, from, until); err != nil {
			t.Fatal(err)
		}
	}
	held := func() map[string]complete.Range { t.Helper(); return rangesHeld(t, ranges, scopes) }

	pass(start, start.Add(30*time.Minute))
	if rs := held(); rs["all"].Until.IsZero() || !rs["latest"].Until.IsZero() {
		t.Fatalf("no versions consumer: ranges %+v, want all's alone", rs)
	}
	if n := testutil.ToFloat64(ranges.latest.Deferrals().WithLabelValues("created")); n != 1 {
		t.Errorf("deferrals %v, want 1", n)
	}

	// The versions consumer takes the product event in.
	versionstest.Run(t, topo, supersede.Options{})
	versionstest.Decided(t, topo, 1)

	pass(start.Add(20*time.Minute), start.Add(50*time.Minute))
	rs := held()
	if l := rs["latest"]; !l.From.Equal(start) || !l.Until.Equal(start.Add(50*time.Minute)) {
		t.Errorf("the latest interest's range %v to %v, want %v to %v (both passes)", l.From, l.Until, start, start.Add(50*time.Minute))
	}
	if a := rs["all"]; !a.From.Equal(start) || !a.Until.Equal(start.Add(50*time.Minute)) {
		t.Errorf("all's range %v to %v", a.From, a.Until)
	}
	if n := testutil.ToFloat64(ranges.latest.Deferrals().WithLabelValues("created")); n != 1 {
		t.Errorf("deferrals %v, want still 1", n)
	}
}

// TestStatusSaysWhatTheVersionsConsumerDoes: /status's versions section
// says the consumer runs, what it has yet to take in, and when it last
// decided; with RECEIVER_VERSIONS off there is none.
func TestStatusSaysWhatTheVersionsConsumerDoes(t *testing.T) {
	c := testConfig(t, t.TempDir())
	a, _ := startApp(t, c)
	if code := post(t, a, c, fixtures.Notification(t, "created-s2.json")); code != 200 {
		t.Fatalf("post: %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		v := a.Status(context.Background()).Versions
		if v != nil && v.Running && v.Pending != nil && *v.Pending == 0 && v.LastDecision != nil {
			if v.Notices != 0 || v.Undecided != 0 {
				t.Errorf("one product: %d notices, %d undecided", v.Notices, v.Undecided)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/status's versions within 20 s: %+v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = a.Shutdown(context.Background())

	c = testConfig(t, t.TempDir())
	c.Versions = false
	b, _ := startApp(t, c)
	if v := b.Status(context.Background()).Versions; v != nil {
		t.Errorf("versions off: %+v", v)
	}
}

// TestRangeStartsAnewWhenVersionsChange: an interest switched between
// versions: all and latest by a reload holds another set of copies from
// then on, so its complete range starts anew at the next pass (as on a
// change of its filter), in both directions, rather than claim the
// earlier passes for the new mode.
func TestRangeStartsAnewWhenVersionsChange(t *testing.T) {
	for _, tt := range []struct{ before, after string }{{"all", "latest"}, {"latest", "all"}} {
		t.Run(tt.before+" to "+tt.after, func(t *testing.T) {
			content := func(mode string) []byte {
				return []byte("interests:\n  - name: x\n    versions: " + mode + "\n    filter: Collection/Name eq 'SENTINEL-1'\n")
			}
			router, file, topo, _ := latestRangesEnv(t, string(content(tt.before)))
			log, _ := test.NewNullLogger()
			ctx := context.Background()
			versionstest.Run(t, topo, supersede.Options{})
			versionstest.Decided(t, topo, 1)
			c := testConfig(t, t.TempDir())
			c.ReconcileInterval = time.Hour
			ranges, err := newCompleteRanges(Deps{Config: c, Interests: router, Topology: topo, Registry: prometheus.NewRegistry(), Log: log}, []event.Kind{event.Created})
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now().Add(-time.Hour).Truncate(time.Second)
			pass := func(from, until time.Time) complete.Range {
				t.Helper()
				if err := ranges.listed(ctx, event.Created, ranges.filterOf(), from, until); err != nil {
					t.Fatal(err)
				}
				rs, _, err := ranges.t.Ranges(ctx, interestScopes(router.Current()))
				if err != nil || len(rs) != 1 {
					t.Fatalf("ranges %+v %v, want x's", rs, err)
				}
				return rs[0]
			}
			if r := pass(start, start.Add(30*time.Minute)); !r.From.Equal(start) {
				t.Fatalf("the first pass: x's range from %v, want %v", r.From, start)
			}
			interesttest.Reload(t, router, file, string(content(tt.after)))
			if r := pass(start.Add(20*time.Minute), start.Add(50*time.Minute)); !r.From.Equal(start.Add(20 * time.Minute)) {
				t.Errorf("after the switch: x's range from %v, want %v (started anew)", r.From, start.Add(20*time.Minute))
			}
		})
	}
}

// latestRangesEnv is a router of the interests file content (written at
// the path returned) and a product stream P (subjects p.>, notices s.>)
// holding one product event, on a real server.
func latestRangesEnv(t *testing.T, content string) (*interest.Router, string, *topology.Topology, jetstream.JetStream) {
	t.Helper()
	router, file := interesttest.Router(t, content)
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	t.Cleanup(closeNC)
	topo := topology.New(js, topology.Options{Stream: "P", SubjectPrefix: "p", Duplicates: time.Minute, SupersededPrefix: "s"})
	ctx := context.Background()
	if _, err := topo.EnsureProduct(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "p.created.SENTINEL-1.IW_GRDH_1S", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	return router, file, topo, js
}

// TestLatestRangesAdvanceUnderABacklog: a versions consumer that stays
// behind the product stream still advances the ranges of the interests
// that take the latest versions only over every pass whose end it has
// decided: each pass's listing is kept with the product stream's last
// sequence at its end, not compared with the stream's end as it moves.
// The receiver's durable here is acked by hand, a real consumer kept
// behind.
func TestLatestRangesAdvanceUnderABacklog(t *testing.T) {
	defer func(w time.Duration) { latestWait = w }(latestWait)
	latestWait = 300 * time.Millisecond
	router, _, topo, js := latestRangesEnv(t, "interests:\n  - name: latest\n    versions: latest\n    filter: Collection/Name eq 'SENTINEL-1'\n")
	ctx := context.Background()
	cons, err := js.CreateConsumer(ctx, "P", jetstream.ConsumerConfig{Durable: topology.VersionsConsumer, FilterSubject: "p.>", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	publish := func() {
		t.Helper()
		if _, err := js.Publish(ctx, "p.created.SENTINEL-1.IW_GRDH_1S", []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	decide := func(n int) {
		t.Helper()
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range batch.Messages() {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
			got++
		}
		if got != n {
			t.Fatalf("decided %d product events, want %d", got, n)
		}
	}
	c := testConfig(t, t.TempDir())
	c.ReconcileInterval = time.Hour
	log, _ := test.NewNullLogger()
	ranges, err := newCompleteRanges(Deps{Config: c, Interests: router, Topology: topo, Registry: prometheus.NewRegistry(), Log: log}, []event.Kind{event.Created})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now().Add(-time.Hour).Truncate(time.Second)
	pass := func(from, until time.Time) map[string]complete.Range {
		t.Helper()
		if err := ranges.listed(ctx, event.Created, ranges.filterOf(), from, until); err != nil {
			t.Fatal(err)
		}
		return rangesHeld(t, ranges, interestScopes(router.Current()))
	}

	// The first pass ends with the stream at 2, nothing decided.
	publish()
	if rs := pass(start, start.Add(30*time.Minute)); !rs["latest"].Until.IsZero() {
		t.Fatalf("nothing decided: range %+v", rs["latest"])
	}
	// The consumer decides up to the first pass's end while the stream
	// grows on: the second pass ends at 4, not decided.
	publish()
	decide(2)
	publish()
	rs := pass(start.Add(20*time.Minute), start.Add(50*time.Minute))
	if l := rs["latest"]; !l.From.Equal(start) || !l.Until.Equal(start.Add(30*time.Minute)) {
		t.Errorf("the first pass decided: range %v to %v, want %v to %v", l.From, l.Until, start, start.Add(30*time.Minute))
	}
	// Then up to the second's (4): the third pass, not decided either,
	// advances over it, in order.
	decide(2)
	publish()
	rs = pass(start.Add(40*time.Minute), start.Add(70*time.Minute))
	if l := rs["latest"]; !l.From.Equal(start) || !l.Until.Equal(start.Add(50*time.Minute)) {
		t.Errorf("the second pass decided: range %v to %v, want %v to %v", l.From, l.Until, start, start.Add(50*time.Minute))
	}
}

// rangesHeld are the complete ranges of scopes kept, by scope.
func rangesHeld(t *testing.T, ranges *completeRanges, scopes []complete.Scope) map[string]complete.Range {
	t.Helper()
	rs, _, err := ranges.t.Ranges(context.Background(), scopes)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]complete.Range{}
	for _, r := range rs {
		out[r.Scope] = r
	}
	return out
}
