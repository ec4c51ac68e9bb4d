package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/stream/publish"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
)

// BenchmarkHandler runs the whole request path in-process (no HTTP
// connection) against a real JetStream, to see the allocations per request:
// go test ./internal/ingest/webhook -run '^$' -bench Handler -benchmem
func BenchmarkHandler(b *testing.B) {
	env := publishtest.New(b, nil)
	pub, err := publish.NewPublisher(env.Conn, publish.PublisherOptions{Stream: publishtest.Stream, Timeout: 5 * time.Second, RecentIDs: 1 << 20, RecentTTL: time.Hour}, prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	v, _ := auth.NewBasic([]auth.Credential{{User: user, Password: password}}, "")
	log := logrus.New()
	log.SetOutput(bytes.NewBuffer(nil))
	log.Out = discard{}
	log.SetFormatter(&logrus.JSONFormatter{})
	e, err := New(Options{Path: "/notifications", MaxBody: 1 << 20, MaxNotifications: 100, Route: ingest.Route{Prefix: "cdse.product", CloudEvents: true, CatalogueURL: "https://catalogue.dataspace.copernicus.eu/odata/v1"}}, pub, v, prometheus.NewRegistry(), log)
	if err != nil {
		b.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, fixtures.Notification(b, "created-s2.json")); err != nil {
		b.Fatal(err)
	}
	template := compact.Bytes()
	for _, dup := range []bool{false, true} {
		b.Run(map[bool]string{false: "unique", true: "duplicate"}[dup], func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(template)))
			cpu0 := processCPU()
			defer func() {
				// The process's CPU time per request (the handler and the
				// in-process JetStream that stores it): on 2 shared cores
				// less noisy than the wall clock, which waits for others.
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			}()
			for b.Loop() {
				id := "000000000000"
				if !dup {
					// Never reset, so that -count repeats are unique too.
					id = fmt.Sprintf("%012x", benchSeq.Add(1))
				}
				body := bytes.Replace(template, []byte("0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f"), []byte("0f6b4c1e-8d2a-4f3b-9c5e-"+id), 1)
				req := httptest.NewRequest(http.MethodPost, "/notifications", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth(user, password)
				rec := httptest.NewRecorder()
				e.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

var benchSeq atomic.Uint64

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// processCPU is this process's user and system CPU time so far, in ns.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
