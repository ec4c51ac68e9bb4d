package fetcher

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/testkit/mountns"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/simhosts"
)

// badDay is a running fetcher (App.Run: its own NATS connection, checks
// and consumer) on a real nats-server and the simulator, storing into dir.
type badDay struct {
	sim *cdsesim.Sim
	js  jetstream.JetStream
	cfg fetchconfig.Config
	app *App
	reg *prometheus.Registry
	srv interface{ Shutdown() }
	// hook holds the fetcher's log entries.
	hook *logtest.Hook
	// published are the notifications put on the product stream.
	published [][]byte
}

func startBadDay(t *testing.T, dir string, adjust func(*fetchconfig.Config)) *badDay {
	return startBadDayRate(t, dir, cdsesim.Unthrottled, adjust)
}

// startBadDayRate is startBadDay with the simulator's download rate.
func startBadDayRate(t *testing.T, dir string, rate int64, adjust func(*fetchconfig.Config)) *badDay {
	t.Helper()
	return startBadDayWith(t, dir, rate, adjust, func(ctx context.Context, js jetstream.JetStream, cfg fetchconfig.Config, _ *cdsesim.Sim) error {
		_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: cfg.ProductStream.Stream, Subjects: []string{cfg.SubjectPrefix + ".>", "cdse.fetchretry.>"}})
		return err
	})
}

// startBadDayWith is startBadDayRate with the product stream made by
// stream (and whatever runs beside the fetcher on it), before the
// fetcher starts.
func startBadDayWith(t *testing.T, dir string, rate int64, adjust func(*fetchconfig.Config), stream func(context.Context, jetstream.JetStream, fetchconfig.Config, *cdsesim.Sim) error) *badDay {
	t.Helper()
	srv := natstest.RunJetStream(t)
	js, closeNC := natstest.JetStream(t, srv.ClientURL())
	t.Cleanup(closeNC)
	h := simhosts.Start(t, cdsesim.Options{Users: map[string]cdsesim.User{"op": {Password: "pw"}},
		DownloadRate: rate, MaxDownloads: -1, Seed: 3}, "127.0.0.1")
	cfg := fetchconfig.Default()
	cfg.Target, cfg.NATSURL, cfg.AdminAddr, cfg.Start = "file://"+dir, srv.ClientURL(), "127.0.0.1:0", "all"
	cfg.CDSEUsername, cfg.CDSEPassword = "op", "pw"
	cfg.CDSETokenURL, cfg.CDSECatalogueURL, cfg.DownloadURL = h.Catalogue+cdsesim.TokenPath, h.Catalogue+"/odata/v1", h.Download
	cfg.AckWait, cfg.ShutdownTimeout = 20*time.Second, 2*time.Second
	if adjust != nil {
		adjust(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	if err := stream(ctx, js, cfg, h.Sim); err != nil {
		t.Fatal(err)
	}
	log := logrus.New()
	log.SetLevel(logrus.DebugLevel)
	hook := logtest.NewLocal(log)
	reg := prometheus.NewRegistry()
	parts, err := Build(ctx, cfg, func(string) string { return "" }, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(cfg, parts, reg, log)
	if err != nil {
		t.Fatal(err)
	}
	run, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(run) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("Run did not end")
		}
	})
	return &badDay{sim: h.Sim, js: js, cfg: cfg, app: a, reg: reg, srv: srv, hook: hook}
}

// publish puts the created notification of a generated S2 product of
// size bytes on the product stream, as the receiver does.
func (b *badDay) publish(t *testing.T, size int64) *cdsesim.Product {
	t.Helper()
	p := b.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = size })[0]
	b.publishProduct(t, p)
	return p
}

