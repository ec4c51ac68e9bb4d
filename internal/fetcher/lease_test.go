package fetcher

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestLeases: one replica at a time holds a key's lease; another waits
// for its release; a renewed lease outlives the bucket's TTL; a lease
// not renewed (its holder frozen or killed) expires and is taken, and
// its old holder's renewal then cuts that download with errLeaseLost.
func TestLeases(t *testing.T) {
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ttl = time.Second
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: LeaseBucket("CDSE_FETCHED"), TTL: ttl, History: 1})
	if err != nil {
		t.Fatal(err)
	}
	log, _ := test.NewNullLogger()
	a, b := &leases{kv: kv, owner: "a"}, &leases{kv: kv, owner: "b"}
	const key = "products/S2B_MSIL1C_20261127T174525_N0511_R133_T33NJM_20261127T193425.SAFE.zip"

	// Held and renewed past the TTL: b waits the whole time.
	la, err := a.acquire(ctx, log, key, 1)
	if err != nil {
		t.Fatal(err)
	}
	renewing, stopRenew := context.WithCancelCause(ctx)
	la.keep(renewing, ttl, stopRenew)
	got := make(chan *lease, 1)
	go func() {
		lb, err := b.acquire(ctx, log, key, 2)
		if err != nil {
			t.Error(err)
		}
		got <- lb
	}()
	select {
	case <-got:
		t.Fatal("b took the lease a holds and renews")
	case <-time.After(2 * ttl):
	}
	if cause := context.Cause(renewing); cause != nil {
		t.Fatalf("a's renewal stopped: %v", cause)
	}
	la.release(ctx)
	var lb *lease
	select {
	case lb = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("b did not take the lease a released")
	}
	lb.release(ctx)

	// Not renewed: it expires, c takes it, and a's late renewal is cut.
	la, err = a.acquire(ctx, log, key, 3)
	if err != nil {
		t.Fatal(err)
	}
	c := &leases{kv: kv, owner: "c"}
	cctx, cancelC := context.WithTimeout(ctx, 4*ttl)
	defer cancelC()
	lc, err := c.acquire(cctx, logrus.New(), key, 4)
	if err != nil {
		t.Fatalf("the lease no one renewed did not expire: %v", err)
	}
	defer lc.release(ctx)
	late, cut := context.WithCancelCause(ctx)
	go la.renew(late, 4*ttl, cut) // a renewal within its own time bound, so only the lost revision can cut it
	select {
	case <-late.Done():
		if !errors.Is(context.Cause(late), errLeaseLost) {
			t.Errorf("a's renewal ended with %v, want errLeaseLost", context.Cause(late))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a's renewal of a lease c holds did not cut its download")
	}
}
