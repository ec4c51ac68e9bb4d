// Package backfill fills the product stream with the catalogue's past:
// every product created, modified or deleted in a date range that matches
// a filter, as synthesized notifications, exactly once. It is the one-shot
// counterpart of the reconciler and uses the same keyset listing.
//
// Exactly once beyond the stream's duplicate window: JetStream recognises a
// Nats-Msg-Id only within that window (24 h by default), and a backfill
// reaches further back. So before publishing, the run reads the headers of
// every message the stream stored since the start of the range (an ordered,
// headers-only consumer) and keeps their ids; what is already there is not
// published again. That costs one pass over those headers (about 200 bytes
// a message) and the ids in memory (about 60 bytes each): 1 million
// messages, some 200 MB read and 60 MB held, once per run.
//
// Resumable: after each stored page the position in the listing is saved
// in the receiver's KV bucket, under a key derived from the arguments; the
// same command started again continues from there, and the checkpoint is
// removed when the run completes.
//
// One interest's past (Options.Interest, receiver backfill --interest):
// the run stores that interest's copies only, for the products of the
// listing it takes, whether their product message is on the stream or
// not; never a product message, never another interest's copy. A copy is
// the one the plain backfill would have stored with the product message:
// the same subject, data, headers and Nats-Msg-Id (ingest.InterestMsgID of
// the product message's id, the id live ingest gives it), so a copy stored
// live and one stored here are one. What the interest's subjects already
// hold is read first, as the product ids are for a plain backfill (its ids
// only: bounded by the interest's messages since the range began). For an
// interest that takes the latest versions only, each product is decided
// by the versions consumer's own rule on the versions bucket as it stands
// (supersede.Decide, nothing written): no copy of a product it would not
// copy (counted: Progress.Superseded), whether the bucket knows the
// product superseded or knows a newer version of a product it never saw.
// The notices of its acquisitions are not backfilled: they are on the
// notices' subjects.
package backfill

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/productfilter"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/interestfile"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/ingest/reconcile"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/stream/supersede"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// Options say what to backfill.
type Options struct {
	Filter       string
	Since, Until time.Time // Until zero: up to now
	Events       []event.Kind
	Route        ingest.Route // how messages are shaped
	DryRun       bool
	Now          func() time.Time
	// Interest, when set, backfills this one interest's copies only (the
	// package's comment): Route.InterestPrefix says where they go, and
	// Route.Interests is replaced by this interest alone, evaluated as
	// live ingest evaluated it when the event arrived (maxSensingAge
	// against the event's own time, not the run's).
	Interest *interestfile.Interest
	// Versions is the versions bucket (topology.VersionsBucket), read
	// when Interest takes the latest versions only: a product the
	// versions consumer would not copy, taking it in on the bucket as it
	// stands, gets no copy (supersede.Decide). Nil: nothing is known.
	Versions jetstream.KeyValue
}

// Streams is what a run needs of internal/stream/topology: the product stream,
// read for the ids it holds, and the state bucket of the checkpoints.
type Streams interface {
	JetStream() jetstream.JetStream
	ProductStream() string
	State(ctx context.Context) (jetstream.KeyValue, error)
}

// Progress is where a run stands in one event's listing.
type Progress struct {
	Event event.Kind `json:"event"`
	// Listed of Total products of the range (Total -1 when unknown).
	Listed int64 `json:"listed"`
	Total  int64 `json:"total"`
	// Published were stored now; OnStream were there already (found by
	// the scan or recognised by JetStream); Quarantined failed validation;
	// Unchanged are products in a modified listing never modified since
	// their first publication.
	Published   int `json:"published"`
	OnStream    int `json:"onStream"`
	Quarantined int `json:"quarantined"`
	Unchanged   int `json:"unchanged"`
	// NotTaken, for one interest's backfill, are the product events of
	// the listing that the interest does not take (the receiver's
	// evaluation of its filter, its events, its maxSensingAge): no copy.
	NotTaken int `json:"notTaken,omitempty"`
	// Superseded, for the backfill of an interest that takes the latest
	// versions only, are the product events it takes whose product the
	// versions bucket knows superseded: no copy.
	Superseded int `json:"superseded,omitempty"`
}

