// Package drop is the removal for good of stored messages by their
// sequences, as an operator asks it of a stream that keeps what went
// wrong (`receiver quarantine drop`, `fetcher failed drop`): each sequence
// looked up, a missing one reported and not an error, the others removed
// (or, in a dry run, only said), and one summary of it all, the same
// document for both commands. It knows no stream: each store gives how to
// read and remove one of its messages.
package drop

import (
	"context"
	"errors"
)

// Summary is what a drop did.
type Summary struct {
	DryRun   bool   `json:"dryRun"`
	Dropped  int    `json:"dropped"`
	NotFound int    `json:"notFound"`
	Items    []Item `json:"items"`
}

// Item is the fate of one message a drop was asked for.
type Item struct {
	Seq       uint64 `json:"seq"`
	ProductID string `json:"productId,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Result    string `json:"result"` // dropped, would-drop, not-found
}

// Seqs drops the messages seqs: get reads one (its product and reason in
// the Item; an error wrapping notFound when the sequence holds none of
// the store's), remove removes it. A dry run removes nothing. The first
// other error ends the drop, the summary saying what was done before it.
func Seqs(ctx context.Context, seqs []uint64, dryRun bool, notFound error,
	get func(context.Context, uint64) (Item, error), remove func(context.Context, uint64) error) (Summary, error) {
	sum := Summary{DryRun: dryRun, Items: []Item{}}
	for _, seq := range seqs {
		item, err := get(ctx, seq)
		// err first: errors.Is(nil, nil) is true, and a store may have no
		// not-found error (nil).
		if err != nil && errors.Is(err, notFound) {
			sum.NotFound++
			sum.Items = append(sum.Items, Item{Seq: seq, Result: "not-found"})
			continue
		}
		if err != nil {
			return sum, err
		}
		item.Seq, item.Result = seq, "would-drop"
		if !dryRun {
			if err := remove(ctx, seq); err != nil {
				return sum, err
			}
			item.Result = "dropped"
			sum.Dropped++
		}
		sum.Items = append(sum.Items, item)
	}
	return sum, nil
}
