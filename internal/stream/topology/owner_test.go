package topology_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestCompleteOwner: the complete stream records the product stream it
// serves; a receiver with another NATS_STREAM is refused with a message
// naming both streams and the settings to change, and works with a
// complete stream of its own (a name alone is not enough: its subjects
// must be its own too); a stream without an owner (made before
// owners were recorded) is adopted by the default NATS_STREAM only, its
// other metadata kept.
func TestCompleteOwner(t *testing.T) {
	const none = "-" // the stream exists without an owner
	staging := topology.Options{Stream: "STAGING", SubjectPrefix: "staging.product", Duplicates: time.Minute}
	ownStaging := staging
	ownStaging.CompleteStream, ownStaging.CompletePrefix = "STAGING_COMPLETE", "staging.complete"
	halfStaging := staging
	halfStaging.CompleteStream = "STAGING_COMPLETE"
	production := topology.Options{Stream: event.DefaultStream, SubjectPrefix: "cdse.product", Duplicates: time.Minute}
	for _, c := range []struct {
		name     string
		existing string // the owner CDSE_COMPLETE has before; "": no such stream
		o        topology.Options
		refused  []string // what the error names; nil: accepted
	}{
		{name: "missing: created for its receiver", o: staging},
		{name: "its own", existing: "STAGING", o: staging},
		{name: "another receiver's", existing: event.DefaultStream, o: staging,
			refused: []string{"CDSE_COMPLETE", event.DefaultStream, "STAGING", "COMPLETE_STREAM", "COMPLETE_SUBJECT_PREFIX"}},
		{name: "another receiver's, the default one refused too", existing: "STAGING", o: production,
			refused: []string{"CDSE_COMPLETE", event.DefaultStream, "STAGING", "COMPLETE_STREAM"}},
		{name: "a stream of its own beside another receiver's", existing: event.DefaultStream, o: ownStaging},
		{name: "a stream of its own on another receiver's subjects", existing: event.DefaultStream, o: halfStaging,
			refused: []string{"STAGING_COMPLETE", "cdse.complete.>", "COMPLETE_SUBJECT_PREFIX"}},
		{name: "without an owner: adopted by the default NATS_STREAM", existing: none, o: production},
		{name: "without an owner: refused to another NATS_STREAM", existing: none, o: staging,
			refused: []string{"CDSE_COMPLETE", event.DefaultStream, "STAGING", "COMPLETE_STREAM"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			js, closeNC := natstest.JetStream(t, natstest.RunJetStream(t).ClientURL())
			defer closeNC()
			ctx := context.Background()
			if c.existing != "" {
				// As an earlier receiver made it, with an operator's
				// metadata beside the owner.
				cfg := topology.New(js, production).CompleteConfig()
				cfg.Metadata = map[string]string{"team": "eo"}
				if c.existing != none {
					cfg.Metadata[topology.OwnerKey] = c.existing
				}
				if _, err := js.CreateStream(ctx, cfg); err != nil {
					t.Fatal(err)
				}
			}
			topo := topology.New(js, c.o)
			err := topo.EnsureComplete(ctx)
			if c.refused != nil {
				if !errors.Is(err, topology.ErrNotOwner) {
					t.Fatalf("accepted (%v), want refused", err)
				}
				for _, s := range c.refused {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("the error does not name %s: %v", s, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			md := streamMetadata(t, js, topo.CompleteStream())
			if md[topology.OwnerKey] != c.o.Stream {
				t.Errorf("%s's owner %q, want %s", topo.CompleteStream(), md[topology.OwnerKey], c.o.Stream)
			}
			if c.existing != "" && topo.CompleteStream() == event.CompleteStream && md["team"] != "eo" {
				t.Errorf("the operator's metadata is lost: %v", md)
			}
			if c.existing != "" && c.existing != none && topo.CompleteStream() != event.CompleteStream {
				if got := streamMetadata(t, js, event.CompleteStream)[topology.OwnerKey]; got != c.existing {
					t.Errorf("CDSE_COMPLETE's owner became %q", got)
				}
			}
			if err := topo.EnsureComplete(ctx); err != nil {
				t.Errorf("again: %v", err)
			}
		})
	}
}

func streamMetadata(t *testing.T, js jetstream.JetStream, name string) map[string]string {
	t.Helper()
	s, err := js.Stream(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config.Metadata
}
