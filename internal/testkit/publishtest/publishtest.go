// Package publishtest gives tests of the notification sources a real
// publisher: an embedded JetStream server on a random port, a connection, the
// stream, all stopped when the test ends.
package publishtest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/stream/natsconn"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// Stream is the stream the helpers create, and QuarantineStream the
// stream of refused bodies.
const (
	Stream           = "CDSE_PRODUCTS"
	QuarantineStream = "CDSE_QUARANTINE"
)

// Env is a publisher on a fresh server.
type Env struct {
	Server    *server.Server
	Conn      *nats.Conn
	JS        jetstream.JetStream
	Publisher *publish.Publisher
	// Topology owns the streams and buckets (Topology's options).
	Topology *topology.Topology
	// Quarantine stores on QuarantineStream (subjects cdse.quarantine.>).
	Quarantine *quarantine.Store
}

// Topology are the streams the helpers create: the product stream with a
// 24 h duplicate window, and the quarantine.
var Topology = topology.Options{Stream: Stream, SubjectPrefix: "cdse.product", Duplicates: 24 * time.Hour,
	QuarantineStream: QuarantineStream, QuarantinePrefix: "cdse.quarantine"}

// New starts a JetStream server (or uses srv if not nil), connects and
// ensures the stream with a 24 h duplicate window.
func New(t testing.TB, srv *server.Server) *Env {
	t.Helper()
	if srv == nil {
		srv = natstest.RunJetStream(t)
	}
	log, _ := test.NewNullLogger()
	nc, err := natsconn.Connect(natsconn.Options{URL: srv.ClientURL()}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: Stream, Timeout: 2 * time.Second}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	topo := topology.New(pub.JetStream(), Topology)
	if _, err := topo.EnsureProduct(context.Background()); err != nil {
		t.Fatal(err)
	}
	q, err := quarantine.New(topo, 2*time.Second, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &Env{Server: srv, Conn: nc, JS: pub.JetStream(), Publisher: pub, Topology: topo, Quarantine: q}
}

// Quarantined returns the bodies on the quarantine stream, in order.
func (e *Env) Quarantined(t testing.TB) []quarantine.Stored {
	t.Helper()
	return Quarantined(t, e.JS, QuarantineStream)
}

// Quarantined returns the bodies on the quarantine stream named stream,
// in order, with their bytes.
func Quarantined(t testing.TB, js jetstream.JetStream, stream string) []quarantine.Stored {
	t.Helper()
	var out []quarantine.Stored
	if err := quarantine.NewReader(js, stream).Each(context.Background(), func(s quarantine.Stored) error {
		out = append(out, s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Messages returns "subject source product-id" for each stored message, in order.
func (e *Env) Messages(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, m := range natstest.StreamMessages(t, e.JS, Stream) {
		out = append(out, m.Subject+" "+m.Header.Get("Cdse-Source")+" "+m.Header.Get("Cdse-Product-Id"))
	}
	return out
}
