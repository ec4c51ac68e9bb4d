package main

import (
	"strings"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/ingest/backfill"
)

func TestProgressLine(t *testing.T) {
	began := map[string]time.Time{"created": time.Now().Add(-2 * time.Second)}
	got := progressLine(backfill.Progress{Event: "created", Listed: 1200, Total: 3000}, began)
	for _, want := range []string{"created", "1200/3000", "40%", "/s", "ETA"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress line %q lacks %q", got, want)
		}
	}
	if got := progressLine(backfill.Progress{Event: "deleted", Listed: 7, Total: -1}, began); !strings.Contains(got, "7 listed") {
		t.Errorf("progress line without a total: %q", got)
	}
}
