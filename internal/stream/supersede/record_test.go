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

// TestDecisionComparesWithTheLatest: a product event of a product already
// in the record is decided against the latest version known, not only
// by what the product was announced superseded by: a product taken in by
// a deletion that links it to nothing (its cause is not obsolescence)
// and modified after a newer version arrived is not copied as the latest.
func TestDecisionComparesWithTheLatest(t *testing.T) {
	id := versions.Identity{Acquisition: "S2A_MSIL1C_20150704T101006_R022_T32TPS", Rule: versions.RuleS2}
	older, newer := known{ID: "older", Version: "0204"}, known{ID: "newer", Version: "0500"}
	type step struct {
		p     known
		ev    event.Kind
		cause string
	}
	tests := []struct {
		name  string
		steps []step // the last one is decided
		want  string
	}{
		{"deleted not as obsolete, a newer one, then modified", []step{{older, event.Deleted, "Data corrupted"}, {newer, event.Created, ""}, {older, event.Modified, ""}}, CopySkipped},
		{"superseded, then modified", []step{{older, event.Created, ""}, {newer, event.Created, ""}, {older, event.Modified, ""}}, CopySkipped},
		{"arrived older", []step{{newer, event.Created, ""}, {older, event.Created, ""}}, CopySkipped},
		{"the latest, modified", []step{{older, event.Created, ""}, {newer, event.Created, ""}, {newer, event.Modified, ""}}, CopyLatest},
		{"alone, modified", []step{{older, event.Created, ""}, {older, event.Modified, ""}}, CopyLatest},
		{"deleted", []step{{older, event.Created, ""}, {newer, event.Created, ""}, {older, event.Deleted, "Obsolete product"}}, CopyDeleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r record
			for _, s := range tt.steps {
				decide(&r, id, s.p, s.ev, s.cause)
			}
			last := tt.steps[len(tt.steps)-1]
			if got := r.decision(id, last.p.ID, last.ev); got != tt.want {
				t.Errorf("decision %s, want %s (record %+v)", got, tt.want, r.Products)
			}
		})
	}
}
