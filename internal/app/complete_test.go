package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/status"
)

// TestStatusSaysWhyNoCompleteRange: without the reconciler, /status has no
// complete range and says so for the product stream and each interest;
// with a RECONCILE_FILTER set by hand that is not the interests' union,
// the interests have none and /status says why, the product stream's
// awaits its first pass.
func TestStatusSaysWhyNoCompleteRange(t *testing.T) {
	file := filepath.Join(t.TempDir(), "interests.yaml")
	if err := os.WriteFile(file, []byte("interests:\n  - name: a\n    filter: Collection/Name eq 'SENTINEL-1'\n  - name: b\n    filter: Collection/Name eq 'SENTINEL-2'\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reasons := func(c *status.Complete) map[string]string {
		out := map[string]string{}
		for _, n := range c.NoRange {
			out[n.Interest] = n.Reason
		}
		return out
	}

	c := testConfig(t, t.TempDir())
	c.InterestsFile = file
	a, _ := startApp(t, c)
	st := a.Status(context.Background()).Complete
	if st == nil || len(st.Ranges) != 0 || st.Outcome() != "skip" {
		t.Fatalf("without the reconciler: %+v", st)
	}
	for _, name := range []string{event.CompleteProducts, "a", "b"} {
		if r := reasons(st)[name]; !strings.Contains(r, "RECONCILE_INTERVAL is off") {
			t.Errorf("%s: %q", name, r)
		}
	}
	_ = a.Shutdown(context.Background())

	c = testConfig(t, t.TempDir())
	c.InterestsFile = file
	c.ReconcileInterval, c.ReconcileFilter = time.Hour, "Collection/Name eq 'SENTINEL-2'"
	c.CDSEUsername, c.CDSEPassword = "u", "pw"
	c.CDSETokenURL, c.CDSECatalogueURL = "http://127.0.0.1:1/token", "http://127.0.0.1:1/odata/v1"
	a, _ = startApp(t, c)
	st = a.Status(context.Background()).Complete
	if st == nil || st.Outcome() != "skip" {
		t.Fatalf("with a hand-set filter: %+v", st)
	}
	rs := reasons(st)
	for _, name := range []string{"a", "b"} {
		if !strings.Contains(rs[name], "RECONCILE_FILTER is set by hand") {
			t.Errorf("%s: %q", name, rs[name])
		}
	}
	if !strings.Contains(rs[event.CompleteProducts], "no reconcile pass") {
		t.Errorf("%s: %q", event.CompleteProducts, rs[event.CompleteProducts])
	}
}
