package register

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/register/preflight"
)

// Check outcomes: a warning is printed but does not fail the command; a
// skipped check could not be made (it says why). The same as the
// preflight's, whose checks status includes.
const (
	checkOK   = preflight.OK
	checkFail = preflight.Fail
	checkWarn = preflight.Warn
	checkSkip = preflight.Skip
)

// Check is one line of `register status`.
type Check = preflight.Step

// Report is what `register status -o json` prints.
type Report struct {
	OK       bool                         `json:"ok"`
	Checks   []Check                      `json:"checks"`
	Receiver *status.Receiver             `json:"receiver,omitempty"`
	Matched  []catalogclient.Subscription `json:"subscriptions"`
}

// ErrChecksFailed makes the exit code 1 once the report is printed.
var ErrChecksFailed = errors.New("checks failed")

// StatusOptions are the flags of status.
type StatusOptions struct {
	Receiver, Endpoint string
	MaxSilence         time.Duration
	// SkipPreflight leaves out the endpoint's checks from here.
	SkipPreflight bool
}

// Status joins what the catalogue and the receiver say into checks.
func (c *Session) Status(ctx context.Context, o StatusOptions, client *http.Client, now time.Time) (Report, error) {
	var r Report
	add := r.add
	// checkEndpoint checks the running subscription's endpoint as the
	// catalogue reaches it (nil: not checked).
	var checkEndpoint func(endpoint, user string)
	if !o.SkipPreflight {
		checkEndpoint = func(endpoint, user string) {
			user, pass := c.preflightCredentials(user, "")
			r.statusPreflight(ctx, endpoint, user, pass)
		}
	}
	// The receiver first: it says which path, user and PULL subscription
	// to look for in the catalogue.
	if o.Receiver != "" {
		st, err := status.Fetch(ctx, client, o.Receiver)
		if err != nil {
			add("receiver", checkFail, "%v", err)
		} else {
			r.Receiver = st
			add("receiver", checkOK, "%s answers, version %s", o.Receiver, st.Version)
			if st.Ready {
				add("receiver ready", checkOK, "/readyz 200")
			} else {
				add("receiver ready", checkFail, "not ready: %s", st.NotReady)
			}
			switch s := st.Stream; {
			case s == nil:
				add("stream", checkFail, "the receiver cannot read its stream")
			case s.Messages == 0:
				add("stream", checkWarn, "%s is empty", s.Name)
			default:
				age := now.Sub(s.LastTime)
				if age > o.MaxSilence {
					add("stream", checkFail, "%s: %d messages, the newest %s old (more than --max-silence %s)", s.Name, s.Messages, age.Round(time.Second), o.MaxSilence)
				} else {
					add("stream", checkOK, "%s: %d messages, %d bytes, the newest %s old", s.Name, s.Messages, s.Bytes, age.Round(time.Second))
				}
			}
			if q := st.Quarantine; q != nil && q.Messages > 0 {
				add("quarantine", checkWarn, "%d refused bodies kept in %s (receiver quarantine list)", q.Messages, q.Name)
			} else if q != nil {
				add("quarantine", checkOK, "empty")
			}
			if cr := st.Complete; cr != nil { // the complete ranges (docs/consumers.md)
				add("complete", preflight.Status(cr.Outcome()), "%s", cr.Summary())
			}
		}
	}
	subs, err := c.API.ListSubscriptions(ctx)
	if err != nil {
		add("catalogue", checkFail, "%v", err)
		if r.Receiver != nil && r.Receiver.Subscription != nil {
			add("watch", preflight.Status(r.Receiver.Subscription.Outcome()), "%s", r.Receiver.Subscription.Summary())
		}
		return r.done(), nil
	}
	add("catalogue", checkOK, "logged in as %s, %d subscription(s)", c.User(), len(subs))
	if r.Receiver != nil && r.Receiver.Subscription != nil { // what the receiver's own watch last read
		w := r.Receiver.Subscription
		if preflight.Status(w.Outcome()) == checkWarn && w.ID != "" && !slices.ContainsFunc(subs, func(s catalogclient.Subscription) bool {
			return s.ID == w.ID && !strings.EqualFold(s.Status, "cancelled")
		}) {
			// Its last read is of a subscription that is gone now (register
			// apply just replaced it): its problems are that one's, not
			// the current one's, which the catalogue checks below judge.
			add("watch", checkSkip, "the receiver's watch last read %s (%s), since cancelled; it reads the subscription that replaced it at its next look (SIGHUP: at once)",
				w.ID, w.CheckedAt.UTC().Format(time.RFC3339))
		} else {
			add("watch", preflight.Status(w.Outcome()), "%s", w.Summary())
		}
	}

	var webhook *status.Webhook
	pullID := ""
	if r.Receiver != nil {
		webhook = r.Receiver.Webhook
		for _, s := range r.Receiver.Sources {
			if s.Name == "pull" {
				pullID = s.Subscription
			}
		}
	}
	// PUSH: the subscription(s) pointing at this receiver.
	if o.Endpoint != "" || webhook != nil {
		var push []catalogclient.Subscription
		for _, s := range subs {
			if s.SubscriptionType == "push" && pushMatches(s, o.Endpoint, webhook) {
				push = append(push, s)
			}
		}
		r.Matched = append(r.Matched, push...)
		r.checkPush(push, o, webhook, now, checkEndpoint)
	}
	if pullID != "" {
		r.checkPull(subs, pullID, o, now)
	}
	if o.Endpoint == "" && webhook == nil && pullID == "" {
		add("subscription", checkSkip, "give --endpoint (the receiver's public URL) or --receiver (its admin URL) to say which subscription feeds it")
	}
	return r.done(), nil
}

