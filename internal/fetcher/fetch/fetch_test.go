package fetch

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	s3target "github.com/cdse-jetstream/receiver/internal/fetcher/target/s3"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"golang.org/x/oauth2"

	"github.com/cdse-jetstream/receiver/internal/cdse/catalogclient"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdselogin"
	"github.com/cdse-jetstream/receiver/internal/cdse/cdsesim"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target"
	"github.com/cdse-jetstream/receiver/internal/fetcher/target/file"
	"github.com/cdse-jetstream/receiver/internal/testkit/s3test"
	"github.com/cdse-jetstream/receiver/internal/testkit/simhosts"
)

// fixture is the simulator behind two hosts, as live: the catalogue on
// 127.0.0.1 (the fetcher's DownloadURL, which redirects) and the
// download service on localhost.
type fixture struct {
	sim *cdsesim.Sim
	// catalog is the catalogue host's base (http://127.0.0.1:port), dl
	// the download host's (http://localhost:port).
	catalog, dl string
	tokens      *cdselogin.PasswordSource
	client      *catalogclient.Client
	dir         string
	reg         *prometheus.Registry
}

func setup(t *testing.T, o cdsesim.Options) *fixture {
	t.Helper()
	o.Users = map[string]cdsesim.User{"alice": {Password: "alice-pw"}}
	if o.DownloadRate == 0 {
		o.DownloadRate = cdsesim.Unthrottled
	}
	h := simhosts.Start(t, o, "localhost")
	ts := cdselogin.NewPasswordSource(cdselogin.PasswordConfig{TokenURL: h.Catalogue + cdsesim.TokenPath, Username: "alice", Password: "alice-pw"})
	return &fixture{sim: h.Sim, catalog: h.Catalogue, dl: strings.TrimSuffix(h.Download, "/odata/v1"), tokens: ts,
		client: catalogclient.New(h.Catalogue+"/odata/v1", ts, nil), dir: t.TempDir(), reg: prometheus.NewRegistry()}
}

func (f *fixture) options() Options {
	return Options{
		DownloadURL:  f.catalog + "/odata/v1",
		TrustedHosts: []string{strings.TrimPrefix(f.dl, "http://")},
		Backoff:      time.Millisecond,
		MaxBackoff:   10 * time.Millisecond,
		IdleTimeout:  5 * time.Second,
		Entity:       f.client.GetProduct,
	}
}

