package catalogclient

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
)

// TestListingWalksTiesLargerThanAPage: for each event's listing, products
// sharing one date — more of them than a page holds — are listed exactly
// once, in order, with nothing but documented forms (the simulator refuses
// the others), across pages that end inside and exactly at a tie's end.
func TestListingWalksTiesLargerThanAPage(t *testing.T) {
	var mu sync.Mutex
	var skips []string
	f := setup(t, cdsesim.Options{}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s := r.URL.Query().Get("$skip"); s != "" {
				mu.Lock()
				skips = append(skips, s)
				mu.Unlock()
			}
			h.ServeHTTP(w, r)
		})
	})
	c := f.clock
	start := c.Now()
	// Before, a tie of 250 (pages of 100: two full pages inside it), 200
	// more (deleted later at one instant: a tie that ends with a page), and
	// after.
	before := f.sim.Generate(cdsesim.Sentinel2, 3)
	c.Add(time.Second)
	tie := f.sim.Generate(cdsesim.Sentinel2, 250)
	c.Add(time.Second)
	exact := f.sim.Generate(cdsesim.Sentinel2, 200)
	c.Add(time.Second)
	after := f.sim.Generate(cdsesim.Sentinel2, 7)
	c.Add(time.Second)
	var deleted []string
	for _, p := range tie[:230] { // one instant: a tie of 230 modifications
		if err := f.sim.ModifyProduct(p.ID); err != nil {
			t.Fatal(err)
		}
	}
	c.Add(time.Second)
	causes := []string{"Reprocessed product", "Automatic eviction", "Duplicated product"}
	for i, p := range exact { // one instant: a tie of 200 deletions, two full pages
		if err := f.sim.DeleteProduct(p.ID, causes[i%len(causes)]); err != nil {
			t.Fatal(err)
		}
		deleted = append(deleted, p.ID)
	}
	var created []string
	for _, ps := range [][]*cdsesim.Product{before, tie, exact, after} {
		for _, p := range ps {
			created = append(created, p.ID)
		}
	}
	live := map[string]bool{}
	for _, id := range created {
		live[id] = true
	}
	for _, id := range deleted {
		delete(live, id)
	}
	l := NewLister(f.client, 100, 1000)
	for _, tt := range []struct {
		ev   event.Kind
		want map[string]bool
	}{
		{event.Created, live},  // deleted products are not in Products
		{event.Modified, live}, // every live product, by ModificationDate: 230 of them at one instant
		{event.Deleted, set(deleted, nil)},
	} {
		t.Run(string(tt.ev), func(t *testing.T) {
			k := KindOf(tt.ev)
			r := Range{Filter: "Collection/Name eq 'SENTINEL-2'", From: start}
			got := map[string]int{}
			var last Item
			for pages := 0; ; pages++ {
				if pages > 50 {
					t.Fatal("the listing does not end")
				}
				page, err := l.Page(context.Background(), k, r, pages == 0)
				if err != nil {
					t.Fatal(err)
				}
				for _, it := range page.Items {
					if it.Date.Before(last.Date) || it.Date.Equal(last.Date) && it.ID <= last.ID {
						t.Fatalf("%s %s listed after %s %s", it.ID, it.Date, last.ID, last.Date)
					}
					last = it
					got[it.ID]++
				}
				if page.Done {
					break
				}
				r.After = page.Next
			}
			for id, n := range got {
				if n != 1 || !tt.want[id] {
					t.Errorf("%s listed %d times (expected: %v)", id, n, tt.want[id])
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("%d listed, want %d", len(got), len(tt.want))
			}
		})
	}
	if len(skips) == 0 {
		t.Error("no tie was walked with $skip: the test proves less than it says")
	}
	t.Logf("$skip values sent: %v", skips)
}

func set(ids, minus []string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	for _, id := range minus {
		delete(m, id)
	}
	return m
}

// TestListingRefusesATieBeyondSkip: a tie of more products than $skip can
// walk stops the listing with ErrTieTooLarge, never a skip or a loop.
func TestListingRefusesATieBeyondSkip(t *testing.T) {
	f := setup(t, cdsesim.Options{}, nil)
	l := NewLister(f.client, 10, 1000)
	at := f.clock.Now().UTC().Truncate(time.Microsecond)
	ids := make([]string, MaxSkip+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
	}
	_, err := l.Page(context.Background(), KindOf(event.Created), Range{From: at, After: Cursor{Date: at, IDs: ids}}, false)
	if err == nil || !strings.Contains(err.Error(), "10 000") {
		t.Fatalf("err = %v", err)
	}
}
