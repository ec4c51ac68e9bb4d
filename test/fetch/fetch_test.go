// Package fetch runs the fetcher binary as it runs in production: the real
// receiver (embedded NATS), the catalogue simulator with its download
// host, a real S3 store (versitygw) or a directory, and checks what lands
// in the target and on the fetcher's stream.
package fetch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
	"github.com/cdse-jetstream/receiver/internal/testkit/simhosts"
)

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Cleanup()
	os.Exit(code)
}

const (
	user, password = "op@example.org", "account-pw"
	fetchedStream  = "CDSE_FETCHED"
)

type world struct {
	sim      *cdsesim.Sim
	simURL   string // the catalogue host
	dlURL    string // the download host's OData root
	receiver *receivertest.Receiver
	js       jetstream.JetStream
}

// newWorld starts the simulator on two hosts (catalogue, download) and the
// receiver, on an external NATS.
func newWorld(t *testing.T) *world { return startWorld(t, false) }

// fetcherUser is the fetcher's login on the receiver's embedded server.
const fetcherUser, fetcherPassword = "fetcher", "fetcher-password"

// startWorld is newWorld; embedded runs the receiver's embedded NATS
// server with a fetcher login (NATS_EMBEDDED_FETCHER_USER) instead;
// receiver changes the receiver's settings beyond those.
func startWorld(t *testing.T, embedded bool, receiver ...func(*config.Config)) *world {
	t.Helper()
	h := simhosts.Start(t, cdsesim.Options{Users: map[string]cdsesim.User{user: {Password: password}},
		DownloadRate: cdsesim.Unthrottled, MaxDownloads: -1, Seed: 7}, "127.0.0.1")
	w := &world{sim: h.Sim, simURL: h.Catalogue, dlURL: h.Download}
	if embedded {
		w.receiver = receivertest.Start(t, func(c *config.Config) {
			c.NATSEmbeddedFetcherUser, c.NATSEmbeddedFetcherPassword = fetcherUser, fetcherPassword
			for _, r := range receiver {
				r(c)
			}
		})
	} else {
		// An external NATS, as in production.
		ns := natstest.RunJetStream(t)
		w.receiver = receivertest.Start(t, func(c *config.Config) {
			c.NATSURL = ns.ClientURL()
			for _, r := range receiver {
				r(c)
			}
		})
	}
	js, closeNC := natstest.JetStream(t, w.receiver.NATSURL)
	t.Cleanup(closeNC)
	w.js = js
	return w
}

// notify posts the created notification of each product to the receiver,
// as the catalogue's PUSH does.
func (w *world) notify(t *testing.T, ps ...*cdsesim.Product) {
	t.Helper()
	w.notifyEvent(t, "created", ps...)
}

