package fetch

import (
	"fmt"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// TestModifiedEvents: a modified event whose product did not change is not
// downloaded again, and its fetched event says Cdse-Object-Unchanged; one
// whose bytes changed (a reprocessing: new length and checksums) is
// downloaded again and the object replaced.
func TestModifiedEvents(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 1 << 20 })[0]
	dir := t.TempDir()
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir})
	// downloads are the bodies the download host began to send: counted
	// before the first byte, so before the fetched event of that download.
	downloads := func() int64 { return w.sim.DownloadStats().Users[user].Begun }
	w.notify(t, p)
	w.events(t, 1)

	// Modified, the same bytes (the content is a function of the id and
	// the length; only ModificationDate moves).
	same, err := w.sim.ReplaceContent(p.ID, p.ContentLength)
	if err != nil {
		t.Fatal(err)
	}
	w.notifyEvent(t, "modified", same)
	fetched, _ := w.events(t, 2)
	if len(fetched) != 2 {
		t.Fatalf("%d fetched events, want 2", len(fetched))
	}
	m := fetched[1].Header
	if m.Get("Cdse-Event") != "modified" || m.Get("Cdse-Object-Unchanged") != "true" || fetched[0].Header.Get("Cdse-Object-Unchanged") != "" {
		t.Errorf("the unchanged product's events: %v, then %v", fetched[0].Header, m)
	}
	if n := downloads(); n != 1 {
		t.Errorf("%d downloads, want 1: the unchanged product was fetched again", n)
	}

	// Modified with new bytes: downloaded again, the object replaced.
	changed, err := w.sim.ReplaceContent(p.ID, 2<<20)
	if err != nil {
		t.Fatal(err)
	}
	w.notifyEvent(t, "modified", changed)
	fetched, _ = w.events(t, 3)
	m = fetched[2].Header
	md5, _ := changed.Checksums()
	if m.Get("Cdse-Object-Unchanged") != "" || m.Get("Cdse-Object-Size") != fmt.Sprint(2<<20) || m.Get("Cdse-Checksum-MD5") != md5 {
		t.Errorf("the changed product's event: %v", m)
	}
	if n := downloads(); n != 2 {
		t.Errorf("%d downloads, want 2", n)
	}
}
