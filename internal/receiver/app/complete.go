package app

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest/interest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/receiver/wiring"
	"github.com/cdse-jetstream/receiver/internal/stream/complete"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
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

	// latest advances the ranges of the interests that take the latest
	// versions only, once the versions consumer has decided what the
	// pass stored.
	latest *complete.Deferred
}

// latestWait bounds how long a pass's end waits for the versions consumer
// to decide what the pass stored, before it leaves the ranges of the
// interests that take the latest versions only to a later pass; tests
// shorten it.
var latestWait = 10 * time.Second

func newCompleteRanges(d Deps, events []event.Kind) (*completeRanges, error) {
	t, err := complete.New(d.Topology, d.Registry, d.Log)
	if err != nil {
		return nil, err
	}
	latest, err := complete.NewDeferred(t, supersede.StreamDecisions(d.Topology.JetStream(), d.Topology.ProductStream()), latestWait, d.Registry, d.Log)
	if err != nil {
		return nil, err
	}
	return &completeRanges{cfg: d.Config, interests: d.Interests, events: events, t: t, latest: latest}, nil
}

// listed is the reconciler's Options.Listed: the product stream's range
// (the pass's filter is its filter), and the interests' when the pass
// listed their union; those of the interests that take the latest
// versions only once the versions consumer has decided what the pass
// stored (complete.Deferred).
func (c *completeRanges) listed(ctx context.Context, ev event.Kind, filter string, from, until time.Time) error {
	scopes := []complete.Scope{{Name: event.CompleteProducts, Filter: filter, Events: c.events}}
	if set, ok := c.covered(); ok && set == c.listing && set.Compile().Filter == filter {
		// The set in force now is the one the pass listed and routed
		// with: a reload during the pass (even one that kept the union: a
		// renamed interest got no copies before it) leaves the interests
		// for the next pass.
		scopes = append(scopes, interestScopes(set)...)
	}
	l := complete.Listed{Event: ev, From: from, Until: until}
	return errors.Join(c.t.Advance(ctx, l, scopes), c.latest.Advance(ctx, l, scopes))
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
		out = append(out, complete.Scope{Name: in.Name, Filter: in.RangeFilter(), Events: in.Events, Later: in.Latest()})
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
