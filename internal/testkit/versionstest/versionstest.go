// Package versionstest runs the receiver's versions consumer
// (internal/stream/supersede) in a test, as the receiver runs it, and waits
// for its decisions.
package versionstest

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Run runs a Tracker of topo's product stream with o (MaxAge one hour
// when unset) until the test ends.
func Run(t testing.TB, topo *topology.Topology, o supersede.Options) {
	t.Helper()
	if o.MaxAge == 0 {
		o.MaxAge = time.Hour
	}
	log, _ := test.NewNullLogger()
	tr, err := supersede.New(o, topo, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = tr.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Decided waits, at most 20 s, until the versions consumer of topo's
// product stream has decided every product event stored up to the stream
// sequence seq.
func Decided(t testing.TB, topo *topology.Topology, seq uint64) {
	t.Helper()
	ok, err := supersede.WaitDecided(context.Background(), topo.JetStream(), topo.ProductStream(), seq, 20*time.Second, 20*time.Millisecond)
	if !ok || err != nil {
		t.Fatalf("the versions consumer did not decide up to %d within 20 s: %v", seq, err)
	}
}
