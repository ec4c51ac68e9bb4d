// Package watch reads the receiver's own subscription from the catalogue
// (Subscriptions/Info) now and then, so that one that dies quietly is
// noticed: paused (by an operator, or by the catalogue after 60 days
// without a notification), missing (cancelled, or deleted by the catalogue
// 365 days after its last one), quiet for WATCH_QUIET, or no longer what
// the interests file compiles to. It says so in metrics, /status and the
// log, and with Resume resumes a paused one itself. It never makes the
// receiver unready: a failed read degrades /status only.
package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
)

// Catalogue is what the watch asks of the catalogue (catalogclient.Client).
type Catalogue interface {
	ListSubscriptions(ctx context.Context) ([]catalogclient.Subscription, error)
	UpdateSubscription(ctx context.Context, id string, u catalogclient.SubscriptionUpdate) (*catalogclient.Subscription, error)
}

// Options configure a Watch.
type Options struct {
	// Interval between reads (WATCH_INTERVAL); the first is at Run.
	Interval time.Duration
	// MinGap is the least time between two reads, Poke included (default
	// 5 s): a burst of SIGHUPs is one read.
	MinGap time.Duration
	// Timeout bounds one read, resume included (default 30 s).
	Timeout time.Duration
	// ID is the subscription watched (WATCH_SUBSCRIPTION_ID, or the PULL
	// subscription); without it, Path: the PUSH subscription whose
	// endpoint's path is the webhook's, as `register status` finds it.
	ID, Path string
	// Quiet is how long without a notification is a problem (WATCH_QUIET).
	Quiet time.Duration
	// Resume resumes a paused subscription (WATCH_RESUME).
	Resume bool
	// Interests is what the interests in force compile to; nil without
	// INTERESTS_FILE.
	Interests func() *interestfile.Compiled
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Watch watches one subscription.
type Watch struct {
	o    Options
	cat  Catalogue
	log  logrus.FieldLogger
	poke chan struct{}

	mu      sync.Mutex
	checked time.Time // the last read that succeeded
	err     error     // the last read's failure; nil after a success
	found   bool
	sub     catalogclient.Subscription
	resumed int64

	resumes, failures prometheus.Counter
	lastOK            prometheus.Gauge
}

// New makes a watch; its metrics are registered on reg.
func New(o Options, cat Catalogue, reg prometheus.Registerer, log logrus.FieldLogger) (*Watch, error) {
	if o.Interval <= 0 || (o.ID == "" && o.Path == "") {
		return nil, errors.New("watch: an interval and a subscription (an id or the webhook's path) are needed")
	}
	o.MinGap = cmp.Or(o.MinGap, 5*time.Second)
	o.Timeout = cmp.Or(o.Timeout, 30*time.Second)
	if o.Now == nil {
		o.Now = time.Now
	}
	w := &Watch{o: o, cat: cat, log: log.WithField("component", "watch"), poke: make(chan struct{}, 1),
		resumes: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_subscription_resumed_total",
			Help: "Paused subscriptions the watch resumed (WATCH_RESUME=true)."}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_subscription_watch_failures_total",
			Help: "Reads of the subscription (Subscriptions/Info) that failed."}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cdse_receiver_subscription_watch_last_success_timestamp_seconds",
			Help: "Unix time of the watch's last successful read of the subscription; the process start until the first."}),
	}
	w.lastOK.Set(float64(o.Now().Unix()))
	quiet := prometheus.NewGauge(prometheus.GaugeOpts{Name: "cdse_receiver_subscription_quiet_threshold_seconds",
		Help: "WATCH_QUIET: how long the subscription may go without a notification before it is a problem."})
	quiet.Set(o.Quiet.Seconds())
	if err := errors.Join(reg.Register(w.resumes), reg.Register(w.failures), reg.Register(w.lastOK), reg.Register(quiet), reg.Register(collector{w})); err != nil {
		return nil, fmt.Errorf("watch: register metrics: %w", err)
	}
	return w, nil
}

// Run reads the subscription at once, then every Interval and at each
// Poke (at most one read every MinGap), until ctx ends. A failed read is
// logged and tried again at the next: it never ends the watch.
func (w *Watch) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-w.poke:
			if wait := w.o.MinGap - time.Since(last); wait > 0 {
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		w.check(ctx)
		t.Reset(w.o.Interval)
	}
}

// Poke asks for a read now (SIGHUP: after `register apply`, or an
// interests file changed). It never blocks.
func (w *Watch) Poke() {
	select {
	case w.poke <- struct{}{}:
	default:
	}
}

