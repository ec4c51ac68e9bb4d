package register

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// ApplyOptions are the flags of apply.
type ApplyOptions struct {
	Interests, Endpoint string
	MaxRunning          int
	KeepOld, DryRun     bool
	Insecure            bool
	Preflight           PreflightOptions
}

// Step is one thing apply did (or, dry, would do).
type Step struct {
	At     time.Time `json:"at"`
	Action string    `json:"action"` // create, pause, resume, cancel, keep
	ID     string    `json:"id,omitempty"`
	Detail string    `json:"detail"`
}

// ApplyResult is what `register apply -o json` prints.
type ApplyResult struct {
	DryRun  bool     `json:"dryRun"`
	Changed bool     `json:"changed"`
	Filter  string   `json:"filter"`
	Events  []string `json:"events"`
	Steps   []Step   `json:"steps"`
	// Window is when PUSH may have missed products (the old subscription
	// paused, the new one not yet running); zero when none.
	WindowFrom *time.Time                  `json:"windowFrom,omitempty"`
	WindowTo   *time.Time                  `json:"windowTo,omitempty"`
	Notes      []string                    `json:"notes,omitempty"`
	Current    *catalogclient.Subscription `json:"subscription,omitempty"`
}

// Plan is the subscription a file of interests compiles to.
func Plan(path string) (catalogclient.SubscriptionRequest, interestfile.Compiled, error) {
	set, err := interestfile.Load(path)
	if err != nil {
		return catalogclient.SubscriptionRequest{}, interestfile.Compiled{}, cli.Usagef("%v", err)
	}
	c := set.Compile()
	req := catalogclient.SubscriptionRequest{SubscriptionType: "push", FilterParam: c.Filter, Priority: 1, Status: "running"}
	for _, e := range c.SubscriptionEvents() { // deleted when every interest takes deleted only
		req.SubscriptionEvent = append(req.SubscriptionEvent, string(e))
	}
	return req, c, nil
}

// Apply makes the catalogue's one PUSH subscription for the endpoint cover
// the interests, idempotently: unchanged, nothing is done; changed, the
// subscription is replaced within the running limit — the new one created
// paused, the old one paused, the new one resumed, the old one cancelled
// (or kept paused). Between the pause and the resume PUSH may miss
// products: the receiver's reconciler, whose filter is the same union,
// brings them.
func (s *Session) Apply(ctx context.Context, o ApplyOptions, log io.Writer) (ApplyResult, error) {
	req, c, err := Plan(o.Interests)
	if err != nil {
		return ApplyResult{}, err
	}
	if err := pushTo(&req, o.Endpoint, s.cfg.Username, s.cfg.Password, o.Insecure); err != nil {
		return ApplyResult{}, err
	}
	if !o.DryRun {
		if err := o.Preflight.run(ctx, o.Endpoint, s.cfg.Username, s.cfg.Password, o.Insecure, log); err != nil {
			return ApplyResult{}, err
		}
	}
	r := ApplyResult{DryRun: o.DryRun, Filter: req.FilterParam, Events: req.SubscriptionEvent, Steps: []Step{}}
	if c.Deleted && len(c.Events) > 0 {
		r.Notes = append(r.Notes, "an interest takes deleted: one subscription cannot carry deleted with created/modified, so deletions reach it through the receiver's reconciler (RECONCILE_EVENTS includes deleted by default), not through PUSH")
	}
	step := func(action, id, format string, a ...any) {
		st := Step{At: time.Now().UTC(), Action: action, ID: id, Detail: fmt.Sprintf(format, a...)}
		r.Steps = append(r.Steps, st)
		verb := action
		if o.DryRun {
			verb = "would " + action
		}
		fmt.Fprintf(log, "%s %s %s\n", verb, cli.OrDash(id), st.Detail)
	}
	subs, err := s.API.ListSubscriptions(ctx)
	if err != nil {
		return r, err
	}
	// The subscription(s) this endpoint already has.
	var old []catalogclient.Subscription
	for _, sub := range subs {
		if sub.SubscriptionType == "push" && sub.NotificationEndpoint == o.Endpoint && (sub.Status == "running" || sub.Status == "paused") {
			old = append(old, sub)
		}
	}
	// This endpoint's running subscription, replaced by whatever covers
	// the interests: one endpoint never gets two running subscriptions.
	var running *catalogclient.Subscription
	for i := range old {
		if old[i].Status == "running" {
			running = &old[i]
		}
	}
	same := findSame(old, req)
	if same != nil && same.Status == "running" {
		r.Current = same
		fmt.Fprintf(log, "the subscription %s already covers the interests; nothing changed\n", same.ID)
		return r, nil
	}
	// The place this endpoint's running subscription holds is the new
	// one's: only the others count against the limit.
	allRunning := RunningOf(subs)
	others := len(allRunning)
	if running != nil {
		others--
	}
	if others+1 > o.MaxRunning {
		// A push subscription elsewhere is most often this receiver's
		// old address (register create, then apply to the new one):
		// moving it keeps its place, where a pause or cancel loses
		// what it sends meanwhile.
		for _, sub := range allRunning {
			if sub.SubscriptionType == "push" {
				return r, limitError(allRunning, o.MaxRunning, fmt.Sprintf("`register update %s --endpoint %s` to move it here, then run this again (it swaps it for one that covers the interests); or `register pause ID` or `register cancel ID`, then run this again", sub.ID, o.Endpoint))
			}
		}
		return r, handLimitError(allRunning, o.MaxRunning)
	}
	if same != nil {
		// A paused subscription covers the interests (kept by
		// --keep-old): it is resumed, in place of the running one if
		// there is one.
		r.Current, r.Changed = same, true
		if running == nil {
			step("resume", same.ID, "the paused subscription that covers the interests")
			if !o.DryRun {
				if r.Current, err = s.SetStatus(ctx, same.ID, "running"); err != nil {
					return r, err
				}
			}
			return r, nil
		}
		err = s.swap(ctx, o, &r, step, log, running, same) // r is changed: returned after
		return r, err
	}
	if len(subs) >= MaxTotal {
		return r, fmt.Errorf("the account has %d subscriptions (running and paused), the most allowed: the new one cannot be created; cancel one first (register cancel ID)", len(subs))
	}
	r.Changed = true
	if running == nil {
		step("create", "", "a running subscription: events %s, filter %q", strings.Join(req.SubscriptionEvent, ","), req.FilterParam)
		if !o.DryRun {
			created, err := s.API.CreateSubscription(ctx, req)
			if err != nil {
				return r, err
			}
			r.Steps[len(r.Steps)-1].ID, r.Current = created.ID, created
		}
		return r, nil
	}
	// The swap: within a limit of one running subscription, the new one
	// waits paused until the old one is paused.
	paused := req
	paused.Status = "paused"
	step("create", "", "the new subscription, paused: events %s, filter %q", strings.Join(req.SubscriptionEvent, ","), req.FilterParam)
	var created *catalogclient.Subscription
	if !o.DryRun {
		if created, err = s.API.CreateSubscription(ctx, paused); err != nil {
			return r, err
		}
		r.Steps[len(r.Steps)-1].ID = created.ID
	}
	err = s.swap(ctx, o, &r, step, log, running, created) // r is changed: returned after
	return r, err
}

