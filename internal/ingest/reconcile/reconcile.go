// Package reconcile is the safety net under PUSH and PULL: it periodically
// lists what the catalogue created, modified and deleted since a watermark
// and publishes a synthesized notification for each, with the same dedupe
// key as a pushed one, so that an event already delivered is recognised by
// JetStream as a duplicate and one that PUSH lost is stored. Each event
// kind has its own watermark in a JetStream KV bucket, advanced only after
// every product up to it is stored; a lease in a second bucket lets one
// replica reconcile at a time. The listing is internal/cdse/catalogclient's
// Lister, which the backfill uses too; the notifications it synthesizes
// (synthesize.go) are the backfill's as well.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// Options configure a Reconciler.
type Options struct {
	// Filter is an OData filter on Products (and DeletedProducts), usually
	// the subscription's.
	Filter string
	// FilterOf, when set, gives the filter of each pass instead (the union
	// of the interests, which a reload may change).
	FilterOf func() string
	// Events are reconciled (default created, modified, deleted).
	Events         []event.Kind
	Interval       time.Duration // between passes
	Lookback       time.Duration // first watermark: now - Lookback (default 24 h)
	Overlap        time.Duration // each pass re-lists this much before the watermark (default 10 min)
	PageSize       int           // default 100, at most 1000
	RequestsPerSec float64       // catalogue request cap (default 2)
	Route          ingest.Route  // how messages are shaped
	Now            func() time.Time
	// Listed, when set, is told after each event's pass that listed its
	// whole window and stored all it found: the filter it listed with,
	// and every product of it with its date in [from, until] is stored,
	// until being when the listing started minus Overlap (a product the
	// catalogue lists late, by less than Overlap, was listed by then).
	// internal/stream/complete's ranges advance with it.
	Listed func(ctx context.Context, ev event.Kind, filter string, from, until time.Time) error
}

// Buckets opens the receiver's state bucket (the watermarks) and the lease
// bucket; internal/stream/topology owns both.
type Buckets interface {
	State(ctx context.Context) (jetstream.KeyValue, error)
	Lease(ctx context.Context, ttl time.Duration) (jetstream.KeyValue, error)
}

const keyLease = "reconcile-lease"

// watermarkKey is where an event's watermark lives; created keeps the key
// of the versions that reconciled only created.
func watermarkKey(ev event.Kind) string {
	if ev == event.Created {
		return "reconcile-watermark"
	}
	return "reconcile-watermark-" + string(ev)
}

// Reconciler runs passes.
type Reconciler struct {
	o      Options
	list   *catalogclient.Lister
	pub    publish.BatchPublisher
	qu     quarantine.Putter
	bk     Buckets
	log    logrus.FieldLogger
	id     string // this replica, in the lease
	m      *metrics
	events []event.Kind

	// mu serialises passes of this replica (Run calls Pass one at a time;
	// the lock makes concurrent callers safe too) and guards leaseRev. It is
	// held for a whole pass, which can last minutes at the catalogue's
	// request rate: nothing a status page calls may take it.
	mu       sync.Mutex
	leaseRev uint64
	// bucketsMu guards the buckets, opened once (by a pass or a reader).
	bucketsMu sync.Mutex
	kv, lease jetstream.KeyValue
}

// New returns a reconciler; its metrics are registered on reg.
func New(o Options, cat catalogclient.Lists, pub publish.BatchPublisher, qu quarantine.Putter, bk Buckets, reg prometheus.Registerer, log logrus.FieldLogger) (*Reconciler, error) {
	if o.Lookback <= 0 {
		o.Lookback = 24 * time.Hour
	}
	if o.Overlap <= 0 {
		o.Overlap = 10 * time.Minute
	}
	if o.PageSize <= 0 {
		o.PageSize = 100
	}
	if o.RequestsPerSec <= 0 {
		o.RequestsPerSec = 2
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(o.Events) == 0 {
		o.Events = event.Kinds
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Reconciler{o: o, list: catalogclient.NewLister(cat, o.PageSize, o.RequestsPerSec), pub: pub, qu: qu, bk: bk,
		log: log.WithField("component", "reconcile"), id: uuid.NewString(), m: m, events: o.Events}, nil
}

// leaseTTL is how long a lease lives without renewal: long enough for a
// page, short enough that a dead replica's lease soon frees.
func (r *Reconciler) leaseTTL() time.Duration {
	return max(min(r.o.Interval, 5*time.Minute), 30*time.Second)
}

func (r *Reconciler) buckets(ctx context.Context) error {
	r.bucketsMu.Lock()
	defer r.bucketsMu.Unlock()
	if r.kv != nil {
		return nil
	}
	kv, err := r.bk.State(ctx)
	if err != nil {
		return err
	}
	lease, err := r.bk.Lease(ctx, r.leaseTTL())
	if err != nil {
		return err
	}
	r.kv, r.lease = kv, lease
	return nil
}

// Run reconciles every Interval until ctx ends.
func (r *Reconciler) Run(ctx context.Context) {
	for {
		if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.m.errors.Inc()
			r.log.WithError(err).Warn("reconcile pass failed; the watermarks stay where they were stored")
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.o.Interval):
		}
	}
}

