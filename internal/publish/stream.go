package publish

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
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

// Keeper owns the product stream while the receiver runs: it creates it
// (retrying while NATS is away), notices when it disappears or is replaced,
// creates it again, and then makes the publisher forget the ids it
// remembers as stored — they are not in the new stream, and answering
// "duplicate" for them would lose them. Readiness only reads what the
// keeper knows; it never creates anything.
type Keeper struct {
	js  jetstream.JetStream
	o   StreamOptions
	pub *Publisher
	log logrus.FieldLogger

	mu      sync.Mutex
	created time.Time // the stream's creation time, as last seen
	ok      atomic.Bool
}

// NewKeeper keeps the stream o for pub.
func NewKeeper(js jetstream.JetStream, o StreamOptions, pub *Publisher, log logrus.FieldLogger) *Keeper {
	return &Keeper{js: js, o: o, pub: pub, log: log.WithField("stream", o.Name)}
}

// Ready says whether the stream existed at the last look.
func (k *Keeper) Ready() bool { return k.ok.Load() }

// Ensure creates or updates the stream once.
func (k *Keeper) Ensure(ctx context.Context) (*jetstream.StreamInfo, error) {
	info, err := EnsureStream(ctx, k.js, k.o)
	if err != nil {
		k.ok.Store(false)
		return nil, err
	}
	k.seen(info.Created)
	return info, nil
}

// seen records the creation time of the stream found; a different one
// than before means a new stream.
func (k *Keeper) seen(created time.Time) {
	k.mu.Lock()
	renewed := !k.created.IsZero() && !created.Equal(k.created)
	k.created = created
	k.mu.Unlock()
	if renewed {
		k.pub.ForgetRecent()
		k.log.Warn("the stream was replaced: the ids remembered as stored are forgotten, so nothing is answered duplicate that the new stream does not hold")
	}
	k.ok.Store(true)
}

// Check looks at the stream once, creating it again if it is missing.
func (k *Keeper) Check(ctx context.Context) error {
	s, err := k.js.Stream(ctx, k.o.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		k.ok.Store(false)
		k.pub.ForgetRecent()
		k.log.Warn("stream missing; creating it again")
		_, err = k.Ensure(ctx)
		return err
	}
	if err != nil {
		k.ok.Store(false)
		return fmt.Errorf("look up stream %s: %w", k.o.Name, err)
	}
	k.seen(s.CachedInfo().Created)
	return nil
}

// Run checks the stream every interval until ctx ends.
func (k *Keeper) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := k.Check(cctx); err != nil && ctx.Err() == nil {
			k.log.WithError(err).Warn("stream check failed")
		}
		cancel()
	}
}
