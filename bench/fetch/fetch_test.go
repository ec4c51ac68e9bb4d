// Package fetch is `make bench-fetch`: the fetcher server (products
// notified through the real receiver, both hashes on), into a directory and
// into a real S3 store (versitygw), against a plain copy of the same bytes
// from the same simulator to io.Discard (the reference) and a plain
// copy into the same S3 store (what the store costs by itself), in the same
// rounds; the hashing ceiling unthrottled; and the fetcher's peak RSS for a
// large product (`fetcher get`). It is a benchmark, not a test: `go test`
// runs nothing here unless asked for -bench.
//
//	make bench-fetch                      # 3 rounds of 200 MiB products, 2 GiB for the RSS
//	make bench-fetch BENCHFLAGS='-rounds 5 -mib 400 -rss-mib 4096'
//	make bench-fetch BENCHFLAGS='-rounds 2 -streams 4 -phases -rss-mib 0'  # where each run's time went
//	make bench-fetch BENCHFLAGS='-rounds 1 -mib 16 -streams "" -unthrottled=false -rss-mib 0'  # the file selection alone, small
//	go test ./bench/fetch -run '^$' -bench FetchSelections -benchtime 1x  # what common selections weigh, computed
package fetch

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/zeebo/blake3"

	"github.com/cdse-jetstream/receiver/event"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/cdse/manifest"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/testkit/bins"
	"github.com/cdse-jetstream/receiver/internal/testkit/natstest"
	"github.com/cdse-jetstream/receiver/internal/testkit/receivertest"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
	"github.com/cdse-jetstream/receiver/internal/testkit/scrape"
	"github.com/cdse-jetstream/receiver/internal/testkit/simhosts"
)

var (
	rounds      = flag.Int("rounds", 3, "rounds of the throttled comparison (the modes take turns in each)")
	mib         = flag.Int64("mib", 200, "size of a product of the throttled comparison, MiB")
	rate        = flag.Int64("rate", 20_000_000, "the simulator's rate per connection, bytes a second (the live general account's 20 MB/s)")
	rssMiB      = flag.Int64("rss-mib", 2048, "size of the product whose peak RSS is measured, MiB (0: skip)")
	partMiB     = flag.Int64("part-mib", 5, "FETCH_S3_PART_SIZE of the runs, MiB")
	s3Conc      = flag.Int("s3-concurrency", 2, "FETCH_S3_CONCURRENCY of the runs")
	streams     = flag.String("streams", "1,4", "the throttled comparison's numbers of concurrent streams, comma-separated")
	phases      = flag.Bool("phases", false, "print where each run's time went: until the first download, the downloads themselves, after the last")
	files       = flag.String("files", l2aBands, "FETCH_FILES of the file selection's runs against the whole archive, one S2 L2A product of -mib MiB each (empty: skip)")
	unthrottled = flag.Bool("unthrottled", true, "the unthrottled runs: the hashing ceiling and 1 GiB into the directory")
)

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Cleanup()
	os.Exit(code)
}

const user, password = "bench", "bench-pw"

// world is the simulator on two hosts (catalogue 127.0.0.1, download
// localhost), the S3 store and the fetcher binary.
type world struct {
	sim      *cdsesim.Sim
	catalog  string // OData root on the catalogue host
	download string // OData root on the download host
	tokenURL string
	s3       *s3test.Server
	fetcher  string
	dir      string
	receiver *receivertest.Receiver
	js       jetstream.JetStream
	runs     int // fetcher servers started, for their consumers' names
}

