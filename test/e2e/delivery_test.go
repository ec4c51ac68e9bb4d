package e2e

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

// TestDeliveryMeasuredAsTheCatalogueBehaves: the simulator is told to push
// every notification 1.5 s after the event and to lose a quarter of them;
// the receiver's delivery metrics say so. Every pushed product's delay is
// at least 1.5 s and under 5 s (the histogram's buckets around it), and the
// share the reconciler brought — what PUSH missed — is exactly the share
// the simulator lost, close to the quarter it was told.
func TestDeliveryMeasuredAsTheCatalogueBehaves(t *testing.T) {
	const (
		n        = 120
		delay    = 1500 * time.Millisecond
		dropRate = 0.25
	)
	sim := cdsesim.New(cdsesim.Options{Users: map[string]cdsesim.User{"op@example.org": {Password: "account-pw"}},
		PushBackoff: 10 * time.Millisecond, PushDelay: delay, PushDropRate: dropRate, Seed: 7})
	w := newSimWith(t, sim)
	nats := natstest.RunJetStream(t)
	push := receivertest.Start(t, func(c *config.Config) { c.NATSURL = nats.ClientURL() })
	w.register(t, "create", "--endpoint", push.Webhook, "--insecure-endpoint", "--filter", "Collection/Name eq 'SENTINEL-2'")
	for range n / 4 {
		sim.Generate(cdsesim.Sentinel2, 4)
	}
	sim.WaitPushes()
	lost := int(sim.Stats().PushLost)
	// The reconciler's first pass, at the start of a second replica on the
	// same NATS, brings what PUSH lost.
	rec := receivertest.Start(t, func(c *config.Config) {
		c.NATSURL, c.Webhook = nats.ClientURL(), false
		w.login(c)
		c.ReconcileInterval, c.ReconcileLookback, c.ReconcileEvents = time.Hour, time.Hour, "created"
		c.ReconcileFilter = "Collection/Name eq 'SENTINEL-2'"
	})
	js, closeNC := natstest.JetStream(t, nats.ClientURL())
	defer closeNC()
	if err := natstest.WaitStreamCount(t, js, "CDSE_PRODUCTS", n, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	bucket := func(r *receivertest.Receiver, source, le string) int {
		t.Helper()
		v, err := strconv.ParseFloat(scrape.Value(t, r.Admin, `cdse_receiver_delivery_delay_seconds_bucket{event="created",source="`+source+`",le="`+le+`"}`), 64)
		if err != nil {
			t.Fatal(err)
		}
		return int(v)
	}
	pushed, under1, under5 := bucket(push, "push", "+Inf"), bucket(push, "push", "1"), bucket(push, "push", "5")
	recovered := bucket(rec, "reconcile", "+Inf")
	share := float64(recovered) / float64(pushed+recovered)
	t.Logf("simulator: %d of %d lost (told %.2f); receivers: %d pushed (%d under 1 s, %d under 5 s), %d recovered: missed by PUSH %.3f", lost, n, dropRate, pushed, under1, under5, recovered, share)
	if pushed != n-lost || recovered != lost {
		t.Errorf("pushed %d and recovered %d, want %d and %d", pushed, recovered, n-lost, lost)
	}
	if under1 != 0 || under5 != pushed {
		t.Errorf("push delays: %d under 1 s, %d under 5 s of %d; the simulator pushed each %s after the event", under1, under5, pushed, delay)
	}
	if math.Abs(share-dropRate) > 0.1 {
		t.Errorf("missed by PUSH %.3f, the simulator was told %.2f", share, dropRate)
	}
}
