// Package publish stores notifications in NATS JetStream and reports when
// they are stored: the publisher every notification source calls, and its
// memory of the ids it stored. (The connection is internal/stream/natsconn's, the
// streams internal/stream/topology's, the embedded server internal/stream/embedded's.)
//
// The one promise it keeps for its callers: Publish returns without error
// only after JetStream has acknowledged every message (PubAck), either as
// stored or as a duplicate of a message stored within the stream's duplicate
// window. Anything else is an error.
package publish

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Sentinel errors callers map to responses.
var (
	// ErrUnavailable: JetStream did not store the message (not connected,
	// no ack within the timeout, stream missing or full). The sender should
	// retry later; nothing may be reported as stored.
	ErrUnavailable = errors.New("jetstream unavailable")
	// ErrTooLarge: the message exceeds the NATS server's maximum payload and
	// will never be stored, however often it is retried.
	ErrTooLarge = errors.New("message larger than the NATS server accepts")
)

// Message is one message to store. Its headers must hold the Nats-Msg-Id
// that JetStream deduplicates on; MsgID repeats it for the local fast path.
type Message struct {
	Subject string
	MsgID   string
	Header  map[string][]string
	// Headers, when Header is nil, builds them: it is called only for a
	// message that is published, not for one answered from the memory of
	// recent ids (a retried notification costs no header map).
	Headers func() map[string][]string
	Data    []byte
	// Copies are stored with the message, or the publish fails: the
	// product event as routed to the interests it matches (each with its
	// own id). MakeCopies, when Copies is nil, makes them: it is called only
	// for a message that is published (and Copies then set, for the
	// caller), not for one answered from the memory of stored ids, whose
	// copies were stored with it — evaluating the interests is the costly
	// part of a copy.
	Copies     []Message
	MakeCopies func() []Message
	// Event and Occurred say which product event the message is and when
	// the catalogue says it happened (zero when unknown): the publisher
	// does not read them; they travel with the message for the delivery
	// delay its caller measures.
	Event    string
	Occurred time.Time
}

// MessageHeader is m's headers, built if they are built lazily.
func (m *Message) MessageHeader() map[string][]string {
	if m.Header == nil && m.Headers != nil {
		m.Header = m.Headers()
	}
	return m.Header
}

// Result is what JetStream said about one message.
type Result struct {
	// Duplicate is true when a message with the same id was already stored
	// within the duplicate window (by this or another receiver).
	Duplicate bool
	// Seq is the stream sequence; 0 for duplicates answered locally.
	Seq uint64
	// Local is true when the answer came from the memory of ids this
	// replica stored, without asking JetStream: nothing was confirmed now.
	Local bool
	// CopiesStored says, for each of the message's Copies in order,
	// whether JetStream stored it now (false: a duplicate); nil when no
	// copy was sent.
	CopiesStored []bool
}

// Confirmed says whether JetStream confirmed at least one of results now
// (stored, or a duplicate it recognised), rather than every answer coming
// from the local memory of stored ids.
func Confirmed(results []Result) bool {
	for _, r := range results {
		if !r.Local {
			return true
		}
	}
	return false
}

// BatchPublisher is what a source needs of the publisher: every source
// (and the quarantine's replay) takes this one interface, declared here
// beside its implementation, *Publisher.
type BatchPublisher interface {
	Publish(ctx context.Context, msgs []Message) ([]Result, error)
}

var _ BatchPublisher = (*Publisher)(nil)

// Publisher publishes to one stream with synchronous confirmation.
type Publisher struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  string
	timeout time.Duration
	recent  *recentIDs

	latency prometheus.Histogram
	errs    *prometheus.CounterVec
}

