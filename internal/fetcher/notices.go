package fetcher

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Versions of one acquisition (issue 42), the fetcher's side. The
// receiver keeps the versions it has seen of each acquisition in its
// bucket <NATS_STREAM>_VERSIONS and puts a notice in the product stream
// when a product is superseded (internal/stream/supersede). With
// FETCH_VERSIONS=latest the fetcher looks each product up in that bucket
// before downloading it, and skips one the bucket knows superseded; with
// FETCH_ON_SUPERSEDED=delete it also takes the notices and removes the
// superseded product it stored (and skips a product known superseded,
// which it would remove at once). The bucket trails the product stream
// (the receiver's durable reads behind the webhook): a product it does not
// know yet is downloaded. No decision rather than a wrong one.

// skipError is a fetch not made: the product is superseded by by.
type skipError struct{ by event.VersionedProduct }

func (e *skipError) Error() string { return "superseded by " + byName(e.by) }

// byName is a superseding product as the fetched event says it: "<id>
// (<name>)", or the id alone when the bucket no longer knows its name.
func byName(by event.VersionedProduct) string {
	if by.Name == "" {
		return by.ID
	}
	return by.ID + " (" + by.Name + ")"
}

// versionsReader is the receiver's versions bucket as this fetcher reads
// it (read only: the receiver owns it), and the products the notices it
// handled named superseded.
type versionsReader struct {
	decisions *prometheus.CounterVec

	mu sync.Mutex
	kv jetstream.KeyValue
	// next is when a bucket not found is looked for again; missing says
	// its absence was logged.
	next    time.Time
	missing bool
	// named are the products named superseded by the notices this
	// replica handled, by id (their order: the oldest is forgotten past
	// namedMax): a product event of one taken later here is skipped even
	// while the bucket has yet to say so (it is updated after the notice
	// is published).
	named map[string]event.VersionedProduct
	order []string
}

// versionsRetry is how often a missing versions bucket is looked for.
const versionsRetry = 30 * time.Second

// namedMax bounds the products remembered from the notices.
const namedMax = 4096

// remember records that superseded is superseded by by.
func (v *versionsReader) remember(superseded string, by event.VersionedProduct) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.named == nil {
		v.named = map[string]event.VersionedProduct{}
	}
	if _, ok := v.named[superseded]; !ok {
		v.order = append(v.order, superseded)
	}
	v.named[superseded] = by
	if len(v.order) > namedMax {
		delete(v.named, v.order[0])
		v.order = v.order[1:]
	}
}

// namedBy is what a notice handled here said id is superseded by.
func (v *versionsReader) namedBy(id string) (event.VersionedProduct, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	by, ok := v.named[id]
	return by, ok
}

// versionsBucket is the versions bucket, opened read only; nil while it
// cannot be (the receiver's RECEIVER_VERSIONS is off, or it has not made
// it yet): looked for again every versionsRetry.
func (a *App) versionsBucket(ctx context.Context, log logrus.FieldLogger) jetstream.KeyValue {
	v := &a.versions
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.kv != nil || time.Now().Before(v.next) {
		return v.kv
	}
	bucket := topology.VersionsBucketOf(a.cfg.ProductStream.Stream)
	octx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	kv, err := a.js.KeyValue(octx, bucket)
	if err != nil {
		v.next = time.Now().Add(versionsRetry)
		if !v.missing && ctx.Err() == nil {
			v.missing = true
			log.WithError(err).WithField("bucket", bucket).Warn("no versions bucket to read (the receiver's RECEIVER_VERSIONS is off, or it has not started): every product is downloaded until there is one")
		}
		return nil
	}
	if v.missing {
		a.log.WithField("bucket", bucket).Info("versions bucket found: superseded products are skipped again")
	}
	v.kv, v.missing = kv, false
	return kv
}

// superseded says whether n's product is to be skipped, and by what:
// when the fetcher looks versions up (fetchconfig.Config.ChecksVersions)
// and the versions bucket (or a notice this replica handled) knows it
// superseded. A product of no known acquisition is not looked up; one the
// bucket does not know, or whose version it could not order, is
// downloaded.
func (a *App) superseded(ctx context.Context, log logrus.FieldLogger, n *event.Notification) (event.VersionedProduct, bool) {
	if !a.cfg.ChecksVersions() || n.Acquisition == "" {
		return event.VersionedProduct{}, false
	}
	decide := func(d string) { a.versions.decisions.WithLabelValues(d).Inc() }
	if by, ok := a.versions.namedBy(n.ProductID); ok {
		decide("skipped")
		return by, true
	}
	kv := a.versionsBucket(ctx, log)
	if kv == nil {
		decide("unknown")
		return event.VersionedProduct{}, false
	}
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err := supersede.Lookup(lctx, kv, n.Acquisition, n.ProductID)
	cancel()
	switch {
	case err != nil:
		if ctx.Err() == nil {
			log.WithError(err).Warn("cannot read the versions bucket: the product is downloaded")
		}
		decide("unknown")
	case st.SupersededBy != nil:
		decide("skipped")
		return *st.SupersededBy, true
	case st.Undecided:
		decide("undecided")
	case !st.Known:
		// The receiver has not taken it in yet.
		log.Debug("versions bucket: product not known yet; downloaded")
		decide("unknown")
	default:
		decide("fetched")
	}
	return event.VersionedProduct{}, false
}

