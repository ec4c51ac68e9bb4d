package app_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/cdse/notification"
	"github.com/cdse-jetstream/receiver/internal/ingest"
	"github.com/cdse-jetstream/receiver/internal/ingest/source"
	"github.com/cdse-jetstream/receiver/internal/receiver/app"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/status"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

// fakeSource is a fourth source, added through the contract alone: it
// stores one notification, then waits for end and returns what it is
// given (nil: it runs until the receiver stops).
type fakeSource struct {
	d    app.Deps
	body []byte
	end  chan error
}

func (*fakeSource) Name() string { return "fake" }

func (f *fakeSource) Run(ctx context.Context) error {
	ns, err := notification.Parse(f.body, 10)
	if err != nil {
		return err
	}
	if _, err := f.d.Publisher.Publish(ctx, ingest.Messages(ns, &f.d.Route, f.Name())); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-f.end:
		return err
	}
}

func fake(t *testing.T) (app.Builder, chan error) {
	end := make(chan error, 1)
	body := fixtures.Notification(t, "created-s2.json")
	return app.Builder{Name: "fake", Build: func(d app.Deps) (source.Source, error) {
		return &fakeSource{d: d, body: body, end: end}, nil
	}}, end
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func fakeStatus(t *testing.T, admin string) (status.Source, bool) {
	t.Helper()
	_, b := get(t, admin+status.Path)
	var st status.Receiver
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("/status is not JSON: %v\n%s", err, b)
	}
	for _, s := range st.Sources {
		if s.Name == "fake" {
			return s, true
		}
	}
	return status.Source{}, false
}

// waitFor polls cond until it holds, at most d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A fourth source, given through the contract without a change to the
// app: it has its line in /status with its clock, its delivery-delay
// series, and its part in readiness.
func TestAFourthSourceThroughTheContract(t *testing.T) {
	b, _ := fake(t)
	r := receivertest.Start(t, nil, b)
	waitFor(t, 10*time.Second, "the fake source's store in /status", func() bool {
		s, ok := fakeStatus(t, r.Admin)
		return ok && s.LastStored != nil
	})
	if v := scrape.Value(t, r.Admin, `cdse_receiver_delivery_delay_seconds_count{event="created",source="fake"}`); v != "1" {
		t.Errorf("delay series of the fake source: %s, want 1", v)
	}
	if v := scrape.Value(t, r.Admin, `cdse_receiver_delivery_delay_seconds_count{event="deleted",source="fake"}`); v != "0" {
		t.Errorf("the fake source's series must exist from the start: %s", v)
	}
	if code, body := get(t, r.Admin+"/readyz"); code != http.StatusOK {
		t.Errorf("/readyz %d %s", code, body)
	}
}

// A source that ends degraded leaves the receiver up and serving, not
// ready, and says why in /readyz and /status — as JSON, whatever bytes
// the reason holds.
func TestADegradedSourceIsNeverSilent(t *testing.T) {
	b, end := fake(t)
	r := receivertest.Start(t, nil, b)
	end <- source.Degrade(errors.New("feed gone \x01\"quoted\" \u2028"))
	waitFor(t, 10*time.Second, "/readyz 503", func() bool { code, _ := get(t, r.Admin+"/readyz"); return code == http.StatusServiceUnavailable })
	_, body := get(t, r.Admin+"/readyz")
	var ready struct{ Status, Reason string }
	if err := json.Unmarshal(body, &ready); err != nil {
		t.Fatalf("/readyz is not JSON: %v\n%q", err, body)
	}
	if !strings.Contains(ready.Reason, "fake source stopped: feed gone \x01\"quoted\"") {
		t.Errorf("/readyz reason: %q", ready.Reason)
	}
	s, ok := fakeStatus(t, r.Admin)
	if !ok || !strings.Contains(s.Stopped, "feed gone") {
		t.Errorf("/status of the fake source: %+v", s)
	}
	// The other sources go on: the webhook still stores.
	if code, answer := r.Post(t, fixtures.Notification(t, "created-s1.json")); code != http.StatusOK {
		t.Errorf("webhook after a degraded source: %d %s", code, answer)
	}
	select {
	case err := <-r.App.Errors():
		t.Errorf("a degraded source stopped the receiver: %v", err)
	default:
	}
}

// A source that ends with any other error stops the receiver: Errors
// reports it (the server then shuts down and exits non-zero).
func TestAFatalSourceStopsTheReceiver(t *testing.T) {
	b, end := fake(t)
	r := receivertest.Start(t, nil, b)
	end <- errors.New("boom")
	select {
	case err := <-r.App.Errors():
		if !strings.Contains(err.Error(), "source fake: boom") {
			t.Errorf("error: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a fatal source error was not reported")
	}
}

// Two sources of one name would share a clock and a series: refused.
func TestSourceNamesAreUnique(t *testing.T) {
	b, _ := fake(t)
	b.Name = ingest.SourcePush
	cfg := config.Default()
	cfg.Username, cfg.Password = receivertest.User, receivertest.Password
	log, _ := test.NewNullLogger()
	if _, err := app.New(cfg, log, prometheus.NewRegistry(), b); err == nil || !strings.Contains(err.Error(), "a name of its own") {
		t.Errorf("duplicate source name: %v", err)
	}
}