func start(b *testing.B) *world {
	b.Helper()
	h := simhosts.Start(b, cdsesim.Options{Users: map[string]cdsesim.User{user: {Password: password}},
		DownloadRate: *rate, MaxDownloads: -1, Seed: 1}, "localhost")
	w := &world{sim: h.Sim, download: h.Download, dir: b.TempDir(), catalog: h.Catalogue + "/odata/v1", tokenURL: h.Catalogue + cdsesim.TokenPath}
	w.s3 = s3test.Start(b)
	w.fetcher = bins.Build(b, "github.com/cdse-jetstream/receiver/cmd/fetcher")
	// The receiver on an external NATS, as in production: the fetcher
	// servers consume what it stores.
	ns := natstest.RunJetStream(b)
	w.receiver = receivertest.Start(b, func(c *config.Config) { c.NATSURL = ns.ClientURL() })
	js, closeNC := natstest.JetStream(b, ns.ClientURL())
	b.Cleanup(closeNC)
	w.js = js
	return w
}

// env is the fetcher's environment for target.
func (w *world) env(b *testing.B, target string, extra ...string) []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(),
		"FETCH_TARGET=" + target, "CDSE_USERNAME=" + user, "CDSE_PASSWORD=" + password,
		"CDSE_TOKEN_URL=" + w.tokenURL, "CDSE_CATALOGUE_URL=" + w.catalog, "CDSE_DOWNLOAD_URL=" + w.download,
		"FETCH_TRUSTED_HOSTS=localhost", "LOG_LEVEL=warn", "NATS_URL=" + w.receiver.NATSURL,
		fmt.Sprintf("FETCH_S3_PART_SIZE=%dMiB", *partMiB), fmt.Sprintf("FETCH_S3_CONCURRENCY=%d", *s3Conc),
		"AWS_CONFIG_FILE=/nonexistent", "AWS_SHARED_CREDENTIALS_FILE=/nonexistent", "AWS_EC2_METADATA_DISABLED=true"}
	for k, v := range w.s3.Env() {
		env = append(env, k+"="+v)
	}
	return append(env, extra...)
}

// products are n new products of size bytes (both checksums).
func (w *world) products(n int, size int64) []*cdsesim.Product {
	return w.sim.GenerateWith(cdsesim.Sentinel2, n, func(p *cdsesim.Product) { p.ContentLength = size })
}

// run is one measured transfer of every product at once.
type run struct {
	bytes  int64
	wall   time.Duration
	phases string        // where the wall time went (-phases)
	cpu    time.Duration // of the fetcher processes (user + system)
	maxRSS int64         // the largest peak RSS of one fetcher process, bytes
}

func (r run) mbps() float64 { return float64(r.bytes) / r.wall.Seconds() / 1e6 }