// PublisherOptions configure a Publisher.
type PublisherOptions struct {
	Stream string
	// Timeout bounds the wait for each PubAck, from the moment the message
	// is handed to the client; a Publish call that first stalls (MaxPending
	// in flight) can take up to twice as long.
	Timeout time.Duration
	// MaxPending bounds the messages in flight over the connection; a caller
	// beyond it waits (within Timeout) instead of buffering without limit.
	MaxPending int
	// RecentIDs is how many stored message ids are remembered locally, so a
	// duplicate is answered without a JetStream round trip; 0 disables it.
	RecentIDs int
	// RecentTTL is how long a remembered id stays valid; it must not exceed
	// the stream's duplicate window, which is what makes the answer true.
	RecentTTL time.Duration
}

// NewPublisher returns a publisher on nc. Its metrics are registered on reg.
func NewPublisher(nc *nats.Conn, o PublisherOptions, reg prometheus.Registerer) (*Publisher, error) {
	if o.Timeout <= 0 {
		// Without it a PubAck that never comes would be waited for forever.
		return nil, fmt.Errorf("publisher: timeout %s must be positive", o.Timeout)
	}
	if o.MaxPending <= 0 {
		o.MaxPending = 4000
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(o.MaxPending),
		// Abandoned acks (the caller timed out) are forgotten after this, so
		// a broker that stops answering cannot grow the pending set.
		jetstream.WithPublishAsyncTimeout(o.Timeout),
	)
	if err != nil {
		return nil, fmt.Errorf("jetstream context: %w", err)
	}
	p := &Publisher{
		nc:      nc,
		js:      js,
		stream:  o.Stream,
		timeout: o.Timeout,
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "cdse_receiver_publish_duration_seconds",
			Help:    "Time from publishing a request's messages to the last PubAck.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		errs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdse_receiver_publish_errors_total",
			Help: "Messages JetStream did not store, by reason.",
		}, []string{"reason"}),
	}
	for _, r := range []string{"timeout", "no_stream", "disconnected", "rejected", "too_large", "error"} {
		p.errs.WithLabelValues(r) // zeros from the start, for rate() and increase()
	}
	if o.RecentIDs > 0 && o.RecentTTL > 0 {
		p.recent = newRecentIDs(o.RecentIDs, o.RecentTTL)
	}
	for _, c := range []prometheus.Collector{p.latency, p.errs} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return p, nil
}

// ForgetRecent drops the memory of recently stored ids. It must be called
// when the stream is new (deleted and created again): the ids remembered
// are not in it, and answering "duplicate" for them would lose them.
func (p *Publisher) ForgetRecent() {
	if p.recent != nil {
		p.recent.clear()
	}
}

// JetStream returns the JetStream context (for stream setup and readiness).
func (p *Publisher) JetStream() jetstream.JetStream { return p.js }

