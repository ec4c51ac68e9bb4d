package ingest

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

func parse(t testing.TB, name string) *notification.Notification {
	t.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, fixtures.Notification(t, name)); err != nil {
		t.Fatal(err)
	}
	ns, err := notification.Parse(buf.Bytes(), 1)
	if err != nil {
		t.Fatal(err)
	}
	return &ns[0]
}

// routeAll routes every notification to the same interests.
type routeAll []Routed

func (r routeAll) Match(_ *notification.Notification, routes []Routed) []Routed {
	return append(routes, r...)
}

// BenchmarkHeaders is the cost of one stored message's headers, every
// optional header on.
func BenchmarkHeaders(b *testing.B) {
	n := parse(b, "created-s2.json")
	colls, err := stac.ParseCollections(stac.DefaultCollections)
	if err != nil {
		b.Fatal(err)
	}
	r := &Route{Prefix: "cdse.product", CloudEvents: true, CatalogueURL: "https://catalogue.dataspace.copernicus.eu/odata/v1",
		StacURL: "https://stac.dataspace.copernicus.eu/v1", StacCollections: colls}
	id := n.DedupeKey()
	b.ReportAllocs()
	for b.Loop() {
		_ = headers(n, id, SourcePush, r)
	}
}
