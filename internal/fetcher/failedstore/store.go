// Package failedstore keeps what the fetcher gave up. Every product event
// it could not fetch (offline, not found, a checksum that keeps failing,
// no space left, FETCH_MAX_ATTEMPTS deliveries, a body that is not a
// notification) is published as a failed event on FETCH_STREAM, subjects
// <FETCH_FAILED_PREFIX>.<collection>.<productType>, with the notification
// and the reason, so that nothing is lost because a product could not be
// had that day. An operator lists, inspects, retries and drops them
// (fetcher failed ...): a retry queues the event again for the fetcher's
// consumer on the product stream, exactly once.
//
// It reads the fetched events of the same stream too, the same way
// (fetcher fetched list). As the receiver's quarantine
// (internal/ingest/quarantine), whose verbs these mirror, it reads with
// ordered consumers (no state on the server) up to the last event there
// was when it began, headers only where it can: thousands of events cost a
// command a few megabytes.
package failedstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Options say where the events are and who reads them.
type Options struct {
	Stream        string // FETCH_STREAM
	FailedPrefix  string // FETCH_FAILED_PREFIX
	FetchedPrefix string // FETCH_FETCHED_PREFIX
	// Who is the NATS user, and PermissionHint what to fix, named with a
	// request the server refuses.
	Who, PermissionHint string
	// Stderr is where the connection's other asynchronous errors go
	// (nil: nowhere).
	Stderr io.Writer
}

// Store reads and removes the failed events of FETCH_STREAM, and reads its
// fetched events.
type Store struct {
	js            jetstream.JetStream
	calls         *natsCalls
	stream        string
	prefix        string // FETCH_FAILED_PREFIX
	fetchedPrefix string // FETCH_FETCHED_PREFIX
}

// New reads the events of o.Stream through nc. It takes nc's error
// handler: each request ends at once when the server refuses it, with the
// refusal (who, and o.PermissionHint) as its error, rather than at its
// timeout (natsCalls).
func New(nc *nats.Conn, o Options) (*Store, error) {
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	calls := &natsCalls{stderr: o.Stderr, who: o.Who, hint: o.PermissionHint}
	nc.SetErrorHandler(calls.handler)
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Store{js: js, calls: calls, stream: o.Stream, prefix: o.FailedPrefix, fetchedPrefix: o.FetchedPrefix}, nil
}

// Event is one failed event as an operator sees it.
type Event struct {
	Seq         uint64    `json:"seq"`
	Time        time.Time `json:"time"`
	Subject     string    `json:"subject"`
	Collection  string    `json:"collection"`
	ProductType string    `json:"productType"`
	Event       string    `json:"event,omitempty"`
	ProductID   string    `json:"productId,omitempty"`
	ProductName string    `json:"productName,omitempty"`
	Reason      string    `json:"reason"`
	// Consumer is the fetcher's consumer that gave it up (from the
	// event's Nats-Msg-Id, failed/<consumer>/<product sequence>).
	Consumer string `json:"consumer,omitempty"`
	// RetryOf is the failed event an earlier retry came from, when this
	// one is the retry's failure (the Cdse-Fetch-Retry header).
	RetryOf string      `json:"retryOf,omitempty"`
	Bytes   int         `json:"bytes"`
	Header  nats.Header `json:"-"`
	Body    []byte      `json:"-"`
}

// ErrNotFound: no failed event with that sequence.
var ErrNotFound = errors.New("no such failed event")

// callTimeout bounds each NATS request of the store.
const callTimeout = 10 * time.Second

// bodiesPerFetch bounds what one fetch of bodies brings: a few
// notifications (as the quarantine reader's).
const bodiesPerFetch = 4

func (r *Store) handle(ctx context.Context) (jetstream.Stream, error) {
	ctx, done := r.calls.call(ctx)
	defer done()
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", r.stream, refused(ctx, err))
	}
	return s, nil
}

