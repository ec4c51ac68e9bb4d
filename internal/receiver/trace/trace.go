// Package trace finds where one product is on the streams: its events on
// the product stream (and the source that brought each), its copies per
// interest, the fetcher's retries, its bodies in the quarantine, and the
// fetcher's fetched and failed events; and its versions: its
// acquisition, what the versions bucket knows of it and the notices of
// supersession that name it (versions.go). It answers `receiver trace`:
// "did product X arrive, where did it go, and is it the latest?".
//
// Every stream is read once, with an ordered consumer (no state on the
// server), up to the last message there was when the read began; the
// product and fetched streams with their headers only, since every message
// there names its product in Cdse-Product-Id and Cdse-Product-Name. The
// quarantine is read with its bodies, a few at a time: a refused body has
// a Cdse-Product-Id header only when one could be read from it, never a
// name, and an array names only its first product there.
package trace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// What a hit is: the words of the WHAT column and of the JSON's "what".
const (
	WhatProduct    = "product"    // the product event on the product stream
	WhatInterest   = "interest"   // an interest's copy of it
	WhatFetchRetry = "fetchretry" // put back for the fetcher by `fetcher failed retry`
	WhatQuarantine = "quarantine" // a refused body that names it
	WhatFetched    = "fetched"    // the fetcher stored it (or removed it, for a deletion)
	WhatFailed     = "failed"     // the fetcher gave it up
)

// Query is what is looked for: a product id or a product name.
type Query struct {
	// ID is the product id, canonical (lower case), when the query is one.
	ID string
	// Name is the product name, when the query is not an id.
	Name string
}

// ParseQuery reads a product id (a UUID, in any form uuid.Parse takes) or
// else a product name.
func ParseQuery(s string) (Query, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Query{}, errors.New("want a product id or name, not an empty one")
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' }) {
		return Query{}, fmt.Errorf("%q: a product id or name has no spaces nor control characters", s)
	}
	if id, err := uuid.Parse(s); err == nil {
		return Query{ID: id.String()}, nil
	}
	return Query{Name: s}, nil
}

func (q Query) String() string {
	if q.ID != "" {
		return q.ID
	}
	return q.Name
}

// Hit is one message about the product.
type Hit struct {
	Stream  string    `json:"stream"`
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Subject string    `json:"subject"`
	What    string    `json:"what"`
	// Interest is the interest of a copy; Reason the quarantine's reason.
	Interest string `json:"interest,omitempty"`
	Reason   string `json:"reason,omitempty"`
	Event    string `json:"event,omitempty"`
	// Source is the source that brought the product event (push, pull,
	// reconcile, backfill), as the message says.
	Source      string `json:"source,omitempty"`
	ProductID   string `json:"productId,omitempty"`
	ProductName string `json:"productName,omitempty"`
	// Detail: the quarantine's error, the fetched object's URL, why the
	// fetch failed, the quarantined body a product event was replayed
	// from, the failed event a retry came from.
	Detail string `json:"detail,omitempty"`
}

// Read is how far one stream was read.
type Read struct {
	Stream string `json:"stream"`
	// Missing: the stream does not exist (the fetcher's, before it ran).
	Missing bool `json:"missing,omitempty"`
	// Read messages of it, up to sequence Last (the last when the read
	// began); Done when it got there.
	Read uint64 `json:"read"`
	Last uint64 `json:"last"`
	Done bool   `json:"done"`
}

// Result is what a trace found.
type Result struct {
	Query string `json:"query"`
	By    string `json:"by"` // "id" or "name"
	// Hits, oldest first, at most MaxHits of them; More counts those left
	// out.
	Hits  []Hit  `json:"hits"`
	More  int    `json:"more,omitempty"`
	Reads []Read `json:"streams"`
	// Versions is the product's acquisition and its versions, when
	// Options.VersionsBucket is set.
	Versions *Versions `json:"versions,omitempty"`
}

// Found says whether anything was found of the product: a message about
// it, a notice naming it, or the versions bucket's record of it (a
// product whose messages aged out of the stream).
func (r Result) Found() bool {
	return len(r.Hits) > 0 || r.Versions != nil && (len(r.Versions.Notices) > 0 || r.Versions.Standing != "" && r.Versions.Standing != StandingUnknown)
}