// phasesOf says where a run that began at startAt and took wall went, from
// the simulator's record of the products' downloads: until the first one
// began, how far apart they began, how long each took (slowest, and its
// rate), and what came after the last one ended (the commits, the fetched
// events).
func (w *world) phasesOf(ps []*cdsesim.Product, startAt time.Time, wall time.Duration) string {
	ids := map[string]bool{}
	for _, p := range ps {
		ids[p.ID] = true
	}
	var first, lastStart, lastDone time.Time
	var slowest time.Duration
	var slowBytes int64
	for _, r := range w.sim.DownloadLog() {
		if !ids[r.Product] || r.Method != http.MethodGet || r.Bytes == 0 {
			continue
		}
		if first.IsZero() || r.At.Before(first) {
			first = r.At
		}
		if r.At.After(lastStart) {
			lastStart = r.At
		}
		if r.Done.After(lastDone) {
			lastDone = r.Done
		}
		if d := r.Done.Sub(r.At); d > slowest {
			slowest, slowBytes = d, r.Bytes
		}
	}
	if first.IsZero() {
		return "no download recorded"
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
	return fmt.Sprintf("first download after %s, starts spread over %s, slowest download %s (%.1f MB/s), after the last one %s",
		ms(first.Sub(startAt)), ms(lastStart.Sub(first)), ms(slowest), float64(slowBytes)/slowest.Seconds()/1e6, ms(startAt.Add(wall).Sub(lastDone)))
}

// serve runs the fetcher as it is deployed: one server, FETCH_CONCURRENCY
// the number of products, a consumer of its own that starts with what
// arrives from now; the receiver is sent each product's created
// notification, and the run ends when every fetched event is stored.
func (w *world) serve(b *testing.B, target string, ps []*cdsesim.Product, extra ...string) run {
	b.Helper()
	w.runs++
	admin := fmt.Sprintf("127.0.0.1:%d", natstest.FreePort(b))
	cmd := exec.Command(w.fetcher)
	cmd.Env = w.env(b, target, append([]string{"FETCH_ADMIN_ADDR=" + admin, "FETCH_START=new", fmt.Sprintf("FETCH_CONSUMER=bench-%d", w.runs),
		fmt.Sprintf("FETCH_CONCURRENCY=%d", len(ps))}, extra...)...)
	logs := &bins.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	if err := scrape.Status("http://"+admin+"/readyz", http.StatusOK, 30*time.Second); err != nil {
		b.Fatalf("fetcher not ready: %v\n%s", err, logs)
	}
	before := natstest.StreamCount(b, w.js, event.DefaultFetchedStream)
	exited := make(chan struct{})
	hwm := peakRSS(cmd.Process.Pid, exited)
	cpu0 := procCPU(cmd.Process.Pid)
	// The notifications are written before the clock starts: the first
	// Entity of a product hashes its whole content (400 ms for 200 MiB on
	// this machine), which is the simulator's cost, not the fetcher's.
	// Charged to the runs, it spread four downloads' starts over 1.2 s.
	bodies := make([][]byte, len(ps))
	for i, p := range ps {
		body, err := json.Marshal(map[string]any{
			"@odata.context": "$metadata#Notification/$entity", "SubscriptionEvent": "created",
			"ProductId": p.ID, "ProductName": p.Name, "SubscriptionId": "5f0c0a3e-6d1b-4a57-9d3e-3c2a1b0e9f11",
			"NotificationDate": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), "value": p.Entity(),
		})
		if err != nil {
			b.Fatal(err)
		}
		bodies[i] = body
	}
	startAt := time.Now()
	for i, body := range bodies {
		if code, answer := w.receiver.Post(b, body); code != http.StatusOK {
			b.Fatalf("post %s: %d %s", ps[i].ID, code, answer)
		}
	}
	if err := natstest.WaitStreamCount(b, w.js, event.DefaultFetchedStream, before+uint64(len(ps)), 30*time.Minute); err != nil {
		b.Fatalf("%v\n%s", err, logs)
	}
	out := run{wall: time.Since(startAt), cpu: procCPU(cmd.Process.Pid) - cpu0}
	out.phases = w.phasesOf(ps, startAt, out.wall)
	close(exited)
	out.maxRSS = <-hwm
	for _, p := range ps {
		out.bytes += p.ContentLength
	}
	return out
}

// procCPU is the user and system time of a running process so far
// (/proc/<pid>/stat, in clock ticks of 10 ms).
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	var utime, stime int64
	_, _ = fmt.Sscan(f[11], &utime)
	_, _ = fmt.Sscan(f[12], &stime)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// fetch runs `fetcher get` (one product by hand) for each product at once
// into target: a process, a login and the catalogue's entity each.
func (w *world) fetch(b *testing.B, target string, ps []*cdsesim.Product, extra ...string) run {
	b.Helper()
	env := w.env(b, target, extra...)
	var (
		mu  sync.Mutex
		out run
		wg  sync.WaitGroup
	)
	startAt := time.Now()
	for _, p := range ps {
		cmd := exec.Command(w.fetcher, "get", p.ID)
		cmd.Env = env
		var logs strings.Builder
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		wg.Add(1)
		exited := make(chan struct{})
		hwm := peakRSS(cmd.Process.Pid, exited)
		go func() {
			defer wg.Done()
			err := cmd.Wait()
			close(exited)
			rss := <-hwm
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				b.Errorf("fetcher get %s: %v\n%s", p.ID, err, logs.String())
				return
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			out.cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			out.maxRSS = max(out.maxRSS, rss)
			out.bytes += p.ContentLength
		}()
	}
	wg.Wait()
	out.wall = time.Since(startAt)
	return out
}

