package supersede

import (
	"fmt"
	"testing"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
)

// TestRecordIsBounded: an acquisition's record keeps at most maxKnown
// products (the bucket's values stay small: a load of one product name
// under many ids, as make bench sends, is an acquisition of equal
// versions); the first forgotten is one no longer among the latest, and
// the latest stay.
func TestRecordIsBounded(t *testing.T) {
	id := versions.Identity{Acquisition: "S2A_MSIL1C_20150704T101006_R022_T32TPS", Rule: versions.RuleS2}
	var r record
	decide(&r, id, known{ID: "old", Version: "0204"}, event.Created, "")
	for i := range 2 * maxKnown {
		o := decide(&r, id, known{ID: fmt.Sprint(i), Version: "0500"}, event.Created, "")
		if want := i == 0; (len(o.notices) == 1) != want {
			t.Fatalf("product %d: notices %+v", i, o.notices)
		}
	}
	if len(r.Products) != maxKnown || r.index("old") >= 0 || r.index(fmt.Sprint(2*maxKnown-1)) < 0 {
		t.Errorf("%d products kept, the superseded one kept %v", len(r.Products), r.index("old") >= 0)
	}
	if l := r.latest(id); len(l) != maxKnown {
		t.Errorf("%d latest", len(l))
	}
}
