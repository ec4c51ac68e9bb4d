// Package supersede keeps the versions of each acquisition and announces
// supersessions (issue 42, "One acquisition, many versions"): the second
// part of the work internal/cdse/versions began.
//
// A Tracker reads the product subjects with the receiver's durable
// consumer (topology.VersionsConsumer), one message at a time
// (AckExplicit, MaxAckPending 1), so that the receiver's replicas, which
// share it, take the product events in the stream's order and never two
// at once. For each product event it identifies the product as the ingest
// path did (versions.Identify on the stored notification) and keeps, per
// acquisition, the products seen in the versions bucket
// (topology.Versions, one key per acquisition, forgotten
// RECEIVER_VERSIONS_MAX_AGE after its last change). When a product is newer
// than the latest version known, it puts an event.Superseded naming each
// product it supersedes on <RECEIVER_VERSIONS_SUBJECT_PREFIX>.<collection>.
// <productType> (in the product stream, outside the product subjects);
// when one arrives older than a version known, one naming the arrival; when
// the catalogue deletes a product as obsolete, duplicated or reprocessed,
// one linking it to the latest version known. Siblings (two Sentinel-2
// products of one baseline) and equal versions supersede nothing; a pair
// versions.Relate cannot order is counted
// (cdse_receiver_versions_undecided_total) and linked to nothing.
//
// Every notice carries Nats-Msg-Id event.SupersededMsgID(superseded, by):
// it is published before the bucket is updated and the message acked, so
// a crash between the two publishes it again, and JetStream's duplicate
// window keeps one; a product already in the bucket is never compared
// again, so a replay past the window announces nothing twice. Nothing is
// removed from the product stream.
//
// With a Copier (copies.go), it also stores, after each decision, the
// copies of the interests that take the latest versions only (versions:
// latest): the product event unless it is known superseded, and the
// notices of their acquisitions.
//
// It is off the webhook's path: the ingest path never waits on it, and
// readiness does not read it.
package supersede

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/versions"
	"github.com/cdse-jetstream/receiver/internal/platform/jsonscan"
	"github.com/cdse-jetstream/receiver/internal/platform/retry"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Options are the Tracker's settings.
type Options struct {
	// MaxAge is RECEIVER_VERSIONS_MAX_AGE: the versions bucket forgets an
	// acquisition this long after its last change, and a durable made
	// anew starts this far back in the stream.
	MaxAge time.Duration
	// AckWait is how long a message may be held before JetStream gives it
	// to another replica (0: 30 s).
	AckWait time.Duration
	// Copier, when set, makes the copies of the interests that take the
	// latest versions only (copies.go), stored after each decision.
	Copier Copier
}

// Tracker keeps the versions bucket from the product stream and publishes
// the notices.
type Tracker struct {
	o    Options
	topo *topology.Topology
	log  logrus.FieldLogger

	undecided, notices, copies *prometheus.CounterVec
	failures                   prometheus.Counter
	// running: the consumer is set up (the pending gauge reads it).
	running atomic.Bool
	// For State: the notices stored and the products undecided since
	// the start (the counters' totals), and when the last product event
	// was decided (Unix nanoseconds, 0: none yet).
	noticesStored, undecidedSeen atomic.Uint64
	lastDecision                 atomic.Int64
	// stopped is why it stopped for good (a setting to change), nil
	// while it runs or retries.
	stopped atomic.Pointer[string]
}

// State is what the Tracker says of itself, for /status.
type State struct {
	// Running: its consumer is set up and taking product events.
	Running bool
	// Pending are the product events it has yet to take in (pending and
	// unacknowledged), nil when JetStream cannot tell.
	Pending *int64
	// LastDecision is when it last decided on a product event (nil:
	// none since the start).
	LastDecision *time.Time
	// Notices and Undecided count, since the start, the notices stored
	// (not duplicates) and the products whose version could not be
	// ordered.
	Notices, Undecided uint64
	// Stopped is why it stopped for good until the receiver is
	// restarted with another setting ("" while it runs or retries):
	// meanwhile no notice is published and the interests that take the
	// latest versions only get no copy.
	Stopped string
}

// State reads the Tracker's state; the pending count is asked of
// JetStream within ctx.
func (t *Tracker) State(ctx context.Context) State {
	s := State{Running: t.running.Load(), Notices: t.noticesStored.Load(), Undecided: t.undecidedSeen.Load()}
	if why := t.stopped.Load(); why != nil {
		s.Stopped = *why
	}
	if ns := t.lastDecision.Load(); ns != 0 {
		at := time.Unix(0, ns).UTC()
		s.LastDecision = &at
	}
	if n, ok := t.pending(ctx); ok {
		s.Pending = &n
	}
	return s
}

