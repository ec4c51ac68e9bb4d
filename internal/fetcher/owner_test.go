package fetcher

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestFetchStreamOwner: FETCH_STREAM records the product stream its
// fetcher consumes. A second deployment (NATS_STREAM STAGING) left with
// the default FETCH_STREAM stops at once, not ready and not retrying,
// naming both streams and FETCH_STREAM; with a stream and prefixes of its own it
// runs; a stream without an owner (made before owners were recorded) is
// adopted by the default NATS_STREAM only.
func TestFetchStreamOwner(t *testing.T) {
	const none = "-" // CDSE_FETCHED exists without an owner
	production := fetchconfig.Default()
	staging := fetchconfig.Default()
	staging.ProductStream.Stream, staging.SubjectPrefix = "STAGING", "staging.product"
	ownStaging := staging
	ownStaging.Stream, ownStaging.FetchedPrefix, ownStaging.FailedPrefix = "STAGING_FETCHED", "staging.fetched", "staging.fetchfailed"
	for _, c := range []struct {
		name     string
		existing string // the owner CDSE_FETCHED has before; "": no such stream
		cfg      fetchconfig.Config
		refused  bool
	}{
		{name: "missing: created for its product stream", cfg: staging},
		{name: "its own", existing: event.DefaultStream, cfg: production},
		{name: "another deployment's", existing: event.DefaultStream, cfg: staging, refused: true},
		{name: "a stream of its own beside another deployment's", existing: event.DefaultStream, cfg: ownStaging},
		{name: "without an owner: adopted by the default NATS_STREAM", existing: none, cfg: production},
		{name: "without an owner: refused to another NATS_STREAM", existing: none, cfg: staging, refused: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			js, closeNC := natstest.JetStream(t, natstest.RunJetStream(t).ClientURL())
			defer closeNC()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: c.cfg.ProductStream.Stream, Subjects: []string{c.cfg.SubjectPrefix + ".>"}}); err != nil {
				t.Fatal(err)
			}
			if c.existing != "" {
				sc := jetstream.StreamConfig{Name: production.Stream, Subjects: []string{production.FetchedPrefix + ".>", production.FailedPrefix + ".>"}}
				if c.existing != none {
					sc.Metadata = map[string]string{topology.OwnerKey: c.existing}
				}
				if _, err := js.CreateStream(ctx, sc); err != nil {
					t.Fatal(err)
				}
			}
			log, _ := test.NewNullLogger()
			a, err := New(c.cfg, Parts{}, prometheus.NewRegistry(), log)
			if err != nil {
				t.Fatal(err)
			}
			a.js = js
			if c.refused {
				// The fetcher stops (its consume ends Run) rather than
				// retry.
				err := a.consume(ctx)
				if !errors.Is(err, topology.ErrNotOwner) {
					t.Fatalf("consume ended with %v, want refused", err)
				}
				for _, s := range []string{"CDSE_FETCHED", event.DefaultStream, "STAGING", "FETCH_STREAM"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("the error does not name %s: %v", s, err)
					}
				}
				if a.health.report()[checkConsumer] == "" {
					t.Error("ready")
				}
				return
			}
			if _, err := a.setUp(ctx); err != nil {
				t.Fatal(err)
			}
			s, err := js.Stream(ctx, c.cfg.Stream)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.CachedInfo().Config.Metadata[topology.OwnerKey]; got != c.cfg.ProductStream.Stream {
				t.Errorf("%s's owner %q, want %s", c.cfg.Stream, got, c.cfg.ProductStream.Stream)
			}
		})
	}
}
