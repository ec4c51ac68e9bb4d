package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamOptions describe the stream the receiver publishes to.
type StreamOptions struct {
	Name     string
	Subjects []string
	Replicas int
	// Duplicates is JetStream's duplicate window: a Nats-Msg-Id seen within
	// it is acknowledged as a duplicate and not stored again. The server keeps
	// the ids of this window in memory.
	Duplicates time.Duration
	MaxAge     time.Duration // 0: no limit
	MaxBytes   int64         // 0: no limit
}

// EnsureStream creates the stream, or updates an existing one compatibly:
// our subjects are added to the ones it has, and the duplicate window,
// replicas and limits we own are set. Storage and retention an operator chose
// are kept; a stream on memory storage is refused, since a 2xx must survive a
// server restart.
func EnsureStream(ctx context.Context, js jetstream.JetStream, o StreamOptions) (*jetstream.StreamInfo, error) {
	s, err := js.Stream(ctx, o.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		s, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:        o.Name,
			Description: "Catalogue product notifications, one message per product event (cdse receiver)",
			Subjects:    o.Subjects,
			Storage:     jetstream.FileStorage,
			Retention:   jetstream.LimitsPolicy,
			Discard:     jetstream.DiscardOld,
			Replicas:    max(o.Replicas, 1),
			Duplicates:  o.Duplicates,
			MaxAge:      o.MaxAge,
			MaxBytes:    orUnlimited(o.MaxBytes),
		})
		if err != nil {
			return nil, fmt.Errorf("create stream %s: %w", o.Name, err)
		}
		return s.CachedInfo(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up stream %s: %w", o.Name, err)
	}
	cfg := s.CachedInfo().Config
	if cfg.Storage != jetstream.FileStorage {
		return nil, fmt.Errorf("stream %s uses %s storage; the receiver needs file storage so that acknowledged notifications survive a restart", o.Name, cfg.Storage)
	}
	want := cfg
	for _, subj := range o.Subjects {
		if !slices.Contains(want.Subjects, subj) {
			want.Subjects = append(slices.Clone(want.Subjects), subj)
		}
	}
	want.Duplicates = o.Duplicates
	want.MaxAge = o.MaxAge
	want.MaxBytes = orUnlimited(o.MaxBytes)
	if o.Replicas > 0 {
		want.Replicas = o.Replicas
	}
	if slices.Equal(want.Subjects, cfg.Subjects) && want.Duplicates == cfg.Duplicates &&
		want.MaxAge == cfg.MaxAge && want.MaxBytes == cfg.MaxBytes && want.Replicas == cfg.Replicas {
		return s.CachedInfo(), nil
	}
	info, err := js.UpdateStream(ctx, want)
	if err != nil {
		return nil, fmt.Errorf("update stream %s: %w", o.Name, err)
	}
	return info.CachedInfo(), nil
}

func orUnlimited(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}
