package fetch

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchstatus"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
)

// fetcherStatus waits until the fetcher's /status meets ok, and returns it.
func fetcherStatus(t *testing.T, admin, what string, ok func(*fetchstatus.Fetcher) bool) *fetchstatus.Fetcher {
	t.Helper()
	var st *fetchstatus.Fetcher
	var err error
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if st, err = fetchstatus.Read(t.Context(), http.DefaultClient, "http://"+admin); err == nil && ok(st) {
			return st
		}
	}
	t.Fatalf("/status never showed %s: %+v %v", what, st, err)
	return nil
}

// TestFetcherStatus: /status on the admin port says what the fetcher is
// doing (a download under way with its bytes, rate and time left; the
// product stored, verified, and where; a failure by its reason; the
// consumer's events; ready), and `fetcher status` prints it as a table,
// JSON or YAML from FETCH_ADMIN_ADDR.
func TestFetcherStatus(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	good := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 1 << 20 })[0]
	gone := w.sim.Generate(cdsesim.Sentinel2, 1)[0]
	notFound(t, w, gone)
	admin, _, _ := w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + t.TempDir()})
	w.notify(t, good, gone)
	fetcherStatus(t, admin, "the product stored and the failure", func(st *fetchstatus.Fetcher) bool {
		return len(st.LastStored) == 1 && st.LastStored[0].ProductID == good.ID && st.LastStored[0].Verified &&
			strings.HasSuffix(st.LastStored[0].URL, good.Name+".zip") && st.Failures["not_found"] == 1
	})

	// A download of 40 s: under way while the test looks.
	w.sim.SetDownloadRate(1 << 20)
	big := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 40 << 20 })[0]
	w.notify(t, big)
	st := fetcherStatus(t, admin, "the download under way", func(st *fetchstatus.Fetcher) bool {
		return len(st.Downloads) == 1 && st.Downloads[0].ProductID == big.ID && st.Downloads[0].Bytes > 0 &&
			st.Downloads[0].Size == big.ContentLength && st.Downloads[0].Rate > 0 && st.Downloads[0].ETA != ""
	})
	if !st.Ready || st.Consumer == nil || st.Consumer.InFlight != 1 || st.Consumer.Waiting != 0 {
		t.Errorf("readiness or consumer: %+v %+v", st, st.Consumer)
	}

	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	tests := []struct {
		format string
		check  func(t *testing.T, out string)
	}{
		{format: "table", check: func(t *testing.T, out string) {
			for _, re := range []string{
				`(?m)^READY\s+yes$`,
				`(?m)^CONSUMER\s+fetcher on CDSE_PRODUCTS: 0 waiting, 1 in flight$`,
				`(?m)^` + big.ID + `\s+[\d.]+ MiB\s+40\.0 MiB\s+[\d.]+ (KiB|MiB)/s\s+\S+s\s+\S+` + big.Name + `\.zip$`,
				`(?m)^` + good.ID + `\s+\S+\s+1\.0 MiB\s+true\s+file://\S+` + good.Name + `\.zip$`,
				`(?m)^not_found\s+1$`,
			} {
				if !regexp.MustCompile(re).MatchString(out) {
					t.Errorf("no %s in\n%s", re, out)
				}
			}
		}},
		{format: "json", check: func(t *testing.T, out string) {
			var st fetchstatus.Fetcher
			if err := json.Unmarshal([]byte(out), &st); err != nil || len(st.Downloads) != 1 || len(st.LastStored) != 1 || st.Failures["not_found"] != 1 {
				t.Errorf("%v: %s", err, out)
			}
		}},
		{format: "yaml", check: func(t *testing.T, out string) {
			if !strings.Contains(out, "productId: "+big.ID) || !strings.Contains(out, "not_found: 1") {
				t.Errorf("yaml:\n%s", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			code, out, errOut := bins.Run(t, bin, map[string]string{"FETCH_ADMIN_ADDR": admin}, "status", "-o", tt.format)
			if code != 0 {
				t.Fatalf("exit %d: %s%s", code, out, errOut)
			}
			tt.check(t, out)
		})
	}

	// Nothing listening: exit 1, naming the setting.
	code, _, errOut := bins.Run(t, bin, map[string]string{"FETCH_ADMIN_ADDR": "127.0.0.1:1"}, "status")
	if code != 1 || !strings.Contains(errOut, "FETCH_ADMIN_ADDR=127.0.0.1:1") {
		t.Errorf("no fetcher: exit %d: %s", code, errOut)
	}
}