// notifyEvent posts the notification of event for each product.
func (w *world) notifyEvent(t *testing.T, event string, ps ...*cdsesim.Product) {
	t.Helper()
	for _, p := range ps {
		body, err := json.Marshal(map[string]any{
			"@odata.context": "$metadata#Notification/$entity", "SubscriptionEvent": event,
			"ProductId": p.ID, "ProductName": p.Name, "SubscriptionId": uuid.NewString(),
			"NotificationDate": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "value": p.Entity(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if code, answer := w.receiver.Post(t, body); code != http.StatusOK {
			t.Fatalf("post %s: %d %s", p.ID, code, answer)
		}
	}
}

// fetcher starts the fetcher binary with env over the world's settings;
// it is stopped by SIGTERM at the end of the test, and must exit within a
// bound.
func (w *world) fetcher(t *testing.T, env map[string]string) (admin string, logs *bins.SyncBuffer, stop func() time.Duration) {
	t.Helper()
	p := w.startFetcher(t, env)
	return p.admin, p.logs, p.stop
}

// fetcherProc is a running fetcher binary.
type fetcherProc struct {
	admin string
	logs  *bins.SyncBuffer
	// stop sends SIGTERM and waits for the exit (bounded), returning
	// how long the fetcher took; kill sends SIGKILL and waits.
	stop func() time.Duration
	kill func()
	// exit waits d for the fetcher to end by itself, and returns its
	// exit code.
	exit func(d time.Duration) int
	// signal sends sig (a Ctrl-C: SIGINT; SIGSTOP, SIGCONT) to the
	// running process, without waiting.
	signal func(sig os.Signal) error
}

// startFetcher is fetcher, with a kill -9 too.
func (w *world) startFetcher(t *testing.T, env map[string]string) *fetcherProc {
	t.Helper()
	p := w.launchFetcher(t, env)
	if err := scrape.Status("http://"+p.admin+"/readyz", http.StatusOK, 20*time.Second); err != nil {
		t.Fatalf("fetcher not ready: %v\n%s", err, p.logs)
	}
	return p
}

// launchFetcher is startFetcher without waiting for it to be ready: for
// a fetcher that is not to become ready.
func (w *world) launchFetcher(t *testing.T, env map[string]string) *fetcherProc {
	t.Helper()
	var admin string
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	port := natstest.FreePort(t)
	admin = fmt.Sprintf("127.0.0.1:%d", port)
	all := w.fetcherEnv(env)
	all["FETCH_ADMIN_ADDR"] = admin
	cmd := exec.Command(bin)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for k, v := range all {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	logs := &bins.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var once sync.Once
	var took time.Duration
	stop := func() time.Duration {
		once.Do(func() {
			start := time.Now()
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				took = time.Since(start)
				if err != nil {
					t.Errorf("fetcher exited: %v\n%s", err, logs)
				}
			case <-time.After(20 * time.Second):
				_ = cmd.Process.Kill()
				took = 20 * time.Second
				t.Errorf("fetcher still running 20s after SIGTERM\n%s", logs)
			}
		})
		return took
	}
	exit := func(d time.Duration) int {
		code := -1
		once.Do(func() {
			select {
			case <-exited:
				code = cmd.ProcessState.ExitCode()
			case <-time.After(d):
				_ = cmd.Process.Kill()
				<-exited
				t.Errorf("fetcher still running after %s\n%s", d, logs)
			}
		})
		return code
	}
	kill := func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			select {
			case <-exited:
			case <-time.After(20 * time.Second):
				t.Errorf("fetcher still running 20s after SIGKILL")
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("fetcher's logs:\n%s", logs)
		}
	})
	return &fetcherProc{admin: admin, logs: logs, stop: stop, kill: kill, exit: exit, signal: cmd.Process.Signal}
}

// fetcherEnv is the world's settings of a fetcher, with env over them
// (an admin address is the caller's).
func (w *world) fetcherEnv(env map[string]string) map[string]string {
	all := map[string]string{
		"NATS_URL": w.receiver.NATSURL, "FETCH_START": "all",
		"CDSE_USERNAME": user, "CDSE_PASSWORD": password, "CDSE_TOKEN_URL": w.simURL + cdsesim.TokenPath,
		"CDSE_CATALOGUE_URL": w.simURL + "/odata/v1", "CDSE_DOWNLOAD_URL": w.dlURL, "FETCH_TRUSTED_HOSTS": "127.0.0.1",
		"FETCH_SHUTDOWN_TIMEOUT": "5s", "LOG_FORMAT": "text", "LOG_LEVEL": "debug",
	}
	for k, v := range env {
		all[k] = v
	}
	return all
}

// events waits until the fetcher's stream holds n messages, then a moment
// for any duplicate (there must be none), and returns them by subject
// prefix.
func (w *world) events(t *testing.T, n int) (fetched, failed []natstest.Msg) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, err := w.js.Stream(context.Background(), fetchedStream)
		if err == nil {
			info, err := s.Info(context.Background())
			if err == nil && info.State.Msgs >= uint64(n) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fetcher's stream did not reach %d messages in 60s", n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range natstest.StreamMessages(t, w.js, fetchedStream) {
		switch {
		case strings.HasPrefix(m.Subject, "cdse.fetched."):
			fetched = append(fetched, m)
		case strings.HasPrefix(m.Subject, "cdse.fetchfailed."):
			failed = append(failed, m)
		default:
			t.Errorf("unexpected subject %s", m.Subject)
		}
	}
	return fetched, failed
}

