// Package status is what a running receiver says about itself on its admin
// port (GET /status), shared by the receiver, which serves it, and
// `register status`, which reads it and joins it with what the catalogue
// says. It holds no secret: user names, never passwords.
package status

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/internal/platform/adminpage"
)

// Path is where the admin listener serves it.
const Path = adminpage.StatusPath

// Receiver is the receiver's view of itself.
type Receiver struct {
	Version string `json:"version"`
	// Ready is what /readyz answers; NotReady its reason.
	Ready    bool   `json:"ready"`
	NotReady string `json:"notReady,omitempty"`
	// Webhook is nil when the webhook is off.
	Webhook *Webhook `json:"webhook,omitempty"`
	Sources []Source `json:"sources"`
	// Stream and Quarantine are nil when NATS cannot tell.
	Stream     *Stream `json:"stream,omitempty"`
	Quarantine *Stream `json:"quarantine,omitempty"`
	// Watermarks are the reconciler's, by event.
	Watermarks map[string]time.Time `json:"reconcileWatermarks,omitempty"`
	// Subscription is what the watch last read of the receiver's own
	// subscription (nil when the watch is off: no catalogue login, or
	// WATCH_INTERVAL=0). Its problems degrade /status, never /readyz.
	Subscription *Watch `json:"subscriptionWatch,omitempty"`
	// Interests are what the interests file in force compiles to, the
	// subscription that covers them (nil without INTERESTS_FILE).
	Interests *Interests `json:"interests,omitempty"`
	// Complete are the complete ranges of the product stream and of each
	// interest, by event, and why a range is missing.
	Complete *Complete `json:"complete,omitempty"`
	// Versions is the versions consumer (nil when RECEIVER_VERSIONS is
	// off).
	Versions *Versions `json:"versions,omitempty"`
}

// Versions is the receiver's versions consumer (internal/stream/supersede):
// whether it runs, how far it trails the product stream, and what it
// decided since the receiver started.
type Versions struct {
	Running bool `json:"running"`
	// Pending are the product events it has yet to take in; absent when
	// JetStream cannot tell (not running).
	Pending *int64 `json:"pending,omitempty"`
	// LastDecision is when it last decided on a product event (absent:
	// none since the start).
	LastDecision *time.Time `json:"lastDecision,omitempty"`
	// Notices and Undecided count, since the start, the notices of
	// supersession stored and the products whose version could not be
	// ordered with the latest known.
	Notices   uint64 `json:"notices"`
	Undecided uint64 `json:"undecided"`
	// Stopped is why it stopped until the receiver is restarted with
	// another setting (the product stream does not take the notices'
	// subjects): no notices, and no copies for the interests that take
	// the latest versions only, meanwhile. Absent while it runs.
	Stopped string `json:"stopped,omitempty"`
}

// Complete is what is known complete (docs/consumers.md): a range per
// interest (event.CompleteProducts for the product stream) and event, and
// for each one without a range, why.
type Complete struct {
	// Stream is where the ranges are announced (event.CompleteStream).
	Stream string  `json:"stream"`
	Ranges []Range `json:"ranges,omitempty"`
	// Lag is how far behind now Until stays at best: the reconcile overlap
	// (the catalogue's late listings) — plus up to an interval between
	// passes.
	Lag     string    `json:"lag,omitempty"`
	NoRange []NoRange `json:"noRange,omitempty"`
}

// Range is one complete range: every product event of Event that matches
// Interest's filter and that the catalogue lists with its date in [From,
// Until] is stored on its subjects.
type Range struct {
	Interest string    `json:"interest"`
	Event    string    `json:"event"`
	From     time.Time `json:"from"`
	Until    time.Time `json:"until"`
}

// NoRange is an interest (and event, when only one lacks it) with no
// range, and why.
type NoRange struct {
	Interest string `json:"interest"`
	Event    string `json:"event,omitempty"`
	Reason   string `json:"reason"`
}

// Interests is the one subscription that covers the interests in force:
// what `register apply` would register now.
type Interests struct {
	Count  int      `json:"count"`
	Filter string   `json:"filter"`
	Events []string `json:"events"`
}

// Watch is the receiver's view of its own subscription, as the catalogue
// listed it at the watch's last read (internal/receiver/watch).
type Watch struct {
	// Target is what is watched: "id <Id>" (WATCH_SUBSCRIPTION_ID,
	// PULL_SUBSCRIPTION_ID) or "push to *<path>" (the webhook's path).
	Target string `json:"target"`
	// CheckedAt is the last read that succeeded (zero before the first);
	// Error why the last read failed (the view is then CheckedAt's).
	CheckedAt time.Time `json:"checkedAt,omitzero"`
	Error     string    `json:"error,omitempty"`
	// ID and Status are the subscription's; Status is "missing" when the
	// account has none that matches (cancelled or deleted).
	ID     string `json:"id,omitempty"`
	Status string `json:"status,omitempty"`
	// LastNotification is the catalogue's LastNotificationDate, or the
	// SubmissionDate while it has sent nothing.
	LastNotification *time.Time `json:"lastNotification,omitempty"`
	Filter           string     `json:"filter,omitempty"`
	Events           []string   `json:"events,omitempty"`
	// CoversInterests says whether the subscription's filter and events
	// are what the interests file compiles to (nil without INTERESTS_FILE).
	CoversInterests *bool `json:"coversInterests,omitempty"`
	// Resumed counts the resumes WATCH_RESUME made.
	Resumed int64 `json:"resumed,omitempty"`
	// Problems are what an operator must act on; none when all is well.
	Problems []string `json:"problems,omitempty"`
}

