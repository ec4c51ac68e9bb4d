package app

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/internal/platform/buildinfo"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/fixtures"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
)

func testConfig(t *testing.T, dataDir string) config.Config {
	c := validConfig()
	c.Addr, c.AdminAddr, c.NATSEmbeddedAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	c.DataDir = dataDir
	c.ShutdownTimeout = 10 * time.Second
	return c
}

func startApp(t *testing.T, c config.Config) (*App, *test.Hook) {
	t.Helper()
	log, hook := test.NewNullLogger()
	log.SetLevel(logrus.DebugLevel)
	a, err := New(c, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Shutdown(context.Background()) }) // idempotent
	waitReady(t, "http://"+a.AdminAddr()+"/readyz", 15*time.Second)
	return a, hook
}

func waitReady(t *testing.T, url string, timeout time.Duration) {
	t.Helper()
	if err := scrape.Status(url, http.StatusOK, timeout); err != nil {
		t.Fatal(err)
	}
}

func post(t *testing.T, a *App, c config.Config, body []byte) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+a.WebhookAddr()+c.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(c.Username, c.Password)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func streamCount(t *testing.T, natsURL, name string) uint64 {
	t.Helper()
	js, closeNC := natstest.JetStream(t, natsURL)
	defer closeNC()
	return natstest.StreamCount(t, js, name)
}

// NATS_EMBEDDED_SYNC reaches the embedded server's file store.
func TestAppEmbeddedSync(t *testing.T) {
	for _, tc := range []struct {
		sync   string
		every  time.Duration
		always bool
	}{
		{"2m", 2 * time.Minute, false},
		{"1s", time.Second, false},
		{"always", 0, true},
	} {
		t.Run(tc.sync, func(t *testing.T) {
			c := testConfig(t, t.TempDir())
			c.NATSEmbeddedSync = tc.sync
			a, _ := startApp(t, c)
			js := a.embedded.JetStreamConfig()
			if js.SyncAlways != tc.always || (!tc.always && js.SyncInterval != tc.every) {
				t.Errorf("sync %q: the server has always=%v interval=%s", tc.sync, js.SyncAlways, js.SyncInterval)
			}
		})
	}
}

func TestAppEmbeddedRestartKeepsDedupe(t *testing.T) {
	c := testConfig(t, t.TempDir())
	a, _ := startApp(t, c)
	for _, f := range []string{"created-s2.json", "created-s1.json", "created-s2.json"} {
		if code := post(t, a, c, fixtures.Notification(t, f)); code != 200 {
			t.Fatalf("%s: %d", f, code)
		}
	}
	if got := streamCount(t, a.NATSURL(), c.Stream); got != 2 {
		t.Fatalf("stream holds %d, want 2", got)
	}
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	// Same data directory, new process state: the dedupe memory is JetStream's.
	b, _ := startApp(t, c)
	if code := post(t, b, c, fixtures.Notification(t, "created-s2.json")); code != 200 {
		t.Fatalf("after restart: %d", code)
	}
	if got := streamCount(t, b.NATSURL(), c.Stream); got != 2 {
		t.Errorf("after restart stream holds %d, want 2", got)
	}
}

