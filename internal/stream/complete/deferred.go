package complete

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
)

// Deferred advances the ranges of scopes whose copies are made after a
// decision that trails the pass: the interests that take the latest
// versions only, copied by the versions consumer (internal/stream/
// supersede). A range that went past what was decided would claim copies
// not made yet, so a listing advances them only once decided says every
// product event stored by the pass's end is decided; otherwise it is kept
// and advanced after a later pass, with every listing kept, in order
// (which keeps the range one). Only the reconciler's pass, one at a time,
// calls Advance.
type Deferred struct {
	t       *Tracker
	decided func(ctx context.Context) (bool, error)
	log     logrus.FieldLogger
	pending map[event.Kind][]deferred
	count   *prometheus.CounterVec
}

type deferred struct {
	l      Listed
	scopes []Scope
}

// maxDeferred bounds the listings kept per event: past it the oldest is
// dropped, and those ranges start anew at the next advance (a gap is
// never claimed complete).
const maxDeferred = 32

// NewDeferred is a Deferred of t's ranges; decided waits (bounded) until
// the decisions have caught up with the product stream. Its counter is
// registered on reg.
func NewDeferred(t *Tracker, decided func(ctx context.Context) (bool, error), reg prometheus.Registerer, log logrus.FieldLogger) (*Deferred, error) {
	d := &Deferred{t: t, decided: decided, log: log.WithField("component", "complete"), pending: map[event.Kind][]deferred{},
		count: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_complete_latest_deferred_total",
			Help: "Reconcile passes after which the complete ranges of the interests that take the latest versions only were not advanced, by event: the versions consumer had not decided every product event the pass stored within the bound; a later pass advances them."}, []string{"event"})}
	if err := reg.Register(d.count); err != nil {
		return nil, fmt.Errorf("register complete metrics: %w", err)
	}
	return d, nil
}

// Advance advances the Later ones of scopes with l once decided, and the
// listings kept before it; it keeps them all when not decided (logged,
// counted).
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
	pending = append(pending, deferred{l: l, scopes: scopes})
	ok, err := d.decided(ctx)
	if !ok {
		d.pending[l.Event] = pending[max(len(pending)-maxDeferred, 0):]
		d.count.WithLabelValues(string(l.Event)).Inc()
		d.log.WithError(err).WithField("event", l.Event).
			Warn("complete ranges of the interests that take the latest versions only not advanced: the versions consumer has not decided every product event this pass stored; a later pass advances them (counted in cdse_receiver_complete_latest_deferred_total)")
		return nil
	}
	delete(d.pending, l.Event)
	var errs []error
	for _, p := range pending {
		errs = append(errs, d.t.Advance(ctx, p.l, p.scopes))
	}
	return errors.Join(errs...)
}

// Deferrals is the counter of passes deferred (for tests).
func (d *Deferred) Deferrals() *prometheus.CounterVec { return d.count }
