package quarantine_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/ingest/webhook"
	"github.com/cdse-jetstream/receiver/internal/receiver/auth"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/publishtest"
)

// TestReplayAfterValidatorChange: a webhook whose validation is stricter
// than the replay's (a lower limit of notifications per body, standing for
// an older version) quarantines a valid array; the replay publishes its
// notifications exactly once, as the webhook would have, and removes the
// body from the quarantine.
func TestReplayAfterValidatorChange(t *testing.T) {
	env := publishtest.New(t, nil)
	s3, s5p := bytes.TrimSpace(fixtures.Notification(t, "created-s3.json")), bytes.TrimSpace(fixtures.Notification(t, "created-s5p.json"))
	pair := append(append(append(append([]byte("["), s3...), ','), s5p...), ']')
	log, _ := test.NewNullLogger()
	v, err := auth.NewBasic([]auth.Credential{{User: "cdse", Password: "replay-test-password"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	e, err := webhook.New(webhook.Options{Path: "/notifications", MaxBody: 1 << 20, MaxNotifications: 1, Route: ingest.Route{Prefix: "cdse.product"},
		Quarantine: env.Quarantine}, env.Publisher, v, prometheus.NewRegistry(), log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e)
	defer srv.Close()
	post := func(body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/notifications", bytes.NewReader(body))
		req.SetBasicAuth("cdse", "replay-test-password")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if post(pair) != http.StatusRequestEntityTooLarge || post(fixtures.Notification(t, "created-s2.json")) != http.StatusOK {
		t.Fatal("the stricter webhook did not refuse the pair and accept S2")
	}
	r := quarantine.NewReader(env.JS, publishtest.QuarantineStream)
	o := quarantine.ReplayOptions{Route: ingest.Route{Prefix: "cdse.product"}, MaxBody: 1 << 20, MaxNotifications: 100}
	sum, err := r.Replay(context.Background(), env.Publisher, o)
	if err != nil || sum.Checked != 1 || sum.Replayed != 1 || sum.Stored != 2 || sum.StillRefused != 0 {
		t.Fatalf("replay: %+v, %v", sum, err)
	}
	msgs := natstest.StreamMessages(t, env.JS, publishtest.Stream)
	if len(msgs) != 3 {
		t.Fatalf("%d messages, want 3", len(msgs))
	}
	for i, want := range []struct {
		subject string
		data    []byte
	}{{"cdse.product.created.SENTINEL-3.OL_1_EFR___", s3}, {"cdse.product.created.SENTINEL-5P.L2__NO2___", s5p}} {
		m := msgs[1+i]
		if m.Subject != want.subject || m.Header.Get("Cdse-Source") != "push" || m.Header.Get(quarantine.HeaderReplayed) == "" || !bytes.Equal(m.Data, want.data) {
			t.Errorf("replayed message %s %v", m.Subject, m.Header)
		}
	}
	if n := len(env.Quarantined(t)); n != 0 {
		t.Errorf("%d left in the quarantine", n)
	}
	if sum, err := r.Replay(context.Background(), env.Publisher, o); err != nil || sum.Checked != 0 || natstest.StreamCount(t, env.JS, publishtest.Stream) != 3 {
		t.Errorf("second replay: %+v, %v", sum, err)
	}
}