func (f *fixture) fetcher(t *testing.T, o Options, tgt target.Target) *Fetcher {
	t.Helper()
	if tgt == nil {
		var err error
		if tgt, err = file.New(f.dir, 0); err != nil {
			t.Fatal(err)
		}
	}
	fe, err := New(o, f.tokens, tgt, f.reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fe
}

// product is one generated product as its notification tells it.
func (f *fixture) product(t *testing.T, adjust func(*cdsesim.Product)) (Product, *cdsesim.Product) {
	t.Helper()
	sp := f.sim.GenerateWith(cdsesim.Sentinel2, 1, adjust)[0]
	p := Product{ID: sp.ID, Name: sp.Name, ContentLength: sp.ContentLength}
	if sp.ChecksumForm == cdsesim.ChecksumBoth {
		m, b := sp.Checksums()
		p.Checksums = []Checksum{{"MD5", m}, {"BLAKE3", b}}
	} else if sp.ChecksumForm == cdsesim.ChecksumEmptyObject {
		p.Checksums = []Checksum{{}}
	}
	return p, sp
}

func content(t *testing.T, sp *cdsesim.Product) []byte {
	t.Helper()
	b, err := io.ReadAll(sp.Content())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sized(n int64) func(*cdsesim.Product) {
	return func(p *cdsesim.Product) { p.ContentLength = n }
}

func TestFetchToFile(t *testing.T) {
	const size = 3<<20 + 17
	tests := []struct {
		name    string
		adjust  func(*cdsesim.Product)
		fault   func(id string) cdsesim.Fault
		opts    func(*Options)
		err     error
		check   func(t *testing.T, f *fixture, r Result, sp *cdsesim.Product)
		noFault bool
	}{
		{name: "clean", check: func(t *testing.T, f *fixture, r Result, sp *cdsesim.Product) {
			if len(r.Verified) != 2 || r.Unverified != "" || r.Resumed != 0 || r.AlreadyThere {
				t.Errorf("result %+v", r)
			}
		}},
		{name: "429 with Retry-After", fault: func(id string) cdsesim.Fault {
			return cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 429, RetryAfter: 1, Count: 1, Product: id}
		}, check: func(t *testing.T, f *fixture, r Result, _ *cdsesim.Product) {
			if r.Took < time.Second {
				t.Errorf("took %v: Retry-After 1 not honoured", r.Took)
			}
			if got := testutil.ToFloat64(f.metric(t, "throttled")); got != 1 {
				t.Errorf("throttled retries %v", got)
			}
		}},
		{name: "503", fault: func(id string) cdsesim.Fault {
			return cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 503, Count: 2, Product: id}
		}},
		{name: "cut resumed", fault: func(id string) cdsesim.Fault {
			return cdsesim.Fault{Kind: cdsesim.FaultCut, After: size / 2, Count: 1, Product: id}
		}, check: func(t *testing.T, f *fixture, r Result, _ *cdsesim.Product) {
			if r.Resumed < size/4 {
				t.Errorf("resumed %d of %d", r.Resumed, size)
			}
			if sent := f.sim.DownloadStats().Users["alice"].Bytes; sent >= size*3/2 {
				t.Errorf("%d bytes sent for a product of %d", sent, size)
			}
		}},
		{name: "token expires mid-body", fault: func(id string) cdsesim.Fault {
			return cdsesim.Fault{Kind: cdsesim.FaultTokenExpiry, After: size / 3, Count: 1, Product: id}
		}},
		{name: "corrupt once", fault: func(id string) cdsesim.Fault {
			return cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Offset: 4096, Count: 1, Product: id}
		}, check: func(t *testing.T, f *fixture, r Result, _ *cdsesim.Product) {
			if got := testutil.ToFloat64(f.metric(t, "checksum")); got != 1 {
				t.Errorf("checksum retries %v", got)
			}
		}},
		{name: "corrupt always", err: ErrChecksum, fault: func(id string) cdsesim.Fault {
			return cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Offset: 4096, Product: id}
		}},
		{name: "no checksum", adjust: func(p *cdsesim.Product) { p.ChecksumForm = cdsesim.ChecksumNone },
			check: func(t *testing.T, f *fixture, r Result, _ *cdsesim.Product) {
				if r.Unverified == "" || len(r.Verified) != 0 {
					t.Errorf("result %+v", r)
				}
			}},
		{name: "empty checksum refused", err: ErrUnverifiable, adjust: func(p *cdsesim.Product) { p.ChecksumForm = cdsesim.ChecksumEmptyObject },
			opts: func(o *Options) { o.RequireChecksum = true }},
		{name: "offline", err: ErrOffline, adjust: func(p *cdsesim.Product) { p.Offline = true }},
		{name: "attempts", err: ErrAttempts, opts: func(o *Options) { o.MaxAttempts = 3 }, fault: func(id string) cdsesim.Fault {
			return cdsesim.Fault{Kind: cdsesim.FaultStatus, Status: 502, Product: id}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := setup(t, cdsesim.Options{})
			adjust := func(p *cdsesim.Product) {
				p.ContentLength = size
				if tt.adjust != nil {
					tt.adjust(p)
				}
			}
			p, sp := f.product(t, adjust)
			if tt.fault != nil {
				if err := f.sim.AddFault(tt.fault(p.ID)); err != nil {
					t.Fatal(err)
				}
			}
			o := f.options()
			if tt.opts != nil {
				tt.opts(&o)
			}
			fe := f.fetcher(t, o, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			key := "S2/" + p.Name + ".zip"
			r, err := fe.Fetch(ctx, p, key, nil)
			final := filepath.Join(f.dir, "S2", p.Name+".zip")
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err %v, want %v", err, tt.err)
				}
				if Permanent(err) == errors.Is(err, ErrAttempts) {
					t.Errorf("Permanent(%v) = %v", err, Permanent(err))
				}
				if _, err := os.Stat(final); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("something at the key after a failure: %v", err)
				}
				if tt.err == ErrChecksum {
					if !strings.Contains(err.Error(), "the catalogue says") {
						t.Errorf("message without both values: %v", err)
					}
					f.noPartial(t)
				}
				return
			}
			if err != nil {
				t.Fatalf("fetch: %v\n%+v", err, f.sim.DownloadLog())
			}
			got, err := os.ReadFile(final)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, content(t, sp)) {
				t.Fatalf("stored bytes differ from the product's")
			}
			if r.Size != size || r.Key != key || r.URL != "file://"+final {
				t.Errorf("result %+v", r)
			}
			f.noPartial(t)
			if tt.check != nil {
				tt.check(t, f, r, sp)
			}
			// A second Fetch finds it there (verified products only).
			r2, err := fe.Fetch(ctx, p, key, nil)
			if err != nil || r2.AlreadyThere != (r.Unverified == "") {
				t.Errorf("second fetch: %v %+v", err, r2)
			}
		})
	}
}