// ErrLeaseHeld means another replica reconciles now.
var ErrLeaseHeld = errors.New("another replica holds the reconcile lease")

// acquire takes or renews the lease.
func (r *Reconciler) acquire(ctx context.Context) error {
	rev, err := r.lease.Create(ctx, keyLease, []byte(r.id))
	if err == nil {
		r.leaseRev = rev
		return nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("lease: %w", err)
	}
	e, err := r.lease.Get(ctx, keyLease)
	if err != nil {
		return fmt.Errorf("lease: %w", err)
	}
	if string(e.Value()) != r.id {
		return ErrLeaseHeld
	}
	if r.leaseRev, err = r.lease.Update(ctx, keyLease, []byte(r.id), e.Revision()); err != nil {
		return fmt.Errorf("renew lease: %w", err)
	}
	return nil
}

func (r *Reconciler) release(ctx context.Context) {
	_ = r.lease.Delete(ctx, keyLease, jetstream.LastRevision(r.leaseRev))
}

// Watermark returns the stored watermark of an event (zero if none). It
// reads the bucket, never waiting for a pass under way.
func (r *Reconciler) Watermark(ctx context.Context, ev event.Kind) (time.Time, error) {
	return r.watermark(ctx, ev)
}

// Watermarks are the stored watermarks of the events it reconciles, those
// that have one, as the bucket holds them now (a pass under way advances
// them page by page; /status reads them without waiting for it).
func (r *Reconciler) Watermarks(ctx context.Context) map[event.Kind]time.Time {
	out := map[event.Kind]time.Time{}
	for _, ev := range r.events {
		if t, err := r.watermark(ctx, ev); err == nil && !t.IsZero() {
			out[ev] = t
		}
	}
	return out
}

func (r *Reconciler) watermark(ctx context.Context, ev event.Kind) (time.Time, error) {
	if err := r.buckets(ctx); err != nil {
		return time.Time{}, err
	}
	e, err := r.kv.Get(ctx, watermarkKey(ev))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	return time.Parse(time.RFC3339Nano, string(e.Value()))
}

// Pass lists, for each reconciled event, what the catalogue did since its
// watermark (minus Overlap) and publishes what is not on the stream yet,
// page by page, advancing the watermark after each stored page. It returns
// nil, quietly, when another replica holds the lease. An event whose
// listing fails does not stop the others; the errors are returned joined.
func (r *Reconciler) Pass(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.buckets(ctx); err != nil {
		return err
	}
	if err := r.acquire(ctx); err != nil {
		if errors.Is(err, ErrLeaseHeld) {
			r.log.Debug("reconcile: another replica holds the lease")
			return nil
		}
		return err
	}
	defer r.release(context.WithoutCancel(ctx))
	var errs []error
	for _, ev := range r.events {
		if err := r.passEvent(ctx, catalogclient.KindOf(ev)); err != nil {
			if errors.Is(err, ErrLeaseHeld) || ctx.Err() != nil {
				return err
			}
			errs = append(errs, fmt.Errorf("%s: %w", ev, err))
		}
	}
	if len(errs) == 0 {
		r.m.passes.Inc()
	}
	return errors.Join(errs...)
}

