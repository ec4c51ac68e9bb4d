package fetcher

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestOldestUnfetched: the age is that of the first product event on the
// consumer's subjects not acknowledged, whether waiting or delivered and
// unacked; other subjects and acknowledged events do not count; 0 when
// the consumer has nothing left.
func TestOldestUnfetched(t *testing.T) {
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := fetchconfig.Default()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.ProductStream.Stream, Subjects: []string{cfg.SubjectPrefix + ".>"}}); err != nil {
		t.Fatal(err)
	}
	c, err := js.CreateOrUpdateConsumer(ctx, cfg.ProductStream.Stream, jetstream.ConsumerConfig{Durable: "f", AckPolicy: jetstream.AckExplicitPolicy,
		FilterSubjects: cfg.SubjectList(), AckWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, Parts{}, prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	a.js = js
	age := func() time.Duration {
		t.Helper()
		d, err := a.oldestUnfetched(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := age(); d != 0 {
		t.Fatalf("empty: %s", d)
	}
	// Not on the consumer's subjects: not counted.
	if _, err := js.Publish(ctx, cfg.SubjectPrefix+".deleted.S2.X", nil); err != nil {
		t.Fatal(err)
	}
	if d := age(); d != 0 {
		t.Fatalf("a deleted event the consumer does not take: %s", d)
	}
	before := time.Now()
	for _, s := range []string{".created.S2.A", ".modified.S2.B"} {
		if _, err := js.Publish(ctx, cfg.SubjectPrefix+s, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Both waiting: the first one's age.
	d := age()
	if d <= 0 || d > time.Since(before) {
		t.Fatalf("two waiting: %s, want in (0, %s]", d, time.Since(before))
	}
	// The first delivered, not acked: still its age.
	b, err := c.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	var first jetstream.Msg
	for m := range b.Messages() {
		first = m
	}
	if first == nil {
		t.Fatal("nothing delivered")
	}
	if d2 := age(); d2 < d {
		t.Fatalf("the first delivered and unacked: %s, want at least %s", d2, d)
	}
	// The first acked: the second one's age; both acked: 0.
	if err := first.DoubleAck(ctx); err != nil {
		t.Fatal(err)
	}
	if d := age(); d <= 0 {
		t.Fatalf("the second waiting: %s", d)
	}
	b, err = c.Fetch(1)
	if err != nil {
		t.Fatal(err)
	}
	for m := range b.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if d := age(); d != 0 {
		t.Fatalf("all acked: %s", d)
	}
}