func (f *fixture) metric(t *testing.T, cause string) prometheus.Collector {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() != "cdse_fetcher_retries_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "cause" && l.GetValue() == cause {
					v = m.GetCounter().GetValue()
				}
			}
		}
	}
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "x"}, func() float64 { return v })
}

// noPartial: no partial download left.
func (f *fixture) noPartial(t *testing.T) {
	t.Helper()
	filepath.WalkDir(filepath.Join(f.dir, ".partial"), func(p string, d os.DirEntry, err error) error {
		if err == nil && p != filepath.Join(f.dir, ".partial") {
			t.Errorf("left behind: %s", p) // a file, or a folder left empty
		}
		return nil
	})
}

func TestNotFoundAndBadName(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	fe := f.fetcher(t, f.options(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := fe.Fetch(ctx, Product{ID: "00000000-0000-0000-0000-000000000000", Name: "gone.SAFE", Checksums: []Checksum{{"MD5", "00"}}}, "gone.zip", nil)
	if !errors.Is(err, ErrNotFound) || !Permanent(err) {
		t.Errorf("unknown product: %v", err)
	}
	// Nothing to resume ever: no partial left for the sweep a day later
	// (the chaos run found one per product deleted before its download).
	f.noPartial(t)
	off := false
	if _, err := fe.Fetch(ctx, Product{ID: "x", Name: "x.SAFE", Online: &off}, "x.zip", nil); !errors.Is(err, ErrOffline) {
		t.Errorf("Online false: %v", err)
	}
	for _, c := range []struct{ name, key string }{
		{"../etc", "ok.zip"}, {"a/b", "ok.zip"}, {"a\nb", "ok.zip"}, {"ok", "../x"}, {"ok", "/abs"}, {"ok", ".partial/x"}, {"ok", "a//b"}, {"ok", ""},
	} {
		if _, err := fe.Fetch(ctx, Product{ID: "x", Name: c.name}, c.key, nil); !errors.Is(err, target.ErrBadName) || !Permanent(err) {
			t.Errorf("name %q key %q: %v", c.name, c.key, err)
		}
	}
	for _, r := range f.sim.DownloadLog() {
		if r.Product != "00000000-0000-0000-0000-000000000000" {
			t.Errorf("a request for %q: only the unknown product's were to be made", r.Product)
		}
	}
}

// TestForeignRedirect: a redirect to a host that is not trusted is
// followed without the token; the trusted download host gets it again.
func TestForeignRedirect(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, sp := f.product(t, sized(100<<10))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2: %v", err)
	}
	var mu sync.Mutex
	var seen []string
	foreign := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		http.Redirect(w, r, f.dl+"/odata/v1/Products("+p.ID+")/$value", http.StatusTemporaryRedirect)
	}))
	foreign.Listener.Close()
	foreign.Listener = ln
	foreign.Start()
	defer foreign.Close()
	// The "catalogue" sends the client to the foreign host first.
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, foreign.URL+"/elsewhere", http.StatusFound)
	}))
	defer front.Close()
	o := f.options()
	o.DownloadURL = front.URL + "/odata/v1"
	fe := f.fetcher(t, o, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := fe.Fetch(ctx, p, "p.zip", nil); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "" {
		t.Errorf("the foreign host got Authorization %q", seen)
	}
	got, _ := os.ReadFile(filepath.Join(f.dir, "p.zip"))
	if !bytes.Equal(got, content(t, sp)) {
		t.Error("bytes differ")
	}
}