func TestAppExternalNATS(t *testing.T) {
	srv := natstest.RunJetStream(t)
	store := natstest.StoreDir(srv)
	c := testConfig(t, "")
	c.NATSURL = srv.ClientURL()
	c.StreamReplicas = 1
	a, _ := startApp(t, c)
	if code := post(t, a, c, fixtures.Notification(t, "deleted-s1.json")); code != 200 {
		t.Fatalf("post: %d", code)
	}
	// Broker outage: not ready, 503; back: ready and accepting, by itself.
	srv.Shutdown()
	srv.WaitForShutdown()
	readyz := "http://" + a.AdminAddr() + "/readyz"
	deadline := time.Now().Add(2 * time.Second)
	for {
		resp, err := http.Get(readyz)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz still 200 two seconds into the outage")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if resp, err := http.Get("http://" + a.AdminAddr() + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("liveness must not depend on NATS: %v %v", resp, err)
	}
	if code := post(t, a, c, fixtures.Notification(t, "created-s3.json")); code != 503 {
		t.Fatalf("post during outage: %d, want 503", code)
	}
	// Nothing is buffered while NATS is away: 100 large notifications
	// (60 MB in all) leave the heap where it was.
	big := bytes.Replace(fixtures.Notification(t, "created-s3.json"), []byte(`"ProductName": "`), []byte(`"Padding": "`+strings.Repeat("x", 600<<10)+`", "ProductName": "`), 1)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 100 {
		if code := post(t, a, c, big); code != 503 {
			t.Fatalf("large post during outage: %d, want 503", code)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 16<<20 {
		t.Errorf("heap grew by %d MB during the outage: request bodies are being kept", grew>>20)
	}
	natstest.Restart(t, srv, store)
	waitReady(t, readyz, 15*time.Second)
	if code := post(t, a, c, fixtures.Notification(t, "created-s3.json")); code != 200 {
		t.Fatalf("post after outage: %d", code)
	}
	if got := streamCount(t, c.NATSURL, c.Stream); got != 2 {
		t.Errorf("stream holds %d, want 2", got)
	}
}

func TestAppWaitsForNATS(t *testing.T) {
	// NATS not up yet (a Kubernetes rollout order): the receiver starts,
	// is alive but not ready, and becomes ready once NATS appears.
	opts := natstest.DefaultOptions
	opts.StoreDir = t.TempDir()
	opts.Port = natstest.FreePort(t)
	c := testConfig(t, "")
	c.NATSURL = "nats://127.0.0.1:" + strconv.Itoa(opts.Port)
	log, _ := test.NewNullLogger()
	a, err := New(c, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	resp, err := http.Get("http://" + a.AdminAddr() + "/readyz")
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("ready without NATS: %v %v", resp, err)
	}
	resp.Body.Close()
	natstest.Run(t, opts)
	waitReady(t, "http://"+a.AdminAddr()+"/readyz", 20*time.Second)
}

func TestMetricsEndpoint(t *testing.T) {
	c := testConfig(t, t.TempDir())
	a, _ := startApp(t, c)
	post(t, a, c, fixtures.Notification(t, "created-s5p.json"))
	resp, err := http.Get("http://" + a.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	buf.ReadFrom(resp.Body)
	for _, want := range []string{
		`cdse_receiver_notifications_total{event="created",outcome="accepted"} 1`,
		`cdse_receiver_http_requests_total{code="200"} 1`,
		`cdse_receiver_publish_duration_seconds_count 1`,
		`cdse_receiver_auth_failures_total{reason="invalid"} 0`,
		`go_goroutines`,
		`cdse_receiver_build_info{branch=`,
		`version="` + buildinfo.Get().Version + `"} 1`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(buf.String(), c.Password) {
		t.Error("/metrics shows the password")
	}
}

func TestShutdownDelayKeepsServing(t *testing.T) {
	c := testConfig(t, t.TempDir())
	c.ShutdownDelay = 700 * time.Millisecond
	a, _ := startApp(t, c)
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- a.Shutdown(context.Background()) }()
	// During the delay: not ready, but still storing.
	if err := scrape.Status("http://"+a.AdminAddr()+"/readyz", 503, time.Second); err != nil {
		t.Fatal(err)
	}
	if code := post(t, a, c, fixtures.Notification(t, "created-s3.json")); code != 200 {
		t.Errorf("during the shutdown delay: %d, want 200", code)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < c.ShutdownDelay {
		t.Errorf("shut down after %s, before the %s delay", d, c.ShutdownDelay)
	}
}

func TestStartFailsCleanlyOnBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := testConfig(t, t.TempDir())
	c.Addr = ln.Addr().String()
	log, _ := test.NewNullLogger()
	a, err := New(c, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	err = a.Start(context.Background())
	if err == nil || !strings.Contains(err.Error(), "webhook listener") {
		t.Fatalf("start on a busy port: %v", err)
	}
	if err := a.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown after a failed start: %v", err)
	}
	// Everything it started is stopped: the data directory can be used again.
	c.Addr = "127.0.0.1:0"
	startApp(t, c)
}

func TestStreamDeletedWhileRunning(t *testing.T) {
	c := testConfig(t, t.TempDir())
	a, _ := startApp(t, c)
	if code := post(t, a, c, fixtures.Notification(t, "created-s1.json")); code != 200 {
		t.Fatalf("post: %d", code)
	}
	// With the receiver's login: consumers cannot delete the stream.
	js, closeNC := natstest.JetStream(t, a.NATSURL(), nats.UserInfo(a.embedded.User, a.embedded.Password))
	defer closeNC()
	if err := js.DeleteStream(context.Background(), c.Stream); err != nil {
		t.Fatal(err)
	}
	// Readiness reads: it says the stream is missing, it does not create it.
	if resp, err := http.Get("http://" + a.AdminAddr() + "/readyz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			if _, err := js.Stream(context.Background(), c.Stream); err != nil {
				t.Error("/readyz answered 200 while the stream was missing")
			}
		}
	}
	// The receiver notices and creates it again; notifications flow. The
	// one stored before is not in the new stream: sent again, it must be
	// stored, not answered from the memory of the old stream.
	waitReady(t, "http://"+a.AdminAddr()+"/readyz", 10*time.Second)
	if code := post(t, a, c, fixtures.Notification(t, "created-s2.json")); code != 200 {
		t.Fatalf("post after the stream was recreated: %d", code)
	}
	if code := post(t, a, c, fixtures.Notification(t, "created-s1.json")); code != 200 {
		t.Fatalf("post of the earlier notification: %d", code)
	}
	if got := natstest.StreamCount(t, js, c.Stream); got != 2 {
		t.Errorf("stream holds %d, want 2 (the earlier notification was answered from memory, not stored)", got)
	}
}

// TestQuarantineDoesNotGateReadiness: a quarantine stream that cannot be
// created (its subjects taken) does not keep valid notifications out; the
// refused ones get 503 until it can be, and the cause is logged.
func TestQuarantineDoesNotGateReadiness(t *testing.T) {
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	defer closeNC()
	if _, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{"cdse.quarantine.>"}}); err != nil {
		t.Fatal(err)
	}
	c := testConfig(t, t.TempDir())
	c.NATSURL = srv.ClientURL()
	a, logs := startApp(t, c)
	if code := post(t, a, c, fixtures.Notification(t, "created-s2.json")); code != http.StatusOK {
		t.Fatalf("valid notification: %d", code)
	}
	if code := post(t, a, c, []byte(`{"SubscriptionEvent":"created"}`)); code != http.StatusServiceUnavailable {
		t.Errorf("refused body without a quarantine: %d, want 503", code)
	}
	// The background start logs it right after the product stream is
	// ready, which may be after the requests above: wait for it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		logged := false
		for _, e := range logs.AllEntries() {
			logged = logged || strings.Contains(e.Message, "quarantine stream not ready")
		}
		if logged {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the quarantine's failure was not logged")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStartHonoursItsContext: a start whose context is done stops and says
// why, instead of starting anyway.
func TestStartHonoursItsContext(t *testing.T) {
	c := testConfig(t, t.TempDir())
	log, _ := test.NewNullLogger()
	a, err := New(c, log, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = a.Start(ctx)
	defer a.Shutdown(context.Background())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start with a cancelled context = %v, want context.Canceled", err)
	}
	if a.WebhookAddr() != "" {
		t.Error("the webhook listens after a cancelled start")
	}
}

// TestLastStoredNotBumpedByLocalDuplicates: a retry answered from the
// receiver's memory of stored ids (even while NATS is away) confirms
// nothing new, so it must not move the "last stored" time that /status,
// register status and the silence alert read.
func TestLastStoredNotBumpedByLocalDuplicates(t *testing.T) {
	srv := natstest.RunJetStream(t)
	c := testConfig(t, t.TempDir())
	c.NATSURL = srv.ClientURL()
	a, _ := startApp(t, c)
	body := fixtures.Notification(t, "created-s2.json")
	if code := post(t, a, c, body); code != 200 {
		t.Fatalf("first delivery: %d", code)
	}
	first := a.Status(context.Background()).Sources[0].LastStored
	if first == nil {
		t.Fatal("no last stored time after a store")
	}
	srv.Shutdown()
	srv.WaitForShutdown()
	deadline := time.Now().Add(10 * time.Second)
	for a.nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatal("still connected to a stopped server")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(10 * time.Millisecond) // a later clock reading than the first store's
	if code := post(t, a, c, body); code != 200 {
		t.Fatalf("retry of a stored notification while NATS is away: %d, want 200 (answered from memory)", code)
	}
	if got := a.Status(context.Background()).Sources[0].LastStored; got == nil || !got.Equal(*first) {
		t.Errorf("last stored moved from %v to %v on a duplicate answered from memory with NATS down", first, got)
	}
	if got := a.lastStoredAny(); !got.Equal(*first) {
		t.Errorf("cdse_receiver_last_stored_timestamp_seconds moved from %v to %v", first, got)
	}
}

func validConfig() config.Config {
	c := config.Default()
	c.Username, c.Password = "cdse", "a-long-enough-password"
	return c
}
