package fetch

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// TestFrozenPastTheAckWaitStopsItsDownload: a replica frozen (SIGSTOP)
// in the middle of a download for longer than FETCH_ACK_WAIT has lost the
// product event to another replica; resumed, it stops its download at
// once instead of running it beside the other's (two connections for one
// product, one more than FETCH_CONCURRENCY), and the product is stored
// once. Before, its first in-progress ack after the resume was accepted
// (the server does not tell deliveries apart) and it carried on.
func TestFrozenPastTheAckWaitStopsItsDownload(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.sim.SetDownloadRate(256 << 10)
	const size = 8 << 20 // 32 s at 256 KiB/s: still running at the resume
	p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = size })[0]
	dir := t.TempDir()
	env := map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_ACK_WAIT": "5s"}
	first := w.startFetcher(t, env)
	w.notify(t, p)
	downloads := func() (active int, begun int64) {
		u := w.sim.DownloadStats().Users[user]
		return u.Active, u.Begun
	}
	waitFor := func(d time.Duration, what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !ok(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				a, b := downloads()
				t.Fatalf("%s: not within %v (%d downloads active, %d begun)", what, d, a, b)
			}
		}
	}
	waitFor(20*time.Second, "the first download", func() bool { a, _ := downloads(); return a == 1 })
	if err := first.signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	w.startFetcher(t, env)
	// The redelivery after the ack wait, then the partial's lock taken
	// over after another ack wait of a silent holder: the second replica
	// downloads.
	waitFor(30*time.Second, "the second replica's download", func() bool { _, b := downloads(); return b >= 2 })
	if err := first.signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	waitFor(5*time.Second, "the resumed replica's download stopped", func() bool { a, _ := downloads(); return a == 1 })
	t.Logf("the resumed replica's download stopped %v after SIGCONT", time.Since(resumed).Round(time.Millisecond))
	w.sim.SetDownloadRate(cdsesim.Unthrottled)
	fetched, failed := w.events(t, 1)
	if len(fetched) != 1 || len(failed) != 0 || fetched[0].Header.Get("Cdse-Object-Size") != fmt.Sprint(size) {
		t.Fatalf("%d fetched, %d failed: %v", len(fetched), len(failed), fetched)
	}
}