type staticTokens struct{}

func (staticTokens) Token(context.Context) (*oauth2.Token, error) { return nil, nil }
func (staticTokens) Invalidate(*oauth2.Token)                     {}

// TestResumeAcrossProcesses: a partial left by a Fetch that gave up (as
// by a kill) is resumed by the next, with If-Range.
func TestResumeAcrossProcesses(t *testing.T) {
	const size = 2 << 20
	f := setup(t, cdsesim.Options{})
	p, sp := f.product(t, sized(size))
	if err := f.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCut, After: size / 2, Count: 1, Product: p.ID}); err != nil {
		t.Fatal(err)
	}
	o := f.options()
	o.MaxAttempts = 1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := f.fetcher(t, o, nil).Fetch(ctx, p, "p.zip", nil); !errors.Is(err, ErrAttempts) || Permanent(err) {
		t.Fatalf("first fetch: %v", err)
	}
	f.reg = prometheus.NewRegistry()
	r, err := f.fetcher(t, f.options(), nil).Fetch(ctx, p, "p.zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Resumed < size/4 {
		t.Errorf("resumed %d", r.Resumed)
	}
	log := f.sim.DownloadLog()
	lastReq := log[len(log)-1]
	if lastReq.Status != 206 || lastReq.IfRange == "" {
		t.Errorf("last request %+v", lastReq)
	}
	got, _ := os.ReadFile(filepath.Join(f.dir, "p.zip"))
	if !bytes.Equal(got, content(t, sp)) {
		t.Error("bytes differ")
	}
	f.noPartial(t)
}

