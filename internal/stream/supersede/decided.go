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

// StreamDecisions are the versions consumer's decisions on stream as
// complete.Deferred asks for them (complete.Decisions): the stream's last
// sequence, and whether every product event at or below a sequence is
// decided, waiting at most a bound, asking every fiftieth of it.
func StreamDecisions(js jetstream.JetStream, stream string) StreamDecided {
	return StreamDecided{js: js, stream: stream}
}

// StreamDecided is StreamDecisions' answer.
type StreamDecided struct {
	js     jetstream.JetStream
	stream string
}

// Last is the stream's last sequence now.
func (d StreamDecided) Last(ctx context.Context) (uint64, error) {
	s, err := d.js.Stream(ctx, d.stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", d.stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", d.stream, err)
	}
	return info.State.LastSeq, nil
}

// Decided is Decided, waiting at most bound for it (none: asked once).
func (d StreamDecided) Decided(ctx context.Context, seq uint64, bound time.Duration) (bool, error) {
	if bound <= 0 {
		return Decided(ctx, d.js, d.stream, seq)
	}
	return WaitDecided(ctx, d.js, d.stream, seq, bound, bound/50)
}
