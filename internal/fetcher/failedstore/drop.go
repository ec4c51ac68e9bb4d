package failedstore

import (
	"context"
	"errors"
)

// DropSummary is what a drop did.
type DropSummary struct {
	DryRun   bool       `json:"dryRun"`
	Dropped  int        `json:"dropped"`
	NotFound int        `json:"notFound"`
	Items    []DropItem `json:"items"`
}

// DropItem is the fate of one failed event a drop was asked for.
type DropItem struct {
	Seq       uint64 `json:"seq"`
	ProductID string `json:"productId,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Result    string `json:"result"` // dropped, would-drop, not-found
}

// Drop removes the failed events seqs for good: those that will never be
// fetched (a product withdrawn, one fetched by hand with fetcher get). A
// sequence that is not a failed event is an item "not-found"; the others
// are dropped all the same. A dry run removes nothing, and checks first
// that the login may remove (MayRemove): a would-drop means the drop would
// succeed.
func (r *Store) Drop(ctx context.Context, seqs []uint64, dryRun bool) (DropSummary, error) {
	sum := DropSummary{DryRun: dryRun, Items: []DropItem{}}
	if dryRun {
		// A would-drop must mean the drop would succeed: the login's
		// right too, which a read never shows.
		if err := r.MayRemove(ctx); err != nil {
			return sum, err
		}
	}
	for _, seq := range seqs {
		f, err := r.Get(ctx, seq)
		if errors.Is(err, ErrNotFound) {
			sum.NotFound++
			sum.Items = append(sum.Items, DropItem{Seq: seq, Result: "not-found"})
			continue
		}
		if err != nil {
			return sum, err
		}
		item := DropItem{Seq: seq, ProductID: f.ProductID, Reason: f.Reason, Result: "would-drop"}
		if !dryRun {
			if err := r.Remove(ctx, seq); err != nil {
				return sum, err
			}
			item.Result = "dropped"
			sum.Dropped++
		}
		sum.Items = append(sum.Items, item)
	}
	return sum, nil
}
