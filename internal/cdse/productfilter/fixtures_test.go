package productfilter

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
)

// fixture is the product entity of one notification of
// testdata/notifications, by file name without .json.
type fixture struct {
	name string
	raw  []byte
	p    Product
	n    notification.Notification // as the receiver reads it, with its Entity
	// lean is the same read without its Entity (notification.ParseOptions
	// NoEntity, the receiver without interests).
	lean notification.Notification
}

// fixtures reads every notification of testdata/notifications that
// carries its product (value, or Value in older payloads; an array body's
// first element).
func fixtures(tb testing.TB) []fixture {
	tb.Helper()
	files, err := filepath.Glob("../../../testdata/notifications/*.json")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no fixtures: %v", err)
	}
	var out []fixture
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		if strings.HasPrefix(strings.TrimSpace(string(body)), "[") {
			var arr []json.RawMessage
			if err := json.Unmarshal(body, &arr); err != nil {
				tb.Fatal(err)
			}
			body = arr[0]
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(body, &members); err != nil {
			tb.Fatal(err)
		}
		raw := members["value"]
		if raw == nil {
			raw = members["Value"]
		}
		if raw == nil {
			continue
		}
		p, err := FromEntity(raw)
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		n, err := notification.Decode(body)
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		lean, err := notification.ParseWith(body, notification.ParseOptions{Max: 1, NoEntity: true})
		if err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		out = append(out, fixture{strings.TrimSuffix(filepath.Base(f), ".json"), raw, p, n, lean[0]})
	}
	slices.SortFunc(out, func(a, b fixture) int { return strings.Compare(a.name, b.name) })
	return out
}
