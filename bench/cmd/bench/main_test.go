package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/natstest"
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
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
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
			err = verify(ctx, js, tc.acked, tc.sent)
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
	before := cpuTime(os.Getpid())
	// Burn at least 100 ms of CPU; the counter moves in 10 ms ticks.
	for start, x := time.Now(), 0; time.Since(start) < 100*time.Millisecond; x++ {
		_ = x * x
	}
	if used := cpuTime(os.Getpid()) - before; used < 50*time.Millisecond || used > 10*time.Second {
		t.Errorf("cpuTime moved by %s over a 100 ms busy loop", used)
	}
	if got := cpuTime(-1); got != 0 {
		t.Errorf("cpuTime of no process: %s", got)
	}
}
