package fetch

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// TestKill9ResumesFromThePartial: a fetcher killed with SIGKILL in the
// middle of a large product leaves its partial file; the next replica
// (after FETCH_ACK_WAIT) asks for the rest with Range, stores the product
// once, verified, and the bytes the download host sent for it add up to
// less than 1.5 times its size.
func TestKill9ResumesFromThePartial(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const size = 16 << 20
	w.sim.SetDownloadRate(2 << 20) // 8 s for the whole product
	p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = size })[0]
	dir := t.TempDir()
	env := map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_ACK_WAIT": "5s"}
	first := w.startFetcher(t, env)
	w.notify(t, p)

	// Kill once 60 % of the product is on disk: starting over would make
	// the bytes sent at least 1.6 times the size.
	var part string
	deadline := time.Now().Add(30 * time.Second)
	for held := int64(0); held < size*6/10; {
		if time.Now().After(deadline) {
			t.Fatalf("the partial did not reach %d bytes in 30s (%d)", size*6/10, held)
		}
		time.Sleep(20 * time.Millisecond)
		part, held = partialFile(dir)
	}
	first.kill()
	info, err := os.Stat(part)
	if err != nil {
		t.Fatalf("the partial is gone after kill -9: %v", err)
	}
	kept := info.Size()

	w.sim.SetDownloadRate(cdsesim.Unthrottled)
	w.startFetcher(t, env)
	fetched, failed := w.events(t, 1)
	if len(fetched) != 1 || len(failed) != 0 {
		t.Fatalf("%d fetched, %d failed, want 1 and 0", len(fetched), len(failed))
	}
	md5, b3 := p.Checksums()
	h := fetched[0].Header
	if h.Get("Cdse-Checksum-MD5") != md5 || h.Get("Cdse-Checksum-BLAKE3") != b3 || h.Get("Cdse-Object-Size") != fmt.Sprint(size) {
		t.Errorf("fetched event %v", h)
	}
	url := h.Get("Cdse-Object-Url")
	got, err := os.ReadFile(strings.TrimPrefix(url, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(p.Content())
	if !bytes.Equal(got, want) {
		t.Errorf("the stored product (%d bytes) is not the product's bytes", len(got))
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Errorf("the partial is still there: %v", err)
	}

	// The proof of the resume: what the download host sent, in total. A
	// request is noted when its handler returns, which may follow the
	// client's last read: wait until the complete one is noted.
	var sent int64
	var ranged bool
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		sent, ranged = 0, false
		complete := false
		for _, r := range w.sim.DownloadLog() {
			if r.Product == p.ID {
				sent += r.Bytes
				ranged = ranged || (r.Range != "" && r.Status == 206)
				complete = complete || r.Complete
			}
		}
		if complete || time.Now().After(deadline) {
			break
		}
	}
	if !ranged {
		t.Error("no 206 answer to a Range request: the second replica started over")
	}
	if sent >= size*3/2 {
		t.Errorf("the download host sent %d bytes for a product of %d (%d kept on disk at the kill): not resumed", sent, size, kept)
	}
	t.Logf("kept %d of %d bytes at the kill; %d sent in total (%.2f × the size)", kept, size, sent, float64(sent)/size)
}