// check is one read, and a resume when it is due.
func (w *Watch) check(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	defer cancel()
	subs, err := w.cat.ListSubscriptions(ctx)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return // the receiver stops
		}
		w.failures.Inc()
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
		w.log.WithError(err).Warn("subscription watch: the catalogue's subscriptions could not be read; tried again at the next interval")
		return
	}
	sub, found := w.pick(subs)
	w.mu.Lock()
	was, wasFound, first := w.sub, w.found, w.checked.IsZero()
	w.checked, w.err, w.sub, w.found = w.o.Now(), nil, sub, found
	w.mu.Unlock()
	w.lastOK.Set(float64(w.o.Now().Unix()))
	switch {
	case !found && (wasFound || first):
		w.log.WithField("watched", w.target()).Error("subscription watch: no subscription of the account matches: cancelled or deleted (register apply, or register create)")
	case found && sub.Status != "running" && (was.ID != sub.ID || was.Status != sub.Status):
		w.log.WithFields(logrus.Fields{"subscription": sub.ID, "status": sub.Status}).Error("subscription watch: the subscription is not running: the catalogue sends nothing")
	}
	if found && sub.Status == "paused" && w.o.Resume {
		w.resume(ctx, sub)
	}
}

// resume sets a paused subscription running (WATCH_RESUME).
func (w *Watch) resume(ctx context.Context, sub catalogclient.Subscription) {
	running := "running"
	got, err := w.cat.UpdateSubscription(ctx, sub.ID, catalogclient.SubscriptionUpdate{Status: &running})
	if err != nil {
		w.failures.Inc()
		w.mu.Lock()
		w.err = fmt.Errorf("resume %s: %w", sub.ID, err)
		w.mu.Unlock()
		w.log.WithError(err).WithField("subscription", sub.ID).Error("subscription watch: the paused subscription could not be resumed (WATCH_RESUME)")
		return
	}
	w.resumes.Inc()
	w.mu.Lock()
	if got.ID == sub.ID {
		w.sub = *got
	} else {
		w.sub.Status = running
	}
	w.resumed++
	w.mu.Unlock()
	w.log.WithField("subscription", sub.ID).Warn("subscription watch: resumed the paused subscription (WATCH_RESUME=true)")
}

// pick finds the watched subscription in the account's: the one of the
// id; else, of those that push to the webhook's path, the running one,
// else the paused one that covers the interests, else the newest.
func (w *Watch) pick(subs []catalogclient.Subscription) (catalogclient.Subscription, bool) {
	if w.o.ID != "" {
		for _, s := range subs {
			if s.ID == w.o.ID && s.Status != "cancelled" {
				return s, true
			}
		}
		return catalogclient.Subscription{}, false
	}
	var mine []catalogclient.Subscription
	for _, s := range subs {
		if u, err := url.Parse(s.NotificationEndpoint); err == nil && s.SubscriptionType == "push" && u.Path == w.o.Path && s.Status != "cancelled" {
			mine = append(mine, s)
		}
	}
	if len(mine) == 0 {
		return catalogclient.Subscription{}, false
	}
	c := w.compiled()
	slices.SortStableFunc(mine, func(a, b catalogclient.Subscription) int {
		return cmp.Or(-cmp.Compare(rank(a, c), rank(b, c)), b.SubmissionDate.Compare(a.SubmissionDate.Time))
	})
	return mine[0], true
}

// rank orders the candidates: running first, then covering the interests.
func rank(s catalogclient.Subscription, c *interestfile.Compiled) int {
	r := 0
	if s.Status == "running" {
		r += 2
	}
	if c != nil && covers(s, c) {
		r++
	}
	return r
}

func (w *Watch) compiled() *interestfile.Compiled {
	if w.o.Interests == nil {
		return nil
	}
	return w.o.Interests()
}

// covers says whether s is what the interests compile to, as `register
// apply` compares them: the same filter, the same events (apply would
// change nothing).
func covers(s catalogclient.Subscription, c *interestfile.Compiled) bool {
	var want []string
	for _, e := range c.SubscriptionEvents() {
		want = append(want, string(e))
	}
	slices.Sort(want)
	return s.FilterParam == c.Filter && slices.Equal(slices.Sorted(slices.Values(s.SubscriptionEvent)), want)
}

func (w *Watch) target() string {
	if w.o.ID != "" {
		return "id " + w.o.ID
	}
	return "push to *" + w.o.Path
}