// publishProduct puts p's created notification on the product stream.
func (b *badDay) publishProduct(t *testing.T, p *cdsesim.Product) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"@odata.context": "$metadata#Notification/$entity", "SubscriptionEvent": "created",
		"ProductId": p.ID, "ProductName": p.Name, "SubscriptionId": uuid.NewString(),
		"NotificationDate": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "value": p.Entity()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.js.Publish(context.Background(), b.cfg.SubjectPrefix+".created.SENTINEL-2.S2MSI2A", body); err != nil {
		t.Fatal(err)
	}
	b.published = append(b.published, body)
}

// notificationOf decodes p's notification as the fetcher does.
func (b *badDay) key(t *testing.T, p *cdsesim.Product) string {
	t.Helper()
	for _, body := range b.published {
		n, err := event.DecodeData(body, nil)
		if err == nil && n.ProductID == p.ID {
			return Key(b.cfg.KeyTemplate, n)
		}
	}
	t.Fatalf("%s not published", p.ID)
	return ""
}

// until polls cond every 20 ms for d.
func until(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

// events counts the messages on the fetcher's stream under prefix.
func (b *badDay) events(t *testing.T, prefix string) int {
	t.Helper()
	s, err := b.js.Stream(context.Background(), b.cfg.Stream)
	if err != nil {
		return 0
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter(prefix+".>"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range info.State.Subjects {
		n += int(c)
	}
	return n
}

func (b *badDay) ready(t *testing.T) (int, map[string]string) {
	t.Helper()
	w := httptest.NewRecorder()
	b.app.admin().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var r map[string]string
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatalf("/readyz %q: %v", w.Body.String(), err)
	}
	return w.Code, r
}

// TestFullTargetPauses: a product that does not fit the target now (a
// real tmpfs, FETCH_DISK_RESERVE kept) pauses the fetcher: not ready with
// no_space, cdse_fetcher_paused 1, no failed event and no delivery spent;
// once room is made it is stored and the fetcher is ready again.
func TestFullTargetPauses(t *testing.T) {
	dir, here := mountns.Tmpfs(t, "32m")
	if !here {
		return
	}
	defer func(d time.Duration) { noSpaceEvery = d }(noSpaceEvery)
	noSpaceEvery = 100 * time.Millisecond
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 20<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	b := startBadDay(t, dir, func(c *fetchconfig.Config) { c.DiskReserve = 4 << 20 })
	p := b.publish(t, 10<<20)
	until(t, 20*time.Second, "no_space in /readyz", func() bool {
		code, r := b.ready(t)
		return code == http.StatusServiceUnavailable && strings.Contains(r[holdNoSpace], "FETCH_DISK_RESERVE")
	})
	if v := testutil.ToFloat64(b.app.health.paused.WithLabelValues(holdNoSpace)); v != 1 {
		t.Errorf("cdse_fetcher_paused{no_space} %v", v)
	}
	if n := b.events(t, b.cfg.FailedPrefix); n != 0 {
		t.Fatalf("%d failed events for a full disk", n)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	until(t, 20*time.Second, "the product stored after room was made", func() bool { return b.events(t, b.cfg.FetchedPrefix) == 1 })
	if _, err := os.Stat(filepath.Join(dir, b.key(t, p))); err != nil {
		t.Error(err)
	}
	until(t, 10*time.Second, "ready again", func() bool { code, _ := b.ready(t); return code == http.StatusOK })
	c, err := b.js.Consumer(context.Background(), b.cfg.ProductStream.Stream, b.cfg.FetchConsumer)
	if err != nil {
		t.Fatal(err)
	}
	if info := c.CachedInfo(); info.NumRedelivered != 0 {
		t.Errorf("%d redeliveries: the pause spent attempts", info.NumRedelivered)
	}
}

// TestFullTargetPauseCountsThePartial: a product paused for room with a
// partial of it kept waits for the room its rest needs, not for the whole
// product's (with the partial on the same file system, that much may
// never be free): room for the rest is made, and it is stored.
func TestFullTargetPauseCountsThePartial(t *testing.T) {
	dir, here := mountns.Tmpfs(t, "32m")
	if !here {
		return
	}
	defer func(d time.Duration) { noSpaceEvery = d }(noSpaceEvery)
	noSpaceEvery = 100 * time.Millisecond
	b := startBadDay(t, dir, func(c *fetchconfig.Config) { c.DiskReserve = 4 << 20 })
	p := b.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 20 << 20 })[0]
	// 12 MiB of it held (a download cut by the full disk), and 6 MiB
	// free beyond the reserve: the rest, 8 MiB, does not fit.
	body, err := json.Marshal(map[string]any{"@odata.context": "$metadata#Notification/$entity", "SubscriptionEvent": "created",
		"ProductId": p.ID, "ProductName": p.Name, "SubscriptionId": uuid.NewString(),
		"NotificationDate": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "value": p.Entity()})
	if err != nil {
		t.Fatal(err)
	}
	n, err := event.DecodeData(body, nil)
	if err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(dir, ".partial", filepath.FromSlash(Key(b.cfg.KeyTemplate, n))+".part")
	held := make([]byte, 12<<20)
	if _, err := io.ReadFull(p.Content(), held); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(part, held, 0o644); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(dir, "filler")
	if err := os.WriteFile(filler, make([]byte, 10<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	b.publishProduct(t, p)
	until(t, 20*time.Second, "no_space in /readyz", func() bool {
		code, r := b.ready(t)
		return code == http.StatusServiceUnavailable && strings.Contains(r[holdNoSpace], "FETCH_DISK_RESERVE")
	})
	// 10 MiB free beyond the reserve: room for the rest, never for the
	// whole 20 MiB while the partial is there.
	if err := os.Truncate(filler, 6<<20); err != nil {
		t.Fatal(err)
	}
	until(t, 20*time.Second, "the product stored once room for its rest was made", func() bool { return b.events(t, b.cfg.FetchedPrefix) == 1 })
}

// TestUnmountedTargetHoldsTheWork: the target directory's volume
// unmounted (the mount point left on the file system below) holds the
// work: not ready with target_moved, nothing written under the mount
// point, nothing published; the volume back, the product is stored on it.
func TestUnmountedTargetHoldsTheWork(t *testing.T) {
	root, here := mountns.Tmpfs(t, "16m")
	if !here {
		return
	}
	defer func(d time.Duration) { checkEvery = d }(checkEvery)
	checkEvery = 50 * time.Millisecond
	vol, dir := filepath.Join(root, "vol"), filepath.Join(root, "products")
	for _, d := range []string{vol, dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mount("tmpfs", vol, "tmpfs", 0, "size=8m"); err != nil {
		t.Fatal(err)
	}
	bind := func() {
		if err := syscall.Mount(vol, dir, "", syscall.MS_BIND, ""); err != nil {
			t.Fatal(err)
		}
	}
	bind()
	b := startBadDay(t, dir, func(c *fetchconfig.Config) { c.DiskReserve = 0 })
	until(t, 20*time.Second, "ready", func() bool { code, _ := b.ready(t); return code == http.StatusOK })
	if err := syscall.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	until(t, 10*time.Second, "target_moved in /readyz", func() bool {
		code, r := b.ready(t)
		return code == http.StatusServiceUnavailable && strings.Contains(r[holdTargetMoved], "not mounted")
	})
	p := b.publish(t, 1<<20)
	// Held: the product is taken (delivered) but nothing is downloaded.
	until(t, 10*time.Second, "the product event taken", func() bool {
		c, err := b.js.Consumer(context.Background(), b.cfg.ProductStream.Stream, b.cfg.FetchConsumer)
		return err == nil && c.CachedInfo().NumAckPending == 1
	})
	if n := len(b.sim.DownloadLog()); n != 0 {
		t.Errorf("%d download requests while the target is away", n)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("written under the mount point: %v", left)
	}
	bind()
	until(t, 20*time.Second, "the product stored once the volume is back", func() bool { return b.events(t, b.cfg.FetchedPrefix) == 1 })
	if _, err := os.Stat(filepath.Join(vol, b.key(t, p))); err != nil {
		t.Errorf("not on the volume: %v", err)
	}
}

// TestLongRetryAfterIsNotSleptOn: a Retry-After longer than the ack wait
// (6 s against 5 s) is not slept on holding the product's message, which
// NATS would give to another delivery meanwhile (a second download, or a
// delivery failing on the first one's lock): the message is given back
// with the wait, redelivered after it, and the product downloaded once.
func TestLongRetryAfterIsNotSleptOn(t *testing.T) {
	b := startBadDay(t, t.TempDir(), func(c *fetchconfig.Config) { c.AckWait = 5 * time.Second })
	p := b.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 64 << 10 })[0]
	if err := b.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 429, RetryAfter: 6, Count: 1, Product: p.ID}); err != nil {
		t.Fatal(err)
	}
	b.publishProduct(t, p)
	until(t, 30*time.Second, "the product stored", func() bool { return b.events(t, b.cfg.FetchedPrefix) == 1 })
	if v := testutil.ToFloat64(b.app.outcomes.WithLabelValues("deferred")); v != 1 {
		t.Errorf("deferred %v, want 1", v)
	}
	if v := testutil.ToFloat64(b.app.outcomes.WithLabelValues("retried")); v != 0 {
		t.Errorf("retried %v: a second delivery ran while the first slept", v)
	}
	whole := 0
	for _, r := range b.sim.DownloadLog() {
		if r.Product == p.ID && r.Status == http.StatusOK {
			whole++
		}
	}
	if whole != 1 {
		t.Errorf("the product sent %d times, want 1", whole)
	}
}