// swap pauses the running subscription, resumes next (the one that covers
// the interests, paused; nil in a dry run, where none was created), then
// cancels the old one or keeps it paused (--keep-old), and says in which
// window PUSH may have missed products.
func (s *Session) swap(ctx context.Context, o ApplyOptions, r *ApplyResult, step func(action, id, format string, a ...any), log io.Writer,
	running, next *catalogclient.Subscription) error {
	step("pause", running.ID, "the old subscription (events %s, filter %q)", strings.Join(running.SubscriptionEvent, ","), running.FilterParam)
	from := time.Now().UTC()
	nextID := ""
	if next != nil {
		nextID = next.ID
	}
	if !o.DryRun {
		if _, err := s.SetStatus(ctx, running.ID, "paused"); err != nil {
			return fmt.Errorf("%w (the subscription %s stays paused: run apply again)", err, nextID)
		}
	}
	step("resume", nextID, "the subscription that covers the interests")
	if !o.DryRun {
		var err error
		if r.Current, err = s.SetStatus(ctx, nextID, "running"); err != nil {
			return fmt.Errorf("%w: both subscriptions are paused, PUSH sends nothing; resume one (register resume %s) and run apply again", err, nextID)
		}
	}
	to := time.Now().UTC()
	r.WindowFrom, r.WindowTo = &from, &to
	if o.KeepOld {
		step("keep", running.ID, "the old subscription, paused (--keep-old)")
	} else {
		step("cancel", running.ID, "the old subscription")
		if !o.DryRun {
			if err := s.API.DeleteSubscription(ctx, running.ID); err != nil {
				return fmt.Errorf("%w (the subscription %s runs; cancel the old one yourself: register cancel %s)", err, nextID, running.ID)
			}
		}
	}
	if !o.DryRun {
		fmt.Fprintf(log, "PUSH may have missed products published between %s and %s: the receiver's reconciler (with INTERESTS_FILE, its filter is this union) brings them at its next pass\n",
			from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano))
	}
	return nil
}

// PrintApply writes what apply did.
func PrintApply(w io.Writer, r ApplyResult) error {
	verb := "applied"
	switch {
	case r.DryRun:
		verb = "dry run"
	case !r.Changed:
		verb = "unchanged"
	}
	fmt.Fprintf(w, "%s: events %s, filter (%d characters):\n%s\n", verb, strings.Join(r.Events, ","), len(r.Filter), r.Filter)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if r.Current != nil {
		if err := PrintSubscriptions(w, &cli.Output{Format: "table"}, []catalogclient.Subscription{*r.Current}); err != nil {
			return err
		}
	}
	return nil
}
