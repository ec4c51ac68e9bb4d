// Package reconcile is the safety net under PUSH and PULL: it periodically
// lists the catalogue's products published since a watermark and publishes a
// synthesized `created` notification for each, with the same dedupe key as a
// pushed one, so that a product already delivered is recognised by
// JetStream as a duplicate and one that PUSH lost is stored. The watermark
// lives in a JetStream KV bucket and advances only after every product up to
// it is stored; a lease in the same bucket lets one replica reconcile at a
// time.
package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"golang.org/x/time/rate"

	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/publish"
	"github.com/cdse-jetstream/receiver/internal/quarantine"
)

// Catalogue is the part of the catalogue API the reconciler uses.
type Catalogue interface {
	ListProducts(ctx context.Context, filter string, top int, next string) ([]json.RawMessage, string, error)
}

// Publisher stores messages (internal/publish).
type Publisher interface {
	Publish(ctx context.Context, msgs []publish.Message) ([]publish.Result, error)
}

// Quarantine keeps what fails validation (internal/quarantine).
type Quarantine interface {
	Put(ctx context.Context, e quarantine.Entry) error
}

// Options configure a Reconciler.
type Options struct {
	// Filter is an OData filter on Products, usually the subscription's.
	Filter         string
	Interval       time.Duration // between passes
	Lookback       time.Duration // first watermark: now - Lookback (default 24 h)
	Overlap        time.Duration // each pass re-lists this much before the watermark (default 10 min)
	PageSize       int           // default 100
	RequestsPerSec float64       // catalogue request cap (default 2)
	SubjectPrefix  string
	// Bucket is the KV bucket of the watermark and the lease.
	Bucket   string
	Replicas int
	Now      func() time.Time
}

const (
	keyWatermark = "reconcile-watermark"
	keyLease     = "reconcile-lease"
)

// Reconciler runs passes.
type Reconciler struct {
	o     Options
	cat   Catalogue
	pub   Publisher
	qu    Quarantine
	js    jetstream.JetStream
	log   logrus.FieldLogger
	id    string // this replica, in the lease
	limit *rate.Limiter
	m     *metrics

	// mu serialises passes of this replica (Run calls Pass one at a time;
	// the lock makes concurrent callers safe too) and guards the fields below.
	mu        sync.Mutex
	kv, lease jetstream.KeyValue
	leaseRev  uint64
}

// New returns a reconciler; its metrics are registered on reg.
func New(o Options, cat Catalogue, pub Publisher, qu Quarantine, js jetstream.JetStream, reg prometheus.Registerer, log logrus.FieldLogger) (*Reconciler, error) {
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
	if o.Bucket == "" {
		o.Bucket = "CDSE_RECEIVER"
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Reconciler{o: o, cat: cat, pub: pub, qu: qu, js: js, log: log.WithField("component", "reconcile"), id: uuid.NewString(),
		limit: rate.NewLimiter(rate.Limit(o.RequestsPerSec), 1), m: m}, nil
}

// leaseTTL is how long a lease lives without renewal: long enough for a
// page, short enough that a dead replica's lease soon frees.
func (r *Reconciler) leaseTTL() time.Duration {
	return max(min(r.o.Interval, 5*time.Minute), 30*time.Second)
}

func (r *Reconciler) buckets(ctx context.Context) error {
	if r.kv != nil {
		return nil
	}
	kv, err := r.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: r.o.Bucket, Description: "cdse receiver state (reconcile watermark)", Storage: jetstream.FileStorage, Replicas: max(r.o.Replicas, 1)})
	if err != nil {
		return fmt.Errorf("kv bucket %s: %w", r.o.Bucket, err)
	}
	lease, err := r.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: r.o.Bucket + "_LEASE", Description: "cdse receiver reconcile lease", TTL: r.leaseTTL(), Storage: jetstream.FileStorage, Replicas: max(r.o.Replicas, 1)})
	if err != nil {
		return fmt.Errorf("kv bucket %s_LEASE: %w", r.o.Bucket, err)
	}
	r.kv, r.lease = kv, lease
	return nil
}

