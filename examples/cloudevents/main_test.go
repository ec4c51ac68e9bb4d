package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
)

const catalogue = "https://catalogue.example/odata/v1"

// sent is one notification as the catalogue sent it.
type sent struct {
	data []byte
	n    *event.Notification
}

// postFixtures sends every fixture to the webhook and returns the
// notifications it carried, by product id and event.
func postFixtures(t *testing.T, r *receivertest.Receiver) map[string]sent {
	t.Helper()
	out := map[string]sent{}
	for name, body := range r.PostFixtures(t) {
		var elems []json.RawMessage // not seeded with body: RawMessage reuses its slice
		if trimmed := bytes.TrimSpace(body); trimmed[0] != '[' {
			elems = []json.RawMessage{body}
		} else {
			if err := json.Unmarshal(trimmed, &elems); err != nil {
				t.Fatal(err)
			}
			for i := range elems { // the stored bytes are the element's own
				elems[i] = bytes.TrimSpace(elems[i])
			}
		}
		for _, e := range elems {
			n, err := event.DecodeData(e, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out[notification.DedupeKey(n.Event, n.ProductID, n.ModificationDate)] = sent{data: e, n: n}
		}
	}
	return out
}

// Every fixture, read back from the stream by the CloudEvents Go SDK: a
// valid CloudEvent whose attributes say what the notification says, and
// whose data is the catalogue's bytes.
func TestSDKReadsEveryNotification(t *testing.T) {
	r := receivertest.Start(t, func(c *config.Config) { c.CDSECatalogueURL = catalogue })
	natsURL := r.NATSURL
	want := postFixtures(t, r)

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, event.DefaultStream, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = consume(ctx, cons, len(want), func(ev cloudevents.Event) error {
		s, ok := want[ev.ID()]
		if !ok {
			t.Errorf("an event with id %q, not one sent", ev.ID())
			return nil
		}
		seen[ev.ID()] = true
		source := catalogue + "/Subscriptions(" + s.n.SubscriptionID + ")"
		for _, c := range []struct{ attr, got, want string }{
			{"specversion", ev.SpecVersion(), cloudevents.VersionV1},
			{"type", ev.Type(), "eu.copernicus.dataspace.product." + string(s.n.Event)},
			{"source", ev.Source(), source},
			{"subject", ev.Subject(), s.n.ProductName},
			{"time", ev.Time().UTC().Format(time.RFC3339Nano), s.n.NotificationDate.UTC().Format(time.RFC3339Nano)},
			{"datacontenttype", ev.DataContentType(), "application/json"},
			{"data", string(ev.Data()), string(s.data)},
		} {
			if c.got != c.want {
				t.Errorf("%s: %s = %.80q, want %.80q", ev.ID(), c.attr, c.got, c.want)
			}
		}
		if ext := ev.Extensions(); len(ext) != 0 {
			t.Errorf("%s: extensions %v", ev.ID(), ext)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != len(want) {
		t.Errorf("%d events, want %d", len(seen), len(want))
	}

	// The example program's own output, for one product type.
	var out bytes.Buffer
	if err := run(ctx, natsURL, event.DefaultStream, "cdse.product.created.SENTINEL-2.S2MSI2A", 1, &out); err != nil {
		t.Fatal(err)
	}
	if line := out.String(); !strings.HasPrefix(line, "eu.copernicus.dataspace.product.created created:0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f "+catalogue+"/Subscriptions(") ||
		!strings.HasSuffix(line, " application/json /eodata/Sentinel-2/MSI/L2A/2026/11/21/S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE\n") {
		t.Errorf("output %q", line)
	}
}
