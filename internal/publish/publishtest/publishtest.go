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

	"github.com/cdse-jetstream/receiver/internal/natstest"
	"github.com/cdse-jetstream/receiver/internal/publish"
	"github.com/cdse-jetstream/receiver/internal/quarantine"
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
	// Quarantine stores on QuarantineStream (subjects cdse.quarantine.>).
	Quarantine *quarantine.Store
}

// New starts a JetStream server (or uses srv if not nil), connects and
// ensures the stream with a 24 h duplicate window.
func New(t testing.TB, srv *server.Server) *Env {
	t.Helper()
	if srv == nil {
		srv = natstest.RunJetStream(t)
	}
	log, _ := test.NewNullLogger()
	nc, err := publish.Connect(publish.ConnectOptions{URL: srv.ClientURL()}, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	pub, err := publish.NewPublisher(nc, publish.PublisherOptions{Stream: Stream, Timeout: 2 * time.Second}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := publish.EnsureStream(context.Background(), pub.JetStream(), publish.StreamOptions{Name: Stream, Subjects: []string{"cdse.product.>"}, Duplicates: 24 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	q, err := quarantine.New(pub.JetStream(), QuarantineOptions, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	return &Env{Server: srv, Conn: nc, JS: pub.JetStream(), Publisher: pub, Quarantine: q}
}

// QuarantineOptions are the quarantine settings of the helpers.
var QuarantineOptions = quarantine.Options{Stream: QuarantineStream, SubjectPrefix: "cdse.quarantine", Duplicates: time.Hour, Timeout: 2 * time.Second}

// Quarantined returns the bodies on the quarantine stream, in order.
func (e *Env) Quarantined(t testing.TB) []quarantine.Stored {
	t.Helper()
	list, err := quarantine.NewReader(e.JS, QuarantineStream).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return list
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
