// Package quarantine keeps what the receiver refuses. Every authenticated
// body that fails validation — not JSON at all, JSON that breaks the
// interface, an array over the limit, an encoding we cannot decode — is
// stored verbatim on a stream of its own, apart from the product stream,
// so that nothing a legitimate sender gave us is lost because our validator
// did not know its shape. An operator lists, inspects and replays it
// (receiver quarantine ...) once the validator is fixed.
//
// The product stream stays strict: nothing stored here reaches it except
// through a replay that validates it again.
package quarantine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Reasons, the fixed words of the reason header and the metric label.
const (
	// ReasonInvalidJSON: the body is not JSON (malformed, not UTF-8, empty).
	ReasonInvalidJSON = "invalid_json"
	// ReasonInvalidNotification: JSON that breaks the interface (a field
	// missing, of the wrong type or value; duplicate members ...).
	ReasonInvalidNotification = "invalid_notification"
	// ReasonTooMany: an array with more notifications than allowed.
	ReasonTooMany = "too_many_notifications"
	// ReasonUnsupportedEncoding: a Content-Encoding we cannot decode; the
	// body is kept as it came.
	ReasonUnsupportedEncoding = "unsupported_encoding"
	// ReasonUndecodable: the body claims an encoding we know (gzip) but
	// does not decode; kept as it came.
	ReasonUndecodable = "undecodable_body"
)

// Reasons lists every reason, for documentation and tests.
var Reasons = []string{ReasonInvalidJSON, ReasonInvalidNotification, ReasonTooMany, ReasonUnsupportedEncoding, ReasonUndecodable}

// ReasonOf is the reason word for an error of notification.Parse/Decode.
func ReasonOf(err error) string {
	var ve *notification.ValidationError
	switch {
	case errors.Is(err, notification.ErrTooMany):
		return ReasonTooMany
	case errors.As(err, &ve) && ve.Syntax:
		return ReasonInvalidJSON
	}
	return ReasonInvalidNotification
}

// FieldOf is the member a validation error points at ("" if none).
func FieldOf(err error) string {
	var ve *notification.ValidationError
	if errors.As(err, &ve) {
		return ve.Field
	}
	return ""
}

// Header names of a quarantined message.
const (
	HeaderReason          = "Cdse-Quarantine-Reason"
	HeaderError           = "Cdse-Quarantine-Error"
	HeaderField           = "Cdse-Quarantine-Field"
	HeaderContentType     = "Cdse-Content-Type"
	HeaderContentEncoding = "Cdse-Content-Encoding"
	// HeaderBodyEncoding is the encoding of the stored bytes: "identity"
	// when the receiver decoded them, else what the sender said.
	HeaderBodyEncoding = "Cdse-Body-Encoding"
	HeaderReceivedAt   = "Cdse-Received-At"
	HeaderSource       = event.HeaderSource
	HeaderProductID    = event.HeaderProductID
)

// Entry is one refused body and why.
type Entry struct {
	Source string // push, pull, reconcile
	Reason string // one of Reasons
	// Error is what the sender was told (the 400 body's message).
	Error string
	Field string
	// ContentType and ContentEncoding are the request's headers, as sent.
	ContentType, ContentEncoding string
	// BodyEncoding is the encoding of Body ("" for identity).
	BodyEncoding string
	Body         []byte
}

// ErrUnavailable: the body could not be stored; the sender must retry.
var ErrUnavailable = errors.New("quarantine unavailable")

// Store writes refused bodies to the quarantine stream, which
// internal/stream/topology declares and creates.
type Store struct {
	t       *topology.Topology
	js      jetstream.JetStream
	timeout time.Duration
	log     logrus.FieldLogger
	now     func() time.Time

	stored *prometheus.CounterVec
}

