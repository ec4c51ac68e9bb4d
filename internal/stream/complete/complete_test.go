package complete_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/stream/complete"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestAdvance: a range starts at the first listing, moves its until with
// each listing that joins it and never back; a changed filter or a gap
// starts it anew; a scope that does not take the event gets none. Each
// move is in the state bucket, announced (last message per subject) and
// on the gauges.
func TestAdvance(t *testing.T) {
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	topo := topology.New(js, topology.Options{Stream: "P", SubjectPrefix: "p", Duplicates: time.Minute})
	reg := prometheus.NewRegistry()
	tr, err := complete.New(topo, reg, logrus.New())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	h := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Hour) }
	a := complete.Scope{Name: "a", Filter: "fa", Events: []event.Kind{event.Created, event.Deleted}}
	b := complete.Scope{Name: "b", Filter: "fb", Events: []event.Kind{event.Deleted}}
	announced := func(name string) event.Complete {
		t.Helper()
		s, err := js.Stream(ctx, event.CompleteStream)
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.GetLastMsgForSubject(ctx, event.CompleteSubject(name, event.Created))
		if err != nil {
			t.Fatal(err)
		}
		c, err := event.DecodeCompleteData(m.Data, m.Header)
		if err != nil {
			t.Fatal(err)
		}
		return *c
	}
	step := func(from, until int, want [2]int, scopes ...complete.Scope) {
		t.Helper()
		if err := tr.Advance(ctx, complete.Listed{Event: event.Created, From: h(from), Until: h(until)}, scopes); err != nil {
			t.Fatal(err)
		}
		c := announced("a")
		if !c.From.Equal(h(want[0])) || !c.Until.Equal(h(want[1])) {
			t.Errorf("listed [%d, %d]: announced [%s, %s], want [%d, %d]", from, until, c.From, c.Until, want[0], want[1])
		}
		rs, _, err := tr.Ranges(ctx, scopes[:1])
		if err != nil || len(rs) != 1 || !rs[0].Until.Equal(c.Until) || !rs[0].From.Equal(c.From) {
			t.Errorf("Ranges: %+v %v, announced %+v", rs, err, c)
		}
		if g := testutil.ToFloat64(tr.UntilGauge().WithLabelValues("a", "created")); g != float64(c.Until.Unix()) {
			t.Errorf("until gauge %v, want %v", g, c.Until.Unix())
		}
	}
	step(0, 2, [2]int{0, 2}, a, b)
	step(1, 5, [2]int{0, 5}, a, b)
	step(1, 4, [2]int{0, 5}, a, b) // never back
	step(5, 6, [2]int{0, 6}, a, b) // joins at its end
	step(7, 8, [2]int{7, 8}, a, b) // a gap
	a.Filter = "fa2"
	step(7, 9, [2]int{7, 9}, a, b) // a new filter
	step(8, 10, [2]int{7, 10}, a, b)

	// A backfill of a's filter that joins the range extends it back; one
	// that does not join it, or of another filter, does not.
	for _, c := range []struct {
		filter       string
		since, until int
		moved        bool
	}{{"fa2", 1, 3, false}, {"fa", 2, 9, false}, {"fa2", 5, 7, true}, {"fa2", 6, 9, false}} {
		sc := a
		sc.Filter = c.filter
		moved, err := tr.Extend(ctx, sc, event.Created, h(c.since), h(c.until))
		if err != nil || moved != c.moved {
			t.Errorf("extend %+v: moved %v (%v)", c, moved, err)
		}
	}
	if c := announced("a"); !c.From.Equal(h(5)) || !c.Until.Equal(h(10)) {
		t.Errorf("after the backfill: [%s, %s], want [5, 10]", c.From, c.Until)
	}
	step(9, 11, [2]int{5, 11}, a, b) // the next pass keeps it

	// b takes deleted only: no created range.
	_, none, err := tr.Ranges(ctx, []complete.Scope{{Name: "b", Filter: "fb", Events: []event.Kind{event.Created}}})
	if err != nil || len(none) != 1 {
		t.Errorf("b's created: %+v %v", none, err)
	}
	// The state bucket's key.
	kv, err := topo.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, complete.Key("a", event.Created))
	if err != nil {
		t.Fatal(err)
	}
	var r struct{ From, Until time.Time }
	if err := json.Unmarshal(e.Value(), &r); err != nil || !r.Until.Equal(h(11)) || !r.From.Equal(h(5)) {
		t.Errorf("the state bucket holds %s (%v)", e.Value(), err)
	}
	// The stream keeps one message a subject.
	s, err := js.Stream(ctx, event.CompleteStream)
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(ctx); err != nil || info.State.Msgs != 1 {
		t.Errorf("the complete stream holds %d messages (%v), want 1 (a's created)", info.State.Msgs, err)
	}
}
