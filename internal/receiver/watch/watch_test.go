package watch

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
)

const endpoint = "https://hooks.example.org/notifications"

type fixture struct {
	sim   *cdsesim.Sim
	clock *cdsesim.Clock
	api   *catalogclient.Client
	reg   *prometheus.Registry
	w     *Watch
}

// start runs a watch of the PUSH subscription to /notifications against a
// simulator whose clock starts at start; each read is a Poke.
func start(t *testing.T, at time.Time, o Options) *fixture { return startWith(t, at, o, nil) }

// startWith calls setup, with the simulator, before the watch is made.
func startWith(t *testing.T, at time.Time, o Options, setup func(*fixture, *Options)) *fixture {
	t.Helper()
	clock := cdsesim.NewClock(at)
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"u": {Password: "pw"}}, Now: clock.Now, PushRetries: -1})
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	api := catalogclient.New(srv.URL+"/odata/v1", cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "u", Password: "pw"}), nil)
	f := &fixture{sim: sim, clock: clock, api: api, reg: prometheus.NewRegistry()}
	o.Interval, o.MinGap = time.Hour, time.Millisecond
	if o.ID == "" {
		o.Path = "/notifications"
	}
	o.Quiet = max(o.Quiet, 30*24*time.Hour)
	if setup != nil {
		setup(f, &o)
	}
	log, _ := test.NewNullLogger()
	w, err := New(o, api, f.reg, log)
	if err != nil {
		t.Fatal(err)
	}
	f.w = w
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); w.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return f
}

