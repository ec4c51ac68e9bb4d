package topology

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ReadTo reads stream s with an ordered consumer of cfg (no state on the
// server, nothing to clean up), perFetch messages a fetch, handing fn each
// message and its metadata (stream sequence, time), up to the message at last — the last
// there was when the caller looked — or the end of the stream, so that a
// read ends while messages keep arriving. An error of fn ends the read
// and is returned as it is.
func ReadTo(ctx context.Context, s jetstream.Stream, cfg jetstream.OrderedConsumerConfig, perFetch int, last uint64, fn func(m jetstream.Msg, md *jetstream.MsgMetadata) error) error {
	name := s.CachedInfo().Config.Name
	cons, err := s.OrderedConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("read stream %s: %w", name, err)
	}
	for {
		batch, err := cons.Fetch(perFetch, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return fmt.Errorf("read stream %s: %w", name, err)
		}
		n := 0
		var seq uint64
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("read stream %s: %w", name, err)
			}
			seq = md.Sequence.Stream
			if err := fn(m, md); err != nil {
				return err
			}
			if seq >= last {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return fmt.Errorf("read stream %s: %w", name, err)
		}
		if n == 0 {
			return nil
		}
	}
}
