package quarantine

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/stream/drop"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
)

// HeaderReplayed marks a message published by a replay; its value is the
// body's sequence in the quarantine.
const HeaderReplayed = "Cdse-Replayed"

// ReplayOptions say how a replay validates and shapes what it publishes:
// as the receiver does, with its route and limits.
type ReplayOptions struct {
	Route            ingest.Route
	MaxBody          int64
	MaxNotifications int
	DryRun           bool
	// Seqs, when given, are the bodies to replay (by their sequence in
	// the quarantine, as list shows it); none replays every body.
	Seqs []uint64
}

// ReplaySummary is what a replay did.
type ReplaySummary struct {
	DryRun       bool         `json:"dryRun"`
	Checked      int          `json:"checked"`
	Replayed     int          `json:"replayed"`   // bodies that pass now (removed from the quarantine unless dry)
	Stored       int          `json:"stored"`     // notifications newly stored
	Duplicates   int          `json:"duplicates"` // already on the stream (another source brought them)
	StillRefused int          `json:"stillRefused"`
	NotFound     int          `json:"notFound,omitempty"` // of the sequences asked for
	Items        []ReplayItem `json:"items"`
}

// ReplayItem is the fate of one quarantined body.
type ReplayItem struct {
	Seq       uint64 `json:"seq"`
	ProductID string `json:"productId,omitempty"`
	Result    string `json:"result"` // replayed, would-replay, refused, not-found
	Detail    string `json:"detail,omitempty"`
}

// Replay validates every quarantined body (or those of o.Seqs) with this
// version's validator and publishes those that pass, as their source would
// have: same subject, headers (plus Cdse-Replayed) and dedupe key, so a
// product that reached the stream meanwhile (through the reconciler, say)
// is a duplicate, not a second message. A body is removed from the
// quarantine only after its PubAck. Bodies are read one at a time (Each).
// A sequence of o.Seqs not in the quarantine is an item "not-found" and
// sum.NotFound counts it; the others are replayed all the same.
func (r *Reader) Replay(ctx context.Context, pub publish.BatchPublisher, o ReplayOptions) (ReplaySummary, error) {
	sum := ReplaySummary{DryRun: o.DryRun, Items: []ReplayItem{}}
	one := func(s Stored) error { return r.replayOne(ctx, pub, o, s, &sum) }
	if len(o.Seqs) == 0 {
		return sum, r.Each(ctx, one)
	}
	for _, seq := range o.Seqs {
		s, err := r.Get(ctx, seq)
		if errors.Is(err, ErrNotFound) {
			sum.NotFound++
			sum.Items = append(sum.Items, ReplayItem{Seq: seq, Result: "not-found", Detail: "not in the quarantine (see quarantine list)"})
			continue
		}
		if err != nil {
			return sum, err
		}
		if err := one(s); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

func (r *Reader) replayOne(ctx context.Context, pub publish.BatchPublisher, o ReplayOptions, s Stored, sum *ReplaySummary) error {
	sum.Checked++
	item := ReplayItem{Seq: s.Seq, ProductID: s.ProductID}
	body, err := s.Decoded(o.MaxBody)
	var ns []notification.Notification
	if err == nil {
		ns, err = notification.Parse(body, o.MaxNotifications)
	}
	if err != nil {
		sum.StillRefused++
		item.Result, item.Detail = "refused", err.Error()
		sum.Items = append(sum.Items, item)
		return nil
	}
	sum.Replayed++
	if o.DryRun {
		item.Result, item.Detail = "would-replay", fmt.Sprintf("%d notification(s)", len(ns))
		sum.Items = append(sum.Items, item)
		return nil
	}
	source := s.Source
	if source == "" {
		source = ingest.SourcePush
	}
	msgs := ingest.Messages(ns, &o.Route, source)
	for i := range msgs {
		msgs[i].MessageHeader()[HeaderReplayed] = []string{strconv.FormatUint(s.Seq, 10)}
	}
	res, err := pub.Publish(ctx, msgs)
	if err != nil {
		return fmt.Errorf("replay quarantined body %d (left in the quarantine): %w", s.Seq, err)
	}
	c := ingest.Count(res)
	sum.Stored, sum.Duplicates = sum.Stored+c.Accepted, sum.Duplicates+c.Duplicates
	if err := r.Remove(ctx, s.Seq); err != nil {
		return fmt.Errorf("replayed body %d is stored, but %w; a second replay finds it a duplicate", s.Seq, err)
	}
	item.Result, item.Detail = "replayed", fmt.Sprintf("%d stored, %d duplicate", c.Accepted, c.Duplicates)
	sum.Items = append(sum.Items, item)
	return nil
}

// DropSummary is what a drop did: the document of `receiver quarantine
// drop`, the same as `fetcher failed drop`'s (internal/stream/drop).
type DropSummary = drop.Summary

// DropItem is the fate of one body a drop was asked for.
type DropItem = drop.Item

// Drop removes the bodies seqs from the quarantine for good: those that
// will never be valid (a test sent by hand, a product withdrawn), which
// would otherwise stay until QUARANTINE_MAX_AGE and be warned about. A
// sequence not in the quarantine is an item "not-found"; the others are
// dropped all the same.
func (r *Reader) Drop(ctx context.Context, seqs []uint64, dryRun bool) (DropSummary, error) {
	return drop.Seqs(ctx, seqs, dryRun, ErrNotFound, func(ctx context.Context, seq uint64) (DropItem, error) {
		s, err := r.Get(ctx, seq)
		if err != nil {
			return DropItem{}, err
		}
		return DropItem{ProductID: s.ProductID, Reason: s.Reason}, nil
	}, r.Remove)
}
