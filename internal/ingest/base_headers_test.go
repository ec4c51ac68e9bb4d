//go:build benchbaseheaders

package ingest

import (
	"maps"
	"slices"
	"testing"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
)

// TestBaseHeadersOnly: the baseline that make bench-headers compares with
// carries the routing headers and nothing else, on the product message and
// on its copies (which add their own), or it would not measure what the
// consumer headers cost. Run with -tags benchbaseheaders.
func TestBaseHeadersOnly(t *testing.T) {
	n := parse(t, "modified-s2.json")
	r := &Route{Prefix: "cdse.product", CloudEvents: true, CatalogueURL: "https://catalogue.example/odata/v1",
		StacURL: "https://stac.example/v1", StacCollections: map[string]string{n.ProductType: "sentinel-2-l2a"},
		InterestPrefix: "cdse.interest", Interests: routeAll{{Name: "a", AreaUnevaluated: "non_finite"}}}
	routing := []string{event.HeaderCollection, event.HeaderEvent, event.HeaderProductID, event.HeaderProductName,
		event.HeaderSource, event.HeaderSubscriptionID, event.HeaderMsgID}
	m := Messages([]notification.Notification{*n}, r, SourcePush)[0]
	copies := m.MakeCopies()
	if len(copies) != 1 {
		t.Fatalf("%d copies", len(copies))
	}
	for _, tt := range []struct {
		name string
		h    map[string][]string
		want []string
	}{
		{"product", m.MessageHeader(), routing},
		{"copy", copies[0].MessageHeader(), append(slices.Clone(routing), event.HeaderInterest, event.HeaderAreaUnevaluated)},
	} {
		got := slices.Sorted(maps.Keys(tt.h))
		slices.Sort(tt.want)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: headers %v, want %v", tt.name, got, tt.want)
		}
	}
}
