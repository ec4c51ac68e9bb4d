package app

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// anonymousConsumer connects to the receiver's embedded server without a
// login, as a consumer on loopback does by default; errs receives the
// server's asynchronous errors (its permissions violations).
func anonymousConsumer(t *testing.T, a *App) (*nats.Conn, chan error) {
	t.Helper()
	errs := make(chan error, 8)
	nc, err := nats.Connect(a.NATSURL(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		t.Fatalf("a consumer without a login: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// expectPublishDenied publishes on subject and fails unless the server
// answers with a permissions violation naming it.
func expectPublishDenied(t *testing.T, nc *nats.Conn, errs chan error, subject string) {
	t.Helper()
	if err := nc.Publish(subject, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") || !strings.Contains(err.Error(), subject) {
			t.Errorf("%s: %v", subject, err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s: a consumer published without a permissions violation", subject)
	}
}

// TestEmbeddedConsumersDeniedTheConfiguredPrefixes: the receiver gives the
// embedded server the prefixes it is configured with, so that a client
// without a login (the default) cannot publish into the receiver's streams
// whatever their subjects, while the receiver stores notifications.
func TestEmbeddedConsumersDeniedTheConfiguredPrefixes(t *testing.T) {
	c := testConfig(t, t.TempDir())
	c.SubjectPrefix, c.QuarantinePrefix, c.InterestPrefix = "eo.product", "eo.quarantine", "eo.interest"
	a, _ := startApp(t, c)
	nc, errs := anonymousConsumer(t, a)
	for _, subject := range []string{"eo.product.created.X.Y", "eo.quarantine.push", "eo.interest.alps.created.X.Y", "cdse.fetched.created.X.Y"} {
		expectPublishDenied(t, nc, errs, subject)
	}
	if code := post(t, a, c, fixtures.Notification(t, "created-s2.json")); code != http.StatusOK {
		t.Fatalf("the receiver stores: %d", code)
	}
	if got := natstest.StreamCount(t, a.pub.JetStream(), c.Stream); got != 1 {
		t.Errorf("stream holds %d messages, want the receiver's 1", got)
	}
}

// TestEmbeddedConsumersDeniedTheFetchersDurable: the receiver reads
// FETCH_CONSUMER and NATS_STREAM and gives them to the embedded server, so
// that a client without a login can neither create or change, delete, pull
// from nor acknowledge on the fetcher's durable by that name, while it
// still creates a durable of its own.
func TestEmbeddedConsumersDeniedTheFetchersDurable(t *testing.T) {
	c := testConfig(t, t.TempDir())
	c.Stream, c.FetchConsumer = "EO_PRODUCTS", "eo-fetcher"
	a, _ := startApp(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fetchers := jetstream.ConsumerConfig{Durable: c.FetchConsumer, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 4}
	if _, err := a.pub.JetStream().CreateOrUpdateConsumer(ctx, c.Stream, fetchers); err != nil {
		t.Fatal(err)
	}
	nc, errs := anonymousConsumer(t, a)
	prefix := "$JS.API.CONSUMER."
	for _, subject := range []string{
		prefix + "CREATE.EO_PRODUCTS.eo-fetcher",
		prefix + "CREATE.EO_PRODUCTS.eo-fetcher.eo.other.>",
		prefix + "DURABLE.CREATE.EO_PRODUCTS.eo-fetcher",
		prefix + "DELETE.EO_PRODUCTS.eo-fetcher",
		prefix + "MSG.NEXT.EO_PRODUCTS.eo-fetcher",
		"$JS.ACK.EO_PRODUCTS.eo-fetcher.1.1.1.1.0",
	} {
		expectPublishDenied(t, nc, errs, subject)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, c.Stream, jetstream.ConsumerConfig{Durable: "mine", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Errorf("a consumer's own durable: %v", err)
	}
	cons, err := a.pub.JetStream().Consumer(ctx, c.Stream, c.FetchConsumer)
	if err != nil || cons.CachedInfo().Config.MaxAckPending != fetchers.MaxAckPending {
		t.Errorf("the fetcher's durable after the denials: %v", err)
	}
}
