package fetch

import (
	"net/http"
	"testing"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// TestLateChecksumVerifiedInPlace: a product the catalogue publishes
// without a checksum is stored unverified; when its checksum arrives in a
// modified event, the fetcher reads the stored object back from the
// target and verifies it there (its fetched event says so, with the
// checksums), and the download service sees no second download; into a
// directory and into the real S3 server.
func TestLateChecksumVerifiedInPlace(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"directory", "s3"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			env, _, _ := into(t, where)
			p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ChecksumForm = cdsesim.ChecksumNone })[0]
			w.notify(t, p)
			w.fetcher(t, env)
			fetched, _ := w.events(t, 1)
			first, err := event.DecodeFetchedData(fetched[0].Data, fetched[0].Header)
			if err != nil || first.Verified() {
				t.Fatalf("the product without a checksum: %+v %v, want stored unverified", first, err)
			}
			later, err := w.sim.AddChecksum(p.ID)
			if err != nil {
				t.Fatal(err)
			}
			w.notifyEvent(t, "modified", later)
			fetched, failed := w.events(t, 2)
			if len(fetched) != 2 || len(failed) != 0 {
				t.Fatalf("%d fetched, %d failed, want 2 and 0", len(fetched), len(failed))
			}
			second, err := event.DecodeFetchedData(fetched[1].Data, fetched[1].Header)
			if err != nil {
				t.Fatal(err)
			}
			md5Hex, b3 := later.Checksums()
			if !second.VerifiedInPlace || !second.Unchanged || second.Checksums["MD5"] != md5Hex || second.Checksums["BLAKE3"] != b3 {
				t.Errorf("the modified event's fetched event: in place %v, unchanged %v, checksums %v; want true, true, MD5 %s BLAKE3 %s",
					second.VerifiedInPlace, second.Unchanged, second.Checksums, md5Hex, b3)
			}
			var bodies int
			for _, r := range w.sim.DownloadLog() {
				if r.Product == p.ID && r.Method == http.MethodGet && (r.Status == http.StatusOK || r.Status == http.StatusPartialContent) {
					bodies++
				}
			}
			if bodies != 1 {
				t.Errorf("%d downloads of the product, want 1 (the late checksum verified where the bytes are)", bodies)
			}
		})
	}
}