func (f *fixture) create(t *testing.T, filter string, events ...string) *catalogclient.Subscription {
	t.Helper()
	s, err := f.api.CreateSubscription(context.Background(), catalogclient.SubscriptionRequest{SubscriptionType: "push", FilterParam: filter,
		SubscriptionEvent: events, Priority: 1, Status: "running", NotificationEndpoint: endpoint, NotificationEpUsername: "cdse", NotificationEpPassword: "webhook-password"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) setStatus(t *testing.T, id, st string) {
	t.Helper()
	if _, err := f.api.UpdateSubscription(context.Background(), id, catalogclient.SubscriptionUpdate{Status: &st}); err != nil {
		t.Fatal(err)
	}
}

// until pokes the watch and waits for its status to meet cond.
func (f *fixture) until(t *testing.T, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	checked := f.w.Status().CheckedAt
	f.w.Poke()
	for {
		st := f.w.Status()
		if st.CheckedAt.After(checked) || st.Error != "" {
			if text := describe(st.ID, st.Status, st.Problems); cond(text) {
				return
			} else if time.Now().After(deadline) {
				t.Fatalf("%s: the watch says %s", what, text)
			}
			checked = st.CheckedAt
			f.w.Poke()
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no read of the watch", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func describe(id, status string, problems []string) string {
	return id + " " + status + ": " + strings.Join(problems, "; ")
}

// metric is the value of one series of the registry.
func (f *fixture) metric(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue series
				}
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

func (f *fixture) wantMetric(t *testing.T, name string, labels map[string]string, want float64) {
	t.Helper()
	if got, ok := f.metric(t, name, labels); !ok || got != want {
		t.Errorf("%s%v = %v (found %v), want %v", name, labels, got, ok, want)
	}
}

// A paused subscription, then a cancelled one, are each said: status,
// problems and the metric the alerts read.
func TestPausedThenCancelled(t *testing.T) {
	f := start(t, time.Now(), Options{})
	sub := f.create(t, "Collection/Name eq 'SENTINEL-2'", "created")
	f.until(t, "running", func(s string) bool { return s == sub.ID+" running: " })
	f.wantMetric(t, "cdse_receiver_subscription_status", map[string]string{"id": sub.ID, "status": "running"}, 1)
	f.wantMetric(t, "cdse_receiver_subscription_status", map[string]string{"id": sub.ID, "status": "paused"}, 0)

	f.setStatus(t, sub.ID, "paused")
	f.until(t, "paused", func(s string) bool { return strings.Contains(s, "paused: "+sub.ID+" is paused: nothing is sent") })
	f.wantMetric(t, "cdse_receiver_subscription_status", map[string]string{"id": sub.ID, "status": "paused"}, 1)
	f.wantMetric(t, "cdse_receiver_subscription_status", map[string]string{"id": sub.ID, "status": "running"}, 0)
	f.wantMetric(t, "cdse_receiver_subscription_resumed_total", nil, 0)

	if err := f.api.DeleteSubscription(context.Background(), sub.ID); err != nil {
		t.Fatal(err)
	}
	f.until(t, "cancelled", func(s string) bool {
		return strings.Contains(s, " missing: no subscription of the account matches push to */notifications")
	})
	f.wantMetric(t, "cdse_receiver_subscription_status", map[string]string{"id": "", "status": "missing"}, 1)
	f.wantMetric(t, "cdse_receiver_subscription_status", map[string]string{"status": "paused"}, 0)
	if _, ok := f.metric(t, "cdse_receiver_subscription_last_notification_timestamp_seconds", nil); ok {
		t.Error("a missing subscription has a last notification")
	}
}

// One named by id (WATCH_SUBSCRIPTION_ID) is found whatever its endpoint,
// and missing once cancelled by PATCH.
func TestByID(t *testing.T) {
	var sub *catalogclient.Subscription
	f := startWith(t, time.Now(), Options{ID: "later"}, func(f *fixture, o *Options) {
		sub = f.create(t, "Collection/Name eq 'SENTINEL-1'", "created")
		o.ID = sub.ID
	})
	f.until(t, "by id", func(s string) bool { return s == sub.ID+" running: " })
	f.setStatus(t, sub.ID, "cancelled")
	f.until(t, "cancelled", func(s string) bool { return strings.Contains(s, "no subscription of the account matches id "+sub.ID) })
}

// With Resume, a paused subscription is resumed, logged and counted.
func TestResume(t *testing.T) {
	f := start(t, time.Now(), Options{Resume: true})
	sub := f.create(t, "Collection/Name eq 'SENTINEL-2'", "created")
	f.until(t, "running", func(s string) bool { return s == sub.ID+" running: " })
	f.setStatus(t, sub.ID, "paused")
	f.until(t, "resumed", func(string) bool { return f.w.Status().Resumed == 1 })
	if st := f.w.Status(); st.Status != "running" || len(st.Problems) > 0 {
		t.Errorf("after the resume: %+v", st)
	}
	got, err := f.api.GetSubscription(context.Background(), sub.ID)
	if err != nil || got.Status != "running" {
		t.Fatalf("the catalogue's subscription after the resume: %+v, %v", got, err)
	}
	f.wantMetric(t, "cdse_receiver_subscription_resumed_total", nil, 1)
}

// A subscription without a notification for WATCH_QUIET is quiet (from
// its submission while it has sent nothing); a notification ends it.
func TestQuiet(t *testing.T) {
	f := start(t, time.Now().Add(-31*24*time.Hour), Options{})
	sub := f.create(t, "", "created")
	f.clock.Add(31 * 24 * time.Hour) // the simulator's clock is now
	f.until(t, "quiet", func(s string) bool { return strings.Contains(s, "running: no notification for 744h") })
	submitted := sub.SubmissionDate.Unix()
	if got, _ := f.metric(t, "cdse_receiver_subscription_last_notification_timestamp_seconds", map[string]string{"id": sub.ID}); int64(got) != submitted {
		t.Errorf("last notification %v, want the submission %v", got, submitted)
	}
	f.wantMetric(t, "cdse_receiver_subscription_quiet_threshold_seconds", nil, (30 * 24 * time.Hour).Seconds())

	f.sim.Generate(cdsesim.Sentinel2, 1) // notified (its delivery fails: it needs none)
	f.until(t, "notified", func(s string) bool { return s == sub.ID+" running: " })
	if got, _ := f.metric(t, "cdse_receiver_subscription_last_notification_timestamp_seconds", map[string]string{"id": sub.ID}); time.Since(time.Unix(int64(got), 0)) > time.Minute {
		t.Errorf("last notification %v, want about now", time.Unix(int64(got), 0))
	}
}

// The subscription is compared with what the interests compile to: a
// change of the interests is said at once (Coverage, no read), until a
// subscription that covers them runs.
func TestCoverage(t *testing.T) {
	var interests atomic.Pointer[interestfile.Compiled]
	interests.Store(&interestfile.Compiled{Filter: "Collection/Name eq 'SENTINEL-2'", Events: []event.Kind{event.Created}})
	f := start(t, time.Now(), Options{Interests: interests.Load})
	old := f.create(t, "Collection/Name eq 'SENTINEL-2'", "created")
	f.until(t, "covers", func(s string) bool { return s == old.ID+" running: " })
	if id, ok, known := f.w.Coverage(); id != old.ID || !ok || !known {
		t.Fatalf("Coverage = %s %v %v", id, ok, known)
	}
	f.wantMetric(t, "cdse_receiver_subscription_filter_covers_interests", map[string]string{"id": old.ID}, 1)

	wider := &interestfile.Compiled{Filter: "(Collection/Name eq 'SENTINEL-2') or (Collection/Name eq 'SENTINEL-1')", Events: []event.Kind{event.Created}}
	interests.Store(wider)
	if id, ok, known := f.w.Coverage(); id != old.ID || ok || !known {
		t.Fatalf("after the change, Coverage = %s %v %v", id, ok, known)
	}
	f.wantMetric(t, "cdse_receiver_subscription_filter_covers_interests", map[string]string{"id": old.ID}, 0)
	if st := f.w.Status(); st.CoversInterests == nil || *st.CoversInterests || !strings.Contains(strings.Join(st.Problems, ";"), "run register apply") {
		t.Errorf("status %+v", st)
	}
	// Events count too.
	interests.Store(&interestfile.Compiled{Filter: old.FilterParam, Events: []event.Kind{event.Created, event.Modified}})
	if _, ok, _ := f.w.Coverage(); ok {
		t.Error("a subscription without modified covers interests that take it")
	}
	interests.Store(wider)

	// What register apply does: the new one paused, the old one paused,
	// the new one resumed, the old one cancelled.
	f.setStatus(t, old.ID, "paused")
	next := f.create(t, wider.Filter, "created")
	f.until(t, "applied", func(s string) bool { return s == next.ID+" running: " })
	f.wantMetric(t, "cdse_receiver_subscription_filter_covers_interests", map[string]string{"id": next.ID}, 1)
	if _, ok := f.metric(t, "cdse_receiver_subscription_filter_covers_interests", map[string]string{"id": old.ID}); ok {
		t.Error("the old subscription's series is still exported")
	}
}
