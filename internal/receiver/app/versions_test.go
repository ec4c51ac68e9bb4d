package app

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sirupsen/logrus"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
)

// asProduct is the created-s2.json fixture as the notification of another
// product: its name and id.
func asProduct(t *testing.T, name, id string) []byte {
	t.Helper()
	b := string(fixtures.Notification(t, "created-s2.json"))
	b = strings.ReplaceAll(b, "S2B_MSIL2A_20261121T103319_N0511_R108_T32TQM_20261121T132945.SAFE", name)
	return []byte(strings.ReplaceAll(b, "0f6b4c1e-8d2a-4f3b-9c5e-7a1d2b3c4e5f", id))
}

// TestVersionsInTheApp: by default the receiver runs its versions
// consumer beside the sources: two versions of one acquisition (a real
// pair, internal/cdse/versions/testdata), posted newest first, are both
// stored and answered 200, and a notice names the older one as superseded
// on arrival, on cdse.superseded.<collection>.<productType> in the product
// stream. Readiness never waits on it, and the receiver stops within its
// bound. With RECEIVER_VERSIONS=false there is no consumer, no bucket and
// no notice subject.
func TestVersionsInTheApp(t *testing.T) {
	const (
		older = "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE"
		newer = "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE"
	)
	bodies := [][]byte{asProduct(t, newer, "8a1b2c3d-0000-4000-8000-000000000002"), asProduct(t, older, "8a1b2c3d-0000-4000-8000-000000000001")}
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on by default", false: "off"}[on], func(t *testing.T) {
			c := testConfig(t, t.TempDir())
			c.Versions = on
			a, _ := startApp(t, c)
			for _, b := range bodies {
				if code := post(t, a, c, b); code != 200 {
					t.Fatalf("posted: %d", code)
				}
			}
			js, closeNC := natstest.JetStream(t, a.NATSURL())
			defer closeNC()
			ctx := context.Background()
			if !on {
				s, err := js.Stream(ctx, c.Stream)
				if err != nil {
					t.Fatal(err)
				}
				for _, subj := range s.CachedInfo().Config.Subjects {
					if strings.HasPrefix(subj, event.DefaultSupersededPrefix) {
						t.Errorf("the stream takes %s", subj)
					}
				}
				if _, err := js.Consumer(ctx, c.Stream, topology.VersionsConsumer); !errors.Is(err, jetstream.ErrConsumerNotFound) {
					t.Errorf("the versions consumer: %v", err)
				}
				if _, err := js.KeyValue(ctx, c.Stream+"_VERSIONS"); !errors.Is(err, jetstream.ErrBucketNotFound) {
					t.Errorf("the versions bucket: %v", err)
				}
				return
			}
			if err := natstest.WaitStreamCount(t, js, c.Stream, 3, 15*time.Second); err != nil {
				t.Fatal(err)
			}
			var notices []natstest.Msg
			for _, m := range natstest.StreamMessages(t, js, c.Stream) {
				if strings.HasPrefix(m.Subject, event.DefaultSupersededPrefix+".") {
					notices = append(notices, m)
				}
			}
			if len(notices) != 1 {
				t.Fatalf("%d notices, want 1", len(notices))
			}
			n, err := event.DecodeSupersededData(notices[0].Data, notices[0].Header)
			if err != nil {
				t.Fatal(err)
			}
			if notices[0].Subject != "cdse.superseded.SENTINEL-2.S2MSI2A" || n.Reason != event.ArrivedOlder ||
				n.Superseded.Name != older || n.By.Name != newer {
				t.Errorf("notice on %s: %+v", notices[0].Subject, n)
			}
			if err := a.Ready(ctx); err != nil {
				t.Errorf("not ready: %v", err)
			}
			start := time.Now()
			if err := a.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("shutdown took %s", d)
			}
		})
	}
}

// TestSecondReceiverWithTheFirstsNotices: staging beside production on one
// NATS, with its own streams but the default RECEIVER_VERSIONS_SUBJECT_PREFIX,
// which production's stream takes: staging is ready and stores its
// products all the same (the products come first), without notices, and
// its log says which setting to change. With a prefix of its own it has
// its notices.
func TestSecondReceiverWithTheFirstsNotices(t *testing.T) {
	staging := stagingBesideProduction(t)
	staging.CompleteStream, staging.CompletePrefix = "STAGING_COMPLETE", "staging.complete"
	a, hook := startApp(t, staging)
	deadline := time.Now().Add(15 * time.Second)
	for !logged(hook, "no notices of supersession", "RECEIVER_VERSIONS_SUBJECT_PREFIX") {
		if time.Now().After(deadline) {
			t.Fatal("staging does not say why it has no notices")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code := post(t, a, staging, fixtures.Notification(t, "created-s2.json")); code != 200 {
		t.Fatalf("staging without notices: %d", code)
	}
	_ = a.Shutdown(context.Background())

	staging.VersionsPrefix = "staging.superseded"
	a, _ = startApp(t, staging)
	newer := asProduct(t, "S2A_MSIL1C_20150704T101006_N0500_R022_T32TPS_20231011T134419.SAFE", "8a1b2c3d-0000-4000-8000-000000000002")
	older := asProduct(t, "S2A_MSIL1C_20150704T101006_N0204_R022_T32TPS_20150704T101337.SAFE", "8a1b2c3d-0000-4000-8000-000000000001")
	for _, b := range [][]byte{older, newer} {
		if code := post(t, a, staging, b); code != 200 {
			t.Fatalf("staging: %d", code)
		}
	}
	js, closeNC := natstest.JetStream(t, staging.NATSURL)
	defer closeNC()
	// The fixture posted before, and the pair: one notice.
	if err := natstest.WaitStreamCount(t, js, "STAGING", 4, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range natstest.StreamMessages(t, js, "STAGING") {
		if event.IsNotice(m.Header) {
			got = append(got, m.Subject+" "+m.Header.Get(event.HeaderSupersededReason))
		}
	}
	if strings.Join(got, ",") != "staging.superseded.SENTINEL-2.S2MSI2A newer_arrived" {
		t.Errorf("staging's notices %v", got)
	}
}

// logged says whether an entry of hook holds every one of words.
func logged(hook interface{ AllEntries() []*logrus.Entry }, words ...string) bool {
	for _, e := range hook.AllEntries() {
		text := e.Message
		if err, ok := e.Data[logrus.ErrorKey].(error); ok {
			text += " " + err.Error()
		}
		found := true
		for _, w := range words {
			found = found && strings.Contains(text, w)
		}
		if found {
			return true
		}
	}
	return false
}
