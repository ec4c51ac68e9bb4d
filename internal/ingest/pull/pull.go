// Package pull consumes a catalogue PULL subscription: it reads the queue,
// runs every notification through the same validation, deduplication and
// publishing as the webhook, and acknowledges the queue only after JetStream
// has stored every message of the batch. A crash between the two re-reads the
// same notifications, which JetStream then recognises as duplicates.
package pull

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/ingest/source"
	"github.com/cdse-jetstream/receiver/internal/platform/retry"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// Queue is the part of the catalogue API the source uses.
type Queue interface {
	Read(ctx context.Context, id string, top int) ([]json.RawMessage, error)
	Ack(ctx context.Context, id, ackID string) (*catalogclient.QueueStatus, error)
	GetProduct(ctx context.Context, id string) (json.RawMessage, error)
}

// ErrGone means the subscription no longer exists (cancelled or deleted):
// the source stops instead of spinning.
var ErrGone = errors.New("pull subscription not found (cancelled?)")

// Options configure a Source.
type Options struct {
	SubscriptionID string
	Route          ingest.Route // how messages are shaped
	// Interval between reads of an empty queue (default 10 s).
	Interval time.Duration
	// Hydrate fetches the product of a short-form notification (older than
	// three days, without ProductName and value) to restore value.
	Hydrate bool
	// MaxBackoff bounds the wait after errors (default 1 min).
	MaxBackoff time.Duration
}

// Source is one PULL subscription being consumed.
type Source struct {
	o   Options
	q   Queue
	pub publish.BatchPublisher
	qu  quarantine.Putter
	log logrus.FieldLogger
	m   *metrics

	mu  sync.Mutex
	err error // why the source stopped, if it did
}

const batch = 20 // the catalogue's maximum $top

// New returns a source; metrics are registered on reg.
func New(o Options, q Queue, pub publish.BatchPublisher, qu quarantine.Putter, reg prometheus.Registerer, log logrus.FieldLogger) (*Source, error) {
	if o.Interval <= 0 {
		o.Interval = 10 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, err
	}
	return &Source{o: o, q: q, pub: pub, qu: qu, log: log.WithField("pull_subscription", o.SubscriptionID), m: m}, nil
}

// Interface guards: a PULL source is a source, named in /status by its
// subscription.
var (
	_ source.Source     = (*Source)(nil)
	_ source.Subscriber = (*Source)(nil)
)

// Name is the source's name (internal/ingest/source).
func (*Source) Name() string { return ingest.SourcePull }

// Subscription is the id of the subscription it reads.
func (s *Source) Subscription() string { return s.o.SubscriptionID }

// Err returns why the source stopped (ErrGone), or nil while it runs.
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Run consumes the queue until ctx ends or the subscription is gone; a
// subscription gone ends the source but not the receiver (source.Degrade):
// PUSH keeps being served.
func (s *Source) Run(ctx context.Context) error {
	backoff := retry.Backoff{First: time.Second, Max: s.o.MaxBackoff}
	for {
		more, err := s.Once(ctx)
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrGone):
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
			s.log.WithError(err).Error("pull source stopped: the subscription is gone; create a new one (register create --type pull) and restart")
			return source.Degrade(err)
		case err != nil:
			wait = backoff.Next()
			s.m.errors.Inc()
			s.log.WithError(err).WithField("retry_in", wait.String()).Warn("pull: batch not processed")
		case more:
			backoff.Reset()
			continue // the queue holds more: read again at once
		default:
			backoff.Reset()
			wait = s.o.Interval
		}
		if retry.Sleep(ctx, wait) != nil {
			return nil
		}
	}
}

