package backfill_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/backfill"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
)

// failingAfter is the catalogue's listing that fails from the n-th call
// on: a backfill killed halfway.
type failingAfter struct {
	l     catalogclient.Lists
	n     int64
	calls atomic.Int64
}

func (f *failingAfter) List(ctx context.Context, q catalogclient.Query) (catalogclient.Page, error) {
	if f.calls.Add(1) > f.n {
		return catalogclient.Page{}, errors.New("killed")
	}
	return f.l.List(ctx, q)
}

// TestBackfillExactlyOnceAcrossTiesAndResume: a range whose created,
// modified and deleted events tie in groups larger than a page is
// backfilled exactly once, also when the first run stops halfway and the
// same run is started again (it resumes from its checkpoint); a dry run
// publishes nothing and a later run publishes nothing new.
func TestBackfillExactlyOnceAcrossTiesAndResume(t *testing.T) {
	clock := cdsesim.NewClock(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"u": {Password: "pw"}}, Now: clock.Now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	api := catalogclient.New(srv.URL+"/odata/v1", cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "u", Password: "pw"}), nil)
	ps := sim.Generate(cdsesim.Sentinel2, 90) // a tie of 90 creations
	clock.Add(time.Minute)
	ps = append(ps, sim.Generate(cdsesim.Sentinel2, 10)...)
	sim.Generate(cdsesim.Sentinel1, 5) // outside the filter
	clock.Add(time.Minute)
	for _, p := range ps[:70] { // a tie of 70 modifications
		if err := sim.ModifyProduct(p.ID); err != nil {
			t.Fatal(err)
		}
	}
	clock.Add(time.Minute)
	for _, p := range ps[:60] { // a tie of 60 deletions
		if err := sim.DeleteProduct(p.ID, "Reprocessed product"); err != nil {
			t.Fatal(err)
		}
	}
	env := publishtest.New(t, nil)
	log, _ := test.NewNullLogger()
	o := backfill.Options{Filter: "Collection/Name eq 'SENTINEL-2'", Since: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Route: ingest.Route{Prefix: "cdse.product"}}
	run := func(o backfill.Options, cat catalogclient.Lists) (backfill.Summary, error) {
		return backfill.New(o, catalogclient.NewLister(cat, 25, 1000), env.Publisher, env.Quarantine, env.Topology, log).Run(context.Background())
	}
	count := func() map[string]int {
		return natstest.CountBy(natstest.StreamMessages(t, env.JS, publishtest.Stream), "Cdse-Event")
	}
	// The live products created (40), the modifications of those still
	// live (10), the deletions (60).
	want := map[string]int{"created": 40, "modified": 10, "deleted": 60}

	dry := o
	dry.DryRun = true
	if sum, err := run(dry, api); err != nil || len(count()) != 0 {
		t.Fatalf("dry run: %v, %v; stream %v", sum, err, count())
	}
	if _, err := run(o, &failingAfter{l: api, n: 4}); err == nil {
		t.Fatal("the run that should stop halfway completed")
	}
	if got := count(); got["created"] == 0 || fmt.Sprint(got) == fmt.Sprint(want) {
		t.Fatalf("the first run stored %v: not halfway", got)
	}
	sum, err := run(o, api)
	if err != nil || !sum.Resumed {
		t.Fatalf("second run: resumed %v, %v", sum.Resumed, err)
	}
	if got := count(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the resumed run: %v, want %v", got, want)
	}
	for id, n := range natstest.CountBy(natstest.StreamMessages(t, env.JS, publishtest.Stream), "Nats-Msg-Id") {
		if n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
	if sum, err := run(o, api); err != nil || sum.Resumed || fmt.Sprint(count()) != fmt.Sprint(want) {
		t.Errorf("a third run: %+v, %v; stream %v", sum, err, count())
	}
}

// recorder is the publisher, noting every message it was given and every
// copy the publish made.
type recorder struct {
	publish.BatchPublisher
	sent []string // subject " " Nats-Msg-Id
}

func (r *recorder) Publish(ctx context.Context, msgs []publish.Message) ([]publish.Result, error) {
	res, err := r.BatchPublisher.Publish(ctx, msgs)
	for _, m := range msgs {
		r.sent = append(r.sent, m.Subject+" "+m.MsgID)
		for _, c := range m.Copies {
			r.sent = append(r.sent, c.Subject+" "+c.MsgID)
		}
	}
	return res, err
}

