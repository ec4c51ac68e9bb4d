package trace_test

import (
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/receiver/trace"
)

// TestVersionsTable: the versions section's words for what it cannot
// show (no acquisition, no bucket) and for an undecided product, and the
// ids -o wide adds.
func TestVersionsTable(t *testing.T) {
	at := time.Date(2026, 11, 27, 23, 8, 2, 0, time.UTC)
	undecided := &trace.Versions{Acquisition: "S1A_IW_GRDH_1SDV_20231207T064649_20231207T064714_051545_0638F1", From: trace.FromMessage,
		Bucket: "CDSE_PRODUCTS_VERSIONS", Changed: &at, Standing: trace.StandingUndecided, Versions: []trace.Version{
			{ID: "a1", Name: "S1A_…_95E7", Version: "P20231207T080000.000000Z", Latest: true},
			{ID: "b2", Name: "S1A_…_4B74", Version: "U20240115T000000.000000Z", Undecided: true, Traced: true},
		}}
	for _, tt := range []struct {
		name string
		v    *trace.Versions
		wide bool
		want []string
	}{
		{"no acquisition", &trace.Versions{Bucket: "CDSE_PRODUCTS_VERSIONS", Note: trace.NoAcquisition}, false,
			[]string{"VERSIONS: no acquisition (no naming rule applies)\n"}},
		{"no bucket", &trace.Versions{Acquisition: "S2A_MSIL1C_20150704T101006_R022_T32TPS", From: trace.FromName, Bucket: "CDSE_PRODUCTS_VERSIONS",
			BucketMissing: true, Note: "no versions bucket CDSE_PRODUCTS_VERSIONS (RECEIVER_VERSIONS is off, or the receiver has not run its versions consumer)"}, false,
			[]string{"VERSIONS of acquisition S2A_MSIL1C_20150704T101006_R022_T32TPS (computed from its name); bucket CDSE_PRODUCTS_VERSIONS: no versions bucket", "RECEIVER_VERSIONS is off"}},
		{"undecided", undecided, false,
			[]string{"last changed 2026-11-27T23:08:02Z", "P20231207T080000.000000Z  -        S1A_…_95E7  latest", "*  U20240115T000000.000000Z  -        S1A_…_4B74  undecided", "This product (*): undecided", "No notice of supersession names it."}},
		{"wide", undecided, true, []string{"STANDING   ID\n", "latest     a1\n", "undecided  b2\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			if err := trace.Table(&b, trace.Result{Versions: tt.v}, tt.wide); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("no %q in\n%s", w, b.String())
				}
			}
		})
	}
}
