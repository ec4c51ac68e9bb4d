package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/receiver/wiring"
	"github.com/cdse-jetstream/receiver/internal/stream/complete"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// completeRanges joins the reconciler's passes to the complete ranges
// (internal/stream/complete): which scopes a pass covered.
type completeRanges struct {
	cfg       config.Config
	interests *interest.Router // nil without INTERESTS_FILE
	events    []event.Kind     // reconciled
	t         *complete.Tracker
	// listing is the set whose union the event's pass under way lists
	// (filterOf, at its start); listed compares it with the set in force
	// at its end. Only the reconciler's pass, one at a time, touches it.
	listing *interestfile.Set

	// The ranges of the interests that take the latest versions only
	// cover what the versions consumer decided: topo reads it, deferred
	// are the listings of the passes it had not caught up with (oldest
	// first, per event; only the reconciler's pass touches them),
	// counted in deferrals.
	topo      *topology.Topology
	log       logrus.FieldLogger
	deferred  map[event.Kind][]deferredListing
	deferrals *prometheus.CounterVec
}

// deferredListing is a pass's listing whose latest interests' ranges wait
// for the versions consumer.
type deferredListing struct {
	l      complete.Listed
	scopes []complete.Scope
}

// latestWait bounds how long a pass's end waits for the versions consumer
// to decide what the pass stored, before it leaves the ranges of the
// interests that take the latest versions only to the next pass; tests
// shorten it. maxDeferred bounds the listings kept meanwhile: past it the
// oldest is dropped, and those ranges start anew at the next advance (a
// gap is never claimed complete).
var latestWait = 10 * time.Second

const maxDeferred = 32

func newCompleteRanges(d Deps, events []event.Kind) (*completeRanges, error) {
	t, err := complete.New(d.Topology, d.Registry, d.Log)
	if err != nil {
		return nil, err
	}
	deferrals := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_complete_latest_deferred_total",
		Help: "Reconcile passes after which the complete ranges of the interests that take the latest versions only were not advanced, by event: the versions consumer had not decided every product event the pass stored within the bound; a later pass advances them."}, []string{"event"})
	if err := d.Registry.Register(deferrals); err != nil {
		return nil, fmt.Errorf("register complete metrics: %w", err)
	}
	return &completeRanges{cfg: d.Config, interests: d.Interests, events: events, t: t,
		topo: d.Topology, log: d.Log.WithField("component", "complete"), deferred: map[event.Kind][]deferredListing{}, deferrals: deferrals}, nil
}

// listed is the reconciler's Options.Listed: the product stream's range
// (the pass's filter is its filter), and the interests' when the pass
// listed their union; those of the interests that take the latest
// versions only once the versions consumer has decided what the pass
// stored (advanceLatest).
func (c *completeRanges) listed(ctx context.Context, ev event.Kind, filter string, from, until time.Time) error {
	scopes := []complete.Scope{{Name: event.CompleteProducts, Filter: filter, Events: c.events}}
	var latest []complete.Scope
	if set, ok := c.covered(); ok && set == c.listing && set.Compile().Filter == filter {
		// The set in force now is the one the pass listed and routed
		// with: a reload during the pass (even one that kept the union: a
		// renamed interest got no copies before it) leaves the interests
		// for the next pass.
		for i, sc := range interestScopes(set) {
			if set.Interests[i].Latest() {
				latest = append(latest, sc)
			} else {
				scopes = append(scopes, sc)
			}
		}
	}
	l := complete.Listed{Event: ev, From: from, Until: until}
	err := c.t.Advance(ctx, l, scopes)
	if len(latest) > 0 || len(c.deferred[ev]) > 0 {
		err = errors.Join(err, c.advanceLatest(ctx, l, latest))
	}
	return err
}