// Once reads one batch, publishes it and acknowledges it; it reports
// whether the queue holds more.
func (s *Source) Once(ctx context.Context) (more bool, err error) {
	raws, err := s.q.Read(ctx, s.o.SubscriptionID, batch)
	if errors.Is(err, catalogclient.ErrNotFound) {
		return false, fmt.Errorf("%w: %w", ErrGone, err)
	}
	if err != nil {
		return false, err
	}
	if len(raws) == 0 {
		return false, nil
	}
	s.m.read.Add(float64(len(raws)))
	var (
		ns      []notification.Notification
		refused []quarantine.Entry
		lastAck string
		now     = time.Now()
	)
	for _, raw := range raws {
		var head struct {
			AckID string `json:"AckId"`
		}
		_ = json.Unmarshal(raw, &head)
		if head.AckID != "" {
			lastAck = head.AckID
		}
		n, err := notification.Decode(raw)
		if err == nil && s.o.Hydrate && n.ProductName == "" && !hasValue(raw) {
			n, err = s.hydrate(ctx, raw, n)
		}
		if err != nil {
			// A notification we cannot validate is quarantined, then
			// acknowledged with the rest: the queue must not be stuck on
			// it, and it must not be lost either.
			s.m.rejected.Inc()
			refused = append(refused, quarantine.Entry{Source: ingest.SourcePull, Reason: quarantine.ReasonOf(err),
				Error: err.Error(), Field: quarantine.FieldOf(err), ContentType: "application/json", Body: raw})
			continue
		}
		if !n.NotificationDate.IsZero() {
			s.m.lag.Observe(now.Sub(n.NotificationDate).Seconds())
		}
		ns = append(ns, n)
	}
	for _, e := range refused {
		if err := s.qu.Put(ctx, e); err != nil {
			return false, fmt.Errorf("quarantine a refused notification (batch not acknowledged, will be read again): %w", err)
		}
	}
	if len(ns) > 0 {
		if _, err := s.pub.Publish(ctx, ingest.Messages(ns, &s.o.Route, ingest.SourcePull)); err != nil {
			return false, fmt.Errorf("publish batch (not acknowledged, will be read again): %w", err)
		}
	}
	if lastAck == "" {
		return false, errors.New("batch without AckId: cannot acknowledge")
	}
	// Only now, with every message stored, is the queue acknowledged.
	st, err := s.q.Ack(ctx, s.o.SubscriptionID, lastAck)
	if errors.Is(err, catalogclient.ErrNotFound) {
		return false, fmt.Errorf("%w: %w", ErrGone, err)
	}
	if err != nil {
		return false, fmt.Errorf("ack (stored; will be read and deduplicated again): %w", err)
	}
	s.m.acked.Add(float64(st.AckMessagesNum))
	s.m.queue.Set(float64(st.CurrentQueueLength))
	// The length before this Ack tells whether the queue was (nearly) full,
	// when the catalogue drops the oldest notifications.
	if before := st.CurrentQueueLength + st.AckMessagesNum; st.MaxQueueLength > 0 && before >= st.MaxQueueLength*9/10 {
		s.m.full.Inc()
		s.log.WithFields(logrus.Fields{"queue_length": before, "max": st.MaxQueueLength}).
			Warn("pull queue (nearly) full: the catalogue drops the oldest notifications beyond its maximum; the reconciler can recover them")
	}
	return st.CurrentQueueLength > 0, nil
}

func hasValue(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"value"`)) || bytes.Contains(raw, []byte(`"Value"`))
}

// hydrate fetches the product and adds it as value (and its Name as
// ProductName) to a short-form notification.
func (s *Source) hydrate(ctx context.Context, raw []byte, n notification.Notification) (notification.Notification, error) {
	product, err := s.q.GetProduct(ctx, n.ProductID)
	if err != nil {
		s.log.WithError(err).WithField("product_id", n.ProductID).Warn("pull: product not hydrated; published in the short form")
		return n, nil
	}
	obj := bytes.TrimSpace(raw) // a valid object: ends in '}'
	full := make([]byte, 0, len(obj)+len(product)+10)
	full = append(append(append(append(full, obj[:len(obj)-1]...), `,"value":`...), product...), '}')
	return notification.Decode(full)
}

type metrics struct {
	read, acked, rejected, errors, full prometheus.Counter
	queue                               prometheus.Gauge
	lag                                 prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		read:     prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_pull_read_total", Help: "Notifications read from the PULL queue."}),
		acked:    prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_pull_acked_total", Help: "Notifications acknowledged on the PULL queue (after they were stored)."}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_pull_rejected_total", Help: "PULL notifications refused as invalid (quarantined, then acknowledged)."}),
		errors:   prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_pull_errors_total", Help: "PULL batches that failed (read, publish or ack) and were retried."}),
		full:     prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_pull_queue_full_total", Help: "Acks that found the PULL queue at 90% or more of its maximum (the catalogue drops the oldest beyond it)."}),
		queue:    prometheus.NewGauge(prometheus.GaugeOpts{Name: "cdse_receiver_pull_queue_length", Help: "Length of the PULL queue, from the last Ack."}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cdse_receiver_pull_lag_seconds", Help: "Time from NotificationDate to reading it.",
			Buckets: prometheus.ExponentialBuckets(1, 4, 10)}),
	}
	for _, c := range []prometheus.Collector{m.read, m.acked, m.rejected, m.errors, m.full, m.queue, m.lag} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register pull metrics: %w", err)
		}
	}
	return m, nil
}
