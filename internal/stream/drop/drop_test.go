package drop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

var errNotFound = errors.New("not found")

func TestSeqs(t *testing.T) {
	broken := errors.New("stream unavailable")
	for _, tc := range []struct {
		name    string
		seqs    []uint64
		dryRun  bool
		results []string // each item's result, in order
		left    []uint64 // what the store holds after
		err     error
	}{
		{"drops, missing ones said", []uint64{1, 9, 3}, false, []string{"dropped", "not-found", "dropped"}, []uint64{2}, nil},
		{"dry run removes nothing", []uint64{1, 9}, true, []string{"would-drop", "not-found"}, []uint64{1, 2, 3}, nil},
		{"nothing asked", nil, false, []string{}, []uint64{1, 2, 3}, nil},
		{"an error ends it, what was done said", []uint64{1, 7, 2}, false, []string{"dropped"}, []uint64{2, 3}, broken},
	} {
		t.Run(tc.name, func(t *testing.T) {
			held := map[uint64]bool{1: true, 2: true, 3: true}
			get := func(_ context.Context, seq uint64) (Item, error) {
				switch {
				case seq == 7:
					return Item{}, broken
				case !held[seq]:
					return Item{}, fmt.Errorf("seq %d: %w", seq, errNotFound)
				}
				return Item{ProductID: fmt.Sprint("p", seq), Reason: "invalid"}, nil
			}
			remove := func(_ context.Context, seq uint64) error { delete(held, seq); return nil }
			sum, err := Seqs(context.Background(), tc.seqs, tc.dryRun, errNotFound, get, remove)
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			results := []string{}
			for _, it := range sum.Items {
				results = append(results, it.Result)
				if it.Result != "not-found" && (it.ProductID != fmt.Sprint("p", it.Seq) || it.Reason != "invalid") {
					t.Errorf("item %+v lost what the store said of it", it)
				}
			}
			if !slices.Equal(results, tc.results) || sum.DryRun != tc.dryRun {
				t.Errorf("summary %+v, want results %v", sum, tc.results)
			}
			var left []uint64
			for seq := range held {
				left = append(left, seq)
			}
			slices.Sort(left)
			if !slices.Equal(left, tc.left) {
				t.Errorf("store holds %v, want %v", left, tc.left)
			}
		})
	}
}

// TestSeqsWithoutNotFound: a store that has no not-found error (nil)
// drops what it finds: a sequence read without error is not taken for a
// missing one (errors.Is(nil, nil) is true).
func TestSeqsWithoutNotFound(t *testing.T) {
	removed := 0
	get := func(context.Context, uint64) (Item, error) { return Item{ProductID: "p"}, nil }
	remove := func(context.Context, uint64) error { removed++; return nil }
	sum, err := Seqs(context.Background(), []uint64{1, 2}, false, nil, get, remove)
	if err != nil || sum.Dropped != 2 || sum.NotFound != 0 || removed != 2 {
		t.Errorf("summary %+v, %d removed, %v; want both dropped", sum, removed, err)
	}
}
