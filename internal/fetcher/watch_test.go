package fetcher

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestConsumerRestored: running fetchers whose consumer is changed behind
// their back (a max_ack_pending of 1 and another filter, as any consumer
// of an unguarded NATS can send) or deleted find it at once or at their
// next look: a warning names what was found, it is counted, and the
// consumer is declared again, as it was and where it had got to, and
// consumed again by every replica (each has a pull request waiting on it:
// a deleted consumer ends the consumption of the old one).
func TestConsumerRestored(t *testing.T) {
	tests := []struct {
		name     string
		replicas int
		tamper   func(ctx context.Context, js jetstream.JetStream, cfg fetchconfig.Config) error
		found    string // the counter's label
		warn     string // in the warning
	}{
		{"changed", 1, func(ctx context.Context, js jetstream.JetStream, cfg fetchconfig.Config) error {
			_, err := js.UpdateConsumer(ctx, cfg.ProductStream.Stream, jetstream.ConsumerConfig{Durable: cfg.FetchConsumer, AckPolicy: jetstream.AckExplicitPolicy,
				FilterSubject: cfg.SubjectPrefix + ".deleted.>", MaxAckPending: 1, AckWait: time.Minute, DeliverPolicy: jetstream.DeliverNewPolicy})
			return err
		}, "changed", "max_ack_pending 1 (want 4)"},
		{"gone", 1, func(ctx context.Context, js jetstream.JetStream, cfg fetchconfig.Config) error {
			return js.DeleteConsumer(ctx, cfg.ProductStream.Stream, cfg.FetchConsumer)
		}, "gone", "is gone"},
		{"gone, two replicas", 2, func(ctx context.Context, js jetstream.JetStream, cfg fetchconfig.Config) error {
			return js.DeleteConsumer(ctx, cfg.ProductStream.Stream, cfg.FetchConsumer)
		}, "gone", "is gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := natstest.RunJetStream(t)
			js, closeNC := natstest.JetStream(t, srv.ClientURL())
			defer closeNC()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cfg := fetchconfig.Default()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.ProductStream.Stream, Subjects: []string{cfg.SubjectPrefix + ".>", "cdse.fetchretry.>"}}); err != nil {
				t.Fatal(err)
			}
			// Events the consumer does not take: a new consumer starts
			// after them (FETCH_START=new), and so must a restored one.
			for range 3 {
				if _, err := js.Publish(ctx, cfg.SubjectPrefix+".deleted.S2.X", nil); err != nil {
					t.Fatal(err)
				}
			}
			log, hook := test.NewNullLogger()
			var apps []*App
			for range tt.replicas {
				a, err := New(cfg, Parts{}, prometheus.NewRegistry(), log)
				if err != nil {
					t.Fatal(err)
				}
				a.js, a.consumerEvery = js, 50*time.Millisecond
				apps = append(apps, a)
				run, stop := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- a.consume(run) }()
				defer func() {
					stop()
					if err := <-done; err != nil {
						t.Errorf("consume: %v", err)
					}
				}()
			}
			ready := func() bool {
				for _, a := range apps {
					if a.health.report()[checkConsumer] != "" {
						return false
					}
				}
				c, err := js.Consumer(ctx, cfg.ProductStream.Stream, cfg.FetchConsumer)
				return err == nil && c.CachedInfo().NumWaiting >= tt.replicas
			}
			waitFor(t, "ready and consuming", ready)
			before, err := js.Consumer(ctx, cfg.ProductStream.Stream, cfg.FetchConsumer)
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.tamper(ctx, js, cfg); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a warning", func() bool {
				for _, e := range hook.AllEntries() {
					if e.Level == logrus.WarnLevel && strings.Contains(e.Message, tt.warn) {
						return true
					}
				}
				return false
			})
			waitFor(t, "counted", func() bool {
				n := 0.0
				for _, a := range apps {
					n += testutil.ToFloat64(a.restored.WithLabelValues(tt.found))
				}
				return n >= 1
			})
			waitFor(t, "restored, ready and consumed by every replica", func() bool {
				c, err := js.Consumer(ctx, cfg.ProductStream.Stream, cfg.FetchConsumer)
				return err == nil && consumerChanges(apps[0].consumerConfig(), c.CachedInfo().Config) == nil && ready()
			})
			c, err := js.Consumer(ctx, cfg.ProductStream.Stream, cfg.FetchConsumer)
			if err != nil {
				t.Fatal(err)
			}
			// Where it was: past the three events it does not take.
			if got, want := c.CachedInfo().AckFloor.Stream, before.CachedInfo().AckFloor.Stream; got != want || want != 3 {
				t.Errorf("the restored consumer's ack floor %d, before %d (want 3)", got, want)
			}
		})
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