// check holds the fetched and failed events to the products: each good
// product fetched once, with its checksums, its object where the event
// says; the corrupt one failed with the reason. object reads a stored
// object's bytes by its URL.
func check(t *testing.T, good []*cdsesim.Product, bad *cdsesim.Product, fetched, failed []natstest.Msg, object func(url string) []byte) {
	t.Helper()
	byID := map[string]natstest.Msg{}
	for _, m := range fetched {
		id := m.Header.Get("Cdse-Product-Id")
		if _, dup := byID[id]; dup {
			t.Errorf("product %s fetched twice", id)
		}
		byID[id] = m
	}
	if len(fetched) != len(good) {
		t.Errorf("%d fetched events, want %d", len(fetched), len(good))
	}
	for _, p := range good {
		m, ok := byID[p.ID]
		if !ok {
			t.Errorf("no fetched event for %s", p.ID)
			continue
		}
		md5, b3 := p.Checksums()
		want := map[string]string{
			"Cdse-Checksum-MD5": md5, "Cdse-Checksum-BLAKE3": b3, "Cdse-Object-Size": fmt.Sprint(p.ContentLength),
			"Cdse-Product-Name": p.Name, "Cdse-Event": "created", "Cdse-Unverified": "",
		}
		for k, v := range want {
			if got := m.Header.Get(k); got != v {
				t.Errorf("%s: %s %q, want %q", p.ID, k, got, v)
			}
		}
		if m.Header.Get("Cdse-Fetch-Took") == "" || !strings.HasPrefix(m.Subject, "cdse.fetched.created.") {
			t.Errorf("%s: subject %s, headers %v", p.ID, m.Subject, m.Header)
		}
		url := m.Header.Get("Cdse-Object-Url")
		if !strings.HasSuffix(url, "/"+p.Name+".zip") {
			t.Errorf("%s: object %s", p.ID, url)
		}
		content, err := io.ReadAll(p.Content())
		if err != nil {
			t.Fatal(err)
		}
		if got := object(url); !bytes.Equal(got, content) {
			t.Errorf("%s: the stored bytes (%d) are not the product's (%d)", p.ID, len(got), p.ContentLength)
		}
	}
	if len(failed) != 1 {
		t.Fatalf("%d failed events, want 1 (the corrupt product)", len(failed))
	}
	f := failed[0]
	if f.Header.Get("Cdse-Product-Id") != bad.ID || !strings.Contains(strings.ToLower(f.Header.Get("Cdse-Fetch-Error")), "checksum") {
		t.Errorf("failed event: %s %v", f.Subject, f.Header)
	}
	if !bytes.Contains(f.Data, []byte(bad.ID)) {
		t.Errorf("the failed event does not hold the notification: %s", f.Data)
	}
}

// products are three Sentinel-2 products and one whose bytes the download
// host always corrupts.
func products(t *testing.T, w *world) (good []*cdsesim.Product, bad *cdsesim.Product) {
	t.Helper()
	good = w.sim.Generate(cdsesim.Sentinel2, 3)
	bad = w.sim.Generate(cdsesim.Sentinel1, 1)[0]
	if err := w.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Product: bad.ID, Offset: 100}); err != nil {
		t.Fatal(err)
	}
	return good, bad
}

func TestFetchIntoS3(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	store := s3test.Start(t)
	env := store.Env()
	env["FETCH_TARGET"] = "s3://" + store.Bucket + "/products"
	good, bad := products(t, w)
	w.notify(t, append(good, bad)...)
	w.fetcher(t, env)
	fetched, failed := w.events(t, len(good)+1)
	cl := store.Client()
	check(t, good, bad, fetched, failed, func(url string) []byte {
		key, ok := strings.CutPrefix(url, "s3://"+store.Bucket+"/")
		if !ok {
			t.Errorf("object %s is not in the bucket", url)
			return nil
		}
		out, err := cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(store.Bucket), Key: aws.String(key)})
		if err != nil {
			t.Errorf("get %s: %v", key, err)
			return nil
		}
		defer out.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(out.Body)
		return b.Bytes()
	})
	// Each product once in the bucket, under the key template, and
	// nothing else (no partial left, the corrupt one not stored).
	list, err := cl.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(store.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var keys, items []string
	for _, o := range list.Contents {
		if strings.HasSuffix(*o.Key, ".zip.json") {
			items = append(items, *o.Key) // their STAC items (stac_test.go)
			continue
		}
		keys = append(keys, *o.Key)
	}
	if len(keys) != len(good) || len(items) != len(good) {
		t.Errorf("bucket holds %v and the items %v, want the %d good products and an item each", keys, items, len(good))
	}
	for _, k := range keys {
		if !strings.HasPrefix(k, "products/SENTINEL-2/") {
			t.Errorf("key %s: not under products/<collection>/", k)
		}
	}
}

