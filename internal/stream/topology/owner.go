package topology

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
)

// OwnerKey is the metadata key in which a stream that serves one product
// stream records that stream's name: the complete stream, the fetcher's
// stream. Two receivers on one NATS (staging beside production) have a
// product stream each, so its name tells their other streams apart, and
// the second one's default settings cannot write into the first one's.
const OwnerKey = "cdse-product-stream"

// ErrNotOwner marks a stream that another product stream owns, or that
// owns none and may not be adopted, or subjects that another stream
// takes: writing there would mix two
// deployments' messages (a consumer of one would read the other's
// complete ranges, or fetched events), so it is a configuration error,
// not one to retry.
var ErrNotOwner = errors.New("another deployment's stream")

// errSubjectsOverlap is JetStream's error code of a stream whose subjects
// another stream takes (nats.go names no error for it).
const errSubjectsOverlap jetstream.ErrorCode = 10065

// EnsureOwned creates cfg's stream recording owner, the product stream it
// serves, in its metadata, or brings an existing one of owner's to cfg
// (its other metadata kept). A stream whose metadata names another
// product stream is refused. One without an owner, made before owners
// were recorded, is adopted only when owner is event.DefaultStream: the
// default deployment is the one that made it, and a second one with its
// own NATS_STREAM, whose other settings are still the defaults, must not
// take it over. change names the settings that give the deployment a
// stream of its own, for the error; the caller's wrapping names cfg's
// stream.
func EnsureOwned(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig, owner, change string) (*jetstream.StreamInfo, error) {
	for attempt := 0; ; attempt++ {
		s, err := js.Stream(ctx, cfg.Name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			want := cfg
			want.Metadata = withOwner(cfg.Metadata, owner)
			s, err = js.CreateStream(ctx, want)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) && attempt == 0 {
				continue // another deployment created it meanwhile: look whose it is
			}
			if apiErr := (*jetstream.APIError)(nil); errors.As(err, &apiErr) && apiErr.ErrorCode == errSubjectsOverlap {
				// A stream of its own on another deployment's subjects:
				// the same mistake, half fixed.
				return nil, fmt.Errorf("%w: its subjects %v are another stream's (%v): set %s", ErrNotOwner, cfg.Subjects, err, change)
			}
			if err != nil {
				return nil, fmt.Errorf("create: %w", err)
			}
			return s.CachedInfo(), nil
		}
		if err != nil {
			return nil, fmt.Errorf("look up: %w", err)
		}
		have := s.CachedInfo().Config.Metadata
		switch h := have[OwnerKey]; {
		case h == owner, h == "" && owner == event.DefaultStream:
		case h == "":
			return nil, fmt.Errorf("%w: it records no product stream (it was made before its metadata %s was), and only the default NATS_STREAM %s adopts it, not %s: set %s",
				ErrNotOwner, OwnerKey, event.DefaultStream, owner, change)
		default:
			return nil, fmt.Errorf("%w: it belongs to the product stream %s (its metadata %s), not to NATS_STREAM %s: set %s",
				ErrNotOwner, h, OwnerKey, owner, change)
		}
		want := cfg
		want.Metadata = withOwner(have, owner)
		s, err = js.UpdateStream(ctx, want)
		if err != nil {
			return nil, fmt.Errorf("update: %w", err)
		}
		return s.CachedInfo(), nil
	}
}

// withOwner is m (not changed) with OwnerKey set to owner.
func withOwner(m map[string]string, owner string) map[string]string {
	out := maps.Clone(m)
	if out == nil {
		out = map[string]string{}
	}
	out[OwnerKey] = owner
	return out
}
