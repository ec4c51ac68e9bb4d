package cdsesim

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zeebo/blake3"
)

const (
	dlUser = "dl@example.org"
	dlPass = "pw"
)

// dlEnv is a simulator served as the live service is: the catalogue host
// and the download host, two listeners of the same handler.
type dlEnv struct {
	sim                 *Sim
	catalogue, download *httptest.Server
	token               string
	client              *http.Client
}

// newDLEnv starts the two hosts; o.Users and o.DownloadURL are set here.
func newDLEnv(t *testing.T, o Options) *dlEnv {
	t.Helper()
	var handler http.Handler
	serve := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) })
	download := httptest.NewUnstartedServer(serve)
	o.Users = map[string]User{dlUser: {Password: dlPass}}
	o.DownloadURL = "http://" + download.Listener.Addr().String() + "/odata/v1"
	e := &dlEnv{sim: New(o), download: download}
	handler = e.sim.Handler()
	download.Start()
	e.catalogue = httptest.NewServer(serve)
	// Redirects are followed by hand: Go's client would drop the token
	// on the way to another host, which is the fetcher's concern.
	e.client = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(func() {
		e.catalogue.Close()
		e.download.Close()
		e.sim.Close()
	})
	e.token = e.login(t)
	return e
}

func (e *dlEnv) login(t *testing.T) string {
	t.Helper()
	resp, err := http.PostForm(e.catalogue.URL+TokenPath, url.Values{"grant_type": {"password"}, "client_id": {"cdse-public"}, "username": {dlUser}, "password": {dlPass}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || tok.AccessToken == "" {
		t.Fatalf("login: %d %v", resp.StatusCode, err)
	}
	return tok.AccessToken
}

// get sends a request for url with the token and extra headers.
func (e *dlEnv) get(t *testing.T, method, u, token string, hdr ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (e *dlEnv) valueURL(id string) string {
	return e.download.URL + "/odata/v1/Products(" + id + ")/$value"
}

// entity is the product as the catalogue lists it.
func (e *dlEnv) entity(t *testing.T, id string) (length int64, checksums []map[string]string, online bool) {
	t.Helper()
	resp := e.get(t, http.MethodGet, e.catalogue.URL+"/odata/v1/Products("+id+")", e.token)
	defer resp.Body.Close()
	var p struct {
		ContentLength int64
		Checksum      []map[string]string
		Online        bool
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p.ContentLength, p.Checksum, p.Online
}

// sumsOf hashes b as the fetcher would.
func sumsOf(b []byte) (md5Hex, b3Hex string) {
	m := md5.Sum(b)
	h := blake3.Sum256(b)
	return hex.EncodeToString(m[:]), hex.EncodeToString(h[:])
}

// contentOf is what $value serves for p: the zip of its tree, or the
// keystream of a product without one.
func contentOf(p *Product) []byte {
	b, _ := io.ReadAll(p.Content())
	return b
}

// TestDownloadWhole: a product's $value through the catalogue's redirect
// is ContentLength bytes whose MD5 and BLAKE3 are the listed checksums.
func TestDownloadWhole(t *testing.T) {
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	for _, size := range []int64{0, 1, 15, 16, 17, 100_000, 1<<20 + 7} {
		t.Run(strconv.FormatInt(size, 10), func(t *testing.T) {
			p := e.sim.GenerateWith(Sentinel2, 1, func(p *Product) { p.ContentLength = size })[0]
			resp := e.get(t, http.MethodGet, e.catalogue.URL+"/odata/v1/Products("+p.ID+")/$value", "")
			resp.Body.Close()
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusTemporaryRedirect || loc != e.valueURL(p.ID) {
				t.Fatalf("catalogue host: %d Location %q, want 307 to %s", resp.StatusCode, loc, e.valueURL(p.ID))
			}
			resp = e.get(t, http.MethodGet, loc, e.token)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("download: %d %v", resp.StatusCode, err)
			}
			length, sums, online := e.entity(t, p.ID)
			if int64(len(body)) != length || length != size || resp.ContentLength != size || !online {
				t.Fatalf("got %d bytes, Content-Length %d, listed %d (online %v), want %d", len(body), resp.ContentLength, length, online, size)
			}
			m, b3 := sumsOf(body)
			want := []map[string]string{{"Algorithm": "MD5", "Value": m}, {"Algorithm": "BLAKE3", "Value": b3}}
			if len(sums) != 2 {
				t.Fatalf("Checksum %v", sums)
			}
			for i, w := range want {
				if sums[i]["Algorithm"] != w["Algorithm"] || sums[i]["Value"] != w["Value"] || sums[i]["ChecksumDate"] == "" {
					t.Errorf("Checksum[%d] = %v, want %v", i, sums[i], w)
				}
			}
			if !bytes.Equal(body, contentOf(p)) {
				t.Error("the body is not the product's Content")
			}
			// The known answers for no bytes, from outside this code.
			if size == 0 && (m != "d41d8cd98f00b204e9800998ecf8427e" || b3 != "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262") {
				t.Errorf("empty product: MD5 %s, BLAKE3 %s", m, b3)
			}
		})
	}
	// The bytes are a function of the id alone: a product literal (no
	// cache) hashes to what the served bytes hash to.
	lit := &Product{ID: "x", ContentLength: 1000}
	if m, b3 := sumsOf(contentOf(lit)); m != must(lit.Checksums()) || b3 != second(lit.Checksums()) {
		t.Error("Checksums disagree with the content")
	}
}

// TestDownloadRange: one range is 206 with Content-Range; a stale
// If-Range, several ranges or Range turned off give the whole product.
func TestDownloadRange(t *testing.T) {
	const size = 100_000
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	p := e.sim.GenerateWith(Sentinel1, 1, func(p *Product) { p.ContentLength = size })[0]
	all := contentOf(p)
	tests := []struct {
		name       string
		noRange    bool
		hdr        []string
		status     int
		from, to   int // the bytes expected: all[from:to]
		contentRng string
	}{
		{"first bytes", false, []string{"Range", "bytes=0-99"}, 206, 0, 100, "bytes 0-99/100000"},
		{"resume", false, []string{"Range", "bytes=65535-"}, 206, 65535, size, "bytes 65535-99999/100000"},
		{"suffix", false, []string{"Range", "bytes=-10"}, 206, size - 10, size, "bytes 99990-99999/100000"},
		{"past the end clipped", false, []string{"Range", "bytes=99999-200000"}, 206, size - 1, size, "bytes 99999-99999/100000"},
		{"unsatisfiable", false, []string{"Range", "bytes=100000-"}, 416, 0, 0, "bytes */100000"},
		{"If-Range matches", false, []string{"Range", "bytes=10-19", "If-Range", p.etag()}, 206, 10, 20, "bytes 10-19/100000"},
		{"If-Range stale", false, []string{"Range", "bytes=10-19", "If-Range", `"other"`}, 200, 0, size, ""},
		{"If-Range a date", false, []string{"Range", "bytes=10-19", "If-Range", "Mon, 23 Nov 2026 10:00:00 GMT"}, 200, 0, size, ""},
		{"several ranges", false, []string{"Range", "bytes=0-1,5-6"}, 200, 0, size, ""},
		{"malformed", false, []string{"Range", "bytes=x-"}, 200, 0, size, ""},
		{"ranges off", true, []string{"Range", "bytes=0-99"}, 200, 0, size, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.sim.SetRanges(!tt.noRange)
			defer e.sim.SetRanges(true)
			resp := e.get(t, http.MethodGet, e.valueURL(p.ID), e.token, tt.hdr...)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tt.status {
				t.Fatalf("status %d (%v), want %d", resp.StatusCode, err, tt.status)
			}
			if got := resp.Header.Get("Content-Range"); got != tt.contentRng {
				t.Errorf("Content-Range %q, want %q", got, tt.contentRng)
			}
			if tt.status != 416 && !bytes.Equal(body, all[tt.from:tt.to]) {
				t.Errorf("body: %d bytes, want bytes %d..%d", len(body), tt.from, tt.to)
			}
			accept := resp.Header.Get("Accept-Ranges")
			if (accept == "bytes") == tt.noRange || resp.Header.Get("ETag") != p.etag() {
				t.Errorf("Accept-Ranges %q, ETag %q", accept, resp.Header.Get("ETag"))
			}
		})
	}
	resp := e.get(t, http.MethodHead, e.valueURL(p.ID), e.token)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != size {
		t.Errorf("HEAD: %d, Content-Length %d", resp.StatusCode, resp.ContentLength)
	}
}

// TestDownloadFaults: each fault as a client sees it, and that a
// one-shot fault is gone after its request.
func TestDownloadFaults(t *testing.T) {
	const size = 50_000
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	gen := func(adjust func(*Product)) *Product {
		return e.sim.GenerateWith(Sentinel3, 1, func(p *Product) {
			p.ContentLength = size
			if adjust != nil {
				adjust(p)
			}
		})[0]
	}
	tests := []struct {
		name   string
		fault  *Fault // for the product
		adjust func(*Product)
		// check the first answer; the second request (same token unless
		// it expired) must be a clean download unless second says.
		check  func(t *testing.T, p *Product, resp *http.Response, body []byte, err error)
		second int
	}{
		{name: "429 Retry-After", fault: &Fault{Kind: FaultStatus, Status: 429, RetryAfter: 3, Count: 1},
			check: func(t *testing.T, _ *Product, resp *http.Response, _ []byte, _ error) {
				if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" {
					t.Errorf("%d Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
				}
			}},
		{name: "500", fault: &Fault{Kind: FaultStatus, Status: 500, Count: 1}, check: wantStatus(500)},
		{name: "502", fault: &Fault{Kind: FaultStatus, Status: 502, Count: 1}, check: wantStatus(502)},
		{name: "503", fault: &Fault{Kind: FaultStatus, Status: 503, RetryAfter: 5, Count: 1}, check: wantStatus(503)},
		{name: "cut mid-body", fault: &Fault{Kind: FaultCut, After: 12345, Count: 1},
			check: func(t *testing.T, _ *Product, resp *http.Response, body []byte, err error) {
				if resp.StatusCode != 200 || !errors.Is(err, io.ErrUnexpectedEOF) || len(body) != 12345 {
					t.Errorf("%d, %d bytes, %v; want 200, 12345 bytes, unexpected EOF", resp.StatusCode, len(body), err)
				}
			}},
		{name: "corrupt byte", fault: &Fault{Kind: FaultCorrupt, Offset: 777, Count: 1},
			check: func(t *testing.T, p *Product, resp *http.Response, body []byte, err error) {
				want := contentOf(p)
				if err != nil || len(body) != size || body[777] != want[777]^0xff || !bytes.Equal(body[:777], want[:777]) || !bytes.Equal(body[778:], want[778:]) {
					t.Errorf("%v: not the product with byte 777 flipped", err)
				}
				if m, _ := sumsOf(body); m == must(p.Checksums()) {
					t.Error("the corrupted body has the listed MD5")
				}
			}},
		{name: "token expiry mid-body", fault: &Fault{Kind: FaultTokenExpiry, After: 20000, Count: 1}, second: 401,
			check: func(t *testing.T, _ *Product, resp *http.Response, body []byte, err error) {
				if resp.StatusCode != 200 || err == nil || len(body) != 20000 {
					t.Errorf("%d, %d bytes, %v", resp.StatusCode, len(body), err)
				}
			}},
		{name: "offline", adjust: func(p *Product) { p.Offline = true }, second: 409, check: wantStatus(409)},
		{name: "no checksum []", adjust: func(p *Product) { p.ChecksumForm = ChecksumNone },
			check: func(t *testing.T, p *Product, resp *http.Response, body []byte, err error) {
				if _, sums, _ := e.entity(t, p.ID); sums == nil || len(sums) != 0 || resp.StatusCode != 200 || len(body) != size {
					t.Errorf("Checksum %v, %d, %d bytes", sums, resp.StatusCode, len(body))
				}
			}},
		{name: "no checksum [{}]", adjust: func(p *Product) { p.ChecksumForm = ChecksumEmptyObject },
			check: func(t *testing.T, p *Product, resp *http.Response, body []byte, err error) {
				if _, sums, _ := e.entity(t, p.ID); len(sums) != 1 || len(sums[0]) != 0 || resp.StatusCode != 200 {
					t.Errorf("Checksum %v, %d", sums, resp.StatusCode)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := gen(tt.adjust)
			if tt.fault != nil {
				f := *tt.fault
				f.Product = p.ID
				if err := e.sim.AddFault(f); err != nil {
					t.Fatal(err)
				}
			}
			token := e.login(t)
			resp := e.get(t, http.MethodGet, e.valueURL(p.ID), token)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			tt.check(t, p, resp, body, err)
			resp = e.get(t, http.MethodGet, e.valueURL(p.ID), token)
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			want := cmpOr(tt.second, 200)
			if resp.StatusCode != want || (want == 200 && (err != nil || !bytes.Equal(body, contentOf(p)))) {
				t.Errorf("second request: %d (%v, %d bytes), want %d and the product", resp.StatusCode, err, len(body), want)
			}
		})
	}
	if st := e.sim.Stats(); st.DownloadFaults < 7 {
		t.Errorf("DownloadFaults = %d, want at least 7", st.DownloadFaults)
	}
	if err := e.sim.AddFault(Fault{Kind: "boom"}); err == nil {
		t.Error("an unknown fault kind was accepted")
	}
}

// TestDownloadFaultRate: a fault with a rate hits about that share of the
// requests, the same ones for the same seed.
func TestDownloadFaultRate(t *testing.T) {
	hits := func() []bool {
		e := newDLEnv(t, Options{DownloadRate: Unthrottled, Seed: 7, Faults: []Fault{{Kind: FaultStatus, Status: 502, Rate: 0.5}}})
		p := e.sim.Generate(Sentinel2, 1)[0]
		var out []bool
		for range 40 {
			resp := e.get(t, http.MethodGet, e.valueURL(p.ID), e.token, "Range", "bytes=0-0")
			resp.Body.Close()
			out = append(out, resp.StatusCode == 502)
		}
		return out
	}
	first, again := hits(), hits()
	n := 0
	for i, h := range first {
		if h {
			n++
		}
		if h != again[i] {
			t.Fatalf("request %d: hit %v, then %v with the same seed", i, h, again[i])
		}
	}
	if n < 8 || n > 32 {
		t.Errorf("%d of 40 requests hit by a fault of rate 0.5", n)
	}
}

func wantStatus(code int) func(*testing.T, *Product, *http.Response, []byte, error) {
	return func(t *testing.T, _ *Product, resp *http.Response, body []byte, _ error) {
		if resp.StatusCode != code || !bytes.Contains(body, []byte(`"detail"`)) {
			t.Errorf("%d %s, want %d and a detail body", resp.StatusCode, body, code)
		}
	}
}

func must(m, _ string) string { return m }

func second(_, b string) string { return b }

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// TestDownloadTokenExpiresAtTheClock: a download running when its token
// reaches its expiry at the simulator's clock is cut; the token then gets
// 401.
func TestDownloadTokenExpiresAtTheClock(t *testing.T) {
	clock := NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	// 256 KiB/s: the body takes 2 s, so the clock moves while it runs.
	e := newDLEnv(t, Options{Now: clock.Now, DownloadRate: 256 << 10})
	p := e.sim.GenerateWith(Sentinel2, 1, func(p *Product) { p.ContentLength = 512 << 10 })[0]
	resp := e.get(t, http.MethodGet, e.valueURL(p.ID), e.token)
	defer resp.Body.Close()
	if _, err := io.ReadFull(resp.Body, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}
	clock.Add(10 * time.Minute)
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil || n+1000 >= 512<<10 {
		t.Fatalf("read %d more bytes, %v: want the connection cut", n, err)
	}
	again := e.get(t, http.MethodGet, e.valueURL(p.ID), e.token)
	again.Body.Close()
	if again.StatusCode != http.StatusUnauthorized {
		t.Errorf("after expiry: %d, want 401", again.StatusCode)
	}
}

// waitFor polls cond until it holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDownloadConcurrencyCap: four downloads of one user run; the fifth
// at the same time is 429 with Retry-After; the peak is recorded.
func TestDownloadConcurrencyCap(t *testing.T) {
	// Slow enough that four bodies stay open while the fifth is asked.
	e := newDLEnv(t, Options{DownloadRate: 64 << 10})
	ps := e.sim.GenerateWith(Sentinel2, 5, func(p *Product) { p.ContentLength = 1 << 20 })
	var open []*http.Response
	for _, p := range ps[:4] {
		resp := e.get(t, http.MethodGet, e.valueURL(p.ID), e.token)
		if resp.StatusCode != 200 {
			t.Fatalf("download %d", resp.StatusCode)
		}
		open = append(open, resp)
	}
	waitFor(t, "four active downloads", func() bool { return e.sim.DownloadStats().Users[dlUser].Active == 4 })
	fifth := e.get(t, http.MethodGet, e.valueURL(ps[4].ID), e.token)
	fifth.Body.Close()
	if fifth.StatusCode != http.StatusTooManyRequests || fifth.Header.Get("Retry-After") == "" {
		t.Errorf("fifth: %d Retry-After %q, want 429 with Retry-After", fifth.StatusCode, fifth.Header.Get("Retry-After"))
	}
	for _, r := range open {
		r.Body.Close()
	}
	waitFor(t, "the downloads to end", func() bool { return e.sim.DownloadStats().Users[dlUser].Active == 0 })
	st := e.sim.DownloadStats()
	u := st.Users[dlUser]
	if u.Peak != 5 || st.Peak != 5 || u.Refused != 1 || u.Begun != 4 || e.sim.Stats().DownloadPeak != 5 || e.sim.Stats().DownloadRefused != 1 {
		t.Errorf("stats %+v, user %+v: want peak 5 (the refused one counted), 1 refused, 4 begun", st, u)
	}
	// A sixth once the others ended is served.
	resp := e.get(t, http.MethodGet, e.valueURL(ps[4].ID), e.token, "Range", "bytes=0-9")
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		t.Errorf("after the others: %d", resp.StatusCode)
	}
}

// TestDownloadThrottle: each response keeps to the rate; two at once each
// get it (per connection, as live).
func TestDownloadThrottle(t *testing.T) {
	const rate, size = 4_000_000, 2_000_000
	e := newDLEnv(t, Options{}) // the default 20 MB/s, set below
	e.sim.SetDownloadRate(rate)
	ps := e.sim.GenerateWith(Sentinel2, 2, func(p *Product) { p.ContentLength = size })
	var wg sync.WaitGroup
	took := make([]time.Duration, len(ps))
	for i, p := range ps {
		wg.Go(func() {
			start := time.Now()
			resp := e.get(t, http.MethodGet, e.valueURL(p.ID), e.token)
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			took[i] = time.Since(start)
			if err != nil || n != size {
				t.Errorf("%d bytes, %v", n, err)
			}
		})
	}
	wg.Wait()
	// The bucket holds one 32 KiB chunk: (size - chunk) / rate at least.
	least := time.Duration(float64(size-32<<10) / rate * float64(time.Second))
	for i, d := range took {
		if d < least {
			t.Errorf("download %d took %v, less than %v at %d B/s", i, d, least, rate)
		}
	}
}

// TestDownloadHugeProductBoundedMemory: a 1 GiB product streams without
// the simulator holding it.
func TestDownloadHugeProductBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GiB through loopback")
	}
	const size = 1 << 30
	e := newDLEnv(t, Options{DownloadRate: Unthrottled, ContentLength: func(Mission) int64 { return size }})
	p := e.sim.Generate(Sentinel1, 1)[0]
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse
	var peak uint64
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	resp := e.get(t, http.MethodGet, e.valueURL(p.ID), e.token)
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	close(done)
	<-sampled
	if err != nil || n != size {
		t.Fatalf("%d bytes, %v", n, err)
	}
	if grew := int64(peak) - int64(base); grew > 32<<20 {
		t.Errorf("heap in use grew by %d MiB while serving 1 GiB", grew>>20)
	}
}