// add appends a check.
func (r *Report) add(name string, st preflight.Status, format string, a ...any) {
	r.Checks = append(r.Checks, Check{Name: name, Status: st, Detail: fmt.Sprintf(format, a...)})
}

func (r Report) done() Report {
	r.OK = true
	for _, c := range r.Checks {
		if c.Status == checkFail {
			r.OK = false
		}
	}
	if r.Matched == nil {
		r.Matched = []catalogclient.Subscription{}
	}
	return r
}

// pushMatches says whether s feeds the receiver: its endpoint is
// --endpoint, or, without it, ends in the receiver's webhook path.
func pushMatches(s catalogclient.Subscription, endpoint string, webhook *status.Webhook) bool {
	if endpoint != "" {
		return s.NotificationEndpoint == endpoint
	}
	u, err := url.Parse(s.NotificationEndpoint)
	return err == nil && webhook != nil && u.Path == webhook.Path
}

func (r *Report) checkPush(push []catalogclient.Subscription, o StatusOptions, webhook *status.Webhook, now time.Time, checkEndpoint func(endpoint, user string)) {
	add := r.add
	var running []catalogclient.Subscription
	for _, s := range push {
		if s.Status == "running" {
			running = append(running, s)
		}
	}
	target := o.Endpoint
	if target == "" {
		target = "*" + webhook.Path
	}
	switch {
	case len(push) == 0:
		add("push subscription", checkFail, "no subscription sends to %s (register create --endpoint ...)", target)
		return
	case len(running) == 0:
		add("push subscription", checkFail, "%s is %s: nothing is sent (register resume %s)", push[0].ID, push[0].Status, push[0].ID)
		return
	}
	s := running[0]
	add("push subscription", checkOK, "%s running, events %s, filter %q, endpoint %s", s.ID, strings.Join(s.SubscriptionEvent, ","), s.FilterParam, s.NotificationEndpoint)
	if checkEndpoint != nil {
		checkEndpoint(s.NotificationEndpoint, s.NotificationEpUsername)
	}
	if webhook != nil {
		switch {
		case s.NotificationEpUsername == "":
			add("credentials", checkSkip, "the catalogue does not report the subscription's user")
		case s.NotificationEpUsername != webhook.Username:
			add("credentials", checkFail, "the subscription sends user %q, the receiver expects %q: every notification is refused (401)", s.NotificationEpUsername, webhook.Username)
		default:
			add("credentials", checkOK, "user %q on both sides (passwords are not compared: neither side shows one)", webhook.Username)
		}
	}
	if in := r.Receiver; in != nil && in.Interests != nil { // the interests in force against the running subscription
		add("interests", preflight.Status(in.Interests.Outcome(s.FilterParam, s.SubscriptionEvent)), "%s", in.Interests.Detail(s.ID, s.FilterParam, s.SubscriptionEvent))
	}
	r.checkLast("last notification", s, o, now)
}

func (r *Report) checkPull(subs []catalogclient.Subscription, id string, o StatusOptions, now time.Time) {
	add := r.add
	for _, s := range subs {
		if s.ID != id {
			continue
		}
		r.Matched = append(r.Matched, s)
		switch {
		case s.SubscriptionType != "pull":
			add("pull subscription", checkFail, "%s is a %s subscription, not pull", id, s.SubscriptionType)
		case s.Status != "running":
			add("pull subscription", checkFail, "%s is %s: nothing is queued (register resume %s)", id, s.Status, id)
		default:
			add("pull subscription", checkOK, "%s running, events %s, filter %q", id, strings.Join(s.SubscriptionEvent, ","), s.FilterParam)
			r.checkLast("last pull notification", s, o, now)
		}
		return
	}
	add("pull subscription", checkFail, "the receiver reads PULL subscription %s, which the account does not have", id)
}

func (r *Report) checkLast(name string, s catalogclient.Subscription, o StatusOptions, now time.Time) {
	add := r.add
	if s.LastNotificationDate.IsZero() {
		add(name, checkWarn, "the catalogue has sent nothing yet on %s", s.ID)
		return
	}
	age := now.Sub(s.LastNotificationDate.Time)
	if age > o.MaxSilence {
		add(name, checkFail, "%s old (more than --max-silence %s)", age.Round(time.Second), o.MaxSilence)
		return
	}
	add(name, checkOK, "%s ago", age.Round(time.Second))
}

// PrintReport writes the checks as a table (✔ ok, ✘ fail, ! warn, - skip).
func PrintReport(w io.Writer, r Report) error { return preflight.PrintSteps(w, r.Checks) }
