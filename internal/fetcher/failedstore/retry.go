package failedstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
)

// The retry queue. A failed product event is put back on the product
// stream (NATS_STREAM), on a subject of its own outside the product
// subjects, <event.FetchRetryPrefix>.<stream>.<consumer>.<collection>.<productType>, which
// the fetcher's durable consumer filters beside FETCH_SUBJECTS and no
// consumer of the product subjects sees. That one consumer's MaxAckPending
// (FETCH_CONCURRENCY) then caps retries and products together, across
// every replica: a retry waits for a slot as any product does.
const (
	headerFetchRetry = event.HeaderFetchRetry
)

// fetchRetrySubject is where the failed event f is queued again for
// consumer on the product stream: the failed subject's collection and
// product type.
func fetchRetrySubject(stream, consumer string, f Event) string {
	return event.FetchRetrySubjects(stream) + "." + consumer + "." + orUnknown(f.Collection) + "." + orUnknown(f.ProductType)
}

func orUnknown(s string) string {
	if s == "" {
		return event.UnknownToken
	}
	return s
}

// RetryOptions say where a retry queues the failed events.
type RetryOptions struct {
	// ProductStream is NATS_STREAM, where a retry is queued.
	ProductStream string
	// Consumer is FETCH_CONSUMER, whose fetchers take the retry of a
	// failed event that does not name the consumer that gave it up.
	Consumer string
	// DryRun checks and says what would be queued again; it queues and
	// removes nothing.
	DryRun bool
	// Seqs, when given, are the failed events to retry (by their
	// sequence, as List shows it); none retries every one.
	Seqs []uint64
}

// RetrySummary is what a retry did.
type RetrySummary struct {
	DryRun     bool        `json:"dryRun"`
	Checked    int         `json:"checked"`
	Retried    int         `json:"retried"`    // queued (or would be); removed from the failed events unless dry
	Queued     int         `json:"queued"`     // newly on the product stream
	Duplicates int         `json:"duplicates"` // queued already by an earlier run (its removal had failed)
	NotFound   int         `json:"notFound,omitempty"`
	Items      []RetryItem `json:"items"`
}

// RetryItem is the fate of one failed event.
type RetryItem struct {
	Seq       uint64 `json:"seq"`
	ProductID string `json:"productId,omitempty"`
	Result    string `json:"result"` // retried, would-retry, not-found
	Subject   string `json:"subject,omitempty"`
	Detail    string `json:"detail,omitempty"`
}

// retryRoute is what a consumer's retries need, read once: the product
// stream's subjects and the consumer's filters.
type retryRoute struct {
	streamSubjects, filters []string
}

type retrier struct {
	store  *Store
	o      RetryOptions
	routes map[string]*retryRoute // by consumer
	// What a dry run found the login may do: publish to a retry
	// subject, delete from FETCH_STREAM (each asked once).
	mayPublish map[string]bool
	mayDelete  bool
}

// Retry puts every failed event (or those of o.Seqs) back to the fetchers,
// one at a time. Each is published with the Nats-Msg-Id
// fetchretry/<FETCH_STREAM>/<seq> and removed from the failed events only
// after its PubAck: run twice (or cut between the two), the second publish
// is a duplicate the product stream drops, and the product is queued once.
// A sequence of o.Seqs that is not a failed event is an item "not-found"
// and sum.NotFound counts it; the others are retried all the same. A
// failed event nobody would fetch (no consumer, or one that does not
// filter its retry subject) is kept, and the retry stops with the reason.
func (r *Store) Retry(ctx context.Context, o RetryOptions) (RetrySummary, error) {
	rt := &retrier{store: r, o: o, routes: map[string]*retryRoute{}, mayPublish: map[string]bool{}}
	return rt.run(ctx, o.Seqs, o.DryRun)
}

