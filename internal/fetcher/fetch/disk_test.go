package fetch

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target/file"
	"github.com/cdse-jetstream/receiver/internal/testkit/mountns"
)

// TestDiskReserve, on a real 16 MiB tmpfs with a 4 MiB reserve: a
// product that can never fit is a permanent failure before any request;
// one that does not fit now is target.ErrNoSpace (not permanent: the fetcher
// pauses); a body of unknown length stops before the reserve, for good,
// its partial removed: the file system never fills.
func TestDiskReserve(t *testing.T) {
	dir, here := mountns.Tmpfs(t, "16m")
	if !here {
		return
	}
	const reserve = 4 << 20
	requests := 0
	srv := func(w http.ResponseWriter, r *http.Request) {
		requests++
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	fe, _ := hostile(t, srv, nil)
	tgt, err := file.New(dir, reserve)
	if err != nil {
		t.Fatal(err)
	}
	fe, err = New(fe.o, bearer{}, tgt, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctxFor(t, 30*time.Second)

	_, err = fe.Fetch(ctx, Product{ID: "a", Name: "big.SAFE", ContentLength: 20 << 20}, "big.SAFE.zip", nil)
	if !errors.Is(err, target.ErrTargetTooSmall) || !Permanent(err) {
		t.Errorf("larger than the file system less the reserve: %v", err)
	}
	// 6 MiB taken by something else: 10 MiB free, 6 beyond the reserve.
	if err := os.WriteFile(filepath.Join(dir, "other"), make([]byte, 6<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = fe.Fetch(ctx, Product{ID: "b", Name: "mid.SAFE", ContentLength: 8 << 20}, "mid.SAFE.zip", nil)
	if !errors.Is(err, target.ErrNoSpace) || Permanent(err) {
		t.Errorf("not room now: %v", err)
	}
	if requests != 0 {
		t.Errorf("%d requests for products that do not fit", requests)
	}
	_, err = fe.Fetch(ctx, Product{ID: "c", Name: "endless.SAFE"}, "endless.SAFE.zip", nil)
	if !errors.Is(err, ErrTooLarge) || !Permanent(err) || !strings.Contains(err.Error(), "free space") {
		t.Errorf("unknown length past the free space: %v", err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	if free := int64(st.Bavail) * int64(st.Bsize); free < reserve {
		t.Errorf("%d bytes free, less than the reserve", free)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".partial", "*.part"))
	for _, l := range left {
		if fi, err := os.Stat(l); err == nil && fi.Size() > 0 && strings.Contains(l, "endless") {
			t.Errorf("the partial of a product of unknown length is kept: %s", l)
		}
	}
}