// peakRSS sends the process's peak RSS (VmHWM), read every 20 ms until
// exited is closed. Not the rusage of wait4: Linux counts in a child's
// ru_maxrss the RSS of the parent it was forked from (this benchmark, with
// the simulator in it), which hid the fetcher's own.
func peakRSS(pid int, exited <-chan struct{}) <-chan int64 {
	out := make(chan int64, 1)
	go func() {
		var peak int64
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
				for _, l := range strings.Split(string(b), "\n") {
					var kb int64
					if _, err := fmt.Sscanf(l, "VmHWM: %d kB", &kb); err == nil {
						peak = max(peak, kb<<10)
					}
				}
			}
			select {
			case <-exited:
				out <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

// copyPlain downloads each product at once to io.Discard with Go's HTTP
// client straight from the download host, each after a login of its own
// (what curl after a token request does): the reference.
func (w *world) copyPlain(b *testing.B, ps []*cdsesim.Product) run {
	return w.copyEach(b, ps, "plain copy", func(_ *cdsesim.Product, body io.Reader) (int64, error) {
		return io.Copy(io.Discard, body)
	})
}

// copyPlainS3 is copyPlain into the S3 store instead of io.Discard: each
// body streamed through the SDK's transfer manager with the fetcher's part
// size and concurrency, nothing verified, no NATS. Not the issue's
// reference (that is copyPlain); it says what the store on these cores
// costs by itself, so that the fetcher's own share of an S3 run is seen.
func (w *world) copyPlainS3(b *testing.B, ps []*cdsesim.Product) run {
	up := transfermanager.New(w.s3.Client(), func(o *transfermanager.Options) {
		o.PartSizeBytes, o.MultipartUploadThreshold, o.Concurrency = *partMiB<<20, *partMiB<<20, *s3Conc
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired // as the fetcher's
	})
	return w.copyEach(b, ps, "plain copy into S3", func(p *cdsesim.Product, body io.Reader) (int64, error) {
		c := &countingReader{r: body}
		_, err := up.UploadObject(context.Background(), &transfermanager.UploadObjectInput{
			Bucket: aws.String(w.s3.Bucket), Key: aws.String("plain/" + p.ID + ".zip"), Body: c})
		return c.n, err
	})
}

// copyEach downloads each product at once, after a login of its own, and
// hands its body to sink; the run ends when every sink has returned.
func (w *world) copyEach(b *testing.B, ps []*cdsesim.Product, name string, sink func(*cdsesim.Product, io.Reader) (int64, error)) run {
	b.Helper()
	ctx := context.Background()
	var (
		mu  sync.Mutex
		out run
		wg  sync.WaitGroup
	)
	startAt := time.Now()
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ts := cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: w.tokenURL, Username: user, Password: password})
			tok, err := ts.Token(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, w.download+"/Products("+p.ID+")/$value", nil)
			req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			n, err := sink(p, resp.Body)
			resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			if err != nil || n != p.ContentLength || resp.StatusCode != http.StatusOK {
				b.Errorf("%s of %s: %d %d bytes: %v", name, p.ID, resp.StatusCode, n, err)
			}
			out.bytes += n
		}()
	}
	wg.Wait()
	out.wall = time.Since(startAt)
	out.phases = w.phasesOf(ps, startAt, out.wall)
	return out
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// clean removes what the runs stored (the disk is not the subject).
func (w *world) clean(b *testing.B) {
	b.Helper()
	entries, _ := os.ReadDir(w.dir)
	for _, e := range entries {
		os.RemoveAll(filepath.Join(w.dir, e.Name()))
	}
	ctx := context.Background()
	c := w.s3.Client()
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(w.s3.Bucket)})
	if err != nil {
		b.Fatal(err)
	}
	for _, o := range list.Contents {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(w.s3.Bucket), Key: o.Key}); err != nil {
			b.Fatal(err)
		}
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkFetch prints the figures of bench/RESULTS.md's fetcher section.
func BenchmarkFetch(b *testing.B) {
	w := start(b)
	size := *mib << 20
	fmt.Printf("the fetcher server (FETCH_CONCURRENCY = streams, products notified through the receiver) against a plain copy (a login, then Go's client to io.Discard), %d rounds of %d MiB products at %.0f MB/s a connection; S3 parts %d MiB x %d\n",
		*rounds, *mib, float64(*rate)/1e6, *partMiB, *s3Conc)
	type mode struct {
		name string
		do   func(ps []*cdsesim.Product) run
	}
	modes := []mode{
		{"plain copy", func(ps []*cdsesim.Product) run { return w.copyPlain(b, ps) }},
		{"fetcher, directory", func(ps []*cdsesim.Product) run { return w.serve(b, "file://"+w.dir, ps) }},
		{"fetcher, S3", func(ps []*cdsesim.Product) run { return w.serve(b, "s3://"+w.s3.Bucket+"/bench", ps) }},
		{"plain copy into S3", func(ps []*cdsesim.Product) run { return w.copyPlainS3(b, ps) }},
	}
	for _, f := range strings.Split(*streams, ",") {
		if strings.TrimSpace(f) == "" {
			continue // -streams "": no throttled comparison
		}
		streams, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || streams < 1 {
			b.Fatalf("-streams: %q is not a number of streams", f)
		}
		mbps := map[string][]float64{}
		ratios := map[string][]float64{}
		rss := map[string]int64{}
		var s3own []float64 // the fetcher into S3 / the plain copy into S3
		for r := range *rounds {
			got := map[string]run{}
			// The modes take turns: each round starts with the next one.
			for i := range modes {
				m := modes[(i+r)%len(modes)]
				res := m.do(w.products(streams, size))
				w.clean(b)
				got[m.name] = res
				mbps[m.name] = append(mbps[m.name], res.mbps())
				if *phases {
					fmt.Printf("    %s: %.1f MB/s; %s\n", m.name, res.mbps(), res.phases)
				}
				rss[m.name] = max(rss[m.name], res.maxRSS)
			}
			for _, m := range modes[1:] {
				ratios[m.name] = append(ratios[m.name], got[m.name].mbps()/got["plain copy"].mbps())
			}
			s3own = append(s3own, got["fetcher, S3"].mbps()/got["plain copy into S3"].mbps())
			fmt.Printf("  %d stream(s), round %d: plain %.1f MB/s, directory %.1f (%.3f), S3 %.1f (%.3f); plain copy into S3 %.1f (%.3f), the fetcher's S3 run / it %.3f\n", streams, r+1,
				got["plain copy"].mbps(), got["fetcher, directory"].mbps(), got["fetcher, directory"].mbps()/got["plain copy"].mbps(),
				got["fetcher, S3"].mbps(), got["fetcher, S3"].mbps()/got["plain copy"].mbps(),
				got["plain copy into S3"].mbps(), got["plain copy into S3"].mbps()/got["plain copy"].mbps(), s3own[len(s3own)-1])
		}
		for _, m := range modes {
			line := fmt.Sprintf("%d stream(s) %-20s median %6.1f MB/s", streams, m.name+":", median(mbps[m.name]))
			if m.name != "plain copy" {
				line += fmt.Sprintf("  / plain copy: median %.3f (rounds %.3f-%.3f)",
					median(ratios[m.name]), slices.Min(ratios[m.name]), slices.Max(ratios[m.name]))
				if rss[m.name] > 0 { // the fetcher's process
					line += fmt.Sprintf("  peak RSS %.1f MiB", float64(rss[m.name])/(1<<20))
				}
				b.ReportMetric(median(ratios[m.name]), fmt.Sprintf("ratio-%s-%d", strings.TrimPrefix(strings.ReplaceAll(m.name, " ", ""), "fetcher,"), streams))
			}
			fmt.Println(line)
		}
		fmt.Printf("%d stream(s) the fetcher into S3 / the plain copy into S3: median %.3f (rounds %.3f-%.3f)\n", streams, median(s3own), slices.Min(s3own), slices.Max(s3own))
	}

	if *files != "" {
		w.selection(b, size)
	}

	// Unthrottled: what the hashes cost, and the fetcher's own ceiling.
	w.sim.SetDownloadRate(cdsesim.Unthrottled)
	if *unthrottled {
		hashCeiling(b)
		big := w.products(1, 1<<30)
		res := w.serve(b, "file://"+w.dir, big)
		w.clean(b)
		fmt.Printf("unthrottled, 1 GiB into the directory (server): %.0f MB/s, %.0f MB/s per core of the fetcher's CPU (%.2f s), peak RSS %.1f MiB\n",
			res.mbps(), float64(res.bytes)/res.cpu.Seconds()/1e6, res.cpu.Seconds(), float64(res.maxRSS)/(1<<20))
	}

	if *rssMiB > 0 {
		for _, t := range []struct{ name, target string }{{"S3", "s3://" + w.s3.Bucket + "/bench"}, {"directory", "file://" + w.dir}} {
			ps := w.products(1, *rssMiB<<20)
			res := w.fetch(b, t.target, ps)
			w.clean(b)
			fmt.Printf("peak RSS, one %d MiB product into %s (unthrottled, %.0f MB/s): %.1f MiB\n", *rssMiB, t.name, res.mbps(), float64(res.maxRSS)/(1<<20))
			b.ReportMetric(float64(res.maxRSS)/(1<<20), "rss-MiB-"+t.name)
		}
	}
}