// New returns a store of t's quarantine; timeout bounds one store (its
// PubAck). Its metrics are registered on reg.
func New(t *topology.Topology, timeout time.Duration, reg prometheus.Registerer, log logrus.FieldLogger) (*Store, error) {
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	s := &Store{t: t, js: t.JetStream(), timeout: timeout, log: log.WithField("component", "quarantine"), now: time.Now,
		stored: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "cdse_receiver_quarantined_total",
			Help: "Refused bodies stored on the quarantine stream (retries of the same body count once), by source and reason.",
		}, []string{"source", "reason"}),
	}
	if err := reg.Register(s.stored); err != nil {
		return nil, fmt.Errorf("register quarantine metrics: %w", err)
	}
	// Zeros from the start, so that increase() in an alert sees the first
	// refusal (a series born at 1 shows no increase).
	for _, src := range []string{"push", "pull", "reconcile"} {
		for _, r := range Reasons {
			s.stored.WithLabelValues(src, r)
		}
	}
	return s, nil
}

// Ensure creates the quarantine stream or brings its limits to the
// configured ones.
func (s *Store) Ensure(ctx context.Context) error { return s.t.EnsureQuarantine(ctx) }

// Putter is what a source needs of the quarantine: declared once, here,
// for every source.
type Putter interface {
	Put(ctx context.Context, e Entry) error
}

var _ Putter = (*Store)(nil)

// Put stores e and returns once JetStream has acknowledged it (or knows it
// from an earlier delivery of the same body). Any error wraps
// ErrUnavailable: the caller must not report the body as kept.

func (s *Store) Put(ctx context.Context, e Entry) error {
	msg := &nats.Msg{Subject: s.t.QuarantineSubject(event.SanitizeToken(e.Source)), Header: nats.Header{}, Data: e.Body}
	h := msg.Header
	h.Set(jetstream.MsgIDHeader, MsgID(e.Body))
	h.Set(HeaderSource, e.Source)
	h.Set(HeaderReason, e.Reason)
	set := func(k, v string) {
		if v = headerValue(v); v != "" {
			h.Set(k, v)
		}
	}
	set(HeaderError, e.Error)
	set(HeaderField, e.Field)
	set(HeaderContentType, e.ContentType)
	set(HeaderContentEncoding, e.ContentEncoding)
	set(HeaderBodyEncoding, e.BodyEncoding)
	set(HeaderProductID, productID(e.Body))
	h.Set(HeaderReceivedAt, s.now().UTC().Format(time.RFC3339Nano))
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ack, err := s.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(s.t.QuarantineStream()))
	if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) {
		// The stream is gone (deleted by hand, a cluster rebuilt): the
		// store owns it, so it creates it again and tries once more.
		if err = s.Ensure(ctx); err == nil {
			s.log.WithField("stream", s.t.QuarantineStream()).Warn("quarantine stream was missing; created it again")
			ack, err = s.js.PublishMsg(ctx, msg, jetstream.WithExpectStream(s.t.QuarantineStream()))
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	if !ack.Duplicate {
		s.stored.WithLabelValues(e.Source, e.Reason).Inc()
	}
	s.log.WithFields(logrus.Fields{"source": e.Source, "reason": e.Reason, "error": headerValue(e.Error),
		"seq": ack.Sequence, "duplicate": ack.Duplicate, "bytes": len(e.Body)}).Warn("refused body quarantined")
	return nil
}

// MsgID is the quarantine's dedupe key: a hash of the body, so the
// catalogue's retries of one refused body are stored once.
func MsgID(body []byte) string {
	sum := sha256.Sum256(body)
	return "q:" + hex.EncodeToString(sum[:16])
}

// headerValue makes s safe and short enough for a NATS header: control
// characters become spaces, and it is cut at 512 bytes.
func headerValue(s string) string {
	const maxLen = 512
	if len(s) > maxLen {
		s = s[:maxLen]
	}
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s))
}

// productID is the ProductId of a body, when one can be read at all (for
// listing; a body refused for its ProductId gives whatever it holds).
func productID(body []byte) string {
	var n struct {
		ProductID string `json:"ProductId"`
	}
	if json.Unmarshal(body, &n) != nil {
		var arr []struct {
			ProductID string `json:"ProductId"`
		}
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return ""
		}
		n.ProductID = arr[0].ProductID
	}
	if len(n.ProductID) > 64 {
		return ""
	}
	return n.ProductID
}
