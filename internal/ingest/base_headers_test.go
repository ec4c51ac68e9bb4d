//go:build benchbaseheaders

package ingest

import (
	"maps"
	"slices"
	"testing"

	"github.com/cdse-jetstream/receiver/event"
)

// TestBaseHeadersOnly: the baseline that make bench-headers compares with
// carries the routing headers and nothing else, or it would not measure
// what the consumer headers cost. Run with -tags benchbaseheaders.
func TestBaseHeadersOnly(t *testing.T) {
	n := parse(t, "modified-s2.json")
	r := &Route{Prefix: "cdse.product", CloudEvents: true, CatalogueURL: "https://catalogue.example/odata/v1",
		StacURL: "https://stac.example/v1", StacCollections: map[string]string{n.ProductType: "sentinel-2-l2a"}}
	h := headers(n, n.DedupeKey(), SourcePush, r)
	got := slices.Sorted(maps.Keys(h))
	want := []string{event.HeaderCollection, event.HeaderEvent, event.HeaderProductID, event.HeaderProductName,
		event.HeaderSource, event.HeaderSubscriptionID, event.HeaderMsgID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("headers %v, want %v", got, want)
	}
}
