package event_test

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/cdse-jetstream/receiver/event"
)

// TestSubjectCovers: the one subject matcher agrees with nats-server's
// own (SubjectMatchesFilter, JetStream's subset rule) on every case,
// wildcards on either side included.
func TestSubjectCovers(t *testing.T) {
	tests := []struct {
		pattern, filter string
		want            bool
	}{
		{"cdse.product.>", "cdse.product.created.S2.X", true},
		{"cdse.product.>", "cdse.product", false},
		{"cdse.product.>", "cdse.product.>", true},
		{"cdse.product.>", "cdse.product.*", true},
		{"cdse.product.>", "cdse.*.created", false},
		{"cdse.product.*", "cdse.product.created", true},
		{"cdse.product.*", "cdse.product.created.S2", false},
		{"cdse.product.*", "cdse.product.>", false},
		{"cdse.product.*", "cdse.product.*", true},
		{"cdse.*.created", "cdse.product.created", true},
		{"cdse.*.created", "cdse.*.created", true},
		{"cdse.*.created", "cdse.>", false},
		{"cdse.product.created", "cdse.product.created", true},
		{"cdse.product.created", "cdse.product.*", false},
		{"cdse.product.created", "cdse.product.modified", false},
		{">", "a", true},
		{">", ">", true},
		{">", "a.*.c", true},
		{"*", "a.b", false},
		{"*.>", "a.b", true},
		{"*.>", "a", false},
		{"cdse.fetchretry.>", "cdse.fetchretry.CDSE_PRODUCTS.fetcher.>", true},
		{"cdse.fetchretry.CDSE_PRODUCTS.>", "cdse.fetchretry.STAGING.fetcher.>", false},
		{"a.b", "a.b.c", false},
		{"a.b.c", "a.b", false},
	}
	for _, tt := range tests {
		got := event.SubjectCovers(tt.pattern, tt.filter)
		if got != tt.want {
			t.Errorf("SubjectCovers(%q, %q) = %v, want %v", tt.pattern, tt.filter, got, tt.want)
		}
		if srv := server.SubjectMatchesFilter(tt.filter, tt.pattern); srv != got {
			t.Errorf("SubjectCovers(%q, %q) = %v, nats-server says %v", tt.pattern, tt.filter, got, srv)
		}
	}
}