// Publish stores msgs and returns one Result per message, in order, once
// every one is acknowledged. On error, some messages may have been stored and
// others not; a retry with the same ids is deduplicated by JetStream, which is
// why a caller that reports failure to its sender loses nothing.
func (p *Publisher) Publish(ctx context.Context, msgs []Message) ([]Result, error) {
	start := time.Now()
	results := make([]Result, len(msgs))
	// Ids this replica stored within the window are answered from memory,
	// even while NATS is away: they are stored, and saying so is true.
	pending := len(msgs)
	if p.recent != nil {
		for i, m := range msgs {
			if p.recent.has(m.MsgID, start) {
				results[i].Duplicate, results[i].Local = true, true
				pending--
			}
		}
	}
	if pending == 0 {
		return results, nil
	}
	if !p.nc.IsConnected() {
		p.errs.WithLabelValues("disconnected").Add(float64(pending))
		return nil, fmt.Errorf("publish: %w: not connected to NATS (%s)", ErrUnavailable, p.nc.Status())
	}
	// No context of our own with a deadline (its timer cost 2 % of the CPU
	// under load): every future already fails by itself Timeout after it
	// was registered (WithPublishAsyncTimeout), and the caller's ctx still
	// ends the wait early. A publish that first stalls (MaxPending in
	// flight) waits at most until Timeout after the start to be registered.
	deadline := start.Add(p.timeout)
	futures := make([]jetstream.PubAckFuture, len(msgs))
	var copies []jetstream.PubAckFuture
	send := func(m *Message) (jetstream.PubAckFuture, error) {
		f, err := p.js.PublishMsgAsync(&nats.Msg{Subject: m.Subject, Header: nats.Header(m.MessageHeader()), Data: m.Data},
			jetstream.WithExpectStream(p.stream),
			jetstream.WithStallWait(max(time.Until(deadline), time.Millisecond)))
		if err != nil {
			return nil, p.fail(m.Subject, err)
		}
		return f, nil
	}
	for i := range msgs {
		if results[i].Duplicate {
			continue
		}
		f, err := send(&msgs[i])
		if err != nil {
			return nil, err
		}
		futures[i] = f
		if m := &msgs[i]; m.Copies == nil && m.MakeCopies != nil {
			m.Copies = m.MakeCopies()
		}
		for j := range msgs[i].Copies {
			f, err := send(&msgs[i].Copies[j])
			if err != nil {
				return nil, err
			}
			copies = append(copies, f)
		}
	}
	wait := func(f jetstream.PubAckFuture, subject string) (*jetstream.PubAck, error) {
		select {
		case ack := <-f.Ok():
			return ack, nil
		case err := <-f.Err():
			return nil, p.fail(subject, err)
		case <-ctx.Done():
			return nil, p.fail(subject, ctx.Err())
		}
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		ack, err := wait(f, msgs[i].Subject)
		if err != nil {
			return nil, err
		}
		results[i] = Result{Duplicate: ack.Duplicate, Seq: ack.Sequence}
	}
	// A copy stored or known is enough; one that failed fails the whole
	// publish (the sender retries, and every message is deduplicated).
	// The copies were sent in the order of the messages that were sent.
	k := 0
	for i := range msgs {
		if futures[i] == nil || len(msgs[i].Copies) == 0 {
			continue
		}
		results[i].CopiesStored = make([]bool, len(msgs[i].Copies))
		for j := range msgs[i].Copies {
			ack, err := wait(copies[k], msgs[i].Copies[j].Subject)
			if err != nil {
				return nil, err
			}
			k++
			results[i].CopiesStored[j] = !ack.Duplicate
		}
	}
	// Only now, every copy stored too, is a fresh store remembered (a retry
	// answered from memory does not publish the copies again); and only a
	// fresh store: for a duplicate the original store time is unknown, and
	// remembering it from now on could outlast the server's window.
	if p.recent != nil {
		for i, f := range futures {
			if f != nil && !results[i].Duplicate {
				p.recent.add(msgs[i].MsgID, start)
			}
		}
	}
	p.latency.Observe(time.Since(start).Seconds())
	return results, nil
}

// fail classifies a publish error; the reason label is a fixed word, never
// text from the request or the server.
func (p *Publisher) fail(subject string, err error) error {
	reason, kind := "error", ErrUnavailable
	switch {
	case errors.Is(err, nats.ErrMaxPayload):
		reason, kind = "too_large", ErrTooLarge
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, jetstream.ErrAsyncPublishTimeout), errors.Is(err, jetstream.ErrTooManyStalledMsgs):
		reason = "timeout"
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrStreamNotFound):
		reason = "no_stream"
		// Whatever stream comes next does not hold what we remember.
		p.ForgetRecent()
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrReconnectBufExceeded), errors.Is(err, nats.ErrDisconnected):
		reason = "disconnected"
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && reason == "error" {
		reason = "rejected" // e.g. stream full with discard=new, wrong stream
	}
	p.errs.WithLabelValues(reason).Inc()
	if reason == "timeout" {
		return fmt.Errorf("publish %s: %w: no PubAck within %s: %w", subject, kind, p.timeout, err)
	}
	return fmt.Errorf("publish %s: %w: %w", subject, kind, err)
}