// Options say where to look.
type Options struct {
	// ProductStream holds the product events, the interests' copies and
	// the fetcher's retries; QuarantineStream the refused bodies.
	ProductStream, QuarantineStream string
	// FetchedStream is the fetcher's stream of fetched and failed events
	// ("": not looked at). A missing one is no error.
	FetchedStream string
	// MaxBody bounds a quarantined gzip body once decompressed (the
	// receiver's RECEIVER_MAX_BODY).
	MaxBody int64
	// MaxHits bounds the hits kept (default 1000): a product has a few.
	MaxHits int
	// VersionsBucket is the versions bucket (topology.VersionsBucketOf
	// the product stream; "": the versions are not looked at). A missing
	// one (RECEIVER_VERSIONS off) is no error.
	VersionsBucket string
	// MaxNotices bounds the notices of supersession kept (default 100):
	// a product is named by a few.
	MaxNotices int
}

// ErrIncomplete: a stream could not be read to its end; the result holds
// what was found before.
var ErrIncomplete = errors.New("trace incomplete")

// Find looks for q on the streams. On an error the Result holds what was
// found until then.
func Find(ctx context.Context, js jetstream.JetStream, o Options, q Query) (Result, error) {
	if o.MaxHits <= 0 {
		o.MaxHits = 1000
	}
	if o.MaxNotices <= 0 {
		o.MaxNotices = 100
	}
	f := &finder{o: o, q: q, res: Result{Query: q.String(), By: "name", Hits: []Hit{}, Reads: []Read{}}, ids: map[string]bool{}}
	if o.VersionsBucket != "" {
		f.res.Versions = &Versions{Bucket: o.VersionsBucket, Versions: []Version{}, Notices: []Notice{}}
	}
	if q.ID != "" {
		f.res.By = "id"
		f.ids[q.ID] = true
	}
	f.name = q.Name
	// The product stream and the fetcher's first: by name, they say the
	// product's ids, which the quarantine's headers name it by.
	err := f.stream(ctx, js, o.ProductStream, true, f.product)
	if err == nil && o.FetchedStream != "" {
		err = f.stream(ctx, js, o.FetchedStream, false, f.fetched)
	}
	if err == nil {
		err = f.stream(ctx, js, o.QuarantineStream, false, f.quarantined)
	}
	if err == nil && f.res.Versions != nil {
		err = f.versions(ctx, js)
	}
	slices.SortStableFunc(f.res.Hits, func(a, b Hit) int { return a.Time.Compare(b.Time) })
	if err != nil && !errors.Is(err, ErrIncomplete) {
		err = fmt.Errorf("%w: %w", ErrIncomplete, err)
	}
	return f.res, err
}

type finder struct {
	o   Options
	q   Query
	res Result
	// ids are the product's ids: the query's, or those its name has on
	// the streams read so far (lower case).
	ids map[string]bool
	// name is the product's name: the query's, or the first its
	// messages give; acquisition is the first Cdse-Acquisition they
	// carry, and acquisitionFrom where it was read (FromMessage,
	// FromNotice).
	name, acquisition, acquisitionFrom string
}

func (f *finder) add(h Hit) {
	if len(f.res.Hits) >= f.o.MaxHits {
		f.res.More++
		return
	}
	f.res.Hits = append(f.res.Hits, h)
}

// matches says whether headers h name the product, noting its id when the
// query is a name.
func (f *finder) matches(h nats.Header) bool {
	id := strings.ToLower(h.Get(event.HeaderProductID))
	if f.q.ID != "" {
		return id == f.q.ID
	}
	if !strings.EqualFold(h.Get(event.HeaderProductName), f.q.Name) {
		return false
	}
	if id != "" {
		f.ids[id] = true
	}
	return true
}

// hit is what every stream's hit has.
func hit(stream string, m jetstream.Msg, md *jetstream.MsgMetadata, what string) Hit {
	h := m.Headers()
	return Hit{Stream: stream, Seq: md.Sequence.Stream, Time: md.Timestamp.UTC(), Subject: m.Subject(), What: what,
		Event: h.Get(event.HeaderEvent), Source: h.Get(event.HeaderSource),
		ProductID: h.Get(event.HeaderProductID), ProductName: h.Get(event.HeaderProductName)}
}

