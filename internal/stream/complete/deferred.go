package complete

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
)

// Deferred advances the ranges of scopes whose copies are made after a
// decision that trails the pass: the interests that take the latest
// versions only, copied by the versions consumer (internal/stream/
// supersede). A range that went past what was decided would claim copies
// not made yet, so each listing is kept with the product stream's last
// sequence at the pass's end, and advances them once the consumer has
// decided every product event at or below it: at the pass's end (waiting
// at most wait) or at a later pass's, without waiting, whatever the
// stream holds by then (a consumer that stays behind still advances the
// ranges over the passes it has passed). The listings advance in order,
// which keeps the range one. Only the reconciler's pass, one at a time,
// calls Advance.
type Deferred struct {
	t         *Tracker
	decisions Decisions
	wait      time.Duration
	log       logrus.FieldLogger
	pending   map[event.Kind][]deferred
	count     *prometheus.CounterVec
}

// Decisions is what Deferred asks of the decisions it trails
// (supersede.StreamDecisions).
type Decisions interface {
	// Last is the product stream's last sequence now.
	Last(ctx context.Context) (uint64, error)
	// Decided says whether every product event stored at or below seq
	// is decided, waiting at most wait (none: asked once).
	Decided(ctx context.Context, seq uint64, wait time.Duration) (bool, error)
}

type deferred struct {
	l      Listed
	scopes []Scope
	// seq is the product stream's last sequence at the pass's end
	// (math.MaxUint64 when it could not be read: decided only once the
	// consumer has nothing left to read).
	seq uint64
}

// maxDeferred bounds the listings kept per event: past it the oldest is
// dropped, and those ranges start anew at the next advance (a gap is
// never claimed complete).
const maxDeferred = 32

// NewDeferred is a Deferred of t's ranges, waiting at most wait at a
// pass's end for decisions to reach it. Its counter is registered on reg.
func NewDeferred(t *Tracker, decisions Decisions, wait time.Duration, reg prometheus.Registerer, log logrus.FieldLogger) (*Deferred, error) {
	d := &Deferred{t: t, decisions: decisions, wait: wait, log: log.WithField("component", "complete"), pending: map[event.Kind][]deferred{},
		count: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_complete_latest_deferred_total",
			Help: "Reconcile passes after which the complete ranges of the interests that take the latest versions only were not advanced to the pass, by event: the versions consumer had not decided every product event stored by the pass's end within the bound; a later pass advances them once it has."}, []string{"event"})}
	if err := reg.Register(d.count); err != nil {
		return nil, fmt.Errorf("register complete metrics: %w", err)
	}
	return d, nil
}

// Advance advances the Later ones of scopes with l, and the listings
// kept before it, as far as the decisions have reached, in order; it
// keeps the others (logged, counted).
func (d *Deferred) Advance(ctx context.Context, l Listed, all []Scope) error {
	var scopes []Scope
	for _, s := range all {
		if s.Later {
			s.Later = false // for Tracker.Advance
			scopes = append(scopes, s)
		}
	}
	pending := d.pending[l.Event]
	if len(scopes) == 0 && len(pending) == 0 {
		return nil
	}
	seq, err := d.decisions.Last(ctx)
	if err != nil {
		seq = math.MaxUint64
	}
	pending = append(pending, deferred{l: l, scopes: scopes, seq: seq})
	n := len(pending)
	if ok, werr := d.decisions.Decided(ctx, seq, d.wait); !ok {
		err = errors.Join(err, werr)
		// The listings of the passes before it whose end is decided.
		for n = 0; n < len(pending)-1; n++ {
			if ok, _ := d.decisions.Decided(ctx, pending[n].seq, 0); !ok {
				break
			}
		}
		d.count.WithLabelValues(string(l.Event)).Inc()
		d.log.WithError(err).WithFields(logrus.Fields{"event": l.Event, "stream_seq": seq, "advanced": n, "kept": len(pending) - n}).
			Warn("complete ranges of the interests that take the latest versions only not advanced to this pass: the versions consumer has not decided every product event stored by its end; a later pass advances them (counted in cdse_receiver_complete_latest_deferred_total)")
	}
	kept := pending[n:]
	d.pending[l.Event] = kept[max(len(kept)-maxDeferred, 0):]
	if len(d.pending[l.Event]) == 0 {
		delete(d.pending, l.Event)
	}
	var errs []error
	for _, p := range pending[:n] {
		errs = append(errs, d.t.Advance(ctx, p.l, p.scopes))
	}
	return errors.Join(errs...)
}

// Deferrals is the counter of passes deferred (for tests).
func (d *Deferred) Deferrals() *prometheus.CounterVec { return d.count }
