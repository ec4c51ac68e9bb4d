package notification

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
)

// Micro-benchmarks of the hot path, per fixture; run with
// go test ./internal/cdse/notification -run '^$' -bench . -benchmem
func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"created-s1.json", "created-s2.json", "created-s3.json", "created-s5p.json", "modified-s2.json", "deleted-s1.json", "created-short.json"} {
		var buf bytes.Buffer
		if err := json.Compact(&buf, fixtures.Notification(b, name)); err != nil {
			b.Fatal(err)
		}
		body := buf.Bytes()
		// With the entity's offsets (a receiver with interests), and
		// without (ParseOptions.NoEntity: the receiver without).
		for _, o := range []ParseOptions{{Max: 100}, {Max: 100, NoEntity: true}} {
			sub := name
			if o.NoEntity {
				sub += "/no-entity"
			}
			b.Run(sub, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := ParseWith(body, o); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkRouting(b *testing.B) {
	ns, err := Parse(fixtures.Notification(b, "modified-s2.json"), 1)
	if err != nil {
		b.Fatal(err)
	}
	n := &ns[0]
	b.Run("DedupeKey", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = n.DedupeKey()
		}
	})
	b.Run("Subject", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = n.Subject("cdse.product")
		}
	})
}