// checkNotices says, when the fetcher reads the notices, if the product
// stream does not take them (the receiver's RECEIVER_VERSIONS is off, or
// its RECEIVER_VERSIONS_SUBJECT_PREFIX is another): NATS accepts the
// filter all the same, and no notice ever comes.
func (a *App) checkNotices(ctx context.Context) {
	if !a.cfg.ReadsNotices() {
		return
	}
	s, err := a.js.Stream(ctx, a.cfg.ProductStream.Stream)
	if err != nil {
		return // said by the consumer's declaration
	}
	notices := a.cfg.VersionsPrefix + ".>"
	if slices.ContainsFunc(s.CachedInfo().Config.Subjects, func(have string) bool { return event.SubjectCovers(have, notices) }) {
		return
	}
	a.log.WithFields(logrus.Fields{"stream": a.cfg.ProductStream.Stream, "subjects": notices}).
		Warn("FETCH_ON_SUPERSEDED=delete: the product stream does not take the receiver's notices of supersession (its RECEIVER_VERSIONS is off, or RECEIVER_VERSIONS_SUBJECT_PREFIX differs): no superseded product is removed")
}

// handleNotice is one notice of the receiver's on the fetcher's consumer,
// to its ack: never a product to download. A notice of supersession is
// remembered (for the products of it taken later here) and, with
// FETCH_ON_SUPERSEDED=delete, removes the superseded product from the
// target, said by a fetched event; anything else is acked as read.
func (a *App) handleNotice(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, md *jetstream.MsgMetadata) {
	done := func(outcome string) {
		a.outcomes.WithLabelValues(outcome).Inc()
		if err := m.DoubleAck(ctx); err != nil {
			log.WithError(err).Debug("notice: ack not confirmed; it may be redelivered")
		}
	}
	s, err := event.DecodeSuperseded(m)
	if err != nil {
		log.WithError(err).WithField("subject", m.Subject()).Debug("a notice of the receiver's this fetcher does not read: acked")
		done("notice")
		return
	}
	log = log.WithFields(logrus.Fields{"product_id": s.Superseded.ID, "product_name": s.Superseded.Name,
		"superseded_by": s.By.ID, "superseded_by_name": s.By.Name, "reason": s.Reason})
	if a.cfg.ChecksVersions() {
		a.versions.remember(s.Superseded.ID, s.By)
	}
	if a.cfg.OnSuperseded != "delete" {
		done("notice")
		return
	}
	key, why := SupersededKey(a.cfg.KeyTemplate, s)
	if why != "" {
		log.WithField("why", why).Warn("superseded product: no key to look it up under; kept if stored")
		done("notice")
		return
	}
	log = log.WithField("key", key)
	removed, rel, err := a.removeSuperseded(ctx, log, m, s, key)
	// Held until the removal's event is published; ended before the
	// message is given back (as handle does: its heartbeat's in-progress
	// ack after the Nak would reset the redelivery's delay).
	release := sync.OnceFunc(rel)
	defer release()
	switch {
	case errors.Is(err, errCutOff), errors.Is(err, errLapsed), errors.Is(err, errLeaseLost):
		log.WithError(err).Error("removal of a superseded product stopped")
		return
	case err != nil:
		n := &event.Notification{ProductID: s.Superseded.ID, ProductName: s.Superseded.Name, Collection: s.Collection, ProductType: s.ProductType}
		release()
		a.retryLater(ctx, log, m, md, n, err)
		return
	case removed == "":
		done("notice")
		return
	}
	log.Info("superseded product removed from the target")
	pub := supersededMsg(a.cfg.FetchedPrefix, a.cfg.FetchConsumer, s, m.Data(), m.Headers(), removed)
	if err := a.publish(ctx, pub); err != nil {
		// The product is gone: a redelivery finds nothing to remove,
		// and this event is not published again (docs/fetching.md).
		n := &event.Notification{ProductID: s.Superseded.ID, ProductName: s.Superseded.Name, Collection: s.Collection, ProductType: s.ProductType}
		release()
		a.retryLater(ctx, log, m, md, n, err)
		return
	}
	done("superseded")
}

// removeSuperseded removes what is stored under key of s's superseded
// product (removeStored). It returns the URL of what it removed (the
// folder's with a trailing /, else the archive's, as the product's
// fetched event named it); "" when nothing of it is stored.
func (a *App) removeSuperseded(ctx context.Context, log logrus.FieldLogger, m jetstream.Msg, s *event.Superseded, key string) (string, func(), error) {
	found, release, err := a.removeStored(ctx, log, m, key, s.Superseded.ID, s.Superseded.Name, "superseded")
	if err != nil || !found.Any() {
		if err == nil {
			log.Debug("superseded product not stored here")
		}
		return "", release, err
	}
	return found.URL(), release, nil
}

// SupersededKey is the key the superseded product of s is stored under by
// template, made from the notice: its id and name, the collection and
// product type of its subject, and for the date the sensing start its
// name begins with (the first date-time of every Sentinel name: the
// ContentDate/Start the key was made from). why says why there is none: an
// unsafe name, no date in the name where the template needs one.
func SupersededKey(template string, s *event.Superseded) (key, why string) {
	name := s.Superseded.Name
	if bad := target.SafeName(name); bad != "" {
		return "", "unsafe name: " + bad
	}
	n := &event.Notification{ProductID: s.Superseded.ID, ProductName: name, Collection: s.Collection, ProductType: s.ProductType,
		ContentStart: sensingStart(name)}
	if n.ContentStart.IsZero() && (strings.Contains(template, "{yyyy}") || strings.Contains(template, "{mm}") || strings.Contains(template, "{dd}")) {
		return "", "no sensing date in the name " + name + " for the key's date"
	}
	return Key(template, n), ""
}

// sensingStart is the first date-time (YYYYMMDDThhmmss, UTC) among the
// name's "_"-separated fields; zero when there is none.
func sensingStart(name string) time.Time {
	for _, f := range strings.Split(name, "_") {
		if len(f) == 15 && f[8] == 'T' {
			if t, err := time.Parse("20060102T150405", f); err == nil {
				return t
			}
		}
	}
	return time.Time{}
}