// pending are the product events the consumer has yet to take in, read
// from JetStream; false when it cannot tell (not running, no answer).
func (t *Tracker) pending(ctx context.Context) (int64, bool) {
	if !t.running.Load() {
		return 0, false
	}
	cons, err := t.topo.JetStream().Consumer(ctx, t.topo.ProductStream(), topology.VersionsConsumer)
	if err != nil {
		return 0, false
	}
	info := cons.CachedInfo()
	return int64(info.NumPending) + int64(info.NumAckPending), true
}

// New returns a Tracker of topo's product stream; its metrics are
// registered on reg.
func New(o Options, topo *topology.Topology, reg prometheus.Registerer, log logrus.FieldLogger) (*Tracker, error) {
	if o.MaxAge <= 0 {
		return nil, errors.New("supersede: MaxAge must be positive")
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	t := &Tracker{o: o, topo: topo, log: log.WithField("component", "versions"),
		undecided: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_versions_undecided_total",
			Help: "Products of a known acquisition whose version could not be ordered with the latest known (no notice, no link), by reason: date_sources (Sentinel-1 versions dated from different attributes), other."}, []string{"reason"}),
		notices: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_versions_notices_total",
			Help: "Notices of supersession stored (not counting duplicates), by reason: newer_arrived, arrived_older, deleted_obsolete."}, []string{"reason"}),
		copies: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_receiver_versions_interest_copies_total",
			Help: "Copies for the interests that take the latest versions only (versions: latest), made by the versions consumer after its decision (not counting duplicates), by interest and decision: latest, unversioned (no naming rule: its own latest), undecided, deleted, notice; skipped_superseded counts the products not copied, dropped those whose copy could not be made (not under this receiver's product subjects)."}, []string{"interest", "decision"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_receiver_versions_failures_total",
			Help: "Product events the versions consumer could not handle (the versions bucket or the notice's publish failed); each is taken again."}),
	}
	pending := pendingCollector{t: t, desc: prometheus.NewDesc("cdse_receiver_versions_pending_messages",
		"Product events the versions consumer has yet to take in (its pending and unacknowledged messages), read from JetStream at scrape time; absent while it is not running.", nil, nil)}
	for _, c := range []prometheus.Collector{t.undecided, t.notices, t.copies, t.failures, pending} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register versions metrics: %w", err)
		}
	}
	return t, nil
}

// Run consumes until ctx ends, setting up its consumer again after a
// failure. It returns nil: when the product stream does not take the
// notices' subjects (topology.ErrNoticesNotTaken, a setting to change) it
// says so and stops, and the receiver runs on without notices nor the
// copies of the interests that take the latest versions only; State's
// Stopped says why (/status), since a log line alone is easily missed.
func (t *Tracker) Run(ctx context.Context) error {
	backoff := retry.Backoff{First: 500 * time.Millisecond, Max: 30 * time.Second}
	for ctx.Err() == nil {
		err := t.consume(ctx, &backoff)
		switch {
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, topology.ErrNoticesNotTaken):
			why := err.Error()
			t.stopped.Store(&why)
			t.log.WithError(err).Error("no notices of supersession, and no copies for the interests that take the latest versions only: the versions consumer is off until the setting is changed and the receiver restarted (/status versions.stopped)")
			return nil
		}
		wait := backoff.Next()
		t.log.WithError(err).WithField("retry_in", wait.String()).Warn("versions consumer stopped; starting it again")
		if retry.Sleep(ctx, wait) != nil {
			return nil
		}
	}
	return nil
}

// consume sets up the bucket and the consumer, then handles messages
// until ctx ends or the consumer fails.
func (t *Tracker) consume(ctx context.Context, backoff *retry.Backoff) error {
	if err := t.topo.NoticesTaken(ctx); err != nil {
		return err
	}
	kv, err := t.topo.Versions(ctx, t.o.MaxAge)
	if err != nil {
		return err
	}
	cons, err := t.consumer(ctx)
	if err != nil {
		return err
	}
	t.running.Store(true)
	defer t.running.Store(false)
	t.log.WithFields(logrus.Fields{"consumer": topology.VersionsConsumer, "bucket": t.topo.VersionsBucket()}).Info("versions consumer started")
	for {
		// One message a pull, asked for once the one before is acked:
		// a pull waiting beside an unacked message (MaxAckPending 1)
		// could be answered with nothing but a status, and the next
		// one asked only when the heartbeats run out.
		batch, err := cons.Fetch(1, jetstream.FetchContext(ctx))
		if err == nil {
			for m := range batch.Messages() {
				t.take(ctx, kv, m, backoff)
			}
			err = batch.Error()
		}
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout):
			return fmt.Errorf("consume %s: %w", topology.VersionsConsumer, err)
		}
	}
}

