package fetch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// TestIdleTimeout: a download service that stops sending is cut after
// IdleTimeout and the download resumed.
func TestIdleTimeout(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, _ := f.product(t, sized(300<<10))
	var stalled atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stalled.CompareAndSwap(false, true) {
			w.Header().Set("Content-Length", "307200")
			w.WriteHeader(200)
			w.Write(make([]byte, 1000))
			w.(http.Flusher).Flush()
			<-r.Context().Done() // the client gave up on it
			return
		}
		http.Redirect(w, r, f.dl+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer front.Close()
	o := f.options()
	o.DownloadURL = front.URL + "/odata/v1"
	o.IdleTimeout = 200 * time.Millisecond
	fe := f.fetcher(t, o, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The stalled bytes are not the product's: the resumed download's
	// checksum fails and the second, whole, download succeeds.
	r, err := fe.Fetch(ctx, p, "p.zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := testutilValue(t, f, "idle"); got != 1 {
		t.Errorf("idle retries %v", got)
	}
	_ = r
}

func testutilValue(t *testing.T, f *fixture, cause string) float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "cdse_fetcher_retries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cause" && l.GetValue() == cause {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
