// Package complete keeps the complete ranges (issue 32): for the product
// stream (event.CompleteProducts) and for each interest, per event, a
// range [From, Until] in which every product event of that kind that
// matches the filter and that the catalogue lists with its date in the
// range is stored on its subjects.
//
// A reconcile pass that listed an event's window [From, listed at] with a
// filter, and stored all it found, tells the Tracker (Advance) with Until
// = listed at - the overlap: a product the catalogue lists late, by less
// than the overlap, was listed by then. The ranges live in the state
// bucket (one key per interest and event), so they survive restarts; each
// advance is announced on the receiver's complete subject
// (event.CompleteSubjectIn its COMPLETE_SUBJECT_PREFIX) in its
// COMPLETE_STREAM, and shown by a gauge. The ranges of the interests that
// take the latest versions only (Scope.Later) advance once the versions
// consumer has decided what the pass stored (Deferred, deferred.go).
package complete

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
)

// Scope is what a range is kept for: the product stream or an interest,
// its filter (a change starts a new range), and its events.
type Scope struct {
	Name   string
	Filter string
	Events []event.Kind
	// Later: its copies are made after a decision that trails the pass
	// (an interest that takes the latest versions only): Advance leaves
	// it, Deferred advances it once decided.
	Later bool
}

// Listed is what a pass listed and stored for one event: every product of
// the pass's filter with its date in [From, Until].
type Listed struct {
	Event event.Kind
	From  time.Time
	Until time.Time
}

// record is a range as the state bucket keeps it.
type record struct {
	From   time.Time `json:"from"`
	Until  time.Time `json:"until"`
	Filter string    `json:"filter"`
}

// Key is the state bucket's key of a range.
func Key(name string, ev event.Kind) string { return "complete." + name + "." + string(ev) }

// Stores are the resources the Tracker writes (internal/stream/topology).
type Stores interface {
	State(ctx context.Context) (jetstream.KeyValue, error)
	// EnsureComplete creates the complete stream, or refuses one another
	// receiver owns (topology.ErrNotOwner).
	EnsureComplete(ctx context.Context) error
	CompleteStream() string
	CompleteSubject(interest string, ev event.Kind) string
	JetStream() jetstream.JetStream
}

// Tracker advances and reads the ranges.
type Tracker struct {
	st          Stores
	log         logrus.FieldLogger
	from, until *prometheus.GaugeVec
	ensured     bool // the stream exists (one pass, or one backfill, at a time sets it)
}

// New returns a Tracker; its gauges are registered on reg.
func New(st Stores, reg prometheus.Registerer, log logrus.FieldLogger) (*Tracker, error) {
	t := &Tracker{st: st, log: log.WithField("component", "complete"),
		from: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cdse_receiver_complete_from_seconds",
			Help: "Where the complete range of the product stream (interest _products) or of an interest starts, by event (Unix time)."}, []string{"interest", "event"}),
		until: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cdse_receiver_complete_until_seconds",
			Help: "Up to when every product event of the product stream (interest _products) or of an interest that the catalogue lists is stored, by event (Unix time): a reconcile overlap behind the last pass."}, []string{"interest", "event"}),
	}
	for _, c := range []prometheus.Collector{t.from, t.until} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register complete metrics: %w", err)
		}
	}
	return t, nil
}

func (t *Tracker) get(ctx context.Context, kv jetstream.KeyValue, name string, ev event.Kind) (record, uint64, bool, error) {
	e, err := kv.Get(ctx, Key(name, ev))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return record{}, 0, false, nil
	}
	if err != nil {
		return record{}, 0, false, err
	}
	var r record
	if json.Unmarshal(e.Value(), &r) != nil {
		return record{}, e.Revision(), false, nil // unreadable: a new range
	}
	return r, e.Revision(), true, nil
}

// update applies change to a range and stores it where it was read (the
// running receiver's passes and a backfill may move one range at once:
// the loser reads again), then announces it. change returns false to leave
// the range as it is.
func (t *Tracker) update(ctx context.Context, kv jetstream.KeyValue, name string, ev event.Kind, change func(old record, ok bool) (record, bool)) (record, bool, error) {
	for attempt := 0; ; attempt++ {
		old, rev, ok, err := t.get(ctx, kv, name, ev)
		if err != nil {
			return record{}, false, err
		}
		r, moved := change(old, ok)
		if !moved {
			return old, false, nil
		}
		b, err := json.Marshal(r)
		if err != nil {
			return record{}, false, err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, Key(name, ev), b)
		} else {
			_, err = kv.Update(ctx, Key(name, ev), b, rev)
		}
		if err != nil && attempt < 3 && (errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)) {
			continue
		}
		if err != nil {
			return record{}, false, fmt.Errorf("store the complete range: %w", err)
		}
		return r, true, t.announce(ctx, name, ev, r)
	}
}

