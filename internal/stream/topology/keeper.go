package topology

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/platform/retry"
)

// Keeper owns the product stream while the receiver runs: it creates it
// (retrying while NATS is away), notices when it disappears or is replaced,
// creates it again, and then makes the publisher forget the ids it
// remembers as stored — they are not in the new stream, and answering
// "duplicate" for them would lose them. Readiness only reads what the
// keeper knows; it never creates anything.
type Keeper struct {
	t   *Topology
	pub Forgetter
	log logrus.FieldLogger

	mu      sync.Mutex
	created time.Time // the stream's creation time, as last seen
	ok      atomic.Bool
}

// Forgetter is told that the stream was replaced (internal/stream/publish's
// Publisher forgets the ids it remembers as stored).
type Forgetter interface{ ForgetRecent() }

// NewKeeper keeps t's product stream for pub.
func NewKeeper(t *Topology, pub Forgetter, log logrus.FieldLogger) *Keeper {
	return &Keeper{t: t, pub: pub, log: log.WithField("stream", t.ProductStream())}
}

// Ready says whether the stream existed at the last look.
func (k *Keeper) Ready() bool { return k.ok.Load() }

// Ensure creates or updates the stream once.
func (k *Keeper) Ensure(ctx context.Context) (*jetstream.StreamInfo, error) {
	info, err := k.t.EnsureProduct(ctx)
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
	s, err := k.t.js.Stream(ctx, k.t.o.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		k.ok.Store(false)
		k.pub.ForgetRecent()
		k.log.Warn("stream missing; creating it again")
		_, err = k.Ensure(ctx)
		return err
	}
	if err != nil {
		k.ok.Store(false)
		return fmt.Errorf("look up stream %s: %w", k.t.o.Stream, err)
	}
	k.seen(s.CachedInfo().Created)
	return nil
}

// Run checks the stream every interval until ctx ends.
func (k *Keeper) Run(ctx context.Context, every time.Duration) {
	retry.Every(ctx, every, false, func() {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := k.Check(cctx); err != nil && ctx.Err() == nil {
			k.log.WithError(err).Warn("stream check failed")
		}
	})
}