func TestFetchIntoDirectory(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	dir := t.TempDir()
	good, bad := products(t, w)
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir})
	w.notify(t, append(good, bad)...) // after the start: FETCH_START=all and new events alike
	fetched, failed := w.events(t, len(good)+1)
	check(t, good, bad, fetched, failed, func(url string) []byte {
		path, ok := strings.CutPrefix(url, "file://")
		if !ok || !strings.HasPrefix(path, dir+"/") {
			t.Errorf("object %s is not in %s", url, dir)
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
		}
		return b
	})
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".zip") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) != len(good) {
		t.Errorf("directory holds %v, want the %d good products", files, len(good))
	}
}

// TestFetchBesideTheEmbeddedServer: beside a receiver that runs its
// embedded NATS server with a fetcher login, the fetcher, logged in as
// that user, declares its stream, consumes the product stream and stores
// every product once (before, the embedded server refused it the stream).
func TestFetchBesideTheEmbeddedServer(t *testing.T) {
	t.Parallel()
	w := startWorld(t, true)
	dir := t.TempDir()
	good, bad := products(t, w)
	w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "NATS_USER": fetcherUser, "NATS_PASSWORD": fetcherPassword})
	w.notify(t, append(good, bad)...)
	fetched, failed := w.events(t, len(good)+1)
	check(t, good, bad, fetched, failed, func(url string) []byte {
		b, err := os.ReadFile(strings.TrimPrefix(url, "file://"))
		if err != nil {
			t.Error(err)
		}
		return b
	})
}

// TestReplicasKeepTheCap: three fetchers share the consumer, and the
// download host never sees more than FETCH_CONCURRENCY downloads at once
// (NATS's MaxAckPending is the deployment-wide cap); each product is
// fetched once.
func TestReplicasKeepTheCap(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.sim.SetDownloadRate(4 << 20) // 1 MiB products: a quarter second each, so downloads overlap
	good := w.sim.GenerateWith(cdsesim.Sentinel2, 12, func(p *cdsesim.Product) { p.ContentLength = 1 << 20 })
	w.notify(t, good...)
	dir := t.TempDir()
	for range 3 {
		w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_CONCURRENCY": "2"})
	}
	fetched, failed := w.events(t, len(good))
	if len(failed) != 0 || len(fetched) != len(good) {
		t.Fatalf("%d fetched, %d failed; want %d fetched", len(fetched), len(failed), len(good))
	}
	if n := natstest.CountBy(fetched, "Cdse-Product-Id"); len(n) != len(good) {
		t.Errorf("fetched events by product: %v", n)
	}
	peak := w.sim.DownloadStats().Peak
	t.Logf("download peak %d", peak)
	if peak > 2 || peak < 1 {
		t.Errorf("download peak %d, want 1 to 2 (FETCH_CONCURRENCY)", peak)
	}
}

