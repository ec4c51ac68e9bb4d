package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
)

// fetchedEntry is what `fetched list -o json` prints of one event.
type fetchedEntry struct {
	Seq                                        uint64
	Event, ProductType, ProductID, ProductName string
	Interest, URL                              string
	Size                                       int64
	Verified                                   bool
	Checksums                                  map[string]string
}

// productType is p's productType attribute.
func productType(p *cdsesim.Product) string {
	for _, a := range p.Attributes {
		if a.Name == "productType" {
			return fmt.Sprint(a.Value)
		}
	}
	return ""
}

// TestFetchedList: `fetcher fetched list` reads the fetched events: each
// product, where it is stored, its size, verified or not; --since,
// --product-type and --interest select; -o json prints them whole.
func TestFetchedList(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	s1 := w.sim.Generate(cdsesim.Sentinel1, 1)[0]
	s2 := w.sim.Generate(cdsesim.Sentinel2, 1)[0]
	dir := t.TempDir()
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir})
	w.notify(t, s1, s2)
	w.events(t, 2)
	// A fetched event of a fetcher that consumes an interest's subjects
	// carries the interest (the product message's header, copied).
	ev := nats.NewMsg("cdse.fetched.created.SENTINEL-2." + productType(s2))
	for k, v := range map[string]string{"Cdse-Product-Id": "by-interest", "Cdse-Product-Name": "BY_INTEREST.SAFE", "Cdse-Interest": "s2-clear",
		"Cdse-Object-Url": "file://" + dir + "/BY_INTEREST.SAFE.zip", "Cdse-Object-Size": "7", "Cdse-Unverified": "no checksum"} {
		ev.Header.Set(k, v)
	}
	ev.Data = []byte("{}")
	if _, err := w.js.PublishMsg(context.Background(), ev); err != nil {
		t.Fatal(err)
	}

	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	list := func(t *testing.T, args ...string) []fetchedEntry {
		t.Helper()
		code, out, errOut := bins.Run(t, bin, map[string]string{"NATS_URL": w.receiver.NATSURL}, append([]string{"fetched", "list", "-o", "json"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d: %s%s", code, out, errOut)
		}
		var l []fetchedEntry
		if err := json.Unmarshal([]byte(out), &l); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return l
	}
	tests := []struct {
		name string
		args []string
		want []string // product ids
	}{
		{name: "all", want: []string{s1.ID, s2.ID, "by-interest"}},
		{name: "since an hour", args: []string{"--since", "1h"}, want: []string{s1.ID, s2.ID, "by-interest"}},
		{name: "since tomorrow", args: []string{"--since", time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02")}, want: []string{}},
		{name: "product type", args: []string{"--product-type", productType(s1)}, want: []string{s1.ID}},
		{name: "interest", args: []string{"--interest", "s2-clear"}, want: []string{"by-interest"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := list(t, tt.args...)
			ids := []string{}
			for _, e := range l {
				ids = append(ids, e.ProductID)
			}
			// In the fetched stream's order, which is the order the
			// downloads ended in, not the notifications': the ids are
			// compared as a set, the order by sequence.
			for i := 1; i < len(l); i++ {
				if l[i].Seq <= l[i-1].Seq {
					t.Errorf("not in stream order: %+v", l)
				}
			}
			got, want := slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Fatalf("listed %v, want %v: %+v", ids, tt.want, l)
			}
			for _, e := range l {
				stored := e.ProductID != "by-interest"
				if stored && (!e.Verified || e.Checksums["MD5"] == "" || e.Size <= 0 || e.Event != "created" ||
					!regexp.MustCompile(`^file://`+regexp.QuoteMeta(dir)+`/.*/`+regexp.QuoteMeta(e.ProductName)+`\.zip$`).MatchString(e.URL)) {
					t.Errorf("entry %+v", e)
				}
				if !stored && (e.Verified || e.Interest != "s2-clear" || e.Size != 7) {
					t.Errorf("entry %+v", e)
				}
			}
		})
	}

	// The table: one line a product, its size and verification, where.
	code, out, errOut := bins.Run(t, bin, map[string]string{"NATS_URL": w.receiver.NATSURL}, "fetched", "list", "--product-type", productType(s1))
	if code != 0 || !regexp.MustCompile(`(?m)^SEQ\s+TIME\s+EVENT\s+TYPE\s+PRODUCT\s+SIZE\s+VERIFIED\s+URL\n\d+\s+\S+\s+created\s+`+productType(s1)+`\s+`+s1.Name+`\s+[\d.]+ \S+\s+true\s+file://\S+\.zip\n$`).MatchString(out) {
		t.Errorf("table: exit %d:\n%s%s", code, out, errOut)
	}
	// A --since that is neither a time nor an age is a usage error.
	if code, _, errOut := bins.Run(t, bin, map[string]string{"NATS_URL": w.receiver.NATSURL}, "fetched", "list", "--since", "yesterday"); code != 2 {
		t.Errorf("--since yesterday: exit %d: %s", code, errOut)
	}
}