// TestCutOffFromNATSStopsTheDownload: a replica whose in-progress acks
// fail for half the ack wait (its NATS gone) stops its download, keeping
// the partial, and holds new work (nats_unreachable), before NATS gives
// the product to another replica.
func TestCutOffFromNATSStopsTheDownload(t *testing.T) {
	dir := t.TempDir()
	b := startBadDayRate(t, dir, 256<<10, func(c *fetchconfig.Config) { c.AckWait = 6 * time.Second })
	b.publish(t, 16<<20) // a minute at 256 KiB/s
	until(t, 20*time.Second, "the download running", func() bool {
		return testutil.ToFloat64(b.app.running) == 1 && partialBytes(dir) > 0
	})
	b.srv.Shutdown()
	until(t, 15*time.Second, "the download stopped and the work held", func() bool {
		return testutil.ToFloat64(b.app.running) == 0 && b.app.health.report()[holdNATS] != ""
	})
	if v := testutil.ToFloat64(b.app.health.paused.WithLabelValues(holdNATS)); v != 1 {
		t.Errorf("cdse_fetcher_paused{nats_unreachable} %v", v)
	}
	if partialBytes(dir) == 0 {
		t.Error("the partial is not kept")
	}
}

// partialBytes is the size of the partial downloads under dir.
func partialBytes(dir string) int64 {
	var n int64
	filepath.Walk(filepath.Join(dir, ".partial"), func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// TestUnverifiedIsSaidApart: a product stored without any checksum is
// logged as stored unverified, with why, not as a plain "product stored".
func TestUnverifiedIsSaidApart(t *testing.T) {
	b := startBadDay(t, t.TempDir(), nil)
	p := b.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) {
		p.ContentLength, p.ChecksumForm = 64<<10, cdsesim.ChecksumNone
	})[0]
	b.publishProduct(t, p)
	until(t, 20*time.Second, "the product stored", func() bool { return b.events(t, b.cfg.FetchedPrefix) == 1 })
	var said, plain bool
	for _, e := range b.hook.AllEntries() {
		switch {
		case e.Message == "product stored unverified" && e.Level == logrus.WarnLevel && e.Data["unverified"] != "":
			said = true
		case e.Message == "product stored":
			plain = true
		}
	}
	if !said || plain {
		t.Errorf("unverified said apart %v, plain \"product stored\" %v", said, plain)
	}
}
