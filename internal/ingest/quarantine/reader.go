package quarantine

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Stored is one quarantined body as an operator sees it.
type Stored struct {
	Seq          uint64    `json:"seq"`
	Time         time.Time `json:"time"`
	Source       string    `json:"source"`
	Reason       string    `json:"reason"`
	Error        string    `json:"error,omitempty"`
	Field        string    `json:"field,omitempty"`
	ProductID    string    `json:"productId,omitempty"`
	ContentType  string    `json:"contentType,omitempty"`
	BodyEncoding string    `json:"bodyEncoding,omitempty"`
	Bytes        int       `json:"bytes"`
	Body         []byte    `json:"-"`
}

// Reader reads and removes quarantined bodies.
type Reader struct {
	js     jetstream.JetStream
	stream string
}

// NewReader reads the quarantine stream named stream.
func NewReader(js jetstream.JetStream, stream string) *Reader {
	return &Reader{js: js, stream: stream}
}

// ErrNotFound: no quarantined body with that sequence.
var ErrNotFound = errors.New("no such quarantined body")

// List returns every quarantined body's metadata, oldest first, without
// the bodies: it reads the headers only (a quarantine may hold a gigabyte).
func (r *Reader) List(ctx context.Context) ([]Stored, error) {
	out := []Stored{}
	err := r.each(ctx, true, func(s Stored) error {
		out = append(out, s)
		return nil
	})
	return out, err
}

// Each calls fn for every quarantined body, oldest first, with its bytes,
// one at a time: the reader holds a few bodies whatever the quarantine's
// size. An error of fn stops it.
func (r *Reader) Each(ctx context.Context, fn func(Stored) error) error {
	return r.each(ctx, false, fn)
}

// bodiesPerFetch bounds what one fetch of bodies brings: a few bodies, each
// at most the receiver's body limit. (Not FetchBytes: nats.go sizes that
// fetch's channels for a million messages, 31 MB a call, measured with a
// heap profile.)
const bodiesPerFetch = 4

// each reads the stream with an ordered consumer (no state on the server,
// nothing to clean up), up to the last message there was when it began.
func (r *Reader) each(ctx context.Context, headersOnly bool, fn func(Stored) error) error {
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return fmt.Errorf("quarantine stream %s: %w", r.stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("quarantine stream %s: %w", r.stream, err)
	}
	if info.State.Msgs == 0 {
		return nil
	}
	perFetch := bodiesPerFetch
	if headersOnly {
		perFetch = 500
	}
	return topology.ReadTo(ctx, s, jetstream.OrderedConsumerConfig{HeadersOnly: headersOnly}, perFetch, info.State.LastSeq, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		st := stored(md.Sequence.Stream, md.Timestamp, m.Headers(), m.Data())
		if headersOnly {
			st.Body = nil
			st.Bytes, _ = strconv.Atoi(m.Headers().Get(nats.MsgSize))
		}
		return fn(st)
	})
}

// Get returns one quarantined body.
func (r *Reader) Get(ctx context.Context, seq uint64) (Stored, error) {
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return Stored{}, fmt.Errorf("quarantine stream %s: %w", r.stream, err)
	}
	m, err := s.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Stored{}, fmt.Errorf("%w: %d", ErrNotFound, seq)
	}
	if err != nil {
		return Stored{}, fmt.Errorf("read quarantined body %d: %w", seq, err)
	}
	return fromRaw(m), nil
}

// Remove deletes a quarantined body (after a replay stored it).
func (r *Reader) Remove(ctx context.Context, seq uint64) error {
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return fmt.Errorf("quarantine stream %s: %w", r.stream, err)
	}
	if err := s.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("remove quarantined body %d: %w", seq, err)
	}
	return nil
}

func fromRaw(m *jetstream.RawStreamMsg) Stored {
	return stored(m.Sequence, m.Time, m.Header, m.Data)
}

func stored(seq uint64, at time.Time, h nats.Header, data []byte) Stored {
	return Stored{
		Seq: seq, Time: at, Source: h.Get(HeaderSource), Reason: h.Get(HeaderReason),
		Error: h.Get(HeaderError), Field: h.Get(HeaderField), ProductID: h.Get(HeaderProductID),
		ContentType: h.Get(HeaderContentType), BodyEncoding: h.Get(HeaderBodyEncoding),
		Bytes: len(data), Body: data,
	}
}

// Decoded is the body with its stored encoding undone (gzip), limited to
// maxBytes; a body that still cannot be decoded returns an error.
func (s Stored) Decoded(maxBytes int64) ([]byte, error) {
	switch s.BodyEncoding {
	case "", "identity":
		return s.Body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(s.Body))
		if err != nil {
			return nil, fmt.Errorf("body is not valid gzip: %w", err)
		}
		b, err := io.ReadAll(io.LimitReader(zr, maxBytes+1))
		if err != nil {
			return nil, fmt.Errorf("body is not valid gzip: %w", err)
		}
		if int64(len(b)) > maxBytes {
			return nil, fmt.Errorf("body larger than %d bytes once decompressed", maxBytes)
		}
		return b, nil
	}
	return nil, fmt.Errorf("body encoding %q cannot be decoded", s.BodyEncoding)
}
