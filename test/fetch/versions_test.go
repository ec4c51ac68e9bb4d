package fetch

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// Two versions of one Sentinel-2 L1C acquisition, real names
// (internal/cdse/versions/testdata/names.json): processing baseline
// 02.04, then the Collection-1 reprocessing 05.00.
const (
	olderS2 = "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE"
	newerS2 = "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE"
)

// version is a product of the simulator with a real S2 L1C name, sensed
// when its name says (its key's date is its ContentDate/Start).
func (w *world) version(t *testing.T, name string) *cdsesim.Product {
	t.Helper()
	sensed, err := time.Parse("20060102T150405", strings.Split(name, "_")[2])
	if err != nil {
		t.Fatal(err)
	}
	return w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) {
		p.Name, p.ContentStart, p.ContentEnd = name, sensed, sensed
		for i, a := range p.Attributes {
			if a.Name == "productType" {
				p.Attributes[i].Value = "S2MSI1C"
			}
		}
	})[0]
}

// known waits until the receiver's versions bucket has taken p in: the
// receiver's decision on it is made (the bucket trails the stream).
func (w *world) known(t *testing.T, p *cdsesim.Product) supersede.Standing {
	t.Helper()
	return knownBy(t, w.js, p)
}

// knownBy is known, reading the bucket through js.
func knownBy(t *testing.T, js jetstream.JetStream, p *cdsesim.Product) supersede.Standing {
	t.Helper()
	var st supersede.Standing
	waitFor(t, 20*time.Second, "the receiver's versions bucket takes "+p.Name+" in", func() bool {
		kv, err := js.KeyValue(context.Background(), topology.VersionsBucketOf(event.DefaultStream))
		if err != nil {
			return false
		}
		st, err = supersede.Lookup(context.Background(), kv, "S2A_MSIL1C_20150704T101006_R022_T32TPS", p.ID)
		return err == nil && st.Known
	})
	return st
}

// downloads are the download service's GETs of p's bytes.
func (w *world) downloads(p *cdsesim.Product) int {
	n := 0
	for _, r := range w.sim.DownloadLog() {
		if r.Product == p.ID && r.Method == http.MethodGet {
			n++
		}
	}
	return n
}

