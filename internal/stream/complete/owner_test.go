package complete_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/stream/complete"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestTwoReceivers: staging beside production on one NATS, each with its
// own NATS_STREAM. Production claims CDSE_COMPLETE (it stores no range:
// no reconciler). Staging with the default complete settings is refused,
// naming both streams, and nothing reaches CDSE_COMPLETE, where
// production's consumers would read "complete until now"; with its own
// COMPLETE_STREAM and COMPLETE_SUBJECT_PREFIX both announce their ranges,
// neither in the other's stream.
func TestTwoReceivers(t *testing.T) {
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	ctx := context.Background()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	products := []complete.Scope{{Name: event.CompleteProducts, Filter: "f", Events: []event.Kind{event.Created}}}
	tracker := func(o topology.Options) (*topology.Topology, *complete.Tracker) {
		t.Helper()
		topo := topology.New(js, o)
		tr, err := complete.New(topo, prometheus.NewRegistry(), logrus.New())
		if err != nil {
			t.Fatal(err)
		}
		return topo, tr
	}
	prod, prodTracker := tracker(topology.Options{Stream: event.DefaultStream, SubjectPrefix: "cdse.product", Duplicates: time.Minute})
	if err := prod.EnsureComplete(ctx); err != nil {
		t.Fatal(err)
	}

	staging := topology.Options{Stream: "STAGING", SubjectPrefix: "staging.product", Duplicates: time.Minute}
	_, tr := tracker(staging)
	err := tr.Advance(ctx, complete.Listed{Event: event.Created, From: t0, Until: t0.Add(time.Hour)}, products)
	if !errors.Is(err, topology.ErrNotOwner) || !strings.Contains(err.Error(), event.CompleteStream) ||
		!strings.Contains(err.Error(), event.DefaultStream) || !strings.Contains(err.Error(), "STAGING") {
		t.Errorf("staging announces into production's complete stream: %v", err)
	}
	if n := natstest.StreamCount(t, js, event.CompleteStream); n != 0 {
		t.Errorf("%s holds %d ranges of staging's", event.CompleteStream, n)
	}

	staging.CompleteStream, staging.CompletePrefix = "STAGING_COMPLETE", "staging.complete"
	stag, stagTracker := tracker(staging)
	for _, c := range []struct {
		topo  *topology.Topology
		tr    *complete.Tracker
		until time.Time
	}{{stag, stagTracker, t0.Add(2 * time.Hour)}, {prod, prodTracker, t0.Add(3 * time.Hour)}} {
		if err := c.tr.Advance(ctx, complete.Listed{Event: event.Created, From: t0, Until: c.until}, products); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		stream, subject string
		until           time.Time
	}{
		{"STAGING_COMPLETE", "staging.complete._products.created", t0.Add(2 * time.Hour)},
		{event.CompleteStream, event.CompleteSubject(event.CompleteProducts, event.Created), t0.Add(3 * time.Hour)},
	} {
		msgs := natstest.StreamMessages(t, js, c.stream)
		if len(msgs) != 1 || msgs[0].Subject != c.subject {
			t.Errorf("%s holds %+v, want its receiver's range alone on %s", c.stream, msgs, c.subject)
			continue
		}
		r, err := event.DecodeCompleteData(msgs[0].Data, nil)
		if err != nil || !r.Until.Equal(c.until) {
			t.Errorf("%s: %+v %v, want until %s", c.stream, r, err, c.until)
		}
	}
}
