package ingest

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
)

// BenchmarkPublished is what a product message routed to three interests
// costs ingest, as Publish uses it: the message, its headers, then its
// copies and theirs, every optional header on. Without the interests'
// matching (a fixed list), so that the copies' own cost shows.
func BenchmarkPublished(b *testing.B) {
	n := parse(b, "created-s2.json")
	ns := []notification.Notification{*n}
	colls, err := stac.ParseCollections(stac.DefaultCollections)
	if err != nil {
		b.Fatal(err)
	}
	// What Publish has nats.go do to every message it sends.
	send := func(h map[string][]string) { nats.Header(h).Set(jetstream.ExpectedStreamHeader, event.DefaultStream) }
	for _, tt := range []struct {
		name      string
		interests Interests
	}{{"copies=0", nil}, {"copies=3", routeAll{{Name: "s2-alps"}, {Name: "s2"}, {Name: "iberia", AreaUnevaluated: "non_finite"}}}} {
		b.Run(tt.name, func(b *testing.B) {
			r := &Route{Prefix: event.DefaultPrefix, CloudEvents: true, CatalogueURL: "https://catalogue.dataspace.copernicus.eu/odata/v1",
				StacURL: "https://stac.dataspace.copernicus.eu/v1", StacCollections: colls,
				Interests: tt.interests, InterestPrefix: event.DefaultInterestPrefix}
			b.ReportAllocs()
			for b.Loop() {
				m := Messages(ns, r, SourcePush)[0]
				send(m.MessageHeader())
				if m.MakeCopies != nil {
					for _, c := range m.MakeCopies() {
						send(c.MessageHeader())
					}
				}
			}
		})
	}
}
