package pull

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
)

type world struct {
	sim   *cdsesim.Sim
	api   *catalogclient.Client
	subID string
	env   *publishtest.Env
	clock *cdsesim.Clock
	logs  *test.Hook
	log   *logrus.Logger
}

func setup(t *testing.T, o cdsesim.Options) *world {
	t.Helper()
	c := cdsesim.NewClock(time.Now().UTC())
	o.Users = map[string]cdsesim.User{"u": {Password: "pw"}}
	o.Now = c.Now
	sim := cdsesim.New(o)
	srv := httptest.NewServer(sim.Handler())
	t.Cleanup(func() { srv.Close(); sim.Close() })
	ts := cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: srv.URL + cdsesim.TokenPath, Username: "u", Password: "pw", Now: c.Now})
	api := catalogclient.New(srv.URL+"/odata/v1", ts, nil)
	sub, err := api.CreateSubscription(context.Background(), catalogclient.SubscriptionRequest{SubscriptionType: "pull", SubscriptionEvent: []string{"created"}})
	if err != nil {
		t.Fatal(err)
	}
	log, hook := test.NewNullLogger()
	return &world{sim: sim, api: api, subID: sub.ID, env: publishtest.New(t, nil), clock: c, logs: hook, log: log}
}

func (w *world) source(t *testing.T, q Queue, hydrate bool) *Source {
	t.Helper()
	s, err := New(Options{SubscriptionID: w.subID, Route: ingest.Route{Prefix: "cdse.product"}, Interval: 10 * time.Millisecond, Hydrate: hydrate}, q, w.env.Publisher, w.env.Quarantine, prometheus.NewRegistry(), w.log)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// drain runs Once until the queue is empty.
func drain(t *testing.T, s *Source) {
	t.Helper()
	for range 1000 {
		more, err := s.Once(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			return
		}
	}
	t.Fatal("queue never emptied")
}

func TestPull250(t *testing.T) {
	w := setup(t, cdsesim.Options{})
	w.sim.Generate(cdsesim.Sentinel2, 250)
	s := w.source(t, w.api, false)
	drain(t, s)
	msgs := w.env.Messages(t)
	if len(msgs) != 250 {
		t.Fatalf("%d messages, want 250", len(msgs))
	}
	if !strings.HasPrefix(msgs[0], "cdse.product.created.SENTINEL-2.S2MSI") || !strings.Contains(msgs[0], " pull ") {
		t.Errorf("message %q", msgs[0])
	}
	if got := testutil.ToFloat64(s.m.acked); got != 250 {
		t.Errorf("acked %v", got)
	}
	if got := testutil.ToFloat64(s.m.queue); got != 0 {
		t.Errorf("queue length %v", got)
	}
	if rest, _ := w.api.Read(context.Background(), w.subID, 20); len(rest) != 0 {
		t.Errorf("%d left in the queue", len(rest))
	}
}

// crashingQueue fails the first Ack, as a receiver killed between the
// PubAck and the Ack would never send it.
type crashingQueue struct {
	Queue
	acks atomic.Int32
}

func (q *crashingQueue) Ack(ctx context.Context, id, ackID string) (*catalogclient.QueueStatus, error) {
	if q.acks.Add(1) == 1 {
		return nil, errors.New("killed before the ack")
	}
	return q.Queue.Ack(ctx, id, ackID)
}

func TestCrashBetweenPublishAndAck(t *testing.T) {
	w := setup(t, cdsesim.Options{})
	w.sim.Generate(cdsesim.Sentinel1, 50)
	first := w.source(t, &crashingQueue{Queue: w.api}, false)
	if _, err := first.Once(context.Background()); err == nil {
		t.Fatal("the ack did not fail")
	}
	if got := len(w.env.Messages(t)); got != 20 {
		t.Fatalf("before the crash %d messages stored, want 20", got)
	}
	// The restarted receiver reads the same 20 again, then the rest.
	drain(t, w.source(t, w.api, false))
	msgs := w.env.Messages(t)
	seen := map[string]int{}
	for _, m := range msgs {
		seen[m]++
	}
	if len(msgs) != 50 || len(seen) != 50 {
		t.Fatalf("%d messages, %d distinct; want 50 and 50", len(msgs), len(seen))
	}
}

func TestGoneAndOverflow(t *testing.T) {
	w := setup(t, cdsesim.Options{QueueCap: 30})
	w.sim.Generate(cdsesim.Sentinel3, 40)
	if got := w.sim.Stats().QueueDropped; got != 10 {
		t.Fatalf("simulator dropped %d", got)
	}
	s := w.source(t, w.api, false)
	drain(t, s)
	if got := testutil.ToFloat64(s.m.full); got < 1 {
		t.Error("a full queue was not reported")
	}
	found := false
	for _, e := range w.logs.AllEntries() {
		found = found || strings.Contains(e.Message, "full")
	}
	if !found {
		t.Error("no log line about the full queue")
	}
	// The subscription cancelled: the source stops with ErrGone.
	if err := w.api.DeleteSubscription(context.Background(), w.subID); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Run(ctx); !errors.Is(err, ErrGone) || !errors.Is(s.Err(), ErrGone) {
		t.Fatalf("Run = %v, Err = %v", err, s.Err())
	}
}

func TestHydrateShortForm(t *testing.T) {
	for _, hydrate := range []bool{false, true} {
		t.Run(map[bool]string{false: "short form", true: "hydrated"}[hydrate], func(t *testing.T) {
			w := setup(t, cdsesim.Options{})
			p := w.sim.Generate(cdsesim.Sentinel5P, 1)[0]
			w.clock.Add(73 * time.Hour) // past the 3-day retention
			drain(t, w.source(t, w.api, hydrate))
			msgs := w.env.Messages(t)
			want := "cdse.product.created.UNKNOWN.UNKNOWN pull " + p.ID
			if hydrate {
				want = "cdse.product.created.SENTINEL-5P.L2__NO2___ pull " + p.ID
			}
			if len(msgs) != 1 || msgs[0] != want {
				t.Fatalf("got %v, want %q", msgs, want)
			}
		})
	}
}

// badProduct is a product whose name the validator refuses (a control
// character), standing for a shape the receiver does not know.
func badProduct(w *world) *cdsesim.Product {
	p := cdsesim.NewProduct(cdsesim.Sentinel2, time.Now(), nil)
	p.Name = "S2B_MSIL2A_\u0001_BAD.SAFE"
	w.sim.CreateProduct(p)
	return p
}

func TestRefusedNotificationQuarantinedThenAcked(t *testing.T) {
	w := setup(t, cdsesim.Options{})
	w.sim.Generate(cdsesim.Sentinel2, 3)
	bad := badProduct(w)
	w.sim.Generate(cdsesim.Sentinel2, 2)
	s := w.source(t, w.api, false)
	drain(t, s)
	if got := len(w.env.Messages(t)); got != 5 {
		t.Errorf("%d messages on the product stream, want 5", got)
	}
	q := w.env.Quarantined(t)
	if len(q) != 1 {
		t.Fatalf("quarantine holds %d bodies, want 1", len(q))
	}
	if q[0].Source != "pull" || q[0].ProductID != bad.ID || q[0].Field != "ProductName" || q[0].Reason != quarantine.ReasonInvalidNotification {
		t.Errorf("quarantined: source %s, reason %s, field %s, product %s", q[0].Source, q[0].Reason, q[0].Field, q[0].ProductID)
	}
	if rest, _ := w.api.Read(context.Background(), w.subID, 20); len(rest) != 0 {
		t.Errorf("%d left in the queue: the refused notification was not acknowledged", len(rest))
	}
	if got := testutil.ToFloat64(s.m.rejected); got != 1 {
		t.Errorf("rejected %v", got)
	}
}

// failingQuarantine stands for a quarantine stream that cannot be written.
type failingQuarantine struct{}

func (failingQuarantine) Put(context.Context, quarantine.Entry) error {
	return quarantine.ErrUnavailable
}

func TestQuarantineDownLeavesBatchUnacked(t *testing.T) {
	w := setup(t, cdsesim.Options{})
	badProduct(w)
	w.sim.Generate(cdsesim.Sentinel2, 2)
	s, err := New(Options{SubscriptionID: w.subID, Route: ingest.Route{Prefix: "cdse.product"}}, w.api, w.env.Publisher, failingQuarantine{}, prometheus.NewRegistry(), w.log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Once(context.Background()); !errors.Is(err, quarantine.ErrUnavailable) {
		t.Fatalf("Once = %v, want the quarantine's error", err)
	}
	// Nothing acknowledged: a working receiver reads all three again.
	drain(t, w.source(t, w.api, false))
	if got, q := len(w.env.Messages(t)), len(w.env.Quarantined(t)); got != 2 || q != 1 {
		t.Errorf("%d stored, %d quarantined; want 2 and 1", got, q)
	}
}