// TestGetOneProduct: fetcher get stores one product by hand, under the
// server's key, without NATS.
func TestGetOneProduct(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.sim.Generate(cdsesim.Sentinel2, 1)[0]
	dir := t.TempDir()
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	code, out, errOut := bins.Run(t, bin, w.getEnv(dir), "get", p.ID, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	var res struct {
		URL  string
		Size int64
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Size != p.ContentLength || !strings.HasPrefix(res.URL, "file://"+dir+"/SENTINEL-2/") || !strings.HasSuffix(res.URL, "/"+p.Name+".zip") {
		t.Errorf("result %+v", res)
	}
	if st, err := os.Stat(strings.TrimPrefix(res.URL, "file://")); err != nil || st.Size() != p.ContentLength {
		t.Errorf("stored: %v %v", st, err)
	}
}

// getEnv is the environment of fetcher get into dir, against the world.
func (w *world) getEnv(dir string) map[string]string {
	return map[string]string{
		"FETCH_TARGET": "file://" + dir, "CDSE_USERNAME": user, "CDSE_PASSWORD": password,
		"CDSE_TOKEN_URL": w.simURL + cdsesim.TokenPath, "CDSE_CATALOGUE_URL": w.simURL + "/odata/v1",
		"CDSE_DOWNLOAD_URL": w.dlURL, "FETCH_TRUSTED_HOSTS": "127.0.0.1",
	}
}

// TestHelpAndUsage: --help names the settings; a wrong configuration is
// exit 2 with every problem named.
func TestHelpAndUsage(t *testing.T) {
	t.Parallel()
	bin := bins.Build(t, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	code, out, _ := bins.Run(t, bin, nil, "--help")
	for _, want := range []string{"FETCH_TARGET", "FETCH_CONCURRENCY", "CDSE_PASSWORD", "--target", "get", "docs/fetching.md"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("--help (exit %d) lacks %s", code, want)
		}
	}
	code, _, errOut := bins.Run(t, bin, map[string]string{"FETCH_CONCURRENCY": "0", "CDSE_PASSWORD": "hunter2-secret"})
	if code != 2 || !strings.Contains(errOut, "FETCH_TARGET") || !strings.Contains(errOut, "FETCH_CONCURRENCY") || strings.Contains(errOut, "hunter2-secret") {
		t.Errorf("exit %d:\n%s", code, errOut)
	}
	if code, out, _ := bins.Run(t, bin, nil, "--version"); code != 0 || !strings.Contains(out, "fetcher") {
		t.Errorf("--version: %d %s", code, out)
	}
}

// TestTransientThenDeleted: a product the download host refuses with 503
// more often than one delivery tries is Nak'd and fetched on a later
// delivery, once; its deleted event, with FETCH_ON_DELETE=delete, removes
// the object and is published.
func TestTransientThenDeleted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	p := w.sim.Generate(cdsesim.Sentinel2, 1)[0]
	if err := w.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 503, Product: p.ID, Count: 4}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	admin, _, _ := w.fetcher(t, map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_ON_DELETE": "delete"})
	w.notify(t, p)
	fetched, failed := w.events(t, 1)
	if len(fetched) != 1 || len(failed) != 0 {
		t.Fatalf("%d fetched, %d failed", len(fetched), len(failed))
	}
	path := strings.TrimPrefix(fetched[0].Header.Get("Cdse-Object-Url"), "file://")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	if v := scrape.Value(t, "http://"+admin, `cdse_fetcher_events_total{outcome="retried"}`); v == "" || v == "0" {
		t.Errorf("retried: %q, want at least 1", v)
	}
	w.notifyEvent(t, "deleted", p)
	fetched, _ = w.events(t, 2)
	if len(fetched) != 2 || fetched[1].Subject != "cdse.fetched.deleted.SENTINEL-2."+fetched[0].Header.Get("Cdse-Product-Type") {
		t.Fatalf("events: %v", fetched)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("%s after the deleted event: %v", path, err)
	}
}

// TestSIGTERMCutsAndAnotherReplicaFinishes: SIGTERM during a slow download
// ends the fetcher within FETCH_SHUTDOWN_TIMEOUT and a bound; the product
// is not lost: another fetcher stores it, once.
func TestSIGTERMCutsAndAnotherReplicaFinishes(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.sim.SetDownloadRate(256 << 10) // 2 MiB: 8 s
	p := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = 2 << 20 })[0]
	dir := t.TempDir()
	env := map[string]string{"FETCH_TARGET": "file://" + dir, "FETCH_SHUTDOWN_TIMEOUT": "1s"}
	_, _, stop := w.fetcher(t, env)
	w.notify(t, p)
	deadline := time.Now().Add(20 * time.Second)
	for w.sim.DownloadStats().Users[user].Active == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the download did not start")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if took := stop(); took > 8*time.Second {
		t.Errorf("exit %s after SIGTERM, want within FETCH_SHUTDOWN_TIMEOUT (1s) and the cut's bound", took)
	}
	w.sim.SetDownloadRate(cdsesim.Unthrottled)
	w.fetcher(t, env)
	fetched, failed := w.events(t, 1)
	if len(fetched) != 1 || len(failed) != 0 || fetched[0].Header.Get("Cdse-Object-Size") != fmt.Sprint(p.ContentLength) {
		t.Fatalf("%d fetched, %d failed: %v", len(fetched), len(failed), fetched)
	}
}