// Coverage says whether the subscription last read covers the interests
// in force (known: a subscription was found and there are interests);
// id is the subscription's. The reload's log line says it, at once.
func (w *Watch) Coverage() (id string, ok, known bool) {
	c := w.compiled()
	w.mu.Lock()
	defer w.mu.Unlock()
	if c == nil || !w.found {
		return "", false, false
	}
	return w.sub.ID, covers(w.sub, c), true
}

// lastNotification is the catalogue's LastNotificationDate, or the
// submission while it has sent nothing (the catalogue's quiet time counts
// from there too).
func lastNotification(s catalogclient.Subscription) time.Time {
	if !s.LastNotificationDate.IsZero() {
		return s.LastNotificationDate.Time
	}
	return s.SubmissionDate.Time
}

// Status is the watch's view for /status.
func (w *Watch) Status() *status.Watch {
	c := w.compiled()
	w.mu.Lock()
	defer w.mu.Unlock()
	st := &status.Watch{Target: w.target(), CheckedAt: w.checked, Resumed: w.resumed}
	if w.err != nil {
		st.Error = w.err.Error()
		st.Problems = append(st.Problems, "the subscription could not be read: "+w.err.Error())
	}
	if w.checked.IsZero() {
		return st
	}
	if !w.found {
		st.Status = "missing"
		st.Problems = append(st.Problems, fmt.Sprintf("no subscription of the account matches %s: cancelled or deleted; nothing is sent (register apply, or register create)", st.Target))
		return st
	}
	s := w.sub
	st.ID, st.Status, st.Filter, st.Events = s.ID, s.Status, s.FilterParam, s.SubscriptionEvent
	if last := lastNotification(s); !last.IsZero() {
		last = last.UTC()
		st.LastNotification = &last
		if age := w.o.Now().Sub(last); w.o.Quiet > 0 && age > w.o.Quiet {
			st.Problems = append(st.Problems, fmt.Sprintf("no notification for %s (more than WATCH_QUIET %s): the catalogue pauses a running subscription after 60 days without one", age.Round(time.Minute), w.o.Quiet))
		}
	}
	if s.Status != "running" {
		st.Problems = append(st.Problems, fmt.Sprintf("%s is %s: nothing is sent (register resume %s, or WATCH_RESUME=true)", s.ID, s.Status, s.ID))
	}
	if c != nil {
		ok := covers(s, c)
		st.CoversInterests = &ok
		if !ok {
			st.Problems = append(st.Problems, fmt.Sprintf("%s does not cover the interests in force (its filter or events differ from what the interests file compiles to): run register apply", s.ID))
		}
	}
	return st
}

// statuses are the states cdse_receiver_subscription_status always has a
// series of (0 or 1), so that alerts see a 0, not nothing.
var statuses = []string{"running", "paused", "missing"}

// collector exports the last read at each scrape.
type collector struct{ w *Watch }

var (
	statusDesc = prometheus.NewDesc("cdse_receiver_subscription_status",
		"The watched subscription's status at the last read: 1 for the current one (running, paused, or missing: cancelled or deleted), 0 for the others; id is the subscription's (empty when missing).", []string{"id", "status"}, nil)
	lastDesc = prometheus.NewDesc("cdse_receiver_subscription_last_notification_timestamp_seconds",
		"Unix time of the watched subscription's LastNotificationDate (its SubmissionDate while it has sent nothing).", []string{"id"}, nil)
	coversDesc = prometheus.NewDesc("cdse_receiver_subscription_filter_covers_interests",
		"1 when the watched subscription's filter and events are what the interests file in force compiles to (register apply would change nothing), else 0; only with INTERESTS_FILE.", []string{"id"}, nil)
)

func (collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- statusDesc
	ch <- lastDesc
	ch <- coversDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	w := c.w
	comp := w.compiled()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.checked.IsZero() {
		return
	}
	current := "missing"
	if w.found {
		current = w.sub.Status
	}
	for _, s := range statuses {
		ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, gauge(s == current), w.sub.ID, s)
	}
	if !slices.Contains(statuses, current) {
		ch <- prometheus.MustNewConstMetric(statusDesc, prometheus.GaugeValue, 1, w.sub.ID, current)
	}
	if !w.found {
		return
	}
	if last := lastNotification(w.sub); !last.IsZero() {
		ch <- prometheus.MustNewConstMetric(lastDesc, prometheus.GaugeValue, float64(last.UnixNano())/1e9, w.sub.ID)
	}
	if comp != nil {
		ch <- prometheus.MustNewConstMetric(coversDesc, prometheus.GaugeValue, gauge(covers(w.sub, comp)), w.sub.ID)
	}
}

func gauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
