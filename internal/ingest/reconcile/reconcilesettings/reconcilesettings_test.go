package reconcilesettings

import (
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	on := Default()
	on.ReconcileInterval, on.ReconcileFilter = 15*time.Minute, "Collection/Name eq 'SENTINEL-2'"
	for _, tc := range []struct {
		name      string
		change    func(*Reconcile)
		interests bool
		want      []string
	}{
		{"valid", func(*Reconcile) {}, false, nil},
		{"off: nothing checked", func(r *Reconcile) { r.ReconcileInterval, r.ReconcileEvents = 0, "nonsense" }, false, nil},
		{"no filter", func(r *Reconcile) { r.ReconcileFilter = " " }, false, []string{"RECONCILE_FILTER"}},
		{"no filter, interests' union", func(r *Reconcile) { r.ReconcileFilter = "" }, true, nil},
		{"every problem", func(r *Reconcile) {
			r.ReconcileEvents, r.ReconcileInterval, r.ReconcileLookback = "born", time.Second, 48*time.Hour
		}, false, []string{"RECONCILE_EVENTS", "RECONCILE_INTERVAL 1s", "RECONCILE_LOOKBACK (48h0m0s)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := on
			tc.change(&r)
			err := r.Validate(tc.interests, 24*time.Hour)
			if len(tc.want) == 0 && err != nil {
				t.Fatalf("unexpected problems: %v", err)
			}
			if len(tc.want) > 0 && (err == nil || strings.Count(err.Error(), "\n")+1 != len(tc.want)) {
				t.Fatalf("problems %v, want %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("problems %q lack %q", err, w)
				}
			}
		})
	}
}

func TestValidatePageSize(t *testing.T) {
	for size, bad := range map[int]bool{0: true, 1: false, 100: false, 1000: false, 1001: true} {
		if err := (Reconcile{ReconcilePageSize: size}).ValidatePageSize(); (err != nil) != bad {
			t.Errorf("page size %d: %v, want a problem: %v", size, err, bad)
		}
	}
}