// Summary is what a run did.
type Summary struct {
	DryRun bool `json:"dryRun"`
	// Interest is the one interest backfilled, "" for the product stream.
	Interest string     `json:"interest,omitempty"`
	Resumed  bool       `json:"resumed"`
	Scanned  int        `json:"scannedIds"`
	Events   []Progress `json:"events"`
	Took     string     `json:"took"`
}

// Backfill is one run.
type Backfill struct {
	o    Options
	list *catalogclient.Lister
	pub  publish.BatchPublisher
	qu   quarantine.Putter
	st   Streams
	log  logrus.FieldLogger
	// OnPage, if set, is told after every page.
	OnPage func(Progress)
}

// New prepares a run listing through list.
func New(o Options, list *catalogclient.Lister, pub publish.BatchPublisher, qu quarantine.Putter, st Streams, log logrus.FieldLogger) *Backfill {
	if o.Now == nil {
		o.Now = time.Now
	}
	if len(o.Events) == 0 {
		o.Events = event.Kinds
	}
	if o.Interest != nil {
		o.Route.Interests = only(o.Interest, o.Now)
	}
	return &Backfill{o: o, list: list, pub: pub, qu: qu, st: st, log: log}
}

// checkpoint is the saved position of a run.
type checkpoint struct {
	Args    string                  `json:"args"`
	Cursors map[event.Kind]cursorAt `json:"cursors"`
}

type cursorAt struct {
	catalogclient.Cursor
	Done     bool     `json:"done"`
	Progress Progress `json:"progress"`
}

// key names the checkpoint of these arguments: the same command line
// resumes, another one starts afresh.
func (o Options) key() (string, string) {
	var evs []string
	for _, e := range o.Events {
		evs = append(evs, string(e))
	}
	parts := []string{o.Filter, o.Since.UTC().Format(time.RFC3339Nano), o.Until.UTC().Format(time.RFC3339Nano), strings.Join(evs, ",")}
	prefix := "backfill-"
	if o.Interest != nil {
		// Its own key: never the plain backfill's checkpoint of the same
		// filter and range, nor another interest's.
		parts = append(parts, "interest="+o.Interest.Name)
		prefix = "backfill-interest-" + o.Interest.Name + "-"
	}
	args := strings.Join(parts, "\x00")
	sum := sha256.Sum256([]byte(args))
	return prefix + hex.EncodeToString(sum[:8]), args
}

// interestSubjects is the filter of the interest's subjects.
func (o Options) interestSubjects() string {
	return o.Route.InterestPrefix + "." + o.Interest.Name + ".>"
}

// Run backfills and returns what it did. On error the checkpoint holds the
// last stored page; running again with the same options continues there.
func (b *Backfill) Run(ctx context.Context) (Summary, error) {
	start := time.Now()
	sum := Summary{DryRun: b.o.DryRun}
	scanned := ""
	if b.o.Interest != nil {
		if b.o.Route.InterestPrefix == "" {
			return sum, errors.New("backfill of an interest: no interest subject prefix")
		}
		sum.Interest = b.o.Interest.Name
		scanned = b.o.interestSubjects()
	}
	kv, err := b.st.State(ctx)
	if err != nil {
		return sum, err
	}
	key, args := b.o.key()
	cp := checkpoint{Args: args, Cursors: map[event.Kind]cursorAt{}}
	if e, err := kv.Get(ctx, key); err == nil {
		if json.Unmarshal(e.Value(), &cp) == nil && cp.Args == args && !b.o.DryRun {
			sum.Resumed = true
			b.log.WithField("checkpoint", key).Info("resuming an earlier run of the same backfill")
		} else {
			cp = checkpoint{Args: args, Cursors: map[event.Kind]cursorAt{}}
		}
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return sum, fmt.Errorf("read checkpoint: %w", err)
	}
	seen, err := b.scan(ctx, scanned)
	if err != nil {
		return sum, err
	}
	sum.Scanned = len(seen)
	for _, ev := range b.o.Events {
		at := cp.Cursors[ev]
		at.Progress.Event = ev
		if !at.Done {
			if err := b.event(ctx, catalogclient.KindOf(ev), &at, seen, func() error {
				cp.Cursors[ev] = at
				if b.o.DryRun {
					return nil
				}
				raw, _ := json.Marshal(cp)
				if _, err := kv.Put(ctx, key, raw); err != nil {
					return fmt.Errorf("save checkpoint: %w", err)
				}
				return nil
			}); err != nil {
				sum.Events = append(sum.Events, at.Progress)
				return sum, err
			}
		}
		sum.Events = append(sum.Events, at.Progress)
	}
	if !b.o.DryRun {
		if err := kv.Delete(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
			return sum, fmt.Errorf("remove checkpoint: %w", err)
		}
	}
	sum.Took = time.Since(start).Round(time.Millisecond).String()
	return sum, nil
}

