package quarantine_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/auth"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/notification"
	"github.com/cdse-jetstream/receiver/internal/quarantine"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
	"github.com/cdse-jetstream/receiver/internal/webhook"
)

// TestReplayAfterValidatorChange: a webhook whose validator does not know
// a shape (standing for an older version) quarantines a valid notification;
// the replay, with the current validator, publishes it exactly once, as the
// webhook would have, and removes it from the quarantine.
func TestReplayAfterValidatorChange(t *testing.T) {
	env := publishtest.New(t, nil)
	older := func(body []byte, max int) ([]notification.Notification, error) {
		ns, err := notification.Parse(body, max)
		if err == nil && strings.HasPrefix(ns[0].ProductName, "S3") {
			return nil, &notification.ValidationError{Index: -1, Field: "ProductName", Reason: "unknown mission"}
		}
		return ns, err
	}
	log, _ := test.NewNullLogger()
	v, err := auth.NewBasic([]auth.Credential{{User: "cdse", Password: "replay-test-password"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := webhook.New(webhook.Options{Path: "/notifications", MaxBody: 1 << 20, MaxNotifications: 100, Route: ingest.Route{Prefix: "cdse.product"},
		Quarantine: env.Quarantine, Parse: older}, env.Publisher, v, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	defer srv.Close()
	post := func(name string) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/notifications", bytes.NewReader(fixtures.Notification(t, name)))
		req.SetBasicAuth("cdse", "replay-test-password")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if post("created-s3.json") != http.StatusBadRequest || post("created-s2.json") != http.StatusOK {
		t.Fatal("the older validator did not refuse S3 and accept S2")
	}
	r := quarantine.NewReader(env.JS, publishtest.QuarantineStream)
	o := quarantine.ReplayOptions{Route: ingest.Route{Prefix: "cdse.product"}, MaxBody: 1 << 20, MaxNotifications: 100}
	sum, err := r.Replay(context.Background(), env.Publisher, o)
	if err != nil || sum.Checked != 1 || sum.Replayed != 1 || sum.Stored != 1 || sum.StillRefused != 0 {
		t.Fatalf("replay: %+v, %v", sum, err)
	}
	msgs := natstest.StreamMessages(t, env.JS, publishtest.Stream)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	m := msgs[1]
	if m.Subject != "cdse.product.created.SENTINEL-3.OL_1_EFR___" || m.Header.Get("Cdse-Source") != "push" || m.Header.Get(quarantine.HeaderReplayed) == "" ||
		!bytes.Equal(m.Data, fixtures.Notification(t, "created-s3.json")) {
		t.Errorf("replayed message %s %v", m.Subject, m.Header)
	}
	if n := len(env.Quarantined(t)); n != 0 {
		t.Errorf("%d left in the quarantine", n)
	}
	if sum, err := r.Replay(context.Background(), env.Publisher, o); err != nil || sum.Checked != 0 || natstest.StreamCount(t, env.JS, publishtest.Stream) != 2 {
		t.Errorf("second replay: %+v, %v", sum, err)
	}
}
