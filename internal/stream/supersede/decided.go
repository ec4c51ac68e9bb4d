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
