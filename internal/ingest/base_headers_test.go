//go:build benchbaseheaders

package ingest

import (
	"maps"
	"slices"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/notification"
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
	want := []string{notification.HeaderCollection, notification.HeaderEvent, notification.HeaderProductID, notification.HeaderProductName,
		notification.HeaderSource, notification.HeaderSubscriptionID, notification.HeaderMsgID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("headers %v, want %v", got, want)
	}
}
