package embedded

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// TestFetcherLogin: with NATS_EMBEDDED_FETCHER_USER the fetcher logs in to
// the embedded server as itself: it creates and updates its own stream
// (CDSE_FETCHED on cdse.fetched.> and cdse.fetchfailed.>), publishes there
// and consumes the product stream with its durable (the one consumers are
// denied, fetcherDurable: created, pulled from, acknowledged); it cannot
// publish into the receiver's streams, create another stream, or purge,
// change or delete the receiver's. Without the setting, no such login
// exists (the fetcher then needs an external NATS, as before). It cannot
// take the receiver's own durable either.
func TestFetcherLogin(t *testing.T) {
	login := []nats.Option{nats.UserInfo("fetcher", "fetcher-pw")}
	f := startPermissionsFixture(t, Options{ConsumerUser: "reader", ConsumerPassword: "reader-pw", FetcherUser: "fetcher", FetcherPassword: "fetcher-pw"})
	nc, err := nats.Connect(f.srv.ClientURL(), login...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cfg := jetstream.StreamConfig{Name: FetcherStream, Subjects: []string{"cdse.fetched.>", "cdse.fetchfailed.>"}, Storage: jetstream.FileStorage}
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		t.Fatalf("the fetcher creates its stream: %v", err)
	}
	cfg.Duplicates = time.Hour
	if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
		t.Fatalf("the fetcher updates its stream: %v", err)
	}
	if _, err := js.Publish(ctx, "cdse.fetched.created.SENTINEL-2.S2MSI2A", []byte(`{}`)); err != nil {
		t.Fatalf("the fetcher publishes a fetched event: %v", err)
	}
	if _, err := js.Publish(ctx, "cdse.fetchfailed.SENTINEL-2.S2MSI2A", []byte(`{}`)); err != nil {
		t.Fatalf("the fetcher publishes a failed fetch: %v", err)
	}
	// fetcher failed drop and retry: a failed event removed from its
	// stream, and a retry on the retry subjects (the product stream
	// takes them when the receiver declares it; here a core publish,
	// which the permissions decide).
	fs, err := js.Stream(ctx, FetcherStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.DeleteMsg(ctx, 2); err != nil {
		t.Fatalf("the fetcher deletes a failed event: %v", err)
	}
	if err := nc.Publish(topology.RetryPrefix+".fetcher.SENTINEL-2.S2MSI2A", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil || nc.LastError() != nil {
		t.Fatalf("the fetcher publishes a retry: %v %v", err, nc.LastError())
	}
	// Its lease bucket: created, updated, a lease taken, renewed and
	// released.
	kvc := jetstream.KeyValueConfig{Bucket: fetcherLeases, TTL: time.Minute, History: 1}
	if _, err := js.CreateOrUpdateKeyValue(ctx, kvc); err != nil {
		t.Fatalf("the fetcher creates its lease bucket: %v", err)
	}
	kvc.TTL = 2 * time.Minute
	kv, err := js.CreateOrUpdateKeyValue(ctx, kvc)
	if err != nil {
		t.Fatalf("the fetcher updates its lease bucket: %v", err)
	}
	rev, err := kv.Create(ctx, "k", []byte("me"))
	if err != nil {
		t.Fatalf("the fetcher takes a lease: %v", err)
	}
	if rev, err = kv.Update(ctx, "k", []byte("me"), rev); err != nil {
		t.Fatalf("the fetcher renews a lease: %v", err)
	}
	if err := kv.Delete(ctx, "k", jetstream.LastRevision(rev)); err != nil {
		t.Fatalf("the fetcher releases a lease: %v", err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, testStream, jetstream.ConsumerConfig{Durable: fetcherDurable, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4})
	if err != nil {
		t.Fatalf("the fetcher's durable: %v", err)
	}
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Errorf("the fetcher acknowledges: %v", err)
		}
	}
	for _, d := range []struct{ name, subject, data string }{
		{"publish a product", "cdse.product.created.X.Y", `{}`},
		{"publish into the quarantine", "cdse.quarantine.push", `{}`},
		{"publish a completion", "cdse.complete.created.X.Y", `{}`},
		{"publish a notice of supersession", "cdse.superseded.X.Y", `{}`},
		{"create another stream", "$JS.API.STREAM.CREATE.SQUATTER", `{"name":"SQUATTER","subjects":["squat.>"]}`},
		{"update the receiver's stream", "$JS.API.STREAM.UPDATE." + testStream, `{"name":"` + testStream + `","subjects":["cdse.product.>"],"storage":"memory"}`},
		{"purge the receiver's stream", "$JS.API.STREAM.PURGE." + testStream, `{}`},
		{"delete the receiver's stream", "$JS.API.STREAM.DELETE." + testStream, ``},
		{"delete a durable", "$JS.API.CONSUMER.DELETE." + testStream + "." + durableOfAnother, ``},
		{"delete a message of the receiver's stream", "$JS.API.STREAM.MSG.DELETE." + testStream, `{"seq":1}`},
		{"answer in the receiver's inbox", f.receiver.NewRespInbox(), `{"stream":"` + testStream + `","seq":99}`},
	} {
		t.Run(d.name, func(t *testing.T) {
			expectDenied(t, f.srv.ClientURL(), login, d.subject, []byte(d.data))
		})
	}
	// Nor take the receiver's own durable.
	t.Run("the receiver's durable", func(t *testing.T) {
		takeTheDurable(t, Options{ConsumerUser: "reader", ConsumerPassword: "reader-pw", FetcherUser: "fetcher", FetcherPassword: "fetcher-pw"}, login, topology.VersionsConsumer)
	})
	// The consumers' login still cannot write the fetcher's stream.
	expectDenied(t, f.srv.ClientURL(), []nats.Option{nats.UserInfo("reader", "reader-pw")}, "cdse.fetched.created.X.Y", []byte(`{}`))
	expectDenied(t, f.srv.ClientURL(), []nats.Option{nats.UserInfo("reader", "reader-pw")}, topology.RetryPrefix+".fetcher.X.Y", []byte(`{}`))
	expectDenied(t, f.srv.ClientURL(), []nats.Option{nats.UserInfo("reader", "reader-pw")}, "$JS.API.STREAM.MSG.DELETE."+FetcherStream, []byte(`{"seq":1}`))
	expectDenied(t, f.srv.ClientURL(), []nats.Option{nats.UserInfo("reader", "reader-pw")}, "$JS.API.STREAM.CREATE."+FetcherStream, []byte(`{"name":"`+FetcherStream+`","subjects":["cdse.fetched.>"]}`))
	// Nor take, nor free, a lease.
	expectDenied(t, f.srv.ClientURL(), []nats.Option{nats.UserInfo("reader", "reader-pw")}, "$KV."+fetcherLeases+".k", []byte(`x`))
	expectDenied(t, f.srv.ClientURL(), []nats.Option{nats.UserInfo("reader", "reader-pw")}, "$JS.API.STREAM.PURGE.KV_"+fetcherLeases, []byte(`{}`))
}

func TestFetcherLoginRefusesReservedNames(t *testing.T) {
	for _, o := range []Options{
		{FetcherUser: ReceiverUser, FetcherPassword: "x"},
		{ConsumerUser: "same", ConsumerPassword: "x", FetcherUser: "same", FetcherPassword: "y"},
	} {
		if _, _, err := users(o, "pw"); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}