// s3Target is the target s3://<the store's bucket>/<prefix> with the
// store's keys, 5 MiB parts, and nothing read from a developer's ~/.aws.
func s3Target(ctx context.Context, t *testing.T, s *s3test.Server, prefix string) target.Target {
	t.Helper()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	env := s.Env()
	so, err := s3target.OptionsFromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	so.PartSize = 5 << 20
	tgt, err := s3target.New(ctx, s.Bucket, prefix, so)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

func TestFetchToS3(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	s := s3test.Start(t)
	const size = 11<<20 + 5
	p, sp := f.product(t, sized(size))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tgt := s3Target(ctx, t, s, "in/")
	if err := f.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCut, After: 7 << 20, Count: 1, Product: p.ID}); err != nil {
		t.Fatal(err)
	}
	fe := f.fetcher(t, f.options(), tgt)
	r, err := fe.Fetch(ctx, p, "S2/p.zip", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.URL != "s3://"+s.Bucket+"/in/S2/p.zip" || len(r.Verified) != 2 || r.Resumed == 0 {
		t.Errorf("result %+v", r)
	}
	obj, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("in/S2/p.zip")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if !bytes.Equal(got, content(t, sp)) {
		t.Error("bytes differ")
	}
	md5Hex, b3 := sp.Checksums()
	if obj.Metadata["md5"] != md5Hex || obj.Metadata["blake3"] != b3 || obj.Metadata["product-id"] != p.ID {
		t.Errorf("metadata %v", obj.Metadata)
	}
	r2, err := fe.Fetch(ctx, p, "S2/p.zip", nil)
	if err != nil || !r2.AlreadyThere {
		t.Errorf("second fetch %v %+v", err, r2)
	}

	// Always corrupt: nothing at the key, no upload left.
	q, _ := f.product(t, sized(6<<20))
	if err := f.sim.AddFault(cdsesim.Fault{Kind: cdsesim.FaultCorrupt, Offset: 1, Product: q.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := fe.Fetch(ctx, q, "q.zip", nil); !errors.Is(err, ErrChecksum) {
		t.Fatalf("corrupt: %v", err)
	}
	if _, ok, err := tgt.Stat(ctx, "q.zip"); ok || err != nil {
		t.Errorf("after a mismatch: %v %v", ok, err)
	}
	ups, err := s.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(s.Bucket)})
	if err != nil || len(ups.Uploads) != 0 {
		t.Errorf("uploads left: %v %d", err, len(ups.Uploads))
	}
	if found, err := fe.Find(ctx, "S2/p.zip", p.ID, p.Name); err != nil || !found.Archive {
		t.Fatalf("Find: %+v %v", found, err)
	} else if err := fe.Remove(ctx, found); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := tgt.Stat(ctx, "S2/p.zip"); ok {
		t.Error("still there after Remove")
	}
}

// TestS3SweepPartials: the multipart uploads a killed fetcher left under
// the prefix are aborted once older than the age given; younger ones, and
// any outside the prefix, are kept.
func TestS3SweepPartials(t *testing.T) {
	s := s3test.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tgt := s3Target(ctx, t, s, "in")
	for _, k := range []string{"in/a/left.zip", "in/b/left.zip", "other/kept.zip"} {
		if _, err := s.Client().CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(s.Bucket), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := tgt.SweepPartials(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("younger than an hour: swept %d: %v", n, err)
	}
	// Initiated times have a second's resolution in S3's listing.
	time.Sleep(1100 * time.Millisecond)
	if n, err := tgt.SweepPartials(ctx, time.Second); err != nil || n != 2 {
		t.Fatalf("swept %d, want 2: %v", n, err)
	}
	ups, err := s.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(s.Bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, u := range ups.Uploads {
		left = append(left, aws.ToString(u.Key))
	}
	if len(left) != 1 || left[0] != "other/kept.zip" {
		t.Errorf("uploads left %v, want only other/kept.zip", left)
	}
}

// TestBoundedMemory: a 256 MiB product does not grow the heap by more
// than a few buffers.
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("256 MiB")
	}
	f := setup(t, cdsesim.Options{})
	p, _ := f.product(t, sized(256<<20))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var peak uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	sample := func(Progress) {
		runtime.ReadMemStats(&ms)
		peak = max(peak, ms.HeapInuse)
	}
	o := f.options()
	o.ProgressEvery = 50 * time.Millisecond
	fe := f.fetcher(t, o, nil)
	if _, err := fe.Fetch(ctx, p, "big.zip", sample); err != nil {
		t.Fatal(err)
	}
	sample(Progress{})
	if grow := int64(peak) - int64(base); grow > 32<<20 {
		t.Errorf("heap grew by %d MiB", grow>>20)
	}
}

