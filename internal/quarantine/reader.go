package quarantine

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
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

// List returns every quarantined body, oldest first.
func (r *Reader) List(ctx context.Context) ([]Stored, error) {
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return nil, fmt.Errorf("quarantine stream %s: %w", r.stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("quarantine stream %s: %w", r.stream, err)
	}
	var out []Stored
	if info.State.Msgs == 0 {
		return out, nil
	}
	// Sequences are read one by one: the quarantine is small by nature,
	// and a direct get needs no consumer (nothing to clean up).
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // removed by a replay
		}
		if err != nil {
			return out, fmt.Errorf("read quarantined body %d: %w", seq, err)
		}
		out = append(out, fromRaw(m))
	}
	return out, nil
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
	h := m.Header
	return Stored{
		Seq: m.Sequence, Time: m.Time, Source: h.Get(HeaderSource), Reason: h.Get(HeaderReason),
		Error: h.Get(HeaderError), Field: h.Get(HeaderField), ProductID: h.Get(HeaderProductID),
		ContentType: h.Get(HeaderContentType), BodyEncoding: h.Get(HeaderBodyEncoding),
		Bytes: len(m.Data), Body: m.Data,
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
