package ingest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/cdse/stac"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

// FuzzHeaders: whatever notification passes validation, every header made
// of it, the composed ones included, is a safe, non-empty value. The seed
// corpus runs with every `go test`; fuzz longer with
//
//	go test ./internal/ingest -run '^$' -fuzz FuzzHeaders -fuzztime 5m
func FuzzHeaders(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(fixtures.Dir(), "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	colls, err := stac.ParseCollections(stac.DefaultCollections)
	if err != nil {
		f.Fatal(err)
	}
	r := &Route{CloudEvents: true, CatalogueURL: "https://catalogue.example/odata/v1",
		StacURL: "https://stac.example/v1", StacCollections: colls}
	f.Fuzz(func(t *testing.T, body []byte) {
		ns, err := notification.Parse(body, 10)
		if err != nil {
			return
		}
		for i := range ns {
			n := &ns[i]
			for k, vs := range buildHeaders(n, n.DedupeKey(), SourcePush, r, true) {
				for _, v := range vs {
					if strings.ContainsAny(v, "\r\n\x00") || v == "" {
						t.Fatalf("header %s has an unsafe value %q", k, v)
					}
				}
			}
		}
	})
}