// TestNoSpaceAndTooLarge: a product larger than the target's file
// system and a download service sending more bytes than the product's
// length are permanent failures; a disk that fills up mid-download is
// target.ErrNoSpace, not permanent (the fetcher pauses), and not retried as if
// the network had failed; nothing reaches the final name.
func TestNoSpaceAndTooLarge(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tgt, err := file.New(f.dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fe := f.fetcher(t, f.options(), tgt)
	requests := func(id string) int {
		n := 0
		for _, r := range f.sim.DownloadLog() {
			if r.Product == id && r.Host != strings.TrimPrefix(f.catalog, "http://") {
				n++
			}
		}
		return n
	}

	// More than the directory's free space (an exabyte): refused before a
	// byte is asked for.
	p, _ := f.product(t, sized(1<<20))
	huge := p
	huge.ContentLength = 1 << 60
	if _, err := fe.Fetch(ctx, huge, "huge.zip", nil); !errors.Is(err, target.ErrTargetTooSmall) || !Permanent(err) {
		t.Errorf("a product larger than the file system: %v", err)
	}
	if n := requests(p.ID); n != 0 {
		t.Errorf("%d download requests for a product that cannot fit", n)
	}

	// The disk fills up mid-download: the partial file is /dev/full,
	// whose writes fail with ENOSPC as a full file system's do.
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Fatalf("this test needs /dev/full: %v", err)
	}
	full, _ := f.product(t, sized(1<<20))
	if err := os.MkdirAll(filepath.Join(f.dir, ".partial"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/full", filepath.Join(f.dir, ".partial", "full.zip.part")); err != nil {
		t.Fatal(err)
	}
	// Not permanent: the fetcher pauses until there is room, and the
	// partial is kept.
	if _, err := fe.Fetch(ctx, full, "full.zip", nil); !errors.Is(err, target.ErrNoSpace) || Permanent(err) {
		t.Errorf("ENOSPC while writing: %v", err)
	}
	// The simulator notes a request when its handler returns, which may
	// be just after the client gave up: wait for the one, then there is
	// no second (Fetch has returned: nothing more can be asked).
	for deadline := time.Now().Add(5 * time.Second); requests(full.ID) == 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := requests(full.ID); n != 1 {
		t.Errorf("%d download requests after ENOSPC, want 1 (not retried)", n)
	}

	// The notification says 1 MiB, the service sends 2.
	big, _ := f.product(t, sized(2<<20))
	big.ContentLength = 1 << 20
	if _, err := fe.Fetch(ctx, big, "big.zip", nil); !errors.Is(err, ErrTooLarge) || !Permanent(err) {
		t.Errorf("more bytes than the length: %v", err)
	}
	for _, k := range []string{"huge.zip", "full.zip", "big.zip"} {
		if _, ok, err := tgt.Stat(ctx, k); ok || err != nil {
			t.Errorf("%s under its final name: %v %v", k, ok, err)
		}
	}
	if _, err := os.Stat(filepath.Join(f.dir, ".partial", "big.zip.part")); !os.IsNotExist(err) {
		t.Errorf("the oversized bytes are kept: %v", err)
	}
}

// mustFile is a directory target in dir.
func mustFile(t *testing.T, dir string) *file.Target {
	t.Helper()
	tgt, err := file.New(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	return tgt
}

// TestCompletePartial: a partial that holds as many bytes as the product
// (left by a kill -9 during the commit's fsync or rename, or a commit
// that failed) is verified and committed without asking for a Range from
// its end, which the service answers 416 at every try; one of the wrong
// bytes is discarded and the product downloaded again; with no length in
// the notification, the 416 starts the download over.
func TestCompletePartial(t *testing.T) {
	const size = 1 << 20
	for _, tc := range []struct {
		name      string
		corrupt   bool
		noLength  bool
		noSums    bool // no checksum anywhere: stale bytes of the length are not trusted
		wantAsked int  // answers of 200 or 206 from the download host
	}{
		{name: "its bytes", wantAsked: 0},
		{name: "wrong bytes", corrupt: true, wantAsked: 1},
		{name: "no length in the notification", noLength: true, wantAsked: 1},
		{name: "no checksum to verify it by", corrupt: true, noSums: true, wantAsked: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := setup(t, cdsesim.Options{})
			p, sp := f.product(t, func(p *cdsesim.Product) {
				p.ContentLength = size
				if tc.noSums {
					p.ChecksumForm = cdsesim.ChecksumNone
				}
			})
			want := content(t, sp)
			held := append([]byte(nil), want...)
			if tc.corrupt {
				held[size/2] ^= 0xff
			}
			if tc.noLength {
				p.ContentLength = 0
			}
			const key = "p.zip"
			if err := os.MkdirAll(filepath.Join(f.dir, ".partial"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(f.dir, ".partial", key+".part"), held, 0o644); err != nil {
				t.Fatal(err)
			}
			o := f.options()
			o.MaxAttempts = 3
			r, err := f.fetcher(t, o, fileTarget(t, f.dir)).Fetch(ctx20(t), p, key, nil)
			if err != nil {
				t.Fatalf("fetch: %v (requests %+v)", err, f.sim.DownloadLog())
			}
			if wantResumed := int64(size); tc.wantAsked != 0 && r.Resumed != 0 || tc.wantAsked == 0 && r.Resumed != wantResumed {
				t.Errorf("resumed %d", r.Resumed)
			}
			got, err := os.ReadFile(filepath.Join(f.dir, key))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("stored %d bytes, the product's: %t (%v)", len(got), bytes.Equal(got, want), err)
			}
			asked := 0
			for _, rec := range f.sim.DownloadLog() {
				if rec.Status == http.StatusOK || rec.Status == http.StatusPartialContent {
					asked++
				}
			}
			if asked != tc.wantAsked {
				t.Errorf("%d downloads answered, want %d: %+v", asked, tc.wantAsked, f.sim.DownloadLog())
			}
			f.noPartial(t)
		})
	}
}

// stallingRead is a directory target whose read-back sends nothing until
// its context ends (an S3 GET whose body stalls).
type stallingRead struct{ target.Target }

func (s stallingRead) Read(ctx context.Context, key string) (io.ReadCloser, error) {
	return io.NopCloser(ctxReader{ctx}), nil
}

type ctxReader struct{ ctx context.Context }

func (r ctxReader) Read([]byte) (int, error) {
	<-r.ctx.Done()
	return 0, context.Cause(r.ctx)
}

// TestLateChecksumReadBackIsBounded: a product stored unverified whose
// checksum came later is read back to verify it; a read-back that stalls
// is cut after the idle timeout, like a download, and the product is
// downloaded again instead of the slot being held for ever.
func TestLateChecksumReadBackIsBounded(t *testing.T) {
	f := setup(t, cdsesim.Options{})
	p, sp := f.product(t, func(p *cdsesim.Product) { p.ContentLength, p.ChecksumForm = 256<<10, cdsesim.ChecksumNone })
	key := "late.zip"
	tg := stallingRead{fileTarget(t, f.dir)}
	if r, err := f.fetcher(t, f.options(), tg).Fetch(ctx20(t), p, key, nil); err != nil || r.Unverified == "" {
		t.Fatalf("stored unverified: %+v, %v", r, err)
	}
	later, err := f.sim.AddChecksum(p.ID)
	if err != nil {
		t.Fatal(err)
	}
	m, b := later.Checksums()
	p.Checksums = []Checksum{{"MD5", m}, {"BLAKE3", b}}
	o := f.options()
	o.IdleTimeout = 300 * time.Millisecond
	f.reg = prometheus.NewRegistry()
	r, err := f.fetcher(t, o, tg).Fetch(ctx20(t), p, key, nil)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if r.VerifiedInPlace || r.AlreadyThere {
		t.Errorf("result %+v: the stalled read-back cannot have verified it", r)
	}
	if got, err := os.ReadFile(filepath.Join(f.dir, key)); err != nil || !bytes.Equal(got, content(t, sp)) {
		t.Errorf("stored bytes: %v", err)
	}
}