// event backfills one event's listing from the cursor at.
func (b *Backfill) event(ctx context.Context, k catalogclient.Kind, at *cursorAt, seen map[string]bool, save func() error) error {
	p := &at.Progress
	rng := catalogclient.Range{Filter: b.o.Filter, From: b.o.Since, Until: b.o.Until, After: at.Cursor}
	first := true
	for {
		page, err := b.list.Page(ctx, k, rng, first)
		if err != nil {
			return fmt.Errorf("%s: list: %w", k.Event, err)
		}
		items := page.Items
		if first {
			// $count counts what is left after the cursor; a resumed run
			// adds what it listed before.
			p.Total, first = page.Total, false
			if page.Total >= 0 {
				p.Total = p.Listed + page.Total
			}
		}
		ns, refused := reconcile.Notifications(k, items, b.o.Now(), ingest.SourceBackfill)
		p.Listed += int64(len(items))
		p.Unchanged += len(items) - len(ns) - len(refused)
		p.Quarantined += len(refused)
		// One interest's backfill counts the refused products but keeps
		// them not again: they reach no interest, and the quarantine is
		// the plain backfill's (or the live sources') to fill.
		if !b.o.DryRun && b.o.Interest == nil {
			for _, e := range refused {
				if err := b.qu.Put(ctx, e); err != nil {
					return fmt.Errorf("%s: quarantine a refused product: %w", k.Event, err)
				}
			}
		}
		var msgs []publish.Message
		for i, m := range ingest.Messages(ns, &b.o.Route, ingest.SourceBackfill) {
			if b.o.Interest != nil {
				// The copies alone, stored as messages of their own.
				var copies []publish.Message
				if m.MakeCopies != nil {
					copies = m.MakeCopies()
				}
				if len(copies) == 0 {
					p.NotTaken++
				}
				if len(copies) > 0 && b.o.Interest.Latest() {
					superseded, err := b.superseded(ctx, &ns[i])
					if err != nil {
						return fmt.Errorf("%s: %w", k.Event, err)
					}
					if superseded {
						p.Superseded++
						continue
					}
				}
				for _, c := range copies {
					if seen[c.MsgID] {
						p.OnStream++
						continue
					}
					msgs = append(msgs, c)
				}
				continue
			}
			if seen[m.MsgID] {
				p.OnStream++
				continue
			}
			if makeCopies := m.MakeCopies; makeCopies != nil {
				// A copy an interest's backfill stored before its
				// product message is not stored twice.
				m.MakeCopies = func() []publish.Message {
					return slices.DeleteFunc(makeCopies(), func(c publish.Message) bool { return seen[c.MsgID] })
				}
			}
			msgs = append(msgs, m)
		}
		if b.o.DryRun {
			p.Published += len(msgs) // would be
		} else if len(msgs) > 0 {
			res, err := b.pub.Publish(ctx, msgs)
			if err != nil {
				return fmt.Errorf("%s: publish (the checkpoint stays before this page): %w", k.Event, err)
			}
			o := ingest.Count(res)
			p.Published += o.Accepted
			p.OnStream += o.Duplicates
		}
		for _, m := range msgs {
			seen[m.MsgID] = true
			for _, c := range m.Copies {
				seen[c.MsgID] = true
			}
		}
		at.Cursor = page.Next
		rng.After = at.Cursor
		if err := save(); err != nil {
			return err
		}
		if b.OnPage != nil {
			b.OnPage(*p)
		}
		if page.Done {
			break
		}
	}
	at.Done = true
	return save()
}

