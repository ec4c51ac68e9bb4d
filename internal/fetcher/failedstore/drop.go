package failedstore

import (
	"context"

	"github.com/cdse-jetstream/receiver/internal/stream/drop"
)

// DropSummary is what a drop did: the document of `fetcher failed drop`,
// the same as `receiver quarantine drop`'s (internal/stream/drop).
type DropSummary = drop.Summary

// DropItem is the fate of one failed event a drop was asked for.
type DropItem = drop.Item

// Drop removes the failed events seqs for good: those that will never be
// fetched (a product withdrawn, one fetched by hand with fetcher get). A
// sequence that is not a failed event is an item "not-found"; the others
// are dropped all the same. A dry run removes nothing, and checks first
// that the login may remove (MayRemove): a would-drop means the drop would
// succeed.
func (r *Store) Drop(ctx context.Context, seqs []uint64, dryRun bool) (DropSummary, error) {
	if dryRun {
		// A would-drop must mean the drop would succeed: the login's
		// right too, which a read never shows.
		if err := r.MayRemove(ctx); err != nil {
			return DropSummary{DryRun: true, Items: []DropItem{}}, err
		}
	}
	return drop.Seqs(ctx, seqs, dryRun, ErrNotFound, func(ctx context.Context, seq uint64) (DropItem, error) {
		f, err := r.Get(ctx, seq)
		if err != nil {
			return DropItem{}, err
		}
		return DropItem{ProductID: f.ProductID, Reason: f.Reason}, nil
	}, r.Remove)
}
