package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestSecondReceiverRefusesTheFirstsCompleteStream: production and staging
// on one NATS, each with its own NATS_STREAM and prefixes. Production,
// without a reconciler, claims CDSE_COMPLETE at start; staging left with
// the default complete settings stops at start with an error naming both
// streams (its ranges would read as production's), and starts with its
// own COMPLETE_STREAM and COMPLETE_SUBJECT_PREFIX.
func TestSecondReceiverRefusesTheFirstsCompleteStream(t *testing.T) {
	staging := stagingBesideProduction(t)
	if err := staging.Validate(); err != nil {
		t.Fatal(err)
	}
	log, _ := test.NewNullLogger()
	a, err := New(staging, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) })
	select {
	case err := <-a.Errors():
		if !errors.Is(err, topology.ErrNotOwner) {
			t.Errorf("stopped on %v, want topology.ErrNotOwner", err)
		}
		for _, s := range []string{event.CompleteStream, event.DefaultStream, "STAGING", "COMPLETE_STREAM"} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("the error does not name %s: %v", s, err)
			}
		}
	case <-time.After(15 * time.Second):
		t.Fatal("staging runs on production's complete stream")
	}

	staging.CompleteStream, staging.CompletePrefix = "STAGING_COMPLETE", "staging.complete"
	startApp(t, staging) // ready
}

// stagingBesideProduction starts production, with the default settings,
// on a NATS of its own, and returns staging's configuration on that NATS:
// its own NATS_STREAM, subject and quarantine prefixes, the other
// settings production's.
func stagingBesideProduction(t *testing.T) config.Config {
	t.Helper()
	srv := natstest.RunJetStream(t)
	prod := testConfig(t, "")
	prod.NATSURL = srv.ClientURL()
	startApp(t, prod)

	staging := prod
	staging.Addr, staging.AdminAddr = "127.0.0.1:0", "127.0.0.1:0"
	staging.Stream, staging.SubjectPrefix = "STAGING", "staging.product"
	staging.QuarantineStream, staging.QuarantinePrefix = "STAGING_QUARANTINE", "staging.quarantine"
	return staging
}
