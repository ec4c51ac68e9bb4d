package fetch

import (
	"net/http"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
)

// TestTwoEventsOfOneProductDownloadOnce: a product's created and modified
// events (the same bytes) taken by one replica together are not
// downloaded side by side into S3, which has no partial to lock: the
// second waits for the first and finds the object stored. The chaos run
// found the product on two connections at once.
func TestTwoEventsOfOneProductDownloadOnce(t *testing.T) {
	w := newWorld(t)
	store := s3test.Start(t)
	env := store.Env()
	env["FETCH_TARGET"] = "s3://" + store.Bucket + "/products"
	w.sim.SetDownloadRate(2 << 20)
	p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 4 << 20 })[0] // 2 s
	modified := *p
	modified.ModificationDate = p.ModificationDate.Add(time.Minute)
	w.notify(t, p)
	w.notifyEvent(t, "modified", &modified)
	w.fetcher(t, env)
	fetched, failed := w.events(t, 2)
	if len(fetched) != 2 || len(failed) != 0 {
		t.Fatalf("%d fetched, %d failed, want 2 and 0", len(fetched), len(failed))
	}
	var bodies int
	for _, r := range w.sim.DownloadLog() {
		if r.Product == p.ID && r.Method == http.MethodGet && r.Status == http.StatusOK {
			bodies++
		}
	}
	if bodies != 1 {
		t.Errorf("%d downloads of the product, want 1 (the second event finds it stored)", bodies)
	}
}