// Advance extends the range of every scope that takes l.Event: Until
// moves to l.Until when l starts within the range kept (it never moves
// back); a scope without a range, whose filter changed, or which the
// listing does not join (a gap) starts a new one, [l.From, l.Until]. Each
// range that moved is stored, then announced. The scopes are those the
// pass's filter covered: the caller decides.
func (t *Tracker) Advance(ctx context.Context, l Listed, scopes []Scope) error {
	if !l.Until.After(l.From) {
		return nil
	}
	kv, err := t.st.State(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range scopes {
		if !slices.Contains(s.Events, l.Event) || s.Later {
			continue
		}
		r, _, err := t.update(ctx, kv, s.Name, l.Event, func(old record, ok bool) (record, bool) {
			switch {
			case !ok || old.Filter != s.Filter || l.From.After(old.Until):
				if ok {
					t.log.WithFields(logrus.Fields{"interest": s.Name, "event": l.Event, "from": l.From.UTC().Format(time.RFC3339),
						"filter_changed": old.Filter != s.Filter}).Info("complete range starts anew")
				}
				return record{From: l.From, Until: l.Until, Filter: s.Filter}, true
			case l.Until.After(old.Until):
				old.Until = l.Until
				return old, true
			}
			return old, false
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		t.gauges(s.Name, l.Event, r)
	}
	return errors.Join(errs...)
}

func (t *Tracker) gauges(name string, ev event.Kind, r record) {
	t.from.WithLabelValues(name, string(ev)).Set(float64(r.From.Unix()))
	t.until.WithLabelValues(name, string(ev)).Set(float64(r.Until.Unix()))
}

// announce puts a stored range on its subject: the announcement is never
// ahead of the bucket (a failed one is made at the next move).
func (t *Tracker) announce(ctx context.Context, name string, ev event.Kind, r record) error {
	if !t.ensured {
		if err := t.st.EnsureComplete(ctx); err != nil {
			return err
		}
		t.ensured = true
	}
	c := event.Complete{Interest: name, Event: ev, From: r.From.UTC(), Until: r.Until.UTC()}
	body, err := json.Marshal(c)
	if err != nil {
		return err
	}
	m := nats.NewMsg(t.st.CompleteSubject(name, ev))
	m.Data = body
	m.Header.Set(event.HeaderCompleteFrom, c.From.Format(time.RFC3339Nano))
	m.Header.Set(event.HeaderCompleteUntil, c.Until.Format(time.RFC3339Nano))
	if _, err := t.st.JetStream().PublishMsg(ctx, m, jetstream.WithExpectStream(t.st.CompleteStream())); err != nil {
		return fmt.Errorf("announce the complete range: %w", err)
	}
	return nil
}

// Extend moves a range's From back to since after a backfill of the
// scope (receiver backfill --interest) listed [since, until) with the
// scope's own filter and stored all it found, when that listing joins the
// range (until at or after its From). A scope without a range, or whose
// range has another filter, is left alone: a range starts with a reconcile
// pass. It says whether the range moved.
func (t *Tracker) Extend(ctx context.Context, s Scope, ev event.Kind, since, until time.Time) (bool, error) {
	kv, err := t.st.State(ctx)
	if err != nil {
		return false, err
	}
	_, moved, err := t.update(ctx, kv, s.Name, ev, func(old record, ok bool) (record, bool) {
		if !ok || old.Filter != s.Filter || !since.Before(old.From) || until.Before(old.From) {
			return old, false
		}
		old.From = since
		return old, true
	})
	return moved, err
}

// Range is one complete range of a scope and event: what the receiver's
// /status shows (its own types there, mapped by the receiver: this
// package serves the stream, not the admin page).
type Range struct {
	Scope, Event string
	From, Until  time.Time
}

// NoRange is a scope and event without a range, and why.
type NoRange struct {
	Scope, Event, Reason string
}

// Ranges reads the ranges of the scopes from the state bucket, each event
// a scope takes: those with a range, and the others (no pass has covered
// them yet).
func (t *Tracker) Ranges(ctx context.Context, scopes []Scope) ([]Range, []NoRange, error) {
	kv, err := t.st.State(ctx)
	if err != nil {
		return nil, nil, err
	}
	var (
		rs   []Range
		none []NoRange
	)
	for _, s := range scopes {
		for _, ev := range s.Events {
			r, _, ok, err := t.get(ctx, kv, s.Name, ev)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case !ok:
				none = append(none, NoRange{Scope: s.Name, Event: string(ev), Reason: "no reconcile pass has listed it yet"})
			case r.Filter != s.Filter:
				none = append(none, NoRange{Scope: s.Name, Event: string(ev), Reason: "its filter (or its versions:) changed: its range starts anew at the next reconcile pass"})
			default:
				rs = append(rs, Range{Scope: s.Name, Event: string(ev), From: r.From.UTC(), Until: r.Until.UTC()})
			}
		}
	}
	return rs, none, nil
}

// UntilGauge is the gauge of the ranges' ends (for tests).
func (t *Tracker) UntilGauge() *prometheus.GaugeVec { return t.until }
