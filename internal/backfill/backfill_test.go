package backfill_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/backfill"
	"github.com/cdse-jetstream/receiver/internal/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/ingest"
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