// TestBackfillInterest: one interest's backfill sends that interest's
// copies only, with the ids live ingest gives them, also of products the
// product stream lacks; an interest's maxSensingAge is evaluated at the
// time of each event, not of the run. A plain backfill afterwards sends
// the product messages and the other interests' copies, not a copy the
// interest holds (beyond the duplicate window only its own reading of the
// stream would keep it out).
func TestBackfillInterest(t *testing.T) {
	clock := cdsesim.NewClock(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"u": {Password: "pw"}}, Now: clock.Now})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	api := catalogclient.New(srv.URL+"/odata/v1", cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "u", Password: "pw"}), nil)
	ps := sim.Generate(cdsesim.Sentinel2, 30) // sensed 1 to 4 h before
	sim.Generate(cdsesim.Sentinel1, 5)
	env := publishtest.New(t, nil)
	topo := publishtest.Topology
	topo.InterestPrefix = "cdse.interest"
	st := topology.New(env.JS, topo)
	if _, err := st.EnsureProduct(context.Background()); err != nil {
		t.Fatal(err)
	}
	router := routerOf(t, `interests:
  - name: old
    filter: Collection/Name eq 'SENTINEL-2'
  - name: new
    filter: Collection/Name eq 'SENTINEL-2'
    maxSensingAge: 6h
`)
	route := ingest.Route{Prefix: "cdse.product", Interests: router, InterestPrefix: "cdse.interest"}
	since := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	run := runner(t, api, env, st)
	in := &router.Current().Interests[1]
	// A month after the products: sensed more than 6 h before the run,
	// within 6 h of their publication, when live ingest evaluated them.
	later := func() time.Time { return since.AddDate(0, 1, 0) }
	o := backfill.Options{Filter: in.Filter.String(), Since: since, Events: in.Events, Route: route, Interest: in, Now: later}
	sent, sum := run(o)
	want := map[string]bool{}
	for _, p := range ps {
		want["interest/new/created:"+p.ID] = true
	}
	if len(sent) != len(want) || sum.Interest != "new" || sum.Events[0].Published != len(ps) {
		t.Errorf("the interest's backfill sent %d messages, want %d: %v; %+v", len(sent), len(want), sent, sum)
	}
	for _, s := range sent {
		subject, id, _ := strings.Cut(s, " ")
		if !want[id] || !strings.HasPrefix(subject, "cdse.interest.new.created.SENTINEL-2.S2MSI") {
			t.Errorf("the interest's backfill sent %s", s)
		}
	}
	if _, sum := run(o); sum.Events[0].Published != 0 || sum.Events[0].OnStream != len(ps) || sum.Scanned != len(ps) {
		t.Errorf("again: %+v", sum)
	}

	// The plain backfill: the product messages and old's copies, not
	// new's again. (The router, at the run's time, would not route to
	// new anyway: take the maxSensingAge out of its evaluation.)
	route.Interests = allOf(router)
	sent, _ = run(backfill.Options{Filter: "Collection/Name eq 'SENTINEL-2'", Since: since, Events: in.Events, Route: route})
	got := map[string]int{}
	for _, s := range sent {
		got[strings.SplitN(s, ".", 4)[2]]++
		if _, id, _ := strings.Cut(s, " "); want[id] {
			t.Errorf("the plain backfill sent %s again", s)
		}
	}
	if got["created"] != len(ps) || got["old"] != len(ps) || len(got) != 2 {
		t.Errorf("the plain backfill sent %v", got)
	}
	for id, n := range natstest.CountBy(natstest.StreamMessages(t, env.JS, publishtest.Stream), "Nats-Msg-Id") {
		if n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
}

// allOf routes to every interest of the router's set whose filter and
// events take the event, whatever their maxSensingAge.
type allOfSet struct{ r *interest.Router }

func allOf(r *interest.Router) ingest.Interests { return allOfSet{r} }

func (a allOfSet) Match(n *notification.Notification, routes []ingest.Routed) []ingest.Routed {
	p, ok := productfilter.FromNotification(n, &productfilter.Everything)
	if !ok {
		return routes
	}
	for _, in := range a.r.Current().Interests {
		in.MaxSensingAge = 0
		if ok, _ := in.Takes(n.Event, &p, time.Now()); ok {
			routes = append(routes, ingest.Routed{Name: in.Name})
		}
	}
	return routes
}