func (r *Reconciler) passEvent(ctx context.Context, k catalogclient.Kind) error {
	wm, err := r.watermark(ctx, k.Event)
	if err != nil {
		return fmt.Errorf("watermark: %w", err)
	}
	if wm.IsZero() {
		wm = r.o.Now().Add(-r.o.Lookback)
	}
	// Where this pass starts, even when it finds nothing to advance it.
	r.m.watermark.WithLabelValues(string(k.Event)).Set(float64(wm.Unix()))
	start := time.Now()
	listedAt := r.o.Now()
	filter := r.o.Filter
	if r.o.FilterOf != nil {
		filter = r.o.FilterOf()
	}
	from := wm.Add(-r.o.Overlap)
	rng := catalogclient.Range{Filter: filter, From: from}
	var stored, dups int
	for {
		page, err := r.list.Page(ctx, k, rng, false)
		if err != nil {
			return err
		}
		if len(page.Items) > 0 {
			o, err := r.store(ctx, k, page.Items)
			if err != nil {
				return err
			}
			stored, dups = stored+o.Accepted, dups+o.Duplicates
			// Pages come in date order: every product up to the last is
			// stored. (A tie at the last date may go on: the next pass
			// starts an overlap before the watermark anyway.) Never past
			// when this listing began: a product published during the pass
			// (or dated ahead by the catalogue's clock) would otherwise
			// move the next window's start past products dated just
			// before then that the catalogue lists late, and the complete
			// ranges, which end an overlap before the listing's start,
			// would not join the next pass's window.
			last := page.Items[len(page.Items)-1].Date
			if last.After(listedAt) {
				last = listedAt
			}
			if last.After(wm) {
				if _, err := r.kv.Put(ctx, watermarkKey(k.Event), []byte(last.UTC().Format(time.RFC3339Nano))); err != nil {
					return fmt.Errorf("advance watermark: %w", err)
				}
				wm = last
				r.m.watermark.WithLabelValues(string(k.Event)).Set(float64(last.Unix()))
			}
		}
		if page.Done {
			break
		}
		rng.After = page.Next
		if err := r.acquire(ctx); err != nil {
			return err
		}
	}
	r.m.stored.WithLabelValues(string(k.Event)).Add(float64(stored))
	r.log.WithFields(logrus.Fields{"event": k.Event, "stored": stored, "duplicates": dups, "watermark": wm.UTC().Format(time.RFC3339),
		"took": time.Since(start).Round(time.Millisecond).String()}).Info("reconcile pass done")
	if r.o.Listed != nil {
		if err := r.o.Listed(ctx, k.Event, filter, from, listedAt.Add(-r.o.Overlap)); err != nil {
			return fmt.Errorf("complete ranges: %w", err)
		}
	}
	return nil
}

// store publishes the notifications of a page; what fails validation is
// quarantined (kept, not skipped: the watermark moves past it, so the
// quarantine is the only place it will be found again).
func (r *Reconciler) store(ctx context.Context, k catalogclient.Kind, items []catalogclient.Item) (ingest.Outcome, error) {
	ns, refused := Notifications(k, items, r.o.Now(), ingest.SourceReconcile)
	for _, e := range refused {
		if err := r.qu.Put(ctx, e); err != nil {
			return ingest.Outcome{}, fmt.Errorf("quarantine a refused product: %w", err)
		}
	}
	if len(ns) == 0 {
		return ingest.Outcome{}, nil
	}
	res, err := r.pub.Publish(ctx, ingest.Messages(ns, &r.o.Route, ingest.SourceReconcile))
	if err != nil {
		return ingest.Outcome{}, err
	}
	return ingest.Count(res), nil
}

type metrics struct {
	passes, errors prometheus.Counter
	stored         *prometheus.CounterVec
	watermark      *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		passes: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_reconcile_passes_total", Help: "Completed reconcile passes."}),
		stored: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_reconcile_stored_total", Help: "Events the reconciler stored (missed by PUSH/PULL), by event."}, []string{"event"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_reconcile_errors_total", Help: "Reconcile passes that failed."}),
		watermark: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "cdse_receiver_reconcile_watermark_seconds",
			Help: "The reconcile watermark of each event (Unix time)."}, []string{"event"}),
	}
	for _, c := range []prometheus.Collector{m.passes, m.stored, m.errors, m.watermark} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register reconcile metrics: %w", err)
		}
	}
	for _, ev := range event.Kinds {
		m.stored.WithLabelValues(string(ev))
	}
	return m, nil
}