// hashCeiling is MD5 and BLAKE3 over the same bytes in memory, as the
// engine runs them (one writer feeding both), in MB/s of one core.
func hashCeiling(b *testing.B) {
	buf, err := io.ReadAll(cdsesim.ProductContent("ceiling", 64<<20))
	if err != nil {
		b.Fatal(err)
	}
	// The thread's own CPU: the loop stays on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, h := range []struct {
		name string
		w    func() io.Writer
	}{
		{"MD5", func() io.Writer { return md5.New() }},
		{"BLAKE3", func() io.Writer { return blake3.New() }},
		{"MD5 + BLAKE3", func() io.Writer { return io.MultiWriter(md5.New(), blake3.New()) }},
	} {
		var before, after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &before)
		const times = 8
		wr := h.w()
		for range times {
			_, _ = wr.Write(buf)
		}
		_ = syscall.Getrusage(syscall.RUSAGE_THREAD, &after)
		cpu := time.Duration(after.Utime.Nano() - before.Utime.Nano() + after.Stime.Nano() - before.Stime.Nano())
		fmt.Printf("hashing ceiling, %-13s %6.0f MB/s per core\n", h.name+":", float64(times*len(buf))/cpu.Seconds()/1e6)
	}
}

// l2aBands is the selection: the four 10 m bands of a Sentinel-2
// L2A product and its metadata.
const l2aBands = "GRANULE/*/IMG_DATA/R10m/*_B0[2348]_10m.jp2,MTD_MSIL2A.xml"