// List returns every failed event's metadata, oldest first, without the
// bodies: it reads the headers only. An event whose headers do not name
// the product is read whole, alone, to decode its body.
func (r *Store) List(ctx context.Context) ([]Event, error) {
	out := []Event{}
	err := r.each(ctx, true, func(ev Event) error {
		if ev.ProductID == "" || ev.ProductName == "" {
			if whole, err := r.Get(ctx, ev.Seq); err == nil {
				ev = whole
				ev.Body, ev.Header = nil, nil
			}
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}

// Each calls fn for every failed event, oldest first, with its body, a few
// at a time. An error of fn stops it.
func (r *Store) Each(ctx context.Context, fn func(Event) error) error {
	return r.each(ctx, false, fn)
}

// each reads the failed subjects with an ordered consumer (no state on the
// server), up to the last failed event there was when it began: events
// given up meanwhile (a retry failing again) wait for the next run.
func (r *Store) each(ctx context.Context, headersOnly bool, fn func(Event) error) error {
	perFetch := bodiesPerFetch
	if headersOnly {
		perFetch = 500
	}
	return r.read(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{r.prefix + ".>"}, HeadersOnly: headersOnly}, perFetch,
		func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
			ev := r.event(md.Sequence.Stream, md.Timestamp, m.Subject(), m.Headers(), m.Data())
			if headersOnly {
				ev.Body = nil
				ev.Bytes, _ = strconv.Atoi(m.Headers().Get(nats.MsgSize))
			}
			return fn(ev)
		})
}

// read reads FETCH_STREAM with an ordered consumer of oc (no state on the
// server) up to the last message on its one filter subject there was when
// it began: messages stored meanwhile wait for the next run.
func (r *Store) read(ctx context.Context, oc jetstream.OrderedConsumerConfig, perFetch int, fn func(jetstream.Msg, *jetstream.MsgMetadata) error) error {
	s, err := r.handle(ctx)
	if err != nil {
		return err
	}
	filter := oc.FilterSubjects[0]
	lctx, done := r.calls.call(ctx)
	last, err := s.GetLastMsgForSubject(lctx, filter)
	err = refused(lctx, err)
	done()
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream %s: last of %s: %w", r.stream, filter, err)
	}
	return topology.ReadTo(ctx, s, oc, perFetch, last.Sequence, fn)
}

// Get returns one failed event, with its body and headers.
func (r *Store) Get(ctx context.Context, seq uint64) (Event, error) {
	s, err := r.handle(ctx)
	if err != nil {
		return Event{}, err
	}
	ctx, done := r.calls.call(ctx)
	defer done()
	m, err := s.GetMsg(ctx, seq)
	err = refused(ctx, err)
	if errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && !strings.HasPrefix(m.Subject, r.prefix+".")) {
		// A fetched event's sequence is not a failed event's either.
		return Event{}, fmt.Errorf("%w: %d", ErrNotFound, seq)
	}
	if err != nil {
		return Event{}, fmt.Errorf("read failed event %d: %w", seq, err)
	}
	return r.event(m.Sequence, m.Time, m.Subject, m.Header, m.Data), nil
}

// Remove deletes a failed event (dropped, or queued again by a retry); one
// already gone is no error (a second run).
func (r *Store) Remove(ctx context.Context, seq uint64) error {
	s, err := r.handle(ctx)
	if err != nil {
		return err
	}
	ctx, done := r.calls.call(ctx)
	defer done()
	if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("remove failed event %d: %w", seq, refused(ctx, err))
	}
	return nil
}

// MayRemove asks NATS whether the login may remove a failed event (what a
// retry and a drop do, and their dry runs check): it deletes sequence 0,
// which no message has, so that the answer with the right is "no message
// found" and nothing is removed; without it, a permissions violation. A
// stream that denies deletes (deny_delete) says "not permitted", and
// refuses the real removal as well.
func (r *Store) MayRemove(ctx context.Context) error {
	s, err := r.handle(ctx)
	if err != nil {
		return err
	}
	ctx, done := r.calls.call(ctx)
	defer done()
	err = refused(ctx, s.DeleteMsg(ctx, 0))
	if err == nil {
		return fmt.Errorf("remove a failed event from %s: the check deleted sequence 0", r.stream)
	}
	if !errors.Is(err, jetstream.ErrMsgDeleteUnsuccessful) || strings.Contains(err.Error(), "not permitted") {
		return fmt.Errorf("remove a failed event from %s: %w", r.stream, err)
	}
	return nil
}

// event is a failed event's view: the collection and product type are the
// subject's tokens (the fetcher's), the product from the headers, or from
// the body when it decodes.
func (r *Store) event(seq uint64, at time.Time, subject string, h nats.Header, data []byte) Event {
	ev := Event{Seq: seq, Time: at, Subject: subject, Header: h, Body: data, Bytes: len(data),
		Reason: h.Get(event.HeaderFetchError), RetryOf: h.Get(event.HeaderFetchRetry),
		Event: h.Get(event.HeaderEvent), ProductID: h.Get(event.HeaderProductID), ProductName: h.Get(event.HeaderProductName)}
	tokens := strings.Split(strings.TrimPrefix(subject, r.prefix+"."), ".")
	if len(tokens) == 2 {
		ev.Collection, ev.ProductType = tokens[0], tokens[1]
	}
	if id := strings.Split(h.Get(event.HeaderMsgID), "/"); len(id) == 3 && id[0] == "failed" {
		ev.Consumer = id[1]
	}
	if len(data) > 0 {
		if f, err := event.DecodeFailedData(data, h); err == nil && f.Notification != nil {
			n := f.Notification
			ev.Event, ev.ProductID, ev.ProductName = string(n.Event), n.ProductID, n.ProductName
		}
	}
	return ev
}
