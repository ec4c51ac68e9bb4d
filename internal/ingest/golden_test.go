//go:build !benchbaseheaders

package ingest

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

var update = flag.Bool("update", false, "rewrite testdata/messages.golden.json from what Messages builds now")

// TestMessagesGolden holds every message Messages builds, for every fixture
// and a few routes, product message and interest copies alike, to the
// subjects, ids and header bytes recorded in testdata/messages.golden.json:
// what consumers get must not change when the way it is built does.
func TestMessagesGolden(t *testing.T) {
	colls, err := stac.ParseCollections(stac.DefaultCollections)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := event.ParseTemplate("event.platform.tileId.relativeOrbit", "team.products")
	if err != nil {
		t.Fatal(err)
	}
	// One of them with its area unevaluated, so that every copy header shows.
	interests := routeAll{{Name: "s2-alps"}, {Name: "iberia", AreaUnevaluated: "a coordinate out of range"}}
	routes := []struct {
		name, source string
		route        Route
	}{
		{"defaults", SourcePush, Route{Prefix: event.DefaultPrefix, InterestPrefix: event.DefaultInterestPrefix, Interests: interests}},
		{"everything", SourceReconcile, Route{Prefix: "team.products", Template: tmpl, CloudEvents: true,
			CatalogueURL: "https://catalogue.dataspace.copernicus.eu/odata/v1/", StacURL: "https://stac.dataspace.copernicus.eu/v1",
			StacCollections: colls, Interests: interests, InterestPrefix: "team.feeds"}},
		{"no interests", SourcePull, Route{Prefix: event.DefaultPrefix, CloudEvents: true, CatalogueURL: "https://catalogue.example/odata/v1"}},
	}
	// Header is as nats.go writes it on the wire (http.Header.Write:
	// sorted by name), a line each.
	type stored struct {
		Subject, MsgID string
		Header         []string
		Copies         []stored `json:",omitempty"`
	}
	all := fixtures.All(t)
	names := slices.Sorted(maps.Keys(all))
	got := map[string][]stored{}
	for _, rt := range routes {
		for _, name := range names {
			ns, err := notification.Parse(all[name], 1000)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for _, m := range Messages(ns, &rt.route, rt.source) {
				// In Publish's order: the message's headers, then its copies.
				s := stored{Subject: m.Subject, MsgID: m.MsgID, Header: wire(t, m.MessageHeader())}
				if m.MakeCopies != nil {
					for _, c := range m.MakeCopies() {
						s.Copies = append(s.Copies, stored{Subject: c.Subject, MsgID: c.MsgID, Header: wire(t, c.MessageHeader())})
					}
				}
				got[rt.name+"/"+name] = append(got[rt.name+"/"+name], s)
			}
		}
	}
	b, err := json.MarshalIndent(got, "", "\t")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	path := filepath.Join("testdata", "messages.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestMessagesGolden -update writes it)", err)
	}
	if !bytes.Equal(b, want) {
		var w map[string][]stored
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		for k, ms := range got {
			if g, _ := json.Marshal(ms); !bytes.Equal(g, mustMarshal(t, w[k])) {
				t.Errorf("%s:\n got %s\nwant %s", k, g, mustMarshal(t, w[k]))
			}
		}
		if len(w) != len(got) {
			t.Errorf("%d cases, the golden file has %d", len(got), len(w))
		}
	}
}

// wire is h as nats.go encodes a message's headers (after the NATS/1.0
// line), one string a header line.
func wire(t *testing.T, h map[string][]string) []string {
	t.Helper()
	var b strings.Builder
	if err := http.Header(h).Write(&b); err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(b.String(), "\r\n"), "\r\n")
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