func (f *finder) product(stream string, m jetstream.Msg, md *jetstream.MsgMetadata) {
	h := m.Headers()
	if f.res.Versions != nil && event.IsNotice(h) && h.Get(event.HeaderInterest) == "" {
		// A notice of supersession: the versions section lists it (its
		// copies to interests stay hits, as the interests' copies).
		f.notice(m, md)
		return
	}
	if !f.matches(h) {
		return
	}
	f.learn(h, FromMessage)
	x := hit(stream, m, md, WhatProduct)
	switch {
	case h.Get(event.HeaderInterest) != "":
		x.What, x.Interest = WhatInterest, h.Get(event.HeaderInterest)
	case strings.HasPrefix(m.Subject(), topology.RetryPrefix+"."):
		x.What = WhatFetchRetry
		if r := h.Get(event.HeaderFetchRetry); r != "" {
			x.Detail = "retry of failed event " + r
		}
	case h.Get(event.HeaderReplayed) != "":
		x.Detail = "replayed from quarantine " + h.Get(event.HeaderReplayed)
	}
	f.add(x)
}

func (f *finder) fetched(stream string, m jetstream.Msg, md *jetstream.MsgMetadata) {
	h := m.Headers()
	if !f.matches(h) {
		return
	}
	x := hit(stream, m, md, WhatFetched)
	switch {
	case h.Values(event.HeaderFetchError) != nil:
		x.What, x.Detail = WhatFailed, h.Get(event.HeaderFetchError)
	case h.Get(event.HeaderSkipped) != "":
		x.Detail = "skipped: " + h.Get(event.HeaderSkipped) // nothing stored
	case h.Get(event.HeaderSupersededBy) != "":
		x.Detail = "removed, superseded by " + h.Get(event.HeaderSupersededBy) + ": " + h.Get(event.HeaderObjectURL)
	default:
		x.Detail = h.Get(event.HeaderObjectURL)
	}
	f.add(x)
}

// quarantined matches a refused body by its Cdse-Product-Id header, else
// by its bytes: the id, or the name, as a JSON string in it.
func (f *finder) quarantined(stream string, m jetstream.Msg, md *jetstream.MsgMetadata) {
	h := m.Headers()
	found := f.ids[strings.ToLower(h.Get(quarantine.HeaderProductID))]
	if !found {
		s := quarantine.Stored{Body: m.Data(), BodyEncoding: h.Get(quarantine.HeaderBodyEncoding)}
		body, err := s.Decoded(f.o.MaxBody)
		if err != nil {
			body = m.Data() // as it came: still worth a look
		}
		found = f.inBody(body)
	}
	if !found {
		return
	}
	x := hit(stream, m, md, WhatQuarantine)
	x.Reason, x.Detail = h.Get(quarantine.HeaderReason), h.Get(quarantine.HeaderError)
	f.add(x)
}

// inBody says whether a body holds the product's id or name as a JSON
// string (a name's characters need no escaping in JSON).
func (f *finder) inBody(body []byte) bool {
	lower := bytes.ToLower(body)
	has := func(s string) bool {
		return bytes.Contains(lower, []byte(`"`+strings.ToLower(s)+`"`))
	}
	if f.q.Name != "" && has(f.q.Name) {
		return true
	}
	for id := range f.ids {
		if id != "" && has(id) {
			return true
		}
	}
	return false
}

// stream reads one stream to the last message it had when the read began.
func (f *finder) stream(ctx context.Context, js jetstream.JetStream, name string, headersOnly bool, fn func(string, jetstream.Msg, *jetstream.MsgMetadata)) error {
	r := Read{Stream: name}
	defer func() { f.res.Reads = append(f.res.Reads, r) }()
	s, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		r.Missing, r.Done = true, true
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	r.Last = info.State.LastSeq
	if info.State.Msgs == 0 {
		r.Done = true
		return nil
	}
	perFetch := 4 // bodies: a few at a time, each at most the body limit
	if headersOnly {
		perFetch = 1000
	}
	var seen uint64
	err = topology.ReadTo(ctx, s, jetstream.OrderedConsumerConfig{HeadersOnly: headersOnly}, perFetch, r.Last, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.Read++
		seen = md.Sequence.Stream
		fn(name, m, md)
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: stream %s read to sequence %d of %d: %w", ErrIncomplete, name, seen, r.Last, err)
	}
	if seen < r.Last {
		// The read ended when a fetch brought nothing for its wait
		// (topology.ReadTo's): the messages after seen are gone (removed,
		// or aged out meanwhile), or the server was too slow, which is an
		// error, never a silent "not found".
		next, err := s.GetMsg(ctx, seen+1, jetstream.WithGetMsgSubject(">"))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return fmt.Errorf("%w: stream %s read to sequence %d of %d: %w", ErrIncomplete, name, seen, r.Last, err)
		case next.Sequence <= r.Last:
			return fmt.Errorf("%w: stream %s read to sequence %d of %d: no message came within the read's wait", ErrIncomplete, name, seen, r.Last)
		}
	}
	r.Done = true
	return nil
}