// l2a makes a generated Sentinel-2 product an L2A one.
func l2a(p *cdsesim.Product) {
	p.Name = strings.Replace(p.Name, "MSIL1C", "MSIL2A", 1)
}

// selection is the file selection against the whole archive: one S2 L2A
// product of size bytes a run, at the throttled rate, into the directory
// (the fetcher server either way, the modes taking turns each round);
// the time each took and the bytes the download host sent for it.
func (w *world) selection(b *testing.B, size int64) {
	b.Helper()
	type result struct {
		wall  []float64 // seconds
		bytes int64     // sent for the last product
	}
	got := map[string]*result{"whole archive": {}, "files": {}}
	for r := range *rounds {
		for i := range 2 {
			name, extra := "whole archive", []string(nil)
			if (i+r)%2 == 1 {
				name, extra = "files", []string{"FETCH_FILES=" + *files}
			}
			ps := w.sim.GenerateWith(cdsesim.Sentinel2, 1, func(p *cdsesim.Product) { p.ContentLength = size; l2a(p) })
			res := w.serve(b, "file://"+w.dir, ps, extra...)
			w.clean(b)
			d := w.sim.ProductDownloads(ps[0].ID)
			got[name].wall = append(got[name].wall, res.wall.Seconds())
			got[name].bytes = d.ArchiveBytes + d.FileBytes
			if *phases {
				fmt.Printf("    selection, %s: %.2f s, %d bytes; %s\n", name, res.wall.Seconds(), got[name].bytes, res.phases)
			}
		}
	}
	whole, sel := got["whole archive"], got["files"]
	fmt.Printf("file selection %q of an S2 L2A product of %d MiB at %.0f MB/s a connection, into the directory, %d rounds:\n", *files, *mib, float64(*rate)/1e6, *rounds)
	fmt.Printf("  whole archive: median %.2f s, %d bytes sent\n", median(whole.wall), whole.bytes)
	fmt.Printf("  by files:      median %.2f s, %d bytes sent (%.1f %% of the archive's), time %.3f of the archive's\n",
		median(sel.wall), sel.bytes, 100*float64(sel.bytes)/float64(whole.bytes), median(sel.wall)/median(whole.wall))
	b.ReportMetric(float64(sel.bytes)/float64(whole.bytes), "files-bytes-ratio")
	b.ReportMetric(median(sel.wall)/median(whole.wall), "files-time-ratio")
}