// advanceLatest advances the ranges of the interests that take the latest
// versions only (scopes) with the pass's listing l once the versions
// consumer has decided every product event stored when the pass ended:
// their copies are made after its decision, so a range that went further
// would claim copies not made yet. It waits at most latestWait; when the
// consumer is further behind, the listing is kept and the ranges are
// advanced after a later pass, with every listing kept, in order (which
// keeps them joined).
func (c *completeRanges) advanceLatest(ctx context.Context, l complete.Listed, scopes []complete.Scope) error {
	s, err := c.topo.JetStream().Stream(ctx, c.topo.ProductStream())
	if err != nil {
		return fmt.Errorf("stream %s: %w", c.topo.ProductStream(), err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", c.topo.ProductStream(), err)
	}
	pending := append(c.deferred[l.Event], deferredListing{l: l, scopes: scopes})
	ok, err := supersede.WaitDecided(ctx, c.topo.JetStream(), c.topo.ProductStream(), info.State.LastSeq, latestWait, latestWait/50)
	if !ok {
		if len(pending) > maxDeferred {
			pending = pending[len(pending)-maxDeferred:]
		}
		c.deferred[l.Event] = pending
		c.deferrals.WithLabelValues(string(l.Event)).Inc()
		c.log.WithError(err).WithFields(logrus.Fields{"event": l.Event, "stream_seq": info.State.LastSeq, "waited": latestWait.String()}).
			Warn("complete ranges of the interests that take the latest versions only not advanced: the versions consumer has not decided every product event this pass stored; a later pass advances them (counted in cdse_receiver_complete_latest_deferred_total)")
		return nil
	}
	delete(c.deferred, l.Event)
	var errs []error
	for _, d := range pending {
		errs = append(errs, c.t.Advance(ctx, d.l, d.scopes))
	}
	return errors.Join(errs...)
}

// filterOf is the reconciler's Options.FilterOf: wiring.ListingFilter,
// noting the set it lists.
func (c *completeRanges) filterOf() string {
	if c.interests != nil {
		c.listing = c.interests.Current()
	}
	return wiring.ListingFilter(c.cfg, c.interests)
}

// covered is the set in force when the reconciler lists its union: no
// RECONCILE_FILTER, or one whose text is the union's.
func (c *completeRanges) covered() (*interestfile.Set, bool) {
	if c.interests == nil {
		return nil, false
	}
	set := c.interests.Current()
	if f := c.cfg.ReconcileFilter; strings.TrimSpace(f) != "" && f != set.Compile().Filter {
		return set, false
	}
	return set, true
}

func interestScopes(set *interestfile.Set) []complete.Scope {
	var out []complete.Scope
	for _, in := range set.Interests {
		out = append(out, complete.Scope{Name: in.Name, Filter: strings.TrimSpace(in.Filter.String()), Events: in.Events})
	}
	return out
}

// status is the ranges for /status: read from the state bucket, and why
// an interest or an event has none.
func (c *completeRanges) status(ctx context.Context) *status.Complete {
	st := &status.Complete{Stream: c.cfg.CompleteStream, Lag: c.cfg.ReconcileOverlap.String() + " (RECONCILE_OVERLAP) behind the last reconcile pass, which runs every " + c.cfg.ReconcileInterval.String()}
	scopes := []complete.Scope{{Name: event.CompleteProducts, Filter: wiring.ListingFilter(c.cfg, c.interests), Events: c.events}}
	if c.interests != nil {
		set, ok := c.covered()
		for _, sc := range interestScopes(set) {
			var evs []event.Kind
			for _, ev := range sc.Events {
				if slices.Contains(c.events, ev) {
					evs = append(evs, ev)
				} else {
					st.NoRange = append(st.NoRange, status.NoRange{Interest: sc.Name, Event: string(ev), Reason: "RECONCILE_EVENTS does not reconcile " + string(ev)})
				}
			}
			if !ok {
				st.NoRange = append(st.NoRange, status.NoRange{Interest: sc.Name,
					Reason: "RECONCILE_FILTER is set by hand and is not the interests' union (what they compile to): no reconcile pass is known to list all of this interest's products"})
				continue
			}
			sc.Events = evs
			scopes = append(scopes, sc)
		}
	}
	rs, none, err := c.t.Ranges(ctx, scopes)
	if err != nil {
		st.NoRange = append(st.NoRange, status.NoRange{Interest: "*", Reason: "the state bucket cannot be read: " + err.Error()})
		return st
	}
	for _, r := range rs {
		st.Ranges = append(st.Ranges, status.Range{Interest: r.Scope, Event: r.Event, From: r.From, Until: r.Until})
	}
	for _, n := range none {
		st.NoRange = append(st.NoRange, status.NoRange{Interest: n.Scope, Event: n.Event, Reason: n.Reason})
	}
	return st
}

// noComplete is /status's answer without the reconciler.
func noComplete(cfg config.Config, interests *interest.Router) *status.Complete {
	const why = "RECONCILE_INTERVAL is off: no reconcile pass lists the catalogue, so nothing is known complete"
	st := &status.Complete{Stream: cfg.CompleteStream, NoRange: []status.NoRange{{Interest: event.CompleteProducts, Reason: why}}}
	if interests != nil {
		for _, in := range interests.Current().Interests {
			st.NoRange = append(st.NoRange, status.NoRange{Interest: in.Name, Reason: why})
		}
	}
	return st
}