// superseded says whether the versions consumer, taking the product
// event n in now on the versions bucket as it stands, would make no copy
// of it (supersede.Decide: the consumer's own rule, which also skips a
// product older than a version known that the bucket has never seen).
func (b *Backfill) superseded(ctx context.Context, n *notification.Notification) (bool, error) {
	decision, err := supersede.Decide(ctx, b.o.Versions, n)
	if err != nil {
		return false, fmt.Errorf("versions bucket: %w", err)
	}
	return decision == supersede.CopySkipped, nil
}

// scanMargin is how long before the range's start a message about a product
// of the range may have been stored (clocks of the catalogue and NATS).
const scanMargin = time.Hour

// scan reads the ids of the messages the stream stored since the range
// began (headers only) and returns them as a set: every message's, or with
// a filter (one interest's subjects) those on the subjects of the filter.
func (b *Backfill) scan(ctx context.Context, filter string) (map[string]bool, error) {
	seen := map[string]bool{}
	name := b.st.ProductStream()
	s, err := b.st.JetStream().Stream(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", name, err)
	}
	var last uint64
	var lastTime time.Time
	if filter == "" {
		info, err := s.Info(ctx)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", name, err)
		}
		if info.State.Msgs == 0 {
			return seen, nil
		}
		last, lastTime = info.State.LastSeq, info.State.LastTime
	} else {
		m, err := s.GetLastMsgForSubject(ctx, filter)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return seen, nil
		}
		if err != nil {
			return nil, fmt.Errorf("stream %s: last of %s: %w", name, filter, err)
		}
		last, lastTime = m.Sequence, m.Time
	}
	if lastTime.Before(b.o.Since.Add(-scanMargin)) {
		return seen, nil
	}
	from := b.o.Since.Add(-scanMargin)
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &from, HeadersOnly: true}
	if filter != "" {
		cfg.FilterSubjects = []string{filter}
	}
	err = topology.ReadTo(ctx, s, cfg, 1000, last,
		func(m jetstream.Msg, _ *jetstream.MsgMetadata) error {
			if id := m.Headers().Get(jetstream.MsgIDHeader); id != "" {
				seen[id] = true
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	return seen, nil
}

// only routes to one interest, as the router evaluates it, at the time
// the event arrived (its PublicationDate, ModificationDate or
// DeletionDate; now when it carries none), which is when live ingest
// evaluated it: a product sensed 40 days before a backfill but 2 days
// before it was published is within a maxSensingAge of 30d.
func only(in *interestfile.Interest, now func() time.Time) ingest.Interests {
	needs := in.Filter.Needs()
	if in.MaxSensingAge > 0 {
		needs.AddContentStart()
	}
	return &oneInterest{in: in, needs: needs, now: now}
}

type oneInterest struct {
	in    *interestfile.Interest
	needs productfilter.Needs
	now   func() time.Time
}

func (o *oneInterest) Match(n *notification.Notification, routes []ingest.Routed) []ingest.Routed {
	p, ok := productfilter.FromNotification(n, &o.needs)
	if !ok {
		return routes
	}
	at := n.EventTime()
	if at.IsZero() {
		at = o.now()
	}
	if ok, why := o.in.Takes(n.Event, &p, at); ok {
		routes = append(routes, ingest.Routed{Name: o.in.Name, AreaUnevaluated: string(why)})
	}
	return routes
}