// Run reconciles every Interval until ctx ends.
func (r *Reconciler) Run(ctx context.Context) {
	for {
		if err := r.Pass(ctx); err != nil && ctx.Err() == nil {
			r.m.errors.Inc()
			r.log.WithError(err).Warn("reconcile pass failed; the watermark stays where it was")
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

// Watermark returns the stored watermark (zero if none).
func (r *Reconciler) Watermark(ctx context.Context) (time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.watermark(ctx)
}

func (r *Reconciler) watermark(ctx context.Context) (time.Time, error) {
	if err := r.buckets(ctx); err != nil {
		return time.Time{}, err
	}
	e, err := r.kv.Get(ctx, keyWatermark)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, string(e.Value()))
	return t, err
}

// Pass lists the products published since the watermark (minus Overlap)
// and publishes those not seen, page by page, advancing the watermark after
// each stored page. It returns ErrLeaseHeld, quietly, when another replica
// is at it.
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
	wm, err := r.watermark(ctx)
	if err != nil {
		return fmt.Errorf("watermark: %w", err)
	}
	if wm.IsZero() {
		wm = r.o.Now().Add(-r.o.Lookback)
	}
	since := wm.Add(-r.o.Overlap)
	filter := "PublicationDate ge " + since.UTC().Format("2006-01-02T15:04:05.000000Z")
	if r.o.Filter != "" {
		filter += " and (" + r.o.Filter + ")"
	}
	start := time.Now()
	var stored, dups int
	next := ""
	for {
		if err := r.limit.Wait(ctx); err != nil {
			return err
		}
		page, link, err := r.cat.ListProducts(ctx, filter, r.o.PageSize, next)
		if err != nil {
			return err
		}
		if len(page) > 0 {
			o, last, err := r.publishPage(ctx, page)
			if err != nil {
				return err
			}
			stored, dups = stored+o.Accepted, dups+o.Duplicates
			// Pages come in PublicationDate order: every product up to last
			// is stored now.
			if last.After(wm) {
				if _, err := r.kv.Put(ctx, keyWatermark, []byte(last.UTC().Format(time.RFC3339Nano))); err != nil {
					return fmt.Errorf("advance watermark: %w", err)
				}
				wm = last
				r.m.watermark.Set(float64(last.Unix()))
			}
			if err := r.acquire(ctx); err != nil {
				return err
			}
		}
		if link == "" {
			break
		}
		next = link
	}
	r.m.passes.Inc()
	r.m.published.Add(float64(stored))
	r.log.WithFields(logrus.Fields{"stored": stored, "duplicates": dups, "watermark": wm.UTC().Format(time.RFC3339), "took": time.Since(start).Round(time.Millisecond).String()}).Info("reconcile pass done")
	return nil
}

// publishPage publishes a created notification for each product and
// returns the latest PublicationDate of the page.
func (r *Reconciler) publishPage(ctx context.Context, page []json.RawMessage) (ingest.Outcome, time.Time, error) {
	now := r.o.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	var (
		ns   []notification.Notification
		last time.Time
	)
	for _, raw := range page {
		var p struct {
			ID              string `json:"Id"`
			Name            string `json:"Name"`
			PublicationDate string `json:"PublicationDate"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return ingest.Outcome{}, last, fmt.Errorf("product: %w", err)
		}
		if t, ok := notification.ParseTime(p.PublicationDate); ok && t.After(last) {
			last = t
		}
		body, err := json.Marshal(struct {
			Context          string          `json:"@odata.context"`
			Event            string          `json:"SubscriptionEvent"`
			ProductID        string          `json:"ProductId"`
			ProductName      string          `json:"ProductName"`
			SubscriptionID   string          `json:"SubscriptionId"`
			NotificationDate string          `json:"NotificationDate"`
			Value            json.RawMessage `json:"value"`
		}{"$metadata#Notification/$entity", "created", p.ID, p.Name, "", now, raw})
		if err != nil {
			return ingest.Outcome{}, last, err
		}
		n, err := notification.Decode(body)
		if err != nil {
			// Kept, not skipped: the watermark moves past it, so this is
			// the only place it will ever be found again.
			if err := r.qu.Put(ctx, quarantine.Entry{Source: ingest.SourceReconcile, Reason: quarantine.ReasonOf(err),
				Error: err.Error(), Field: quarantine.FieldOf(err), ContentType: "application/json", Body: body}); err != nil {
				return ingest.Outcome{}, time.Time{}, fmt.Errorf("quarantine product %s: %w", p.ID, err)
			}
			continue
		}
		ns = append(ns, n)
	}
	if len(ns) == 0 {
		return ingest.Outcome{}, last, nil
	}
	res, err := r.pub.Publish(ctx, ingest.Messages(ns, r.o.SubjectPrefix, ingest.SourceReconcile))
	if err != nil {
		return ingest.Outcome{}, time.Time{}, err
	}
	return ingest.Count(res), last, nil
}

type metrics struct {
	passes, published, errors prometheus.Counter
	watermark                 prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		passes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_reconcile_passes_total", Help: "Completed reconcile passes."}),
		published: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_reconcile_stored_total", Help: "Products the reconciler stored (missed by PUSH/PULL)."}),
		errors:    prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_reconcile_errors_total", Help: "Reconcile passes that failed."}),
		watermark: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cdse_receiver_reconcile_watermark_seconds", Help: "The reconcile watermark (Unix time)."}),
	}
	for _, c := range []prometheus.Collector{m.passes, m.published, m.errors, m.watermark} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register reconcile metrics: %w", err)
		}
	}
	return m, nil
}
