package app

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// TestEmbeddedConsumersDeniedTheConfiguredPrefixes: the receiver gives the
// embedded server the prefixes it is configured with, so that a client
// without a login (the default) cannot publish into the receiver's streams
// whatever their subjects, while the receiver stores notifications.
func TestEmbeddedConsumersDeniedTheConfiguredPrefixes(t *testing.T) {
	c := testConfig(t, t.TempDir())
	c.SubjectPrefix, c.QuarantinePrefix, c.InterestPrefix = "eo.product", "eo.quarantine", "eo.interest"
	a, _ := startApp(t, c)
	errs := make(chan error, 8)
	nc, err := nats.Connect(a.NATSURL(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		t.Fatalf("a consumer without a login: %v", err)
	}
	defer nc.Close()
	for _, subject := range []string{"eo.product.created.X.Y", "eo.quarantine.push", "eo.interest.alps.created.X.Y", "cdse.fetched.created.X.Y"} {
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
	if code := post(t, a, c, fixtures.Notification(t, "created-s2.json")); code != http.StatusOK {
		t.Fatalf("the receiver stores: %d", code)
	}
	if got := natstest.StreamCount(t, a.pub.JetStream(), c.Stream); got != 1 {
		t.Errorf("stream holds %d messages, want the receiver's 1", got)
	}
}