// BenchmarkFetchSelections prints what common selections weigh against
// the archive, computed from the simulator's trees (their files in a real
// product's proportions) at a real product's size: the files selected
// and the manifest, which is what the fetcher downloads (the bytes a run
// of the selection above counts at the download host). Nothing is
// downloaded.
func BenchmarkFetchSelections(b *testing.B) {
	sim := cdsesim.New(cdsesim.Options{Seed: 1})
	b.Cleanup(sim.Close)
	for _, c := range []struct {
		what     string
		mission  cdsesim.Mission
		adjust   func(*cdsesim.Product)
		size     int64
		patterns string
	}{
		{"S2 L2A, the four 10 m bands and MTD_MSIL2A.xml", cdsesim.Sentinel2, l2a, 1_100_000_000, l2aBands},
		{"S1 IW GRDH, VV only (measurement, its annotation, calibration and noise)", cdsesim.Sentinel1, nil, 1_700_000_000, "measurement/*-vv-*.tiff,annotation/*-vv-*.xml,annotation/calibration/*-vv-*.xml"},
		{"S3 OLCI EFR, four bands and the geo-coordinates", cdsesim.Sentinel3, nil, 550_000_000, "Oa0[468]_radiance.nc,Oa17_radiance.nc,geo_coordinates.nc"},
	} {
		p := sim.GenerateWith(c.mission, 1, func(p *cdsesim.Product) {
			p.ContentLength = c.size
			if c.adjust != nil {
				c.adjust(p)
			}
		})[0]
		sel, err := manifest.Compile(strings.Split(c.patterns, ","))
		if err != nil {
			b.Fatal(err)
		}
		var n, bytes int64
		for _, f := range p.Files() {
			switch {
			case f.Path == manifest.Name(p.Name):
				bytes += f.Size
			case sel.Match(f.Path):
				n++
				bytes += f.Size
			}
		}
		if n == 0 {
			b.Fatalf("%s selects nothing of %s", c.patterns, p.Name)
		}
		fmt.Printf("%s: %d files and the manifest, %d of the archive's %d bytes (%.1f %%): %.0f %% less (%s)\n",
			c.what, n, bytes, p.ContentLength, 100*float64(bytes)/float64(p.ContentLength), 100-100*float64(bytes)/float64(p.ContentLength), c.patterns)
	}
}