// TestDownloadAdminAPI: the knobs through /sim, as a test in another
// language or the demo would turn them.
func TestDownloadAdminAPI(t *testing.T) {
	e := newDLEnv(t, Options{})
	post := func(method, path, body string) (int, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, e.catalogue.URL+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	if code, b := post("POST", "/sim/config", `{"downloadRate":0,"ranges":false,"maxDownloads":2,"contentLength":3000}`); code != 200 ||
		!strings.Contains(string(b), `"ranges":false`) || !strings.Contains(string(b), `"maxDownloads":2`) || !strings.Contains(string(b), `"downloadRate":0`) {
		t.Fatalf("config: %d %s", code, b)
	}
	if code, b := post("POST", "/sim/config", `{"downloadRat":5}`); code != 400 {
		t.Errorf("a misspelt knob: %d %s", code, b)
	}
	code, b := post("POST", "/sim/products", `{"mission":"S5P","count":2}`)
	var made []struct {
		Id            string
		ContentLength int64
	}
	if err := json.Unmarshal(b, &made); code != 201 || err != nil || len(made) != 2 || made[0].ContentLength != 3000 {
		t.Fatalf("products: %d %s", code, b)
	}
	code, b = post("POST", "/sim/products", `{"mission":"S2","contentLength":10,"online":false,"checksum":"none"}`)
	var offline []struct{ Id string }
	if err := json.Unmarshal(b, &offline); code != 201 || err != nil {
		t.Fatalf("offline product: %d %s", code, b)
	}
	if n, sums, online := e.entity(t, offline[0].Id); n != 10 || len(sums) != 0 || online {
		t.Errorf("offline product listed as %d bytes, Checksum %v, Online %v", n, sums, online)
	}
	if code, b := post("POST", "/sim/faults", fmt.Sprintf(`{"kind":"status","status":503,"product":%q,"count":1}`, made[0].Id)); code != 201 || !strings.Contains(string(b), `"count":1`) {
		t.Fatalf("faults: %d %s", code, b)
	}
	if code, _ := post("POST", "/sim/faults", `{"kind":"status","status":200}`); code != 400 {
		t.Errorf("a 200 fault: %d", code)
	}
	for _, want := range []int{503, 200} {
		resp := e.get(t, http.MethodGet, e.valueURL(made[0].Id), e.token, "Range", "bytes=0-9")
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want || (want == 200 && len(body) != 3000) {
			t.Errorf("%d (%d bytes), want %d (ranges off: the whole product)", resp.StatusCode, len(body), want)
		}
	}
	if code, _ := post("DELETE", "/sim/faults", ""); code != 204 || len(e.sim.Faults()) != 0 {
		t.Errorf("clear faults: %d, %v", code, e.sim.Faults())
	}
	code, b = post("GET", "/sim/downloads", "")
	var dl struct {
		Stats DownloadStats
		Log   []DownloadRecord
	}
	if err := json.Unmarshal(b, &dl); code != 200 || err != nil || len(dl.Log) != 2 || dl.Log[0].Status != 503 || dl.Log[1].Bytes != 3000 || dl.Stats.Users[dlUser].Complete != 1 {
		t.Errorf("downloads: %d %s", code, b)
	}
	if code, b := post("GET", "/sim/stats", ""); code != 200 || !strings.Contains(string(b), `"downloadsComplete":1`) || !strings.Contains(string(b), `"downloadBytes":3000`) {
		t.Errorf("stats: %d %s", code, b)
	}
}

// TestDownloadNotServed: no token, an unknown token, an unknown or a
// deleted product.
func TestDownloadNotServed(t *testing.T) {
	e := newDLEnv(t, Options{DownloadRate: Unthrottled})
	p := e.sim.Generate(Sentinel2, 1)[0]
	gone := e.sim.Generate(Sentinel2, 1)[0]
	if err := e.sim.DeleteProduct(gone.ID, "Corrupted product"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id, token string
		want            int
	}{
		{"no token", p.ID, "", 401},
		{"unknown token", p.ID, "nope", 401},
		{"unknown product", "00000000-0000-0000-0000-000000000000", e.token, 404},
		{"deleted product", gone.ID, e.token, 404},
		{"served", p.ID, e.token, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := e.get(t, http.MethodGet, e.valueURL(tt.id), tt.token)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("%d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

func TestParseRange(t *testing.T) {
	tests := []struct {
		h             string
		n             int64
		start, length int64
		ok, unsat     bool
	}{
		{"bytes=0-0", 10, 0, 1, true, false},
		{"bytes=0-", 10, 0, 10, true, false},
		{"bytes=9-", 10, 9, 1, true, false},
		{"bytes=10-", 10, 0, 0, false, true},
		{"bytes=-3", 10, 7, 3, true, false},
		{"bytes=-30", 10, 0, 10, true, false},
		{"bytes=-0", 10, 0, 0, false, true},
		{"bytes=0-", 0, 0, 0, false, true},
		{"bytes=5-2", 10, 0, 0, false, false},
		{"bytes=a-b", 10, 0, 0, false, false},
		{"items=0-1", 10, 0, 0, false, false},
		{"bytes=0-1,3-4", 10, 0, 0, false, false},
	}
	for _, tt := range tests {
		s, l, ok, unsat := parseRange(tt.h, tt.n)
		if s != tt.start || l != tt.length || ok != tt.ok || unsat != tt.unsat {
			t.Errorf("parseRange(%q, %d) = %d, %d, %v, %v; want %d, %d, %v, %v", tt.h, tt.n, s, l, ok, unsat, tt.start, tt.length, tt.ok, tt.unsat)
		}
	}
}