// take handles one message to its ack, or gives it back to be taken again
// after a wait that grows while the failures last (nothing else is
// delivered meanwhile: one pending).
func (t *Tracker) take(ctx context.Context, kv jetstream.KeyValue, m jetstream.Msg, backoff *retry.Backoff) {
	if err := t.handle(ctx, kv, m); err != nil {
		if ctx.Err() != nil {
			return // taken again, after the restart or by another replica
		}
		t.failures.Inc()
		wait := backoff.Next()
		t.log.WithError(err).WithField("retry_in", wait.String()).Warn("product event not compared; taken again")
		_ = m.NakWithDelay(wait)
		return
	}
	backoff.Reset()
	t.lastDecision.Store(time.Now().UnixNano())
	if err := m.DoubleAck(ctx); err != nil && ctx.Err() == nil {
		// Delivered again after AckWait: handling it twice does
		// nothing twice.
		t.log.WithError(err).Warn("versions consumer: ack not confirmed")
	}
}

// consumer is the durable on the product subjects: created when missing,
// starting MaxAge back, or brought to this configuration (a changed
// NATS_SUBJECT_PREFIX) keeping its place.
func (t *Tracker) consumer(ctx context.Context) (jetstream.Consumer, error) {
	js, stream := t.topo.JetStream(), t.topo.ProductStream()
	start := time.Now().Add(-t.o.MaxAge)
	want := jetstream.ConsumerConfig{
		Durable:       topology.VersionsConsumer,
		Description:   "cdse receiver: the versions of each acquisition and the notices of supersession (one product event at a time, shared by the receiver's replicas)",
		FilterSubject: t.topo.ProductFilter(),
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       t.o.AckWait,
		MaxAckPending: 1,
		MaxDeliver:    -1,
		DeliverPolicy: jetstream.DeliverByStartTimePolicy,
		OptStartTime:  &start,
	}
	c, err := js.Consumer(ctx, stream, want.Durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		c, err = js.CreateConsumer(ctx, stream, want)
		if errors.Is(err, jetstream.ErrConsumerExists) {
			c, err = js.Consumer(ctx, stream, want.Durable) // another replica made it meanwhile
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", want.Durable, err)
	}
	have := c.CachedInfo().Config
	if have.FilterSubject == want.FilterSubject && len(have.FilterSubjects) == 0 && have.MaxAckPending == 1 &&
		have.AckWait == want.AckWait && have.MaxDeliver == -1 {
		return c, nil
	}
	upd := have
	upd.FilterSubject, upd.FilterSubjects, upd.MaxAckPending, upd.AckWait, upd.MaxDeliver = want.FilterSubject, nil, 1, want.AckWait, -1
	if c, err = js.UpdateConsumer(ctx, stream, upd); err != nil {
		return nil, fmt.Errorf("consumer %s: update: %w", want.Durable, err)
	}
	return c, nil
}

// handle takes one product event in. An error leaves the message to be
// taken again; what cannot be compared (not a notification, no identity)
// is acked as handled.
func (t *Tracker) handle(ctx context.Context, kv jetstream.KeyValue, m jetstream.Msg) error {
	if event.IsNotice(m.Headers()) {
		return nil // a NATS_SUBJECT_PREFIX that covers the notices' subjects
	}
	n, err := notification.Decode(m.Data())
	if err != nil {
		t.log.WithError(err).WithField("subject", m.Subject()).Debug("versions consumer: not a notification; skipped")
		return nil
	}
	stored := Product{Subject: m.Subject(), Header: m.Headers(), Data: m.Data(), N: &n}
	id, p, cause, ok := takenIn(&n)
	if !ok {
		// No naming rule decides (counted by the ingest path): nothing
		// supersedes it, it is its own latest.
		decision := CopyUnversioned
		if n.Event == event.Deleted {
			decision = CopyDeleted
		}
		// No record notes it: a replay past the duplicate window (a
		// durable made anew) copies it again.
		_, err := t.copyProduct(ctx, stored, decision)
		return err
	}
	if t.o.Copier != nil {
		p.Interests = t.o.Copier.Interests(stored)
	}
	return t.apply(ctx, kv, id, p, n.Event, cause, stored)
}

// takenIn is the product of n as decide takes it in: its identity, and
// the DeletionCause of a deleted event; false when no naming rule gives
// it an acquisition.
func takenIn(n *notification.Notification) (versions.Identity, known, string, bool) {
	id, ok := versions.Identify(n.ProductName, versions.Attrs{ProcessingDate: n.ProcessingDate, PublicationDate: n.Published})
	if !ok {
		return id, known{}, "", false
	}
	p := known{ID: n.ProductID, Name: n.ProductName, Version: id.Version, Collection: n.Collection, ProductType: n.ProductType}
	var cause string
	if n.Event == event.Deleted {
		cause, _ = jsonscan.String(n.Entity.Members[notification.MemberDeletionCause].Bytes(n.Value))
	}
	return id, p, cause, true
}

// apply decides on the acquisition's record as stored, publishes the
// notices (and their copies) and the product's copies (copies.go), then
// stores the record where it was read (a replica that changed it
// meanwhile: read again, decide again; the notices and copies are the
// same messages, the duplicate window keeps one). The record notes each
// product message whose copies were made: a replay past the duplicate
// window (a durable made anew) copies nothing twice, as it announces
// nothing twice.
func (t *Tracker) apply(ctx context.Context, kv jetstream.KeyValue, id versions.Identity, p known, ev event.Kind, cause string, stored Product) error {
	for attempt := 0; ; attempt++ {
		r, rev, err := read(ctx, kv, id.Acquisition)
		if err != nil {
			return err
		}
		o := decide(&r, id, p, ev, cause)
		for _, n := range o.notices {
			m, err := t.publish(ctx, id.Acquisition, n)
			if err != nil {
				return err
			}
			if err := t.copyNotice(ctx, m, n); err != nil {
				return err
			}
		}
		if copied, err := t.copyOnce(ctx, &r, id, p.ID, ev, stored); err != nil {
			return err
		} else if copied {
			o.changed = true
		}
		if !o.changed {
			return nil
		}
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, id.Acquisition, b)
		} else {
			_, err = kv.Update(ctx, id.Acquisition, b, rev)
		}
		if err != nil && attempt < 5 && (errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)) {
			continue
		}
		if err != nil {
			return fmt.Errorf("versions bucket: store %s: %w", id.Acquisition, err)
		}
		if o.undecided != "" {
			t.undecided.WithLabelValues(o.undecided).Inc()
			t.undecidedSeen.Add(1)
			t.log.WithFields(logrus.Fields{"acquisition": id.Acquisition, "product_id": p.ID, "product_name": p.Name, "reason": o.undecided}).
				Info("versions: a product's version cannot be ordered with the latest known; no link made")
		}
		return nil
	}
}

