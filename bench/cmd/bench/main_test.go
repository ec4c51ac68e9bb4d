package main

import (
	"context"
	"math"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestVerify: the harness's exactly-once check fails a run that lost an
// acknowledged product, stored one twice, or stored one nobody sent.
func TestVerify(t *testing.T) {
	set := func(ids ...string) map[string]bool {
		m := map[string]bool{}
		for _, id := range ids {
			m[id] = true
		}
		return m
	}
	for _, tc := range []struct {
		name        string
		stored      []string
		acked, sent map[string]bool
		want        string // "" for no error, else a part of it
	}{
		{"exactly once", []string{"a", "b"}, set("a", "b"), set("a", "b", "c"), ""},
		{"acknowledged but lost", []string{"a"}, set("a", "b"), set("a", "b"), "acknowledged b stored 0 times"},
		{"stored twice", []string{"a", "b", "b"}, set("a"), set("a", "b"), "b stored 2 times"},
		{"stored, never sent", []string{"a", "x"}, set("a"), set("a"), "x stored 1 times (sent: false)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.RunJetStream(t)
			js, closeNC := natstest.JetStream(t, srv.ClientURL())
			defer closeNC()
			ctx := context.Background()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "CDSE_PRODUCTS", Subjects: []string{"cdse.>"}}); err != nil {
				t.Fatal(err)
			}
			for _, id := range tc.stored {
				m := &nats.Msg{Subject: "cdse.product.created", Header: nats.Header{"Cdse-Product-Id": []string{id}}, Data: []byte("{}")}
				if _, err := js.PublishMsg(ctx, m); err != nil {
					t.Fatal(err)
				}
			}
			err := verify(ctx, js, tc.acked, tc.sent)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("verify: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("verify: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

func TestCPUTime(t *testing.T) {
	// Burn CPU until the counter (10 ms ticks) has moved by 50 ms; on a
	// loaded machine that takes longer than 50 ms, never this long.
	start, before := time.Now(), cpuTime(os.Getpid())
	used := time.Duration(0)
	for x := 0; used < 50*time.Millisecond; x++ {
		_ = x * x
		if x%100_000 == 0 {
			used = cpuTime(os.Getpid()) - before
			if time.Since(start) > 20*time.Second {
				t.Fatalf("cpuTime moved by %s in 20 s of a busy loop", used)
			}
		}
	}
	// Nor can it move faster than the wall clock times the cores (a wrong
	// tick length would).
	if limit := time.Since(start)*time.Duration(runtime.NumCPU()) + 20*time.Millisecond; used > limit {
		t.Errorf("cpuTime moved by %s, more than %s possible", used, limit)
	}
	if got := cpuTime(-1); got != 0 {
		t.Errorf("cpuTime of no process: %s", got)
	}
}

// TestGeomean: -compare's summary weighs a round that was 10 % faster and
// one 10 % slower as cancelling out, which an arithmetic mean does not.
func TestGeomean(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{2, 8}, 4},
		{[]float64{1.1, 1 / 1.1}, 1},
		{[]float64{0.95}, 0.95},
	} {
		if got := geomean(tc.xs); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("geomean(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if got := geomean(nil); !math.IsNaN(got) {
		t.Errorf("geomean(nil) = %v, want NaN", got)
	}
}