// Webhook is the PUSH endpoint as the receiver serves it.
type Webhook struct {
	Path string `json:"path"`
	// Username is the Basic-auth user the catalogue must send (htpasswd
	// users besides it are not listed).
	Username string `json:"username"`
	TLS      bool   `json:"tls"`
}

// Source is one enabled source of notifications.
type Source struct {
	Name string `json:"name"` // push, pull, reconcile, or another source's name
	// Subscription is the PULL subscription's id.
	Subscription string `json:"subscription,omitempty"`
	// LastStored is when JetStream last confirmed one of its messages
	// (stored or duplicate) since the process started; nil if never.
	LastStored *time.Time `json:"lastStored,omitempty"`
	// Stopped is why the source ended while the receiver runs on (a PULL
	// subscription deleted); the receiver is not ready meanwhile.
	Stopped string `json:"stopped,omitempty"`
}

// Covers says whether a subscription of this filter and these events is
// the one that covers the interests, as `register apply` compares them.
func (in *Interests) Covers(filter string, events []string) bool {
	return filter == in.Filter && slices.Equal(slices.Sorted(slices.Values(events)), slices.Sorted(slices.Values(in.Events)))
}

// Outcome is the check of `register status` (ok or fail) of a running
// subscription of this filter and these events against the interests.
func (in *Interests) Outcome(filter string, events []string) string {
	if in.Covers(filter, events) {
		return "ok"
	}
	return "fail"
}

// Detail says why Outcome is what it is, for the subscription id.
func (in *Interests) Detail(id, filter string, events []string) string {
	if in.Covers(filter, events) {
		return fmt.Sprintf("%s covers the receiver's %d interests", id, in.Count)
	}
	return fmt.Sprintf("%s does not cover the receiver's %d interests (its filter or events differ from what they compile to: events %s, filter %q): the catalogue does not send what an interest added since takes; run register apply",
		id, in.Count, strings.Join(in.Events, ","), in.Filter)
}

// Outcome is the check of `register status` of the watch: warn for its
// problems (as old as its last read: that command reads the catalogue
// now), skip before its first read, else ok.
func (w *Watch) Outcome() string {
	switch {
	case len(w.Problems) > 0:
		return "warn"
	case w.CheckedAt.IsZero():
		return "skip"
	}
	return "ok"
}

// Summary is the watch in a line.
func (w *Watch) Summary() string {
	read := "before its first read"
	if !w.CheckedAt.IsZero() {
		read = "read " + w.CheckedAt.UTC().Format(time.RFC3339)
	}
	if len(w.Problems) > 0 {
		return "as the receiver " + read + ": " + strings.Join(w.Problems, "; ")
	}
	if w.CheckedAt.IsZero() {
		return "the receiver has not read its subscription yet"
	}
	if w.CoversInterests != nil {
		read += ", covers the interests in force"
	}
	return fmt.Sprintf("%s %s, %s", w.ID, w.Status, read)
}

// Stream is a stream's state.
type Stream struct {
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
	// LastTime is when its newest message was stored (zero when empty).
	LastTime time.Time `json:"lastTime,omitzero"`
}

// Fetch reads a receiver's status from its admin base URL
// (http://host:9090).
func Fetch(ctx context.Context, client *http.Client, admin string) (*Receiver, error) {
	return adminpage.Get[Receiver](ctx, client, admin, Path, "receiver status")
}

// Outcome is the check of `register status` of the complete ranges: ok
// when every interest and event has one, skip when none has (the
// reconciler off), warn otherwise.
func (c *Complete) Outcome() string {
	switch {
	case len(c.NoRange) == 0:
		return "ok"
	case len(c.Ranges) == 0:
		return "skip"
	}
	return "warn"
}

// Summary is the ranges in a line: each interest's and event's until
// (from), then why the others have none.
func (c *Complete) Summary() string {
	var parts []string
	for _, r := range c.Ranges {
		parts = append(parts, fmt.Sprintf("%s %s complete until %s (from %s)", r.Interest, r.Event, r.Until.UTC().Format(time.RFC3339), r.From.UTC().Format(time.RFC3339)))
	}
	for _, n := range c.NoRange {
		what := n.Interest
		if n.Event != "" {
			what += " " + n.Event
		}
		parts = append(parts, what+": no range, "+n.Reason)
	}
	if len(parts) == 0 {
		return "no interest"
	}
	return strings.Join(parts, "; ")
}
