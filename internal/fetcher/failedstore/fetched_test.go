package failedstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/fetcher/failedstore"
)

// TestFetched: the fetched events, read from their subjects and headers,
// picked by time, product type and interest; the failed events of the same
// stream are none of them.
func TestFetched(t *testing.T) {
	w := newWorld(t, jetstream.StreamConfig{})
	ctx := context.Background()
	if l, err := w.store.Fetched(ctx, failedstore.FetchedFilter{}); err != nil || l == nil || len(l) != 0 {
		t.Fatalf("Fetched of none = %#v, %v; want an empty list", l, err)
	}

	// An archive verified by its checksum.
	h := productHeaders("created", "pa", "PA")
	h.Set(event.HeaderObjectURL, "s3://bucket/PA.zip")
	h.Set(event.HeaderObjectSize, "1234")
	h.Set(event.HeaderChecksumPrefix+"md5", "abc")
	h.Set(event.HeaderFetchTook, "2s")
	a := w.publish(t, fetchedPrefix+".created.SENTINEL-2.S2MSI2A", h)
	w.fail(t, failedPrefix+".SENTINEL-2.S2MSI2A", productHeaders("created", "px", "PX"), []byte("{}"), 1, "offline")
	time.Sleep(20 * time.Millisecond)
	between := time.Now()
	time.Sleep(20 * time.Millisecond)
	// Files verified against the manifest, by an interest.
	h = productHeaders("modified", "pb", "PB")
	h.Set(event.HeaderInterest, "alps")
	h.Set(event.HeaderObjectURL, "file:///products/PB.SAFE/")
	h.Set(event.HeaderFetchMode, event.FetchModeFiles)
	h.Set(event.HeaderVerifiedAgainst, "manifest")
	h.Set(event.HeaderFileCount, "3")
	b := w.publish(t, fetchedPrefix+".modified.SENTINEL-2.S2MSI1C", h)
	// Unverified, and already there.
	h = productHeaders("created", "pc", "PC")
	h.Set(event.HeaderUnverified, "no checksum")
	h.Set(event.HeaderObjectUnchanged, "true")
	c := w.publish(t, fetchedPrefix+".created.SENTINEL-2.S2MSI2A", h)
	// Skipped: superseded (FETCH_VERSIONS=latest), nothing stored.
	h = productHeaders("created", "pd", "PD")
	h.Set(event.HeaderSkipped, "superseded by pe (PE)")
	h.Set(event.HeaderSupersededBy, "pe")
	d := w.publish(t, fetchedPrefix+".created.SENTINEL-2.S2MSI1C", h)

	for _, tc := range []struct {
		name   string
		filter failedstore.FetchedFilter
		want   []uint64
	}{
		{"every one", failedstore.FetchedFilter{}, []uint64{a, b, c, d}},
		{"since", failedstore.FetchedFilter{Since: between}, []uint64{b, c, d}},
		{"product type", failedstore.FetchedFilter{ProductType: "S2MSI2A"}, []uint64{a, c}},
		{"interest", failedstore.FetchedFilter{Interest: "alps"}, []uint64{b}},
		{"product type and interest", failedstore.FetchedFilter{ProductType: "S2MSI2A", Interest: "alps"}, []uint64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := w.store.Fetched(ctx, tc.filter)
			if err != nil {
				t.Fatal(err)
			}
			got := []uint64{}
			for _, f := range l {
				got = append(got, f.Seq)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("Fetched(%+v) = %v, want %v", tc.filter, got, tc.want)
			}
		})
	}

	l, err := w.store.Fetched(ctx, failedstore.FetchedFilter{})
	if err != nil || len(l) != 4 {
		t.Fatalf("Fetched = %+v, %v", l, err)
	}
	for i, want := range []failedstore.Fetched{
		{Seq: a, Event: "created", Collection: "SENTINEL-2", ProductType: "S2MSI2A", ProductID: "pa", ProductName: "PA", URL: "s3://bucket/PA.zip",
			Size: 1234, Verified: true, Checksums: map[string]string{"MD5": "abc"}, Took: "2s"},
		{Seq: b, Event: "modified", Collection: "SENTINEL-2", ProductType: "S2MSI1C", ProductID: "pb", ProductName: "PB", Interest: "alps",
			URL: "file:///products/PB.SAFE/", Verified: true, Mode: event.FetchModeFiles, Files: 3},
		{Seq: c, Event: "created", Collection: "SENTINEL-2", ProductType: "S2MSI2A", ProductID: "pc", ProductName: "PC", Unverified: "no checksum", Unchanged: true},
		{Seq: d, Event: "created", Collection: "SENTINEL-2", ProductType: "S2MSI1C", ProductID: "pd", ProductName: "PD", Skipped: "superseded by pe (PE)", SupersededBy: "pe"},
	} {
		got := l[i]
		if got.Time.IsZero() {
			t.Errorf("event %d has no time", i)
		}
		got.Time = time.Time{}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("event %d = %+v\nwant %+v", i, got, want)
		}
	}
}
