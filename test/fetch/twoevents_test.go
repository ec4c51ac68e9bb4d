package fetch

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
)

// TestTwoEventsOfOneProductDownloadOnce: a product's created and modified
// events (the same bytes) taken by one replica together are not
// downloaded side by side into S3, which has no partial to lock: the
// second waits for the first and finds the object stored. The chaos run
// found the product on two connections at once.
func TestTwoEventsOfOneProductDownloadOnce(t *testing.T) {
	t.Parallel()
	w, env, p, modified := twoEvents(t, 4<<20) // 2 s
	w.notify(t, p)
	w.notifyEvent(t, "modified", modified)
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

// TestTwoReplicasDownloadOneProductOnce: a product's created event taken
// by one replica and its modified event by another, while the first
// downloads, into S3: the second waits for the first's lease (the
// fetcher's KV bucket) and finds the product stored; the download
// service sees one body, never two connections at once. The chaos run
// found the product on two connections, one from each replica.
//
// NATS gives a message to the oldest waiting pull: replica B (one slot)
// pulls first, A (two slots) after it, so B takes the created event and
// pulls again behind A, and A takes the modified event.
func TestTwoReplicasDownloadOneProductOnce(t *testing.T) {
	t.Parallel()
	w, env, p, modified := twoEvents(t, 6<<20) // 3 s

	waiting := func(n int) {
		t.Helper()
		waitFor(t, 20*time.Second, fmt.Sprintf("%d pulls waiting on the fetcher's consumer", n), func() bool {
			c, err := w.js.Consumer(context.Background(), event.DefaultStream, "fetcher")
			if err != nil {
				return false
			}
			info, err := c.Info(context.Background())
			return err == nil && info.NumWaiting >= n
		})
	}
	envB := maps.Clone(env)
	envB["FETCH_CONCURRENCY"] = "1"
	_, logsB, _ := w.fetcher(t, envB)
	waiting(1)
	envA := maps.Clone(env)
	envA["FETCH_CONCURRENCY"] = "2" // declared last: the deployment's cap is 2
	_, logsA, _ := w.fetcher(t, envA)
	waiting(2)
	w.notify(t, p)
	waitFor(t, 20*time.Second, "the created event's download", func() bool { return w.sim.DownloadStats().Users[user].Active > 0 })
	waiting(2) // B pulled again, behind A
	w.notifyEvent(t, "modified", modified)

	fetched, failed := w.events(t, 2)
	if len(fetched) != 2 || len(failed) != 0 {
		t.Fatalf("%d fetched, %d failed, want 2 and 0", len(fetched), len(failed))
	}
	if !strings.Contains(logsA.String(), p.ID) || !strings.Contains(logsB.String(), p.ID) {
		t.Fatalf("the two events did not go to the two replicas (A's log has the product: %v, B's: %v)",
			strings.Contains(logsA.String(), p.ID), strings.Contains(logsB.String(), p.ID))
	}
	var bodies int
	for _, r := range w.sim.DownloadLog() {
		if r.Product == p.ID && r.Method == http.MethodGet && (r.Status == http.StatusOK || r.Status == http.StatusPartialContent) {
			bodies++
		}
	}
	if peak := w.sim.DownloadStats().Peak; bodies != 1 || peak != 1 {
		t.Errorf("%d downloads of the product, a peak of %d at once; want 1 and 1 (the second replica waits for the first's lease, then finds it stored)", bodies, peak)
	}
	if !strings.Contains(logsA.String(), "another replica is downloading this product") {
		t.Errorf("replica A did not say it waited for B's lease:\n%s", logsA)
	}
}

// twoEvents is a world with an S3 target downloading at 2 MiB/s, and a
// product of size with its modified version (the same bytes).
func twoEvents(t *testing.T, size int64) (w *world, env map[string]string, p, modified *cdsesim.Product) {
	w = newWorld(t)
	store := s3test.Start(t)
	env = store.Env()
	env["FETCH_TARGET"] = "s3://" + store.Bucket + "/products"
	w.sim.SetDownloadRate(2 << 20)
	p = w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = size })[0]
	m := *p
	m.ModificationDate = p.ModificationDate.Add(time.Minute)
	return w, env, p, &m
}