// TestVersions: two versions of one acquisition through the real
// receiver (which runs its versions consumer by default) and the fetcher
// binary.
func TestVersions(t *testing.T) {
	t.Parallel()

	// FETCH_VERSIONS=latest: the older version arriving after the newer
	// is not downloaded, and its fetched event says so. The fetcher
	// starts once the receiver has decided (it announced the older
	// superseded on arrival): a fetcher that takes a product before the
	// receiver's bucket knows it downloads it.
	t.Run("latest skips the older arriving late", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		newer, older := w.version(t, newerS2), w.version(t, olderS2)
		w.notify(t, newer)
		w.known(t, newer)
		w.notify(t, older)
		if st := w.known(t, older); st.SupersededBy == nil || st.SupersededBy.ID != newer.ID {
			t.Fatalf("the receiver's decision on the older version: %+v", st)
		}
		dir := t.TempDir()
		admin, _, _ := w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_VERSIONS": "latest"})
		fetched, failed := w.events(t, 2)
		if len(fetched) != 2 || len(failed) != 0 {
			t.Fatalf("%d fetched, %d failed events", len(fetched), len(failed))
		}
		got := natstest.CountBy(fetched, event.HeaderSkipped)
		if want := "superseded by " + newer.ID + " (" + newerS2 + ")"; got[want] != 1 || got[""] != 1 {
			t.Errorf("skipped headers %v, want one %q", got, want)
		}
		for _, m := range fetched {
			switch id := m.Header.Get(event.HeaderProductID); {
			case id == older.ID && (m.Header.Get(event.HeaderObjectURL) != "" || m.Header.Get(event.HeaderSupersededBy) != newer.ID):
				t.Errorf("the older version's event: %v", m.Header)
			case id == newer.ID && m.Header.Get(event.HeaderObjectURL) == "":
				t.Errorf("the newer version not stored: %v", m.Header)
			}
		}
		if n := w.downloads(older); n != 0 {
			t.Errorf("%d downloads of the superseded version, want none", n)
		}
		if n := w.downloads(newer); n != 1 {
			t.Errorf("%d downloads of the newer version, want 1", n)
		}
		if v := scrape.Value(t, "http://"+admin, `cdse_fetcher_versions_total{decision="skipped"}`); v != "1" {
			t.Errorf("skipped decisions %q", v)
		}
	})

	// FETCH_ON_SUPERSEDED=delete, beside the receiver's embedded server
	// with the fetcher's login (which reads the versions bucket and the
	// notices): the older version, stored first, is removed with its
	// STAC item once the newer arrives, and said by a fetched event.
	t.Run("delete removes the older stored first", func(t *testing.T) {
		t.Parallel()
		w := startWorld(t, true)
		dir := t.TempDir()
		w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_ON_SUPERSEDED": "delete",
			"NATS_USER": fetcherUser, "NATS_PASSWORD": fetcherPassword})
		older, newer := w.version(t, olderS2), w.version(t, newerS2)
		w.notify(t, older)
		fetched, _ := w.events(t, 1)
		path := strings.TrimPrefix(fetched[0].Header.Get(event.HeaderObjectURL), "file://")
		if _, err := os.Stat(path + ".json"); err != nil {
			t.Fatalf("the older version and its item: %v", err)
		}
		// Read with the fetcher's login: it may read the bucket. And
		// the newer would supersede nothing known before this.
		asFetcher, closeNC := natstest.JetStream(t, w.receiver.NATSURL, nats.UserInfo(fetcherUser, fetcherPassword))
		defer closeNC()
		knownBy(t, asFetcher, older)
		w.notify(t, newer)
		fetched, failed := w.events(t, 3)
		if len(failed) != 0 {
			t.Fatalf("%d failed events", len(failed))
		}
		removal := fetched[1]
		if fetched[2].Subject == "cdse.fetched.deleted.SENTINEL-2.S2MSI1C" {
			removal = fetched[2]
		}
		f, err := event.DecodeFetchedData(removal.Data, removal.Header)
		if err != nil || removal.Subject != "cdse.fetched.deleted.SENTINEL-2.S2MSI1C" || !f.Deleted || f.Superseded == nil ||
			f.ProductID != older.ID || f.Superseded.By.ID != newer.ID || f.ObjectURL != "file://"+path {
			t.Fatalf("the removal's event %s %v: %+v %v", removal.Subject, removal.Header, f, err)
		}
		for _, p := range []string{path, path + ".json"} {
			if _, err := os.Stat(p); !os.IsNotExist(err) {
				t.Errorf("%s after the newer version: %v", p, err)
			}
		}
		if n := w.downloads(newer); n != 1 {
			t.Errorf("%d downloads of the newer version", n)
		}
	})

	// The defaults: both versions are stored, as before; the fetcher's
	// consumer does not take the notices.
	t.Run("defaults keep both", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t)
		dir := t.TempDir()
		w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir})
		newer, older := w.version(t, newerS2), w.version(t, olderS2)
		w.notify(t, newer)
		w.known(t, newer)
		w.notify(t, older)
		if st := w.known(t, older); st.SupersededBy == nil {
			t.Fatalf("the receiver's decision on the older version: %+v", st)
		}
		fetched, failed := w.events(t, 2)
		if len(fetched) != 2 || len(failed) != 0 {
			t.Fatalf("%d fetched, %d failed events", len(fetched), len(failed))
		}
		for _, m := range fetched {
			path := strings.TrimPrefix(m.Header.Get(event.HeaderObjectURL), "file://")
			if _, err := os.Stat(path); err != nil || m.Header.Get(event.HeaderSkipped) != "" {
				t.Errorf("%s: %v %v", m.Header.Get(event.HeaderProductName), err, m.Header)
			}
		}
		c, err := w.js.Consumer(context.Background(), event.DefaultStream, "fetcher")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range c.CachedInfo().Config.FilterSubjects {
			if strings.HasPrefix(s, event.DefaultSupersededPrefix) {
				t.Errorf("the default consumer takes %s", s)
			}
		}
	})
}
