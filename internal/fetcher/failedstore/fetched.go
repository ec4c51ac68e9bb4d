package failedstore

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
)

// Fetched is one fetched event as an operator sees it.
type Fetched struct {
	Seq         uint64            `json:"seq"`
	Time        time.Time         `json:"time"`
	Event       string            `json:"event"`
	Collection  string            `json:"collection"`
	ProductType string            `json:"productType"`
	ProductID   string            `json:"productId"`
	ProductName string            `json:"productName"`
	Interest    string            `json:"interest,omitempty"`
	URL         string            `json:"url"`
	Size        int64             `json:"size"`
	Verified    bool              `json:"verified"`
	Checksums   map[string]string `json:"checksums,omitempty"`
	Unverified  string            `json:"unverified,omitempty"`
	// Unchanged: the target held it already, nothing was downloaded.
	Unchanged bool   `json:"unchanged,omitempty"`
	Took      string `json:"took,omitempty"`
	// Mode is "files" for a folder of some of the product's files (Files
	// of them, each verified against the manifest), "archive" for an
	// archive stored although files were asked for; "" an archive.
	Mode  string `json:"mode,omitempty"`
	Files int    `json:"files,omitempty"`
	// Skipped is why the product was not downloaded (superseded by …,
	// FETCH_VERSIONS=latest); nothing is stored then.
	Skipped string `json:"skipped,omitempty"`
	// SupersededBy is the product that supersedes this one: on a skipped
	// product's event, and on the removal of a superseded one
	// (FETCH_ON_SUPERSEDED=delete, event deleted).
	SupersededBy string `json:"supersededBy,omitempty"`
}

// FetchedFilter picks fetched events; its zero value picks every one.
type FetchedFilter struct {
	// Since: only the events stored since then.
	Since time.Time
	// ProductType: only this product type (read on the subjects' token).
	ProductType string
	// Interest: only the products that came by this interest (the
	// Cdse-Interest header).
	Interest string
}

// Fetched returns the fetched events f picks, oldest first, reading their
// headers only, up to the last there was when it began.
func (r *Store) Fetched(ctx context.Context, f FetchedFilter) ([]Fetched, error) {
	filter := r.fetchedPrefix + ".>"
	if f.ProductType != "" {
		filter = r.fetchedPrefix + ".*.*." + f.ProductType
	}
	l := []Fetched{}
	oc := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, HeadersOnly: true}
	if !f.Since.IsZero() {
		from := f.Since
		oc.DeliverPolicy, oc.OptStartTime = jetstream.DeliverByStartTimePolicy, &from
	}
	err := r.read(ctx, oc, 500, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		if ev := fetchedOf(r.fetchedPrefix, md.Sequence.Stream, md.Timestamp, m.Subject(), m.Headers()); f.Interest == "" || ev.Interest == f.Interest {
			l = append(l, ev)
		}
		return nil
	})
	return l, err
}

// fetchedOf reads a fetched event from its subject and headers (the
// object's, and the product's copied from the product message).
func fetchedOf(prefix string, seq uint64, at time.Time, subject string, h nats.Header) Fetched {
	ev := Fetched{Seq: seq, Time: at, ProductID: h.Get(event.HeaderProductID), ProductName: h.Get(event.HeaderProductName),
		Interest: h.Get(event.HeaderInterest), URL: h.Get(event.HeaderObjectURL), Unverified: h.Get(event.HeaderUnverified),
		Unchanged: h.Get(event.HeaderObjectUnchanged) == "true", Took: h.Get(event.HeaderFetchTook)}
	if tokens := strings.Split(strings.TrimPrefix(subject, prefix+"."), "."); len(tokens) == 3 {
		ev.Event, ev.Collection, ev.ProductType = tokens[0], tokens[1], tokens[2]
	}
	ev.Size, _ = strconv.ParseInt(h.Get(event.HeaderObjectSize), 10, 64)
	for k, v := range h {
		if alg, ok := strings.CutPrefix(k, event.HeaderChecksumPrefix); ok && len(v) > 0 && v[0] != "" {
			if ev.Checksums == nil {
				ev.Checksums = map[string]string{}
			}
			ev.Checksums[strings.ToUpper(alg)] = v[0]
		}
	}
	ev.Skipped, ev.SupersededBy = h.Get(event.HeaderSkipped), h.Get(event.HeaderSupersededBy)
	ev.Mode = h.Get(event.HeaderFetchMode)
	ev.Files, _ = strconv.Atoi(h.Get(event.HeaderFileCount))
	ev.Verified = len(ev.Checksums) > 0 || (ev.Mode == event.FetchModeFiles && h.Get(event.HeaderVerifiedAgainst) != "" && ev.Unverified == "")
	return ev
}
