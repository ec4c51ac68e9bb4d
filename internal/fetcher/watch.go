package fetcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// consumerCheckEvery is how often a running fetcher compares its consumer
// with what it declared. Anyone with the right to create consumers on the
// product stream (every consumer of an external NATS without narrower
// permissions, docs/consumers.md) can change it — another filter, a
// max_ack_pending of 1 — or delete it, and the fetcher would go on
// fetching less, or nothing, without a word.
const consumerCheckEvery = 30 * time.Second

// watchConsumer compares the consumer with consumerConfig every
// consumerEvery (and at once on checkNow) until ctx ends. Found changed
// or gone, the fetcher is not ready, says what it found, counts it and
// declares the consumer again; a gone consumer is re-created where the
// old one had got to (its last known ack floor), so that nothing stored
// meanwhile is skipped. resume starts consuming c again: the consumption
// of a deleted consumer has ended.
func (a *App) watchConsumer(ctx context.Context, c jetstream.Consumer, resume func(jetstream.Consumer) error) {
	info := c.CachedInfo()
	created, floor := info.Created, info.AckFloor.Stream
	t := time.NewTimer(a.consumerEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-a.checkNow:
		}
		t.Reset(a.consumerEvery)
		lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		found, err := a.js.Consumer(lctx, a.cfg.ProductStream.Stream, a.cfg.FetchConsumer)
		cancel()
		var what, why string
		var changes []string
		replaced := false
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			what = "gone"
			why = fmt.Sprintf("consumer %s is gone from %s", a.cfg.FetchConsumer, a.cfg.ProductStream.Stream)
		case err != nil:
			// NATS unreachable: /readyz says so already; look again later.
			a.log.WithError(err).Debug("cannot look up the fetcher's consumer")
			continue
		default:
			fi := found.CachedInfo()
			floor = fi.AckFloor.Stream
			changes = consumerChanges(a.consumerConfig(), fi.Config)
			// Deleted and created again between two looks: the old
			// consumption ended even if the configuration is ours.
			replaced = !fi.Created.Equal(created)
			if len(changes) > 0 {
				what = "changed"
				why = fmt.Sprintf("consumer %s changed: %s", a.cfg.FetchConsumer, strings.Join(changes, "; "))
			}
		}
		if what == "" && !replaced {
			a.setNotReady("")
			continue
		}
		log := a.log.WithField("consumer", a.cfg.FetchConsumer)
		if what != "" {
			a.setNotReady(why)
			if what == "gone" {
				// Acknowledged events past the floor are fetched again
				// (found already there); none is skipped.
				log = log.WithField("resume_at_stream_seq", floor+1)
			}
			log.Warnf("%s behind the fetcher's back; declaring it again (docs/consumers.md: what consumers may do)", why)
			restored, err := a.declare(ctx, floor+1)
			if err != nil {
				log.WithError(err).Warn("cannot declare the fetcher's consumer again; trying at the next look")
				continue
			}
			a.restored.WithLabelValues(what).Inc()
			found = restored
		} else {
			log.Warn("the fetcher's consumer was deleted and created again (by another replica restoring it, or by hand); consuming the new one")
		}
		if what == "gone" || replaced {
			if err := resume(found); err != nil {
				a.setNotReady(fmt.Sprintf("consumer %s: %v", a.cfg.FetchConsumer, err))
				log.WithError(err).Warn("cannot consume the fetcher's consumer again; trying at the next look")
				created = time.Time{} // not consuming: resume at the next look
				continue
			}
		}
		created = found.CachedInfo().Created
		a.setNotReady("")
		log.Info("the fetcher's consumer is as declared again")
	}
}

// consumerChanges names what of the consumer's configuration found
// differs from want: what the fetcher relies on (its filters, acks,
// max_ack_pending, max_deliver); nil when nothing does.
func consumerChanges(want, found jetstream.ConsumerConfig) []string {
	var out []string
	if w, f := filters(want), filters(found); !slices.Equal(w, f) {
		out = append(out, fmt.Sprintf("filter subjects %v (want %v)", f, w))
	}
	if want.AckPolicy != found.AckPolicy {
		out = append(out, fmt.Sprintf("ack policy %s (want %s)", found.AckPolicy, want.AckPolicy))
	}
	if want.AckWait != found.AckWait {
		out = append(out, fmt.Sprintf("ack wait %s (want %s)", found.AckWait, want.AckWait))
	}
	if want.MaxAckPending != found.MaxAckPending {
		out = append(out, fmt.Sprintf("max_ack_pending %d (want %d)", found.MaxAckPending, want.MaxAckPending))
	}
	if want.MaxDeliver != found.MaxDeliver {
		out = append(out, fmt.Sprintf("max_deliver %d (want %d)", found.MaxDeliver, want.MaxDeliver))
	}
	return out
}

// filters are a consumer's filter subjects, sorted, whichever field holds
// them (the server keeps a single one in FilterSubject).
func filters(c jetstream.ConsumerConfig) []string {
	out := slices.Clone(c.FilterSubjects)
	if c.FilterSubject != "" {
		out = append(out, c.FilterSubject)
	}
	slices.Sort(out)
	return out
}
