package interest

import (
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

// BenchmarkRouterMatch is what 20 interests cost the receiver per product
// event it stores: the interests of the load harness (bench/interests20.yaml,
// four of them areas) evaluated against every fixture notification, reading
// its product once (Match); and the messages ingest builds, each with its
// copies as Publish makes them (Messages, against the same without
// interests). ns/product is per fixture, ns/interest per product and
// interest.
func BenchmarkRouterMatch(b *testing.B) {
	log := logrus.New()
	log.SetLevel(logrus.PanicLevel)
	r, err := NewRouter(filepath.Join("..", "..", "..", "bench", "interests20.yaml"), prometheus.NewRegistry(), log)
	if err != nil {
		b.Fatal(err)
	}
	var ns []notification.Notification
	for name, raw := range fixtures.All(b) {
		got, err := notification.Parse(raw, 1000)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		ns = append(ns, got...)
	}
	report := func(b *testing.B, interests int) {
		per := float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(len(ns))
		b.ReportMetric(per, "ns/product")
		if interests > 0 {
			b.ReportMetric(per/float64(interests), "ns/interest")
		}
	}
	b.Run("Match", func(b *testing.B) {
		b.ReportAllocs()
		var routes []ingest.Routed
		for b.Loop() {
			for i := range ns {
				routes = r.Match(&ns[i], routes[:0])
			}
		}
		report(b, r.Current().Len())
	})
	// Published also builds every message's headers, copies' included, as
	// Publish does, with the receiver's default headers (CloudEvents,
	// download and STAC URLs): what a copy's headers cost.
	colls, err := stac.ParseCollections(stac.DefaultCollections)
	if err != nil {
		b.Fatal(err)
	}
	for _, tt := range []struct {
		name      string
		interests ingest.Interests
		headers   bool
	}{{"Messages/without", nil, false}, {"Messages/with", r, false}, {"Published/without", nil, true}, {"Published/with", r, true}} {
		b.Run(tt.name, func(b *testing.B) {
			route := &ingest.Route{Prefix: event.DefaultPrefix, Interests: tt.interests, InterestPrefix: event.DefaultInterestPrefix}
			if tt.headers {
				route.CloudEvents, route.CatalogueURL = true, "https://catalogue.dataspace.copernicus.eu/odata/v1"
				route.StacURL, route.StacCollections = "https://stac.dataspace.copernicus.eu/v1", colls
			}
			send := func(m *publish.Message) {
				if tt.headers {
					nats.Header(m.MessageHeader()).Set(jetstream.ExpectedStreamHeader, event.DefaultStream)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				for _, m := range ingest.Messages(ns, route, ingest.SourcePush) {
					// What Publish does for a message it sends: its
					// headers (when measured, with what nats.go sets),
					// then its copies.
					send(&m)
					if m.MakeCopies == nil {
						continue
					}
					for _, c := range m.MakeCopies() {
						send(&c)
					}
				}
			}
			report(b, 0)
		})
	}
}
