package supersede

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Decided says whether the versions consumer of stream has decided every
// product event stored at or below the stream sequence seq: its ack floor
// has reached seq, or it has nothing pending nor unacknowledged (the
// product stream's last messages may be copies or notices, which it does
// not read, so its floor alone need never reach seq). No consumer yet:
// not decided.
func Decided(ctx context.Context, js jetstream.JetStream, stream string, seq uint64) (bool, error) {
	c, err := js.Consumer(ctx, stream, topology.VersionsConsumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("consumer %s: %w", topology.VersionsConsumer, err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("consumer %s: %w", topology.VersionsConsumer, err)
	}
	return info.AckFloor.Stream >= seq || info.NumPending == 0 && info.NumAckPending == 0, nil
}

// WaitDecided waits, at most bound, until Decided says true; false when
// the bound (or ctx) ends first. It asks every tick.
func WaitDecided(ctx context.Context, js jetstream.JetStream, stream string, seq uint64, bound, tick time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		ok, err := Decided(ctx, js, stream, seq)
		switch {
		case ok:
			return true, nil
		case ctx.Err() != nil:
			return false, nil
		case err != nil:
			return false, err
		}
		select {
		case <-ctx.Done():
			return false, nil
		case <-t.C:
		}
	}
}

// StreamDecided is a wait for the decisions on stream (for
// complete.Deferred): WaitDecided up to the stream's last sequence when it
// is called (a reconcile pass that just ended: everything it stored is at
// or below it), asking every fiftieth of bound.
func StreamDecided(js jetstream.JetStream, stream string, bound time.Duration) func(context.Context) (bool, error) {
	return func(ctx context.Context) (bool, error) { return waitStreamDecided(ctx, js, stream, bound) }
}

func waitStreamDecided(ctx context.Context, js jetstream.JetStream, stream string, bound time.Duration) (bool, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return false, fmt.Errorf("stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return false, fmt.Errorf("stream %s: %w", stream, err)
	}
	return WaitDecided(ctx, js, stream, info.State.LastSeq, bound, bound/50)
}