func (r *retrier) run(ctx context.Context, only []uint64, dryRun bool) (RetrySummary, error) {
	sum := RetrySummary{DryRun: dryRun, Items: []RetryItem{}}
	one := func(f Event) error { return r.one(ctx, f, dryRun, &sum) }
	if len(only) == 0 {
		return sum, r.store.Each(ctx, one)
	}
	for _, seq := range only {
		f, err := r.store.Get(ctx, seq)
		if errors.Is(err, ErrNotFound) {
			sum.NotFound++
			sum.Items = append(sum.Items, RetryItem{Seq: seq, Result: "not-found", Detail: "not a failed event (see failed list)"})
			continue
		}
		if err != nil {
			return sum, err
		}
		if err := one(f); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

func (r *retrier) one(ctx context.Context, f Event, dryRun bool, sum *RetrySummary) error {
	sum.Checked++
	consumer := f.Consumer // the one that gave it up
	if consumer == "" {
		consumer = r.o.Consumer
	}
	subject := fetchRetrySubject(r.o.ProductStream, consumer, f)
	if err := r.check(ctx, consumer, subject); err != nil {
		return fmt.Errorf("failed event %d kept: %w", f.Seq, err)
	}
	item := RetryItem{Seq: f.Seq, ProductID: f.ProductID, Subject: subject}
	if dryRun {
		// A would-retry must mean the retry would succeed: the login's
		// rights too, which a read never shows.
		if err := r.rights(ctx, subject); err != nil {
			return fmt.Errorf("failed event %d could not be retried: %w", f.Seq, err)
		}
		item.Result, item.Detail = "would-retry", "for consumer "+consumer+" on "+subject
		sum.Retried++
		sum.Items = append(sum.Items, item)
		return nil
	}
	h := nats.Header{}
	for k, v := range f.Header {
		if strings.HasPrefix(k, "Cdse-") && k != event.HeaderFetchError && k != headerFetchRetry {
			h[k] = append([]string(nil), v...)
		}
	}
	h.Set(headerFetchRetry, strconv.FormatUint(f.Seq, 10))
	h.Set(event.HeaderMsgID, "fetchretry/"+r.store.stream+"/"+strconv.FormatUint(f.Seq, 10))
	pctx, done := r.store.calls.call(ctx)
	ack, err := r.store.js.PublishMsg(pctx, &nats.Msg{Subject: subject, Header: h, Data: f.Body}, jetstream.WithExpectStream(r.o.ProductStream))
	err = refused(pctx, err)
	done()
	if err != nil {
		return fmt.Errorf("retry failed event %d (kept): publish %s: %w", f.Seq, subject, err)
	}
	if ack.Duplicate {
		sum.Duplicates++
		item.Detail = "already queued by an earlier retry"
	} else {
		sum.Queued++
		item.Detail = fmt.Sprintf("queued for consumer %s: %s #%d", consumer, ack.Stream, ack.Sequence)
	}
	if err := r.store.Remove(ctx, f.Seq); err != nil {
		return fmt.Errorf("failed event %d is queued again, but %w; a second retry finds it a duplicate", f.Seq, err)
	}
	item.Result = "retried"
	sum.Retried++
	sum.Items = append(sum.Items, item)
	return nil
}

// check refuses a retry nobody would fetch: the product stream must take
// the retry subject, and the consumer must exist and filter it. Otherwise
// the failed event would be removed for a message no fetcher ever reads.
func (r *retrier) check(ctx context.Context, consumer, subject string) error {
	route, ok := r.routes[consumer]
	if !ok {
		ctx, done := r.store.calls.call(ctx)
		defer done()
		s, err := r.store.js.Stream(ctx, r.o.ProductStream)
		if err != nil {
			return fmt.Errorf("product stream %s: %w", r.o.ProductStream, refused(ctx, err))
		}
		c, err := s.Consumer(ctx, consumer)
		err = refused(ctx, err)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("no consumer %s on %s: no fetcher would take the retry (start the fetcher with FETCH_CONSUMER=%s first)", consumer, r.o.ProductStream, consumer)
		}
		if err != nil {
			return fmt.Errorf("consumer %s on %s: %w", consumer, r.o.ProductStream, err)
		}
		cc := c.CachedInfo().Config
		route = &retryRoute{streamSubjects: s.CachedInfo().Config.Subjects, filters: cc.FilterSubjects}
		if cc.FilterSubject != "" {
			route.filters = append(route.filters, cc.FilterSubject)
		}
		r.routes[consumer] = route
	}
	if !anySubjectMatches(route.streamSubjects, subject) {
		return fmt.Errorf("the product stream %s does not take %s, where a retry is queued for the fetcher: its subjects (%s) need %s.> (see docs/fetching.md, Failed products)",
			r.o.ProductStream, subject, strings.Join(route.streamSubjects, ", "), event.FetchRetrySubjects(r.o.ProductStream))
	}
	if len(route.filters) > 0 && !anySubjectMatches(route.filters, subject) {
		return fmt.Errorf("the consumer %s on %s does not take %s: a retry would never be fetched; its subjects (%s) need %s.%s.> (see docs/fetching.md, Failed products)",
			consumer, r.o.ProductStream, subject, strings.Join(route.filters, ", "), event.FetchRetrySubjects(r.o.ProductStream), consumer)
	}
	return nil
}

// rights asks NATS whether the login may do what a retry to subject does
// beyond reading: publish there on the product stream, then delete the
// failed event from FETCH_STREAM. Neither probe changes a stream: the
// publish expects a last sequence no stream reaches, which JetStream
// refuses without storing (wrong last sequence) once the server has let
// the login publish; the delete is MayRemove's. A refused right is a
// permissions violation instead (natsCalls).
func (r *retrier) rights(ctx context.Context, subject string) error {
	if !r.mayPublish[subject] {
		pctx, done := r.store.calls.call(ctx)
		_, err := r.store.js.PublishMsg(pctx, &nats.Msg{Subject: subject},
			jetstream.WithExpectStream(r.o.ProductStream), jetstream.WithExpectLastSequence(math.MaxUint64))
		err = refused(pctx, err)
		done()
		var apiErr *jetstream.APIError
		switch {
		case errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
			apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant):
		case err == nil:
			// Cannot happen short of 2^64 messages; said rather than hidden.
			return fmt.Errorf("the check of the right to publish to %s stored a message on %s", subject, r.o.ProductStream)
		default:
			return fmt.Errorf("publish %s: %w", subject, err)
		}
		r.mayPublish[subject] = true
	}
	if !r.mayDelete {
		if err := r.store.MayRemove(ctx); err != nil {
			return err
		}
		r.mayDelete = true
	}
	return nil
}

func anySubjectMatches(filters []string, subject string) bool {
	for _, f := range filters {
		if event.SubjectCovers(f, subject) {
			return true
		}
	}
	return false
}