// read is an acquisition's record and its revision (0: none stored). An
// unreadable record is started anew.
func read(ctx context.Context, kv jetstream.KeyValue, key string) (record, uint64, error) {
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return record{}, 0, nil
	}
	if err != nil {
		return record{}, 0, fmt.Errorf("versions bucket: read %s: %w", key, err)
	}
	var r record
	if json.Unmarshal(e.Value(), &r) != nil {
		return record{}, e.Revision(), nil
	}
	return r, e.Revision(), nil
}

// publish puts one notice on the product stream, and returns it (for its
// copies).
func (t *Tracker) publish(ctx context.Context, acquisition string, n notice) (*nats.Msg, error) {
	s := event.Superseded{Notice: event.NoticeSuperseded, Reason: n.reason, Acquisition: acquisition,
		Superseded:    event.VersionedProduct{ID: n.superseded.ID, Name: n.superseded.Name, Version: n.superseded.Version},
		By:            event.VersionedProduct{ID: n.by.ID, Name: n.by.Name, Version: n.by.Version},
		DeletionCause: n.cause}
	body, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	m := nats.NewMsg(t.topo.SupersededSubject(n.superseded.Collection, n.superseded.ProductType))
	m.Data = body
	for k, v := range map[string]string{
		event.HeaderMsgID:            event.SupersededMsgID(n.superseded.ID, n.by.ID),
		event.HeaderNotice:           event.NoticeSuperseded,
		event.HeaderSupersededReason: string(n.reason),
		event.HeaderProductID:        n.superseded.ID,
		event.HeaderProductName:      n.superseded.Name,
		event.HeaderSupersededBy:     n.by.ID,
		event.HeaderSupersededByName: n.by.Name,
		event.HeaderAcquisition:      acquisition,
		event.HeaderCollection:       n.superseded.Collection,
		event.HeaderProductType:      n.superseded.ProductType,
	} {
		if v != "" {
			m.Header.Set(k, v)
		}
	}
	ack, err := t.topo.JetStream().PublishMsg(ctx, m, jetstream.WithExpectStream(t.topo.ProductStream()))
	if err != nil {
		return nil, fmt.Errorf("publish the notice %s: %w", m.Header.Get(event.HeaderMsgID), err)
	}
	if !ack.Duplicate {
		t.notices.WithLabelValues(string(n.reason)).Inc()
		t.noticesStored.Add(1)
		t.log.WithFields(logrus.Fields{"acquisition": acquisition, "superseded": n.superseded.Name, "by": n.by.Name, "reason": n.reason}).Debug("notice of supersession stored")
	}
	return m, nil
}

// pendingCollector is cdse_receiver_versions_pending_messages: how far the
// versions consumer trails the product stream.
type pendingCollector struct {
	t    *Tracker
	desc *prometheus.Desc
}

func (c pendingCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c pendingCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if n, ok := c.t.pending(ctx); ok {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n))
	}
}
